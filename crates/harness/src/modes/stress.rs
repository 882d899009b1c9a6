//! `--mode stress`: N launches on the same inputs with a host synchronisation policy. After
//! each launch the output and every guard are copied, on the device and in stream order, into
//! a history slot; at each synchronisation the slots are read back and compared (output
//! bitwise with the first launch's, guards with their patterns). So even with `--sync end` the
//! first bad launch is named exactly, unless a CUDA error ends the run: that error surfaces at
//! the synchronisation and is attributed to the window of launches since the previous one.

use std::time::Instant;

use parsers::harness::Stress;
use parsers::harness::figures::{LaunchCorruption, OutputScan};

use super::{DeviceProblem, Record, Verdict, scan_output, setup};
use crate::canary::Side;
use crate::cli::{Mode, RunOptions};
use crate::consistency::{ConsistencyTracker, GuardSpec};
use crate::float::Dtype;
use crate::gpu::{AttentionKernel, CudaError, DeviceBuffer, Gpu};
use crate::problem::Problem;

/// History may use at most this share of the free device memory.
const HISTORY_SHARE_OF_FREE: f64 = 0.5;

/// Both guards of a buffer.
const SIDES: [Side; 2] = [Side::Before, Side::After];

/// Launches `kernel` `opts.launches` times on one problem, synchronising as `opts.sync` says, and
/// records the first launch whose output or guards differ from what they must be.
pub fn run_stress(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    problem: Problem,
) -> Record {
    let mut record = Record::new(Mode::Stress, kernel.name(), opts, &problem);
    let Some(dp) = setup(gpu, opts, problem, &mut record) else {
        return record;
    };
    let total = opts.launches;
    let window = opts.sync.window(total);
    let out_bytes = dp.output_bytes();
    let guard_bytes = opts.guard_bytes;
    let guards = guard_specs(&dp);
    let slot_bytes = out_bytes + guards.len() * guard_bytes;
    let Some(history) = alloc_history(gpu, opts, window, slot_bytes, &mut record) else {
        return record;
    };
    let mut tracker = ConsistencyTracker::new(guards);
    let guard_ptrs: Vec<u64> = dp
        .buffers()
        .iter()
        .flat_map(|b| SIDES.map(|side| b.guard_ptr(side)))
        .collect();
    let guard_ptrs: Vec<u64> = if guard_bytes == 0 {
        Vec::new()
    } else {
        guard_ptrs
    };
    let args = dp.args();
    let started = Instant::now();
    let mut window_start = 1u64;
    let mut failure_window: Option<(u64, u64)> = None;
    let mut error: Option<(CudaError, bool)> = None;
    let mut output = vec![0u16; problem.shape.elements()];
    let mut snapshots = vec![vec![0u8; guard_bytes]; guard_ptrs.len()];

    'launches: for i in 1..=total {
        let slot = history.ptr() + ((i - window_start) as usize * slot_bytes) as u64;
        if let Err(e) = dp.poison_output(gpu) {
            error = Some((e, true));
            break;
        }
        if let Err(e) = kernel.launch(gpu, &args) {
            tracker.record_error(i);
            failure_window = Some((i, i));
            error = Some((e, false));
            break;
        }
        record.result.launched = true;
        let queued = gpu.copy(slot, dp.o.data_ptr(), out_bytes).and_then(|()| {
            guard_ptrs.iter().enumerate().try_for_each(|(g, &src)| {
                gpu.copy(
                    slot + (out_bytes + g * guard_bytes) as u64,
                    src,
                    guard_bytes,
                )
            })
        });
        if let Err(e) = queued {
            tracker.record_error(i);
            failure_window = Some((window_start, i));
            error = Some((e, false));
            break;
        }
        if !opts.sync.syncs_after(i, total) {
            continue;
        }
        if let Err(e) = gpu.synchronize() {
            tracker.record_error(i);
            failure_window = Some((window_start, i));
            error = Some((e, false));
            break;
        }
        for j in window_start..=i {
            let slot = history.ptr() + ((j - window_start) as usize * slot_bytes) as u64;
            let read = gpu.download(&mut output, slot).and_then(|()| {
                snapshots.iter_mut().enumerate().try_for_each(|(g, snap)| {
                    gpu.download(snap, slot + (out_bytes + g * guard_bytes) as u64)
                })
            });
            if let Err(e) = read {
                error = Some((e, true));
                break 'launches;
            }
            let views: Vec<&[u8]> = snapshots.iter().map(Vec::as_slice).collect();
            tracker.observe(j, &output, &views);
        }
        window_start = i + 1;
    }
    let seconds = started.elapsed().as_secs_f64();

    if let Some((e, infrastructure)) = &error {
        record.fail_cuda(e, *infrastructure);
    }
    record_consistency(&mut record, &tracker, opts, failure_window, problem.dtype);
    record.result.figures.seconds = Some(seconds);
    record
}

