//! `--mode check`: the kernel's output against the f64 reference, on the requested problem and
//! on `--random-shapes` seeded shapes with both masks. Each problem is launched twice; the
//! second output must equal the first bit for bit, and the guards are read after both.

use std::time::Instant;

use parsers::harness::Check;

use super::{Record, Verdict, finite, launch_and_read, setup};
use crate::cli::{Mode, RunOptions};
use crate::gpu::{AttentionKernel, Gpu};
use crate::problem::Problem;
use crate::reference::{Reference, RowSelection};
use crate::shapes::random_shapes;
use crate::tolerance::{Tolerance, compare};

/// Reference work above which rows are sampled (unless `--full-reference`): about 2e10 f64
/// operations, seconds on a many-core host.
pub const REFERENCE_BUDGET_FLOPS: f64 = 2e10;

/// Checks `problem`, then the random shapes; stops launching after a fault that breaks the
/// context (the remaining problems are reported as skipped).
pub fn run_check(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    problem: Problem,
) -> Vec<Record> {
    let mut problems = vec![problem];
    let info = kernel.info();
    for shape in random_shapes(
        opts.random_shapes,
        opts.seed,
        info.head_dim as usize,
        info.block_m as usize,
        info.block_n as usize,
    ) {
        for causal in [false, true] {
            problems.push(Problem::new(shape, problem.dtype, causal));
        }
    }
    let mut records = Vec::with_capacity(problems.len());
    let mut lost: Option<String> = None;
    for (index, p) in problems.into_iter().enumerate() {
        if let Some(reason) = &lost {
            let mut skipped = Record::new(Mode::Check, kernel.name(), opts, &p);
            skipped.result.skipped = Some(reason.clone());
            records.push(skipped);
            continue;
        }
        // Each problem draws its own inputs.
        let seed = opts.seed.wrapping_add(index as u64);
        let record = check_one(gpu, kernel, opts, p, seed);
        if record.result.figures.cuda_error_sticky == Some(true) {
            lost = Some(format!(
                "not run: the CUDA context was lost to the fault in check {} ({})",
                index + 1,
                p.label()
            ));
        }
        records.push(record);
    }
    records
}

fn check_one(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    opts: &RunOptions,
    problem: Problem,
    seed: u64,
) -> Record {
    let mut record = Record::new(Mode::Check, kernel.name(), opts, &problem);
    record.result.figures.seed = Some(seed);
    let run_opts = RunOptions {
        seed,
        ..opts.clone()
    };
    let Some(dp) = setup(gpu, &run_opts, problem, &mut record) else {
        return record;
    };
    let Some(out) = launch_and_read(gpu, kernel, &dp, &mut record) else {
        return record;
    };
    // A second launch on the same inputs must reproduce the first output bit for bit: state
    // carried between launches, or a race, shows up here even when one output looks right.
    let repeat = dp
        .poison_output(gpu)
        .and_then(|()| kernel.launch(gpu, &dp.args()))
        .and_then(|()| gpu.synchronize())
        .and_then(|()| dp.read_output(gpu));
    let repeat_differing = match repeat {
        Ok(second) => out.iter().zip(&second).filter(|(a, b)| a != b).count(),
        Err(e) => {
            record.result.figures.failed_on = Some("second launch".to_string());
            record.fail_cuda(&e, false);
            return record;
        }
    };
    let mut corrupted = match dp.check_guards(gpu) {
        Ok(c) => c,
        Err(e) => {
            record.fail_cuda(&e, true);
            return record;
        }
    };
    let changed_inputs = match dp.changed_inputs(gpu) {
        Ok(c) => c,
        Err(e) => {
            record.fail_cuda(&e, true);
            return record;
        }
    };

    let info = kernel.info();
    let rows = if opts.full_reference {
        RowSelection::all(problem.shape.seq_len)
    } else {
        RowSelection::for_budget(
            &problem,
            REFERENCE_BUDGET_FLOPS,
            info.block_m as usize,
            info.block_n as usize,
            seed,
        )
    };
    let started = Instant::now();
    let reference = Reference::compute(&problem, &dp.inputs, &rows);
    let reference_seconds = started.elapsed().as_secs_f64();
    let base = Tolerance::for_dtype(problem.dtype);
    let tol = opts.tolerance.map_or(base, |t| base.with_rel_l2(t));
    let cmp = compare(&problem, &out, &reference, &tol);

    let mut names: Vec<String> = corrupted.iter().map(|c| c.region.clone()).collect();
    names.extend(changed_inputs);
    let passed = cmp.passed(&tol) && names.is_empty() && repeat_differing == 0;
    if !passed {
        record.verdict = Verdict::KernelFailure;
    }
    record.result.check = Some(Check {
        passed,
        max_abs_err: finite(cmp.max_abs_err),
        rel_l2_err: finite(cmp.rel_l2_err),
        tolerance: tol.rel_l2,
        nan_count: cmp.nan_count,
        unwritten: cmp.unwritten,
        canaries_corrupted: names,
    });
    corrupted.sort_by(|a, b| a.region.cmp(&b.region));
    let figures = &mut record.result.figures;
    figures.repeat_elements_differing = Some(repeat_differing as u64);
    figures.inf_count = Some(cmp.inf_count);
    figures.elements_over_bound = Some(cmp.over_bound);
    figures.worst_bound_ratio = Some(finite(cmp.worst_ratio()));
    figures.worst_element = cmp.worst;
    figures.first_unwritten = cmp.first_unwritten;
    figures.first_nonfinite = cmp.first_nonfinite;
    figures.elements_compared = Some(cmp.compared);
    figures.elements_total = Some(cmp.total);
    figures.rows_compared_per_head = Some(rows.rows().len() as u64);
    figures.reference_complete = Some(rows.is_complete());
    figures.unit_roundoff = Some(tol.unit_roundoff);
    figures.element_bound_factor = Some(tol.element_factor);
    figures.reference_seconds = Some(reference_seconds);
    figures.canary_details = Some(corrupted);
    record
}
