//! The GitHub-flavoured Markdown report, readable as a PR comment: verdict, ranked root causes
//! with their smoking-gun excerpts, evidence, per-config resources, correctness and stress,
//! bench against the baselines, the Nsight Compute summary, environment and next steps.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::analysis::{Analysis, CoverageRow, VerdictKind};
use crate::diagnosis::{Diagnosis, Level};
use crate::text::{md_code, md_text};
use crate::{run::Run, run::StageStatus};

pub(crate) mod causes;
mod environment;
mod evidence;
mod tables;

use causes::{diagnosis_meta, experiments, notes, root_causes};
use environment::{environment, next_steps};
use evidence::evidence;
use tables::{bench, beside_baseline, correctness, ncu, per_config};

/// Renders the whole report.
pub fn render(analysis: &Analysis, run: &Run) -> String {
    let mut out = String::new();
    header(&mut out, run);
    verdict(&mut out, analysis);
    root_causes(&mut out, analysis);
    notes(&mut out, analysis);
    experiments(&mut out, analysis);
    evidence(&mut out, analysis);
    per_config(&mut out, analysis);
    correctness(&mut out, analysis);
    bench(&mut out, analysis, run);
    crate::render::timings_markdown::render(&mut out, analysis);
    ncu(&mut out, analysis, run);
    beside_baseline(&mut out, analysis);
    environment(&mut out, analysis, run);
    next_steps(&mut out, analysis);
    out
}

/// The short form for a pull-request comment or `$GITHUB_STEP_SUMMARY`: the header, the
/// verdict, each root cause (title, place, rule) with its fix, and the timings against the
/// baseline.
pub fn render_summary(analysis: &Analysis, run: &Run) -> String {
    let mut out = String::new();
    header(&mut out, run);
    verdict(&mut out, analysis);
    let causes: Vec<&Diagnosis> = analysis
        .diagnoses
        .iter()
        .filter(|d| d.level > Level::Note)
        .collect();
    if !causes.is_empty() {
        let _ = writeln!(out, "## Root causes\n");
        for (i, d) in causes.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}. **{}** · {}",
                i + 1,
                d.title.markdown(),
                diagnosis_meta(d)
            );
            if let Some(fix) = d.help.first() {
                let _ = writeln!(out, "   **Fix:** {}", fix.markdown());
            }
        }
        let _ = writeln!(out);
    }
    if !analysis.experiments.is_empty() {
        let _ = writeln!(out, "## Experiments\n");
        for c in &analysis.experiments {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                c.cause,
                c.outcome.as_str(),
                c.sentence.markdown()
            );
        }
        let _ = writeln!(out);
    }
    let mut timings = String::new();
    bench(&mut timings, analysis, run);
    crate::render::timings_markdown::render(&mut timings, analysis);
    // The chart is a file beside the full report: a comment cannot show it.
    for line in timings.lines().filter(|l| !l.starts_with("![bench]")) {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn header(out: &mut String, run: &Run) {
    let _ = writeln!(out, "# Exhibit report: {}\n", md_text(&run.id));
    let mut parts = vec![format!("pipeline {}", md_code(&run.pipeline))];
    if let Some(git) = &run.git {
        let short: String = git.commit.chars().take(12).collect();
        parts.push(format!(
            "commit `{short}`{}",
            if git.dirty { " (dirty)" } else { "" }
        ));
    }
    parts.push(format!("started {}", run.started));
    match (&run.finished, run.interrupted) {
        (_, true) => parts.push("**interrupted**".to_string()),
        (Some(f), false) => parts.push(format!("finished {f}")),
        (None, false) => {}
    }
    if let Some(wall) = run.wall_ms {
        // Units served from the cache took no time in this run.
        let units: u64 = run
            .stages
            .iter()
            .filter(|s| s.cached_from.is_none())
            .map(|s| s.duration_ms)
            .sum();
        parts.push(format!(
            "wall time {}, {} of unit time",
            seconds(wall),
            seconds(units)
        ));
    }
    let _ = writeln!(out, "{}\n", parts.join(" · "));
}

fn seconds(ms: u64) -> String {
    crate::text::duration(ms as f64 / 1000.0)
}

/// The verdict's icon.
pub fn verdict_icon(kind: VerdictKind) -> &'static str {
    match kind {
        VerdictKind::Clean => "✅",
        VerdictKind::Warnings => "⚠️",
        VerdictKind::Slow => "🐢",
        VerdictKind::Failing => "❌",
        VerdictKind::Inconclusive => "❔",
        VerdictKind::CompileOnly => "🧱",
        VerdictKind::NotChecked => "🚫",
    }
}

