//! The Markdown of a diff: verdict, new, fixed and unchanged root causes, tool findings,
//! resource changes and timings.

use std::fmt::Write;

use crate::diagnosis::Diagnosis;
use crate::diff::{Diff, RunSummary};
use crate::noise::Judgement;
use crate::text::{fixed, md_cell, md_code, md_text, plural, sig3};

/// Renders the diff.
pub fn render(d: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Exhibit diff: {} → {}\n",
        md_text(&d.a.id),
        md_text(&d.b.id)
    );
    let _ = writeln!(out, "| Item | A (before) | B (after) |");
    let _ = writeln!(out, "|---|---|---|");
    let row = |name: &str, f: &dyn Fn(&RunSummary) -> String| {
        format!("| {name} | {} | {} |", f(&d.a), f(&d.b))
    };
    let _ = writeln!(out, "{}", row("Run", &|r| md_cell(&md_code(&r.id))));
    let _ = writeln!(
        out,
        "{}",
        row("Commit", &|r| match &r.commit {
            Some(c) => format!(
                "`{}`{}",
                c.chars().take(12).collect::<String>(),
                if r.dirty { " (dirty)" } else { "" }
            ),
            None => "—".to_string(),
        })
    );
    let _ = writeln!(
        out,
        "{}",
        row("GPU", &|r| md_text(r.gpu.as_deref().unwrap_or("none")))
    );
    let _ = writeln!(
        out,
        "{}",
        row("Driver", &|r| md_text(r.driver.as_deref().unwrap_or("—")))
    );
    let _ = writeln!(
        out,
        "{}",
        row("Verdict", &|r| format!("{:?}", r.verdict).to_lowercase())
    );
    let _ = writeln!(out);

    let slower = d
        .perf
        .iter()
        .filter(|p| !p.baseline && p.judgement == Judgement::Slower)
        .count();
    let faster = d
        .perf
        .iter()
        .filter(|p| !p.baseline && p.judgement == Judgement::Faster)
        .count();
    let mut parts = Vec::new();
    if !d.new.is_empty() {
        parts.push(plural(
            d.new.len() as u64,
            "new root cause",
            "new root causes",
        ));
    }
    if !d.fixed.is_empty() {
        parts.push(plural(
            d.fixed.len() as u64,
            "fixed root cause",
            "fixed root causes",
        ));
    }
    if slower > 0 {
        parts.push(plural(slower as u64, "slower timing", "slower timings"));
    }
    if faster > 0 {
        parts.push(plural(faster as u64, "faster timing", "faster timings"));
    }
    if parts.is_empty() {
        parts.push("no change in root causes or timings".to_string());
    }
    let _ = writeln!(
        out,
        "**Verdict:** {} {}.\n",
        if d.has_regression() {
            "❌ Regression:"
        } else {
            "✅ No regression:"
        },
        parts.join(", ")
    );

    section(&mut out, "New root causes", &d.new);
    section(&mut out, "Fixed root causes", &d.fixed);
    section(&mut out, "Unchanged root causes", &d.unchanged);

    if !d.new_findings.is_empty() || !d.fixed_findings.is_empty() {
        let _ = writeln!(out, "## Tool findings\n");
        let _ = writeln!(
            out,
            "| Change | Config | Kind | Kernel | Location | Records | Message |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|--:|---|");
        for (word, list) in [("new", &d.new_findings), ("fixed", &d.fixed_findings)] {
            for f in list {
                let _ = writeln!(
                    out,
                    "| {word} | {} | {} | {} | {} | {} | {} |",
                    f.config
                        .as_deref()
                        .map(md_text)
                        .unwrap_or_else(|| "—".into()),
                    md_text(&f.kind),
                    f.kernel
                        .as_deref()
                        .map(|k| md_cell(&md_code(k)))
                        .unwrap_or_else(|| "—".into()),
                    f.location
                        .as_deref()
                        .map(|l| md_cell(&md_code(l)))
                        .unwrap_or_else(|| "—".into()),
                    f.count,
                    md_text(&f.message)
                );
            }
        }
        let _ = writeln!(out);
    }

    if !d.resources.is_empty() {
        let _ = writeln!(out, "## Resources\n");
        let _ = writeln!(out, "| Config | Arch | Kernel | Figure | A | B |");
        let _ = writeln!(out, "|---|---|---|---|--:|--:|");
        for r in &d.resources {
            let show = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "—".into());
            let (a, b) = if r.field == "added" || r.field == "removed" {
                (
                    if r.before.is_some() {
                        "present"
                    } else {
                        "absent"
                    }
                    .to_string(),
                    if r.after.is_some() {
                        "present"
                    } else {
                        "absent"
                    }
                    .to_string(),
                )
            } else {
                (show(r.before), show(r.after))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {a} | {b} |",
                r.config
                    .as_deref()
                    .map(md_text)
                    .unwrap_or_else(|| "—".into()),
                r.arch.as_deref().map(md_text).unwrap_or_else(|| "—".into()),
                md_cell(&md_code(&r.kernel)),
                r.field.replace('_', " ")
            );
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(out, "## Performance\n");
    if let Some(why) = &d.timing_refused {
        let _ = writeln!(out, "{}.\n", md_text(why));
    } else if d.perf.is_empty() {
        let _ = writeln!(out, "No timing appears in both runs.\n");
    } else {
        let _ = writeln!(
            out,
            "A change within the larger run's measured noise is the same; beyond twice the noise it is faster or slower; in between, unsure.\n"
        );
        let _ = writeln!(
            out,
            "| Case | Implementation | Timing | A p50 µs | B p50 µs | Change | Noise | Judgement |"
        );
        let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|---|");
        for p in &d.perf {
            let icon = match p.judgement {
                Judgement::Same => "＝ same",
                Judgement::Faster => "🟢 faster",
                Judgement::Slower => "🔴 slower",
                Judgement::Unsure => "❔ unsure",
            };
            let _ = writeln!(
                out,
                "| {} | {}{} | {} {} | {} | {} | {}% | {}% | {}{} |",
                md_text(&p.case.label()),
                md_cell(&md_code(&p.implementation)),
                if p.baseline { " (baseline)" } else { "" },
                md_text(&p.timing),
                md_text(&p.cache),
                sig3(p.a_p50_us),
                sig3(p.b_p50_us),
                if p.change.is_finite() {
                    format!("{:+.1}", p.change * 100.0)
                } else {
                    "n/a".to_string()
                },
                fixed(p.noise * 100.0, 1),
                icon,
                p.reason
                    .as_deref()
                    .map(|r| format!(": {}", md_text(r)))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
    }
    section(&mut out, "Performance diagnoses", &d.perf_diagnoses);
    out
}

fn section(out: &mut String, title: &str, list: &[Diagnosis]) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "## {title}\n");
    for d in list {
        let _ = writeln!(
            out,
            "- **{}** ({}, confidence {}{}{}; {})",
            d.title,
            d.level.as_str(),
            d.confidence.as_str(),
            if d.configs.is_empty() {
                String::new()
            } else {
                format!(", {}", md_text(&d.configs.join(", ")))
            },
            d.location
                .as_ref()
                .map(|l| format!(", {}", md_code(&l.to_string())))
                .unwrap_or_default(),
            md_code(&d.fingerprint)
        );
        if let Some(e) = d
            .evidence
            .iter()
            .find(|e| !e.excerpt.is_empty())
            .or(d.evidence.first())
        {
            let _ = writeln!(out, "  - {}: {}", md_text(&e.stage), e.summary);
        }
    }
    let _ = writeln!(out);
}
