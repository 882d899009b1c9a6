//! `--mode stress`: N launches on the same inputs with a host synchronisation policy. After
//! each launch the output and every guard are copied, on the device and in stream order, into
//! a history slot; at each synchronisation the slots are read back and compared (output
//! bitwise with the first launch's, guards with their patterns). So even with `--sync end` the
//! first bad launch is named exactly, unless a CUDA error ends the run: that error surfaces at
//! the synchronisation and is attributed to the window of launches since the previous one.

use std::time::Instant;

use parsers::harness::Stress;
use parsers::harness::figures::{LaunchCorruption, OutputScan};

use super::{Record, Verdict, scan_output, setup};
use crate::canary::Side;
use crate::cli::{Mode, RunOptions};
use crate::consistency::{ConsistencyTracker, GuardSpec};
use crate::gpu::{AttentionKernel, CudaError, Gpu};
use crate::problem::Problem;

/// History may use at most this share of the free device memory.
const HISTORY_SHARE_OF_FREE: f64 = 0.5;

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
    let sides = [Side::Before, Side::After];
    let guards: Vec<GuardSpec> = dp
        .buffers()
        .iter()
        .flat_map(|b| {
            sides.map(|side| GuardSpec {
                buffer: b.name().to_string(),
                side,
                expected: b.expected(side).to_vec(),
            })
        })
        .filter(|g| !g.expected.is_empty())
        .collect();
    let slot_bytes = out_bytes + guards.len() * guard_bytes;
    let history_bytes = (window as usize).saturating_mul(slot_bytes);
    match gpu.memory_info() {
        Ok((free, _)) if history_bytes as f64 > free as f64 * HISTORY_SHARE_OF_FREE => {
            record.result.error = Some(format!(
                "stress history for --sync {} needs {history_bytes} bytes ({window} launches of \
                 {slot_bytes}), over half the {free} free bytes: use --sync every:K with a smaller K",
                opts.sync.name()
            ));
            record.verdict = Verdict::Infrastructure;
            return record;
        }
        Ok(_) => {}
        Err(e) => {
            record.fail_cuda(&e, true);
            return record;
        }
    }
    let history = match gpu.alloc(history_bytes) {
        Ok(h) => h,
        Err(e) => {
            record.fail_cuda(&e, true);
            return record;
        }
    };
    let mut tracker = ConsistencyTracker::new(guards);
    let guard_ptrs: Vec<u64> = dp
        .buffers()
        .iter()
        .flat_map(|b| sides.map(|side| b.guard_ptr(side)))
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
    let failure = tracker.first_failure();
    if failure.is_some() {
        record.verdict = Verdict::KernelFailure;
    }
    record.result.stress = Some(Stress {
        launches: total,
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
        let (unwritten, nan_count, inf_count) = scan_output(problem.dtype, first);
        OutputScan {
            unwritten,
            nan_count,
            inf_count,
        }
    });
    figures.seconds = Some(seconds);
    record
}
