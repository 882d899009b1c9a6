//! The report's tables: per-config resources, correctness and stress, the bench against the
//! baselines and beside the baseline run, and the Nsight Compute summary.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::run::Run;
use crate::text::{bytes, fixed, md_cell, md_code, md_text, sig3};
use crate::timings::NOISY;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "—".to_string())
}

pub(super) fn per_config(out: &mut String, a: &Analysis) {
    let rows = &a.tables.kernels;
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Kernels per config\n");
    let _ = writeln!(
        out,
        "| Config | Arch | Kernel | Registers | Spills (store/load) | Shared (static) | Shared (dynamic) | Stack | Threads | Occupancy | HMMA | HGMMA | LDL/STL |"
    );
    let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|");
    let mut caveats: Vec<String> = Vec::new();
    let mut sources: Vec<&'static str> = Vec::new();
    let mut sourced = |value: Option<String>, from: Option<&'static str>| match (value, from) {
        (Some(v), Some(f)) => {
            let tag = source_tag(f);
            if !sources.contains(&f) {
                sources.push(f);
            }
            format!("{v} ({tag})")
        }
        (Some(v), None) => v,
        (None, _) => "—".to_string(),
    };
    for r in rows {
        let spills = match (r.spill_store_bytes, r.spill_load_bytes) {
            (None, None) => "unknown".to_string(),
            (s, l) => format!("{} / {}", s.unwrap_or(0), l.unwrap_or(0)),
        };
        let occupancy = match &r.occupancy {
            Some(o) => {
                let mut text = md_text(&format!(
                    "{} blk/SM ({}%), {}",
                    o.blocks_per_sm,
                    fixed(o.fraction * 100.0, 1),
                    o.limiter.as_str()
                ));
                if let Some(c) = &r.occupancy_caveat {
                    if !caveats.contains(c) {
                        caveats.push(c.clone());
                    }
                    let n = caveats.iter().position(|x| x == c).unwrap_or(0) + 1;
                    text.push_str(&format!(" [{n}]"));
                }
                text
            }
            None => r
                .occupancy_caveat
                .as_deref()
                .map(md_text)
                .unwrap_or_else(|| "—".to_string()),
        };
        let local = match (r.ldl, r.stl) {
            (Some(l), Some(s)) => format!("{l} / {s}"),
            _ => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.config
                .as_deref()
                .map(md_text)
                .unwrap_or_else(|| "—".into()),
            r.arch.as_deref().map(md_text).unwrap_or_else(|| "—".into()),
            md_cell(&md_code(&r.kernel)),
            opt(r.registers),
            spills,
            r.static_shared_bytes
                .map(bytes)
                .unwrap_or_else(|| "—".into()),
            sourced(r.dynamic_shared_bytes.map(bytes), r.dynamic_shared_from),
            r.stack_frame_bytes.map(bytes).unwrap_or_else(|| "—".into()),
            sourced(r.threads_per_block.map(|t| t.to_string()), r.threads_from),
            occupancy,
            opt(r.hmma),
            opt(r.hgmma),
            local
        );
    }
    let _ = writeln!(out);
    if !sources.is_empty() {
        let said: Vec<String> = sources
            .iter()
            .map(|f| format!("({}) {}", source_tag(f), source_meaning(f)))
            .collect();
        let _ = writeln!(
            out,
            "Threads and dynamic shared memory per block: {}.\n",
            said.join("; ")
        );
    }
    for (i, c) in caveats.iter().enumerate() {
        let _ = writeln!(out, "[{}] {}.  ", i + 1, md_text(c));
    }
    if !caveats.is_empty() {
        let _ = writeln!(out);
    }
}

/// The short tag a figure's provenance gets in the per-config table.
fn source_tag(from: &str) -> &str {
    match from {
        crate::resources::HARNESS => "harness",
        "WARPS define" => "WARPS",
        other => other,
    }
}

/// What a provenance tag of the per-config table means.
fn source_meaning(from: &str) -> &'static str {
    match from {
        "ncu" => "Nsight Compute's launch statistics of the profiled launch",
        crate::resources::HARNESS => {
            "what the kernel's `attention_launch_info` reported, which the harness launched with"
        }
        "WARPS define" => "32 x the config's WARPS define (not measured)",
        _ => "as recorded",
    }
}