/// A stage status's icon.
pub fn status_icon(status: StageStatus) -> &'static str {
    match status {
        StageStatus::Passed => "✅",
        StageStatus::Findings => "❌",
        StageStatus::Failed => "💥",
        StageStatus::TimedOut => "⏱️",
        StageStatus::Skipped => "⏭️",
        StageStatus::Inconclusive => "❔",
        StageStatus::Interrupted => "⏹️",
    }
}

fn verdict(out: &mut String, a: &Analysis) {
    let v = &a.verdict;
    let _ = writeln!(
        out,
        "**Verdict:** {} {}\n",
        verdict_icon(v.kind),
        md_text(&v.line)
    );
    if matches!(v.kind, VerdictKind::Clean | VerdictKind::CompileOnly) {
        let _ = writeln!(out, "{}\n", receipt(a));
    }
    super::missing_markdown::missing_here(out, a);
    if !v.unconcluded.is_empty() {
        let _ = writeln!(out, "Could not conclude:\n");
        for u in &v.unconcluded {
            let _ = writeln!(
                out,
                "- {}{}: {}{}",
                md_code(&u.stage),
                u.config
                    .as_deref()
                    .map(|c| format!(" ({})", md_text(c)))
                    .unwrap_or_default(),
                md_text(&u.what),
                u.reason
                    .as_deref()
                    .map(|r| format!(" — {}", md_text(r)))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
    }
}

/// The coverage receipt of a clean run: which tools ran on which configs, and that the kernel
/// launched under each.
pub fn receipt(a: &Analysis) -> String {
    let mut by_stage: BTreeMap<(usize, String), Vec<&CoverageRow>> = BTreeMap::new();
    for (i, row) in a.coverage.iter().enumerate() {
        if matches!(row.status, StageStatus::Passed | StageStatus::Findings)
            && row.kind != crate::run::StageKind::Report
        {
            let first = a
                .coverage
                .iter()
                .position(|r| r.stage == row.stage)
                .unwrap_or(i);
            by_stage
                .entry((first, row.stage.clone()))
                .or_default()
                .push(row);
        }
    }
    let mut lines = vec!["Checked:".to_string()];
    for ((_, stage), rows) in by_stage {
        let mut configs: Vec<String> = rows.iter().filter_map(|r| r.config.clone()).collect();
        configs.sort();
        configs.dedup();
        let launched: Vec<Option<bool>> = rows.iter().map(|r| r.launched).collect();
        let launch = if rows.iter().any(|r| {
            r.kind.is_sanitizer()
                || matches!(
                    r.kind,
                    crate::run::StageKind::Check
                        | crate::run::StageKind::Stress
                        | crate::run::StageKind::Bench
                        | crate::run::StageKind::Profile
                )
        }) {
            if launched.iter().all(|l| *l == Some(true)) {
                "; the kernel launched under each".to_string()
            } else if launched.contains(&Some(false)) {
                "; **the kernel did not launch under some**".to_string()
            } else {
                "; launches not recorded".to_string()
            }
        } else {
            String::new()
        };
        let on = if configs.is_empty() {
            String::new()
        } else {
            format!(
                " on {}",
                configs
                    .iter()
                    .map(|c| md_code(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        lines.push(format!(
            "- **{}**: {}{on}{launch}",
            md_text(&stage),
            crate::text::plural(rows.len() as u64, "run", "runs")
        ));
    }
    lines.join("\n")
}
