//! `--mode bench`: warm-up, then timed samples with CUDA events (around one launch, or around
//! one replay of a captured graph of launches), warm or cold L2, until the median is known to
//! the target precision or the time cap is reached.

use std::time::Instant;

use parsers::harness::Bench;

use super::{DeviceProblem, Record, Verdict, finite, scan_output, setup};
use crate::cli::{CacheMode, Mode, RunOptions, Timing};
use crate::gpu::{
    AttentionKernel, ClockProbe, CudaError, DeviceBuffer, Gpu, KernelArgs, TimedGraph, TimerEvent,
};
use crate::problem::Problem;
use crate::stats::{StopReason, StopRule, median_ci_relative, relative_sem, summarize};

/// Under this per-launch time (us) `--timing auto` replays graphs: launch overhead is then a
/// visible share of the time.
pub const LAUNCH_BOUND_US: f64 = 50.0;

/// A graph replay should last about this long (us), so that one replay's fixed cost is small.
const GRAPH_REPLAY_TARGET_US: f64 = 500.0;

/// Samples taken before convergence may stop sampling, so that p99 rests on at least two
/// samples above it.
pub const MIN_SAMPLES: usize = 200;

/// Samples between two host synchronisations, at most.
const MAX_BATCH: usize = 64;

/// A relative clock drop counted as throttling.
const THROTTLE_DROP: f64 = 0.05;

pub fn run_bench(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    problem: Problem,
) -> Record {
    let mut record = Record::new(Mode::Bench, kernel.name(), opts, &problem);
    let Some(dp) = setup(gpu, opts, problem, &mut record) else {
        return record;
    };
    match bench(gpu, kernel, opts, &dp, &mut record) {
        Ok(()) => {}
        Err(Failure::Kernel(e)) => record.fail_cuda(&e, false),
        Err(Failure::Harness(e)) => record.fail_cuda(&e, true),
    }
    record
}

enum Failure {
    /// A launch or the synchronisation after launches failed.
    Kernel(CudaError),
    /// One of the harness's own calls failed.
    Harness(CudaError),
}

fn harness<T>(r: Result<T, CudaError>) -> Result<T, Failure> {
    r.map_err(Failure::Harness)
}

fn kernel_err<T>(r: Result<T, CudaError>) -> Result<T, Failure> {
    r.map_err(Failure::Kernel)
}

