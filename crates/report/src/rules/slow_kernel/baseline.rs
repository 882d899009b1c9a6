//! The program's kernels set beside the baseline's: where each stands against the baseline the run compared it with, and what the baseline does that it does not.

use super::*;
use crate::message::{Message, code, figure, msg};

/// What makes a cause matter: the program's own benchmark against its baseline, in the same
/// config, when the run has both. The benchmark furthest behind its baseline is named.
pub(super) fn against_baseline(ctx: &Ctx, drafts: &mut [Draft]) {
    let timings = crate::timings::timings(ctx.joined);
    let harness = crate::tables::bench_rows(ctx.joined);
    for d in drafts.iter_mut() {
        let slowest = timings
            .rows
            .iter()
            .filter(|r| r.bench.config == d.config)
            .filter_map(|r| Some((r, r.ratio?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((row, ratio)) = slowest {
            d.figures.insert("baseline_ratio".into(), json!(ratio));
            d.explanation.append(word_own_benchmark(
                &row.bench.timing.name,
                ratio,
                row.statistic.unwrap_or("mean"),
            ));
        } else if let Some(line) = against_harness_baseline(&harness, d, profiled_case(ctx, d)) {
            d.explanation.append(line);
        }
        // A kernel at least as fast as its baseline is not slow, whatever ncu still sees.
        if d.figures
            .get("baseline_ratio")
            .and_then(|v| v.as_f64())
            .is_some_and(|r| r >= 1.0)
        {
            d.level = Level::Note;
            d.explanation.append(msg!(
                " It already runs at least as fast as its baseline: what ncu estimates is \
                 headroom, not a slowness."
            ));
        }
    }
    what_the_baseline_does(ctx, drafts);
}

/// Ten times slower than its baseline or more: beside the kernel's largest measured cause,
/// what the baseline's own longest kernel does that this one does not, each where both
/// profiles show it: the tensor cores, on-chip reuse (floating-point operations per byte loaded
/// from global memory, four times as many or more), a grid that fills the GPU.
fn what_the_baseline_does(ctx: &Ctx, drafts: &mut [Draft]) {
    let Some((own, theirs)) = crate::resources::beside_baseline(ctx.joined) else {
        return;
    };
    let Some(best) = theirs.first() else { return };
    let far_behind = |d: &Draft| {
        d.level == Level::Warning
            && d.figures
                .get("baseline_ratio")
                .and_then(|v| v.as_f64())
                .is_some_and(|r| r > 0.0 && r <= 0.1)
    };
    let gain = |d: &Draft| {
        Figure::ProgramGain
            .of(&d.figures)
            .or_else(|| Figure::EstimatedSpeedup.of(&d.figures))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    let Some(top) = (0..drafts.len())
        .filter(|&i| far_behind(&drafts[i]))
        .max_by(|&a, &b| gain(&drafts[a]).total_cmp(&gain(&drafts[b])))
    else {
        return;
    };
    let d = &mut drafts[top];
    let Some(kernel) = d.kernel.as_deref().map(KernelId::of) else {
        return;
    };
    let Some(ours) = own
        .iter()
        .find(|k| KernelId::of(&k.summary.kernel) == kernel)
    else {
        return;
    };
    let mut differences: Vec<Difference> = Vec::new();
    if ours.tensor_instructions == Some(0) && best.tensor_instructions.is_some_and(|n| n > 0) {
        differences.push(Difference::TensorCores {
            instructions: best.tensor_instructions.unwrap_or(0),
            place: best.summary.limit.as_ref().map(|p| p.cell()),
        });
        d.figures.insert(
            "baseline_tensor_instructions".into(),
            json!(best.tensor_instructions),
        );
    }
    if let (Some(o), Some(t)) = (ours.flops_per_load_byte, best.flops_per_load_byte)
        && t >= 4.0 * o
        && t > 0.0
    {
        differences.push(Difference::Reuse { theirs: t, ours: o });
    }
    if let (Some(og), Some(tg), Some(sms)) = (
        ours.summary.grid_size,
        best.summary.grid_size,
        ours.summary.sm_count,
    ) && og < u64::from(sms)
        && tg >= u64::from(sms)
    {
        differences.push(Difference::Grid {
            theirs: tg,
            ours: og,
            sms,
        });
    }
    if differences.is_empty() {
        return;
    }
    d.explanation.append(word_differences(
        &kernel,
        &best.summary.kernel,
        &differences,
    ));
}

/// " The program's own benchmark `64` runs 3.2x slower than its baseline (median of each)."
fn word_own_benchmark(name: &str, ratio: f64, statistic: &str) -> Message {
    let pace = if ratio > 0.0 && ratio < 1.0 {
        msg!(
            "{}x slower than its baseline",
            crate::text::sig3(1.0 / ratio)
        )
    } else {
        msg!("at {}x its baseline's speed", figure(format!("{ratio:.2}")))
    };
    msg!(
        " The program's own benchmark {} runs {} ({} of each).",
        code(name),
        pace,
        statistic
    )
}

/// What the baseline's longest kernel does that the program's does not.
enum Difference {
    /// It runs on the tensor cores: its tensor-core instructions, and where it stands against
    /// the limit (a roofline cell).
    TensorCores {
        instructions: u64,
        place: Option<String>,
    },
    /// It reuses on chip: floating-point operations per byte loaded, its and ours.
    Reuse { theirs: f64, ours: f64 },
    /// Its grid fills the SMs: its blocks and ours, and the SMs.
    Grid { theirs: u64, ours: u64, sms: u32 },
}

/// " What the baseline does that `k` does not, by its `theirs`: ...".
fn word_differences(kernel: &KernelId, theirs: &str, differences: &[Difference]) -> Message {
    let named = || code(kernel.as_str());
    let differences = differences
        .iter()
        .map(|d| match d {
            Difference::TensorCores {
                instructions,
                place,
            } => msg!(
                "it runs on the tensor cores ({} tensor-core instructions executed{}) where {} \
                 issues none",
                instructions.to_string(),
                place
                    .as_ref()
                    .map(|p| msg!(", {}", p))
                    .unwrap_or_default(),
                named()
            ),
            Difference::Reuse { theirs, ours } => msg!(
                "it does {} floating-point operations per byte it loads from global memory, {} \
                 {}: it keeps on chip (shared memory, registers) what {} loads again",
                crate::text::sig3(*theirs),
                named(),
                crate::text::sig3(*ours),
                named()
            ),
            Difference::Grid { theirs, ours, sms } => msg!(
                "its grid of {} blocks fills the {} SMs, where {} launches {}",
                theirs.to_string(),
                sms.to_string(),
                named(),
                ours.to_string()
            ),
        })
        .collect();
    msg!(
        " What the baseline does that {} does not, by its {}: {}.",
        named(),
        code(theirs),
        Message::words(differences)
    )
}

/// The problem the profiling run behind a cause ran: the harness result its unit kept beside
/// ncu's log, when it kept one.
fn profiled_case(ctx: &Ctx, d: &Draft) -> Option<crate::tables::Case> {
    let j = ctx.joined;
    let dir = |i: usize| j.source(i).map(|s| std::path::Path::new(s.path).parent());
    let logs: Vec<_> = d
        .explains
        .iter()
        .filter_map(|&i| j.findings.get(i))
        .filter_map(|f| dir(f.source))
        .collect();
    j.results
        .iter()
        .find(|r| dir(r.source).is_some_and(|d| logs.contains(&d)))
        .map(|r| crate::tables::Case::of(r.result))
}

/// The built-in kernel's benchmark against the baseline's (SDPA) in the same run: the profiled
/// problem when the bench ran it, else the case where the cause's config runs furthest behind
/// the fastest baseline timed the same way.
fn against_harness_baseline(
    rows: &[crate::tables::BenchRow],
    d: &mut Draft,
    profiled: Option<crate::tables::Case>,
) -> Option<Message> {
    let config = d.config.as_deref()?;
    let profiled = profiled.filter(|p| {
        rows.iter()
            .any(|r| !r.baseline && r.implementation == config && r.case == *p)
    });
    let (kernel, baseline, ratio) = rows
        .iter()
        .filter(|r| !r.baseline && r.implementation == config && r.p50_us > 0.0)
        .filter(|r| profiled.as_ref().is_none_or(|p| r.case == *p))
        .filter_map(|k| {
            let fastest = rows
                .iter()
                .filter(|b| b.baseline && b.case == k.case && b.timing == k.timing)
                .filter(|b| b.cache == k.cache && b.p50_us > 0.0)
                .min_by(|a, b| a.p50_us.total_cmp(&b.p50_us))?;
            Some((k, fastest, fastest.p50_us / k.p50_us))
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))?;
    d.figures.insert("baseline_ratio".into(), json!(ratio));
    Some(msg!(
        " In this run's benchmark, config {} at {} runs at {}x the speed of {} (p50 {} µs \
         against {} µs, timed the same way; below 1 it is slower), at {} TFLOP/s.",
        code(config),
        kernel.case.label(),
        figure(format!("{ratio:.2}")),
        code(&baseline.implementation),
        figure(format!("{:.1}", kernel.p50_us)),
        figure(format!("{:.1}", baseline.p50_us)),
        figure(format!("{:.0}", kernel.tflops))
    ))
}
