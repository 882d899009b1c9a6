//! `--mode once`: one launch and nothing else, so that compute-sanitizer and ncu see exactly
//! one kernel launch (plus the one-thread `attention_launch_info`).

use super::{Record, Verdict, launch_and_read, scan_output, setup};
use crate::cli::{Mode, RunOptions};
use crate::gpu::{AttentionKernel, Gpu};
use crate::problem::Problem;

/// Poisons O, launches once, synchronises, and reports the launch error if any, plus what can
/// be seen without a reference: unwritten, NaN and infinite elements and changed guards.
pub fn run_once(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    problem: Problem,
) -> Record {
    let mut record = Record::new(Mode::Once, kernel.name(), opts, &problem);
    let Some(dp) = setup(gpu, opts, problem, &mut record) else {
        return record;
    };
    let Some(out) = launch_and_read(gpu, kernel, &dp, &mut record) else {
        return record;
    };
    let (unwritten, nan, inf) = scan_output(problem.dtype, &out);
    let figures = &mut record.result.figures;
    figures.unwritten = Some(unwritten);
    figures.nan_count = Some(nan);
    figures.inf_count = Some(inf);
    match dp.check_guards(gpu) {
        Ok(corrupted) => {
            if !corrupted.is_empty() {
                record.verdict = Verdict::KernelFailure;
            }
            record.result.figures.canaries_corrupted = Some(corrupted);
        }
        Err(e) => record.fail_cuda(&e, true),
    }
    if unwritten + nan + inf > 0 {
        record.verdict = record.verdict.max(Verdict::KernelFailure);
    }
    record
}