pub(super) fn correctness(out: &mut String, a: &Analysis) {
    let checks = &a.tables.checks;
    let stress = &a.tables.stress;
    if checks.is_empty() && stress.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Correctness and stress\n");
    if !checks.is_empty() {
        let passed = checks.iter().filter(|c| c.passed == Some(true)).count();
        let _ = writeln!(
            out,
            "Check against the f64 CPU reference: {passed}/{} passed.\n",
            checks.len()
        );
        let _ = writeln!(
            out,
            "| Config | Case | Result | Max abs err | Rel L2 err | Tolerance | NaN | Unwritten |"
        );
        let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|");
        for c in checks {
            let result = match (c.passed, &c.error) {
                (_, Some(e)) => format!("💥 {}", md_text(e)),
                (Some(true), None) => "✅ pass".to_string(),
                (Some(false), None) => {
                    if let Some(why) = &c.failed_within_tolerance {
                        format!("❌ fail within tolerance: {}", md_text(why))
                    } else if c.canaries_corrupted.is_empty() {
                        "❌ fail".to_string()
                    } else {
                        format!(
                            "❌ fail (canaries: {})",
                            md_text(&c.canaries_corrupted.join(", "))
                        )
                    }
                }
                (None, None) if !c.launched => "💥 not launched".to_string(),
                (None, None) => "—".to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.config
                    .as_deref()
                    .map(md_text)
                    .unwrap_or_else(|| "—".into()),
                md_text(&c.case.label()),
                result,
                c.max_abs_err.map(sig3).unwrap_or_else(|| "—".into()),
                c.rel_l2_err.map(sig3).unwrap_or_else(|| "—".into()),
                c.tolerance.map(sig3).unwrap_or_else(|| "—".into()),
                opt(c.nan_count),
                opt(c.unwritten)
            );
        }
        let _ = writeln!(out);
    }
    if !stress.is_empty() {
        let _ = writeln!(
            out,
            "| Config | Case | Launches | Sync | Result | Mismatched | Canaries |"
        );
        let _ = writeln!(out, "|---|---|--:|---|---|--:|---|");
        for s in stress {
            let result = match (s.first_failure, &s.failure_kind) {
                (Some(n), kind) => format!(
                    "❌ launch {n}: {}{}",
                    md_text(kind.as_deref().unwrap_or("failure")),
                    s.error
                        .as_deref()
                        .map(|e| format!(" ({})", md_text(e)))
                        .unwrap_or_default()
                ),
                (None, _) if s.mismatched_launches > 0 => "❌ mismatch".to_string(),
                (None, _) => "✅ all identical".to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                s.config
                    .as_deref()
                    .map(md_text)
                    .unwrap_or_else(|| "—".into()),
                md_text(&s.case.label()),
                s.launches,
                md_text(&s.sync),
                result,
                s.mismatched_launches,
                if s.canaries_corrupted.is_empty() {
                    "intact".to_string()
                } else {
                    md_text(&s.canaries_corrupted.join(", "))
                }
            );
        }
        let _ = writeln!(out);
    }
}

pub(super) fn bench(out: &mut String, a: &Analysis, run: &Run) {
    let rows = &a.tables.bench;
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Performance\n");
    let _ = writeln!(
        out,
        "Speed-up = baseline p50 / the best config's p50 with the same timing method (above 1: the kernel is faster). Noise = (p90 - p50) / p50.\n"
    );
    let _ = writeln!(
        out,
        "| Case | Implementation | Timing | p50 µs | p90 µs | TFLOP/s | Noise | Speed-up |"
    );
    let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|");
    let mut last_case = String::new();
    for r in rows {
        let case = r.case.label();
        let shown_case = if case == last_case {
            String::new()
        } else {
            md_text(&case)
        };
        last_case = case;
        let name = if r.best {
            format!("**{}** (best)", md_cell(&md_code(&r.implementation)))
        } else {
            md_cell(&md_code(&r.implementation))
        };
        // A ratio against a timing whose own spread is this wide says little.
        let speedup = match r.speedup {
            Some(s) if r.noise > NOISY => format!("{}× (noisy)", fixed(s, 2)),
            Some(s) => format!("{}×", fixed(s, 2)),
            None => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {}{} | {} {} | {} | {} | {} | {}% | {} |",
            shown_case,
            name,
            if r.throttled { " ⚠️ throttled" } else { "" },
            md_text(&r.timing),
            md_text(&r.cache),
            sig3(r.p50_us),
            sig3(r.p90_us),
            sig3(r.tflops),
            fixed(r.noise * 100.0, 1),
            speedup
        );
    }
    let _ = writeln!(out);
    let skipped: Vec<String> = a
        .tables
        .not_timed
        .iter()
        .map(|n| {
            format!(
                "{} ({}): {}",
                md_code(&n.kernel),
                md_text(&n.case.label()),
                md_text(&n.why)
            )
        })
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "Not timed:\n");
        for s in skipped {
            let _ = writeln!(out, "- {s}");
        }
        let _ = writeln!(out);
    }
    if crate::render::svg::bench_svg(a).is_some() {
        let _ = writeln!(
            out,
            "![bench]({})\n",
            crate::render::svg::bench_svg_file_name(run)
        );
    }
}

