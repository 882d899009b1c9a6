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
