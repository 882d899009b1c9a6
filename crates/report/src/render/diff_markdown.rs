//! The Markdown of a diff: verdict, new, fixed and unchanged root causes, tool findings,
//! resource changes and timings.

use std::fmt::Write;

use crate::diagnosis::Diagnosis;
use crate::diff::{Diff, DiffVerdict, RunSummary};
use crate::noise::Judgement;
use crate::text::{fixed, md_cell, md_code, md_text, plural, sig3};

/// Renders the diff.
pub fn render(d: &Diff) -> String {
    let mut out = String::new();
    runs_table(&mut out, d);

    let _ = writeln!(out, "**Verdict:** {}.\n", verdict_line(d));
    if !d.missing.is_empty() {
        let _ = writeln!(out, "## Evidence missing\n");
        for m in &d.missing {
            let _ = writeln!(out, "- {}", md_text(m));
        }
        let _ = writeln!(out);
    }

    section(&mut out, "New root causes", &d.new);
    section(&mut out, "Fixed root causes", &d.fixed);
    not_retested(&mut out, d);
    section(&mut out, "Unchanged root causes", &d.unchanged);

    tool_findings(&mut out, d);
    resources(&mut out, d);
    performance(&mut out, d);
    section(&mut out, "Performance diagnoses", &d.perf_diagnoses);
    out
}

/// The table that sets the two runs side by side: id, commit, GPU, driver and verdict.
fn runs_table(out: &mut String, d: &Diff) {
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
    let _ = writeln!(out, "{}", row("Verdict", &|r| r.verdict.word().to_string()));
    let _ = writeln!(out);
}

/// The root causes and tool findings of A that B did not re-run the stage for, with why.
fn not_retested(out: &mut String, d: &Diff) {
    if !d.not_retested.is_empty() || !d.not_retested_findings.is_empty() {
        let _ = writeln!(out, "## Not re-tested\n");
        let _ = writeln!(
            out,
            "In A, not in B, but B did not re-run the stage that found {} to a verdict: not known to be fixed.\n",
            if d.not_retested.len() + d.not_retested_findings.len() == 1 {
                "it"
            } else {
                "them"
            }
        );
        for n in &d.not_retested {
            let _ = writeln!(
                out,
                "- **{}** ({}, {}): {}",
                n.item.title.markdown(),
                n.item.level.as_str(),
                md_code(&n.item.fingerprint),
                md_text(&n.why.join("; "))
            );
        }
        for n in &d.not_retested_findings {
            let _ = writeln!(
                out,
                "- tool finding {}{}{} ({}, {}): {}",
                md_text(&n.item.kind),
                n.item
                    .location
                    .as_deref()
                    .map(|l| format!(" at {}", md_code(l)))
                    .unwrap_or_default(),
                n.item
                    .config
                    .as_deref()
                    .map(|c| format!(" in {}", md_text(c)))
                    .unwrap_or_default(),
                plural(n.item.count, "record", "records"),
                md_text(&n.item.severity),
                md_text(&n.why.join("; "))
            );
        }
        let _ = writeln!(out);
    }
}

/// The table of tool findings new in B or fixed since A.
fn tool_findings(out: &mut String, d: &Diff) {
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
}

/// The table of per-kernel resource figures that changed between A and B.
fn resources(out: &mut String, d: &Diff) {
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
}