/// The guards of every buffer, before and after it, each with the pattern it must keep; a
/// buffer without guards (`--guard-bytes 0`) has none.
fn guard_specs(dp: &DeviceProblem) -> Vec<GuardSpec> {
    dp.buffers()
        .iter()
        .flat_map(|b| {
            SIDES.map(|side| GuardSpec {
                buffer: b.name().to_string(),
                side,
                expected: b.expected(side).to_vec(),
            })
        })
        .filter(|g| !g.expected.is_empty())
        .collect()
}

/// The device memory that holds a synchronisation window's copies: `window` slots of
/// `slot_bytes`. `None`, with the record failed, when it would take more than
/// [`HISTORY_SHARE_OF_FREE`] of the free memory or cannot be allocated.
fn alloc_history(
    gpu: &Gpu,
    opts: &RunOptions,
    window: u64,
    slot_bytes: usize,
    record: &mut Record,
) -> Option<DeviceBuffer> {
    let history_bytes = (window as usize).saturating_mul(slot_bytes);
    let free = match gpu.memory_info() {
        Ok((free, _)) => free,
        Err(e) => {
            record.fail_cuda(&e, true);
            return None;
        }
    };
    if history_bytes as f64 > free as f64 * HISTORY_SHARE_OF_FREE {
        record.result.error = Some(format!(
            "stress history for --sync {} needs {history_bytes} bytes ({window} launches of \
             {slot_bytes}), over half the {free} free bytes: use --sync every:K with a smaller K",
            opts.sync.name()
        ));
        record.verdict = Verdict::Infrastructure;
        return None;
    }
    let history = gpu.alloc(history_bytes);
    if let Err(e) = &history {
        record.fail_cuda(e, true);
    }
    history.ok()
}

/// What the launches showed, into the record: the stress summary (a kernel failure when a
/// launch's output or guards went wrong), the launches verified, the window of a CUDA error,
/// the first mismatch and corruption, and what the first launch's output held.
fn record_consistency(
    record: &mut Record,
    tracker: &ConsistencyTracker,
    opts: &RunOptions,
    failure_window: Option<(u64, u64)>,
    dtype: Dtype,
) {
    let failure = tracker.first_failure();
    if failure.is_some() {
        record.verdict = Verdict::KernelFailure;
    }
    record.result.stress = Some(Stress {
        launches: opts.launches,
        sync: opts.sync.name(),
        mismatched_launches: tracker.mismatched(),
        first_failure: failure.map(|(launch, _)| launch),
        failure_kind: failure.map(|(_, kind)| kind.name().to_string()),
        canaries_corrupted: tracker.corrupted(),
    });
    let figures = &mut record.result.figures;
    figures.launches_verified = Some(tracker.verified());
    figures.failure_window = failure_window;
    figures.first_mismatch = tracker.first_mismatch().cloned();
    figures.first_corruption = tracker
        .first_corruption()
        .map(|(launch, c)| LaunchCorruption {
            launch: *launch,
            corruption: c.clone(),
        });
    figures.first_output = tracker.first_output().map(|first| {
        let (unwritten, nan_count, inf_count) = scan_output(dtype, first);
        OutputScan {
            unwritten,
            nan_count,
            inf_count,
        }
    });
}