/// The program's longest kernel beside the baseline's two longest, each as its own profile
/// measured it.
pub(super) fn beside_baseline(out: &mut String, a: &Analysis) {
    let Some((own, theirs)) = &a.tables.beside_baseline else {
        return;
    };
    let _ = writeln!(
        out,
        "## Beside the baseline
"
    );
    let _ = writeln!(
        out,
        "The program's longest profiled kernel and the baseline's two longest, each from its own \
         profile (the first launches of each kernel its command ran; their problem sizes are \
         the commands' own).\n"
    );
    let _ = writeln!(
        out,
        "| Of | Kernel | Duration µs | Against the limit | DRAM | Achieved occupancy | Tensor-core instructions |"
    );
    let _ = writeln!(out, "|---|---|--:|---|--:|--:|--:|");
    let pct = |v: Option<f64>| {
        v.map(|v| format!("{}%", fixed(v, 1)))
            .unwrap_or_else(|| "—".into())
    };
    let rows = own
        .iter()
        .map(|k| ("program", k))
        .chain(theirs.iter().map(|k| ("baseline", k)));
    for (of, k) in rows {
        let n = &k.summary;
        let _ = writeln!(
            out,
            "| {of} | {} | {} | {} | {} | {} | {} |",
            md_cell(&md_code(&short_name(&n.kernel))),
            n.duration_us.map(sig3).unwrap_or_else(|| "—".into()),
            n.limit
                .as_ref()
                .map(|p| p.cell())
                .unwrap_or_else(|| "—".into()),
            pct(n.dram_throughput_pct),
            pct(n.achieved_occupancy_pct),
            opt(k.tensor_instructions)
        );
    }
    let _ = writeln!(out);
    if let Some(cmp) = &a.tables.contrast {
        figure_by_figure(out, cmp);
    }
}

/// The program's kernel and the baseline's, figure by figure, with what separates them.
fn figure_by_figure(out: &mut String, cmp: &crate::contrast::Comparison) {
    if cmp.contrasts.is_empty() {
        return;
    }
    let ours = md_code(&short_name(cmp.kernel.as_str()));
    let theirs = md_code(&short_name(&cmp.baseline_kernel));
    let _ = writeln!(
        out,
        "{ours} against the baseline's {theirs}, figure by figure (atomics and local bytes per thread launched; \
         sectors and wavefronts per ideal one; instructions for the whole launch, and per \
         element where the profile stage gives the problem's `elements:`). A figure \
         twice as bad (sectors, wavefronts) or four times (the rest) separates the two and is a \
         cause; within 1.5x it is shared, and a cause standing on it is not why the program is \
         slower.\n"
    );
    let _ = writeln!(
        out,
        "| Figure | {ours} | {theirs} | Program against baseline |"
    );
    let _ = writeln!(out, "|---|--:|--:|---|");
    for c in &cmp.contrasts {
        let (p, b) = c.shown();
        let _ = writeln!(
            out,
            "| {} | {p} | {b} | {} |",
            c.measure.label(),
            c.against()
        );
    }
    let _ = writeln!(out);
}

/// A kernel name for a table cell: a framework's templates can run to a thousand characters.
fn short_name(name: &str) -> String {
    const MAX: usize = 80;
    if name.chars().count() <= MAX {
        return name.to_string();
    }
    let mut short: String = name.chars().take(MAX).collect();
    short.push('…');
    short
}

pub(super) fn ncu(out: &mut String, a: &Analysis, run: &Run) {
    let rows = &a.tables.ncu;
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Nsight Compute\n");
    let _ = writeln!(
        out,
        "| Config | Kernel | Duration µs | Against the limit | SM throughput | Memory throughput | DRAM | Tensor pipe | Achieved occupancy | Theoretical | Registers | Block |"
    );
    let _ = writeln!(out, "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    let pct = |v: Option<f64>| {
        v.map(|v| format!("{}%", fixed(v, 1)))
            .unwrap_or_else(|| "—".into())
    };
    for n in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            n.config
                .as_deref()
                .map(md_text)
                .unwrap_or_else(|| "—".into()),
            md_cell(&md_code(&n.kernel)),
            n.duration_us.map(sig3).unwrap_or_else(|| "—".into()),
            n.limit
                .as_ref()
                .map(|p| p.cell())
                .unwrap_or_else(|| "—".into()),
            pct(n.sm_throughput_pct),
            pct(n.memory_throughput_pct),
            pct(n.dram_throughput_pct),
            pct(n.tensor_pipe_pct),
            pct(n.achieved_occupancy_pct),
            pct(n.theoretical_occupancy_pct),
            opt(n.registers),
            opt(n.block_size)
        );
    }
    let _ = writeln!(out);
    if crate::render::svg::roofline_svg(a).is_some() {
        let _ = writeln!(
            out,
            "![roofline]({})\n",
            crate::render::svg::roofline_svg_file_name(run)
        );
    }
    let advice = &a.tables.profiler_remarks;
    if !advice.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Nsight Compute rules ({})</summary>\n",
            advice.len()
        );
        for f in advice {
            let _ = writeln!(
                out,
                "- {}{}: {}",
                f.config
                    .as_deref()
                    .map(|c| format!("{} ", md_code(c)))
                    .unwrap_or_default(),
                f.kernel.as_deref().map(md_code).unwrap_or_default(),
                md_text(&f.message)
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
}