/// Warm-up, then timed samples until the median is known well enough or time is up; the
/// timings, and how they were taken, into `record`.
fn bench(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    dp: &DeviceProblem,
    record: &mut Record,
) -> Result<(), Failure> {
    let args = dp.args();
    let problem = dp.problem;
    harness(dp.poison_output(gpu))?;

    let probe = ClockProbe::load(gpu);
    let clock_before = match &probe {
        Ok(p) => p.measure_mhz(gpu).ok(),
        Err(e) => {
            record.result.figures.clock_probe_error = Some(e.to_string());
            None
        }
    };

    let launch_us = warm_up(gpu, kernel, &args, opts, record)?;

    let timing = match opts.timing {
        Timing::Auto if launch_us < LAUNCH_BOUND_US => Timing::Graph,
        Timing::Auto => Timing::Events,
        t => t,
    };
    let cold = opts.cache == CacheMode::Cold;
    let flush = if cold {
        Some(flush_buffer(gpu, record)?)
    } else {
        None
    };
    // Cold samples flush between launches, so a graph holds one launch; warm graphs hold
    // enough back-to-back launches to last about GRAPH_REPLAY_TARGET_US.
    let per_replay = match timing {
        Timing::Graph if !cold => (GRAPH_REPLAY_TARGET_US / launch_us.max(0.1))
            .ceil()
            .clamp(1.0, 100.0) as u64,
        _ => 1,
    };
    let graph: Option<TimedGraph> = match timing {
        Timing::Graph => {
            Some(kernel_err(gpu.capture(|| {
                (0..per_replay).try_for_each(|_| kernel.launch(gpu, &args))
            }))?)
        }
        _ => None,
    };
    record.result.figures.launches_per_sample = Some(per_replay);

    let rule = StopRule {
        target_noise: opts.target_noise,
        max_seconds: opts.max_seconds,
        min_samples: MIN_SAMPLES,
        max_samples: 100_000,
    };
    let sample_us_guess = launch_us * per_replay as f64;
    let batch = ((100_000.0 / sample_us_guess.max(1.0)) as usize).clamp(1, MAX_BATCH);
    let sampling = Sampling {
        args,
        flush: flush.as_ref(),
        graph: graph.as_ref(),
        per_replay,
    };
    let Sampled {
        samples,
        stop,
        seconds: sampling_seconds,
    } = take_samples(gpu, kernel, &sampling, &rule, batch)?;
    let clock_after = match &probe {
        Ok(p) => p.measure_mhz(gpu).ok(),
        Err(_) => None,
    };

    check_output(gpu, dp, record)?;

    let Some(summary) = summarize(&samples) else {
        record.result.error = Some("no usable timing samples".to_string());
        record.verdict = record.verdict.max(Verdict::Infrastructure);
        return Ok(());
    };
    let seconds = summary.p50 * 1e-6;
    let tflops = problem.flops() / seconds / 1e12;
    let gbps = problem.min_bytes() / seconds / 1e9;
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let to_mhz = |x: Option<f64>| x.map(|m| m.round().clamp(0.0, f64::from(u32::MAX)) as u32);
    let throttled = match (clock_before, clock_after) {
        (Some(b), Some(a)) if b > 0.0 => Some(a < b * (1.0 - THROTTLE_DROP)),
        _ => None,
    };
    record.result.bench = Some(Bench {
        cache: opts.cache.name().to_string(),
        timing: match timing {
            Timing::Graph => "graph".to_string(),
            _ => "events".to_string(),
        },
        samples: summary.samples as u64,
        min_us: summary.min,
        p50_us: summary.p50,
        p90_us: summary.p90,
        p99_us: summary.p99,
        mean_us: summary.mean,
        stdev_us: summary.stdev,
        tflops: finite(tflops),
        gbps: finite(gbps),
        sm_clock_mhz_before: to_mhz(clock_before),
        sm_clock_mhz_after: to_mhz(clock_after),
        throttled,
        samples_us: samples.clone(),
    });
    let figures = &mut record.result.figures;
    figures.max_us = Some(summary.max);
    figures.stop_reason = Some(stop.name().to_string());
    figures.median_ci_rel = median_ci_relative(&sorted).map(finite);
    figures.mean_rel_sem = relative_sem(&summary).map(finite);
    figures.target_noise = Some(opts.target_noise);
    figures.sampling_seconds = Some(sampling_seconds);
    figures.flops = Some(problem.flops());
    figures.bytes = Some(problem.min_bytes());
    figures.clock_method = Some(
        "SM clock from a 2 ms one-thread spin kernel (%clock64 cycles over %globaltimer ns), \
         run just before warm-up and just after the last sample; throttled = after more than \
         5% under before"
            .to_string(),
    );
    figures.max_sm_clock_mhz = gpu.info().max_sm_clock_khz.map(|k| f64::from(k) / 1e3);
    if opts.measure_peaks {
        record_peaks(gpu, gbps, record);
    }
    Ok(())
}

/// The buffer cold samples overwrite to evict L2: twice its size, at least 64 MiB.
fn flush_buffer(gpu: &Gpu, record: &mut Record) -> Result<DeviceBuffer, Failure> {
    let l2 = gpu.info().l2_bytes.unwrap_or(64 << 20) as usize;
    let bytes = (2 * l2).max(64 << 20);
    record.result.figures.flush_bytes = Some(bytes as u64);
    harness(gpu.alloc(bytes))
}

/// The output must still be fully written and finite after all those launches: a kernel
/// failure where it is not.
fn check_output(gpu: &Gpu, dp: &DeviceProblem, record: &mut Record) -> Result<(), Failure> {
    let out = harness(dp.read_output(gpu))?;
    let (unwritten, nan, inf) = scan_output(dp.problem.dtype, &out);
    record.result.figures.output_unwritten = Some(unwritten);
    record.result.figures.output_nonfinite = Some(nan + inf);
    if unwritten + nan + inf > 0 {
        record.verdict = Verdict::KernelFailure;
    }
    Ok(())
}

/// The warm-up: launches in tens until `opts.warmup_ms` passed, so that module load,
/// first-launch costs and clocks settle; returns the mean launch time (us), the estimate the
/// timing mode and the batches are chosen from.
fn warm_up(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    args: &KernelArgs,
    opts: &RunOptions,
    record: &mut Record,
) -> Result<f64, Failure> {
    let (start, end) = (harness(gpu.timer_event())?, harness(gpu.timer_event())?);
    let warmup_started = Instant::now();
    let (mut warm_launches, mut warm_ms) = (0u64, 0.0f64);
    loop {
        harness(gpu.record(&start))?;
        for _ in 0..10 {
            kernel_err(kernel.launch(gpu, args))?;
        }
        harness(gpu.record(&end))?;
        kernel_err(gpu.synchronize())?;
        record.result.launched = true;
        warm_ms += harness(start.elapsed_ms(&end))?;
        warm_launches += 10;
        if warmup_started.elapsed().as_secs_f64() * 1e3 >= opts.warmup_ms {
            break;
        }
    }
    let launch_us = warm_ms * 1e3 / warm_launches as f64;
    record.result.figures.warmup_launches = Some(warm_launches);
    record.result.figures.warmup_mean_us = Some(launch_us);
    Ok(launch_us)
}