/// The performance section: timings served from one measurement, and the table that judges
/// each timing in both runs same, faster, slower or ambiguous.
fn performance(out: &mut String, d: &Diff) {
    let _ = writeln!(out, "## Performance\n");
    if d.same_measurement > 0 {
        let _ = writeln!(
            out,
            "{} in both runs {} one measurement: B's unit was served from the cache of the run A's came from, so {} not compared.\n",
            plural(d.same_measurement as u64, "timing", "timings"),
            if d.same_measurement == 1 { "is" } else { "are" },
            if d.same_measurement == 1 {
                "it is"
            } else {
                "they are"
            },
        );
    }
    if let Some(why) = &d.timing_refused {
        let _ = writeln!(out, "{}.\n", why.words().markdown());
    } else if d.perf.is_empty() {
        if d.same_measurement == 0 {
            let _ = writeln!(out, "No timing appears in both runs.\n");
        }
    } else {
        let t = &d.thresholds;
        let _ = writeln!(
            out,
            "A change under {}% is the same. Where both runs kept their raw samples (at least {} each), a larger change is faster or slower when a Mann-Whitney U test finds it significant (p under {}) and it is beyond the larger run's own spread, else ambiguous. Otherwise a change within the larger run's measured noise is the same; beyond twice the noise it is faster or slower; in between, or measured throttled or with too few samples, ambiguous.\n",
            fixed(t.min_change * 100.0, 1),
            t.min_raw,
            t.alpha
        );
        let _ = writeln!(
            out,
            "| Case | Implementation | Timing | A p50 µs | B p50 µs | Change | Noise | p (U test) | Judgement |"
        );
        let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|---|");
        for p in &d.perf {
            let icon = match p.judgement {
                Judgement::Same => "＝ same",
                Judgement::Faster => "🟢 faster",
                Judgement::Slower => "🔴 slower",
                Judgement::Ambiguous => "❔ ambiguous",
            };
            let _ = writeln!(
                out,
                "| {} | {}{} | {} {} | {}{} | {}{} | {}% | {}% | {} | {}{} |",
                match p.case.label() {
                    label if label.is_empty() => "—".to_string(),
                    label => md_text(&label),
                },
                md_cell(&md_code(&p.implementation)),
                if p.baseline { " (baseline)" } else { "" },
                md_text(&p.timing),
                md_text(&p.cache),
                sig3(p.a_p50_us),
                cached(&p.a_cached_from),
                sig3(p.b_p50_us),
                cached(&p.b_cached_from),
                if p.change.is_finite() {
                    format!("{:+.1}", p.change * 100.0)
                } else {
                    "n/a".to_string()
                },
                fixed(p.noise * 100.0, 1),
                p.test
                    .map(|t| md_text(&crate::noise::p_text(t.p)))
                    .unwrap_or_else(|| "—".to_string()),
                icon,
                p.reason
                    .as_deref()
                    .map(|r| format!(": {}", md_text(r)))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
    }
}

/// " (cached from `run`)" for a timing served from the cache.
fn cached(from: &Option<String>) -> String {
    from.as_deref()
        .map(|run| format!(" (cached from {})", md_cell(&md_code(run))))
        .unwrap_or_default()
}

/// The verdict and what it rests on: what changed, and what was not compared and why.
fn verdict_line(d: &Diff) -> String {
    let mut parts = Vec::new();
    let unchecked = d.unchecked();
    if !unchecked.is_empty() {
        parts.push(format!(
            "{} ran nothing on a GPU (compile-only), so {} says nothing of the program's \
             behaviour",
            unchecked.join(" and "),
            if unchecked.len() == 1 { "it" } else { "they" }
        ));
    }
    if !d.missing.is_empty() {
        parts.push(format!(
            "{} missing or unreadable, so what {} held was not compared",
            plural(d.missing.len() as u64, "log", "logs"),
            if d.missing.len() == 1 { "it" } else { "they" }
        ));
    }
    if d.new.is_empty() && d.fixed.is_empty() && d.not_retested.is_empty() {
        parts.push("no change in root causes".to_string());
    }
    let untested = d.not_retested.len() + d.not_retested_findings.len();
    if untested > 0 {
        parts.push(format!(
            "{} of A not re-tested in B (the stage that found {} did not run to a verdict)",
            plural(
                untested as u64,
                "root cause or finding",
                "root causes or findings"
            ),
            if untested == 1 { "it" } else { "them" }
        ));
    }
    for (n, one, many) in [
        (d.new.len(), "new root cause", "new root causes"),
        (d.fixed.len(), "fixed root cause", "fixed root causes"),
        (
            d.kernel_timings(Judgement::Slower),
            "slower timing",
            "slower timings",
        ),
        (
            d.kernel_timings(Judgement::Ambiguous),
            "ambiguous timing (beyond the noise, within twice it, or measured throttled or with too few samples; re-run to decide)",
            "ambiguous timings (beyond the noise, within twice it, or measured throttled or with too few samples; re-run to decide)",
        ),
        (
            d.kernel_timings(Judgement::Faster),
            "faster timing",
            "faster timings",
        ),
    ] {
        if n > 0 {
            parts.push(plural(n as u64, one, many));
        }
    }
    let same = d.kernel_timings(Judgement::Same);
    if let Some(why) = &d.timing_refused {
        parts.push(format!(
            "timings not compared ({})",
            why.reason().markdown()
        ));
    } else if d.perf.iter().all(|p| p.baseline) {
        parts.push(if d.same_measurement > 0 {
            "timings not compared (one measurement: B's were served from the cache)".to_string()
        } else {
            "no kernel timing in both runs".to_string()
        });
    } else if same > 0 {
        parts.push(format!(
            "{} within the noise",
            plural(same as u64, "kernel timing", "kernel timings")
        ));
    }
    let word = match d.verdict {
        DiffVerdict::Incomplete => "⚠️ Incomplete:",
        DiffVerdict::Regression => "❌ Regression:",
        DiffVerdict::Ambiguous => "❔ Ambiguous:",
        DiffVerdict::NoRegression => "✅ No regression:",
    };
    format!("{word} {}", parts.join(", "))
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
            d.title.markdown(),
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
            let _ = writeln!(out, "  - {}: {}", md_text(&e.stage), e.summary.markdown());
        }
    }
    let _ = writeln!(out);
}