/// How one timed sample runs: one launch, or one replay of a graph of `per_replay` launches;
/// for cold samples, after `flush` is overwritten to evict L2.
struct Sampling<'a> {
    args: KernelArgs,
    flush: Option<&'a DeviceBuffer>,
    graph: Option<&'a TimedGraph>,
    per_replay: u64,
}

/// The timed samples, per launch (us), why sampling stopped, and how long it took (seconds).
struct Sampled {
    samples: Vec<f64>,
    stop: StopReason,
    seconds: f64,
}

/// Takes samples in batches of `batch` between two host synchronisations until `rule` says
/// to stop.
fn take_samples(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    sampling: &Sampling<'_>,
    rule: &StopRule,
    batch: usize,
) -> Result<Sampled, Failure> {
    let starts: Vec<TimerEvent> = harness((0..batch).map(|_| gpu.timer_event()).collect())?;
    let ends: Vec<TimerEvent> = harness((0..batch).map(|_| gpu.timer_event()).collect())?;
    let mut samples: Vec<f64> = Vec::new();
    let sampling_started = Instant::now();
    let mut fill_byte = 0u8;
    let stop = loop {
        for (s, e) in starts.iter().zip(&ends) {
            if let Some(buffer) = sampling.flush {
                fill_byte = fill_byte.wrapping_add(1);
                harness(gpu.fill(buffer.ptr(), fill_byte, buffer.len()))?;
            }
            harness(gpu.record(s))?;
            match sampling.graph {
                Some(g) => kernel_err(gpu.replay(g))?,
                None => kernel_err(kernel.launch(gpu, &sampling.args))?,
            }
            harness(gpu.record(e))?;
        }
        kernel_err(gpu.synchronize())?;
        for (s, e) in starts.iter().zip(&ends) {
            samples.push(harness(s.elapsed_ms(e))? * 1e3 / sampling.per_replay as f64);
        }
        if let Some(reason) = rule.decide(&samples, sampling_started.elapsed().as_secs_f64()) {
            break reason;
        }
    };
    Ok(Sampled {
        samples,
        stop,
        seconds: sampling_started.elapsed().as_secs_f64(),
    })
}

/// `--measure-peaks`: the device's copy bandwidth, measured, and the kernel's share of it
/// (`gbps`), beside the DRAM's theoretical bandwidth.
fn record_peaks(gpu: &Gpu, gbps: f64, record: &mut Record) {
    let figures = &mut record.result.figures;
    match measure_copy_gbps(gpu) {
        Ok(peak) => {
            figures.peak_copy_gbps = Some(peak);
            figures.gbps_share_of_copy_peak = Some(finite(gbps / peak));
        }
        Err(e) => figures.peak_copy_error = Some(e.to_string()),
    }
    figures.dram_theoretical_gbps = gpu.info().theoretical_dram_gbps();
    figures.compute_peak = Some(
        "not measured (no matrix-product library is linked; compare with the SDPA baseline)"
            .to_string(),
    );
}

/// Device-to-device copy bandwidth (bytes read plus bytes written per second, GB/s): the best
/// of 10 copies of up to 512 MiB.
fn measure_copy_gbps(gpu: &Gpu) -> Result<f64, CudaError> {
    let (free, _) = gpu.memory_info()?;
    let bytes = (free / 4).min(512 << 20);
    let src = gpu.alloc(bytes)?;
    let dst = gpu.alloc(bytes)?;
    gpu.fill(src.ptr(), 0x3C, bytes)?;
    let (start, end) = (gpu.timer_event()?, gpu.timer_event()?);
    let mut best_ms = f64::INFINITY;
    for rep in 0..13 {
        gpu.record(&start)?;
        gpu.copy(dst.ptr(), src.ptr(), bytes)?;
        gpu.record(&end)?;
        let ms = start.elapsed_ms(&end)?;
        if rep >= 3 {
            best_ms = best_ms.min(ms);
        }
    }
    Ok(2.0 * bytes as f64 / (best_ms * 1e-3) / 1e9)
}
