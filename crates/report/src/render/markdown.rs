//! The GitHub-flavoured Markdown report, readable as a PR comment: verdict, ranked root causes
//! with their smoking-gun excerpts, evidence, per-config resources, correctness and stress,
//! bench against the baselines, the Nsight Compute summary, environment and next steps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::analysis::{Analysis, CoverageRow, VerdictKind, stage_status_word};
use crate::diagnosis::{Diagnosis, Level};
use crate::text::{bytes, code_fence, fixed, html_text, md_cell, md_code, md_text, scrub, sig3};
use crate::timings::NOISY;
use crate::{run::Run, run::StageStatus};

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
                md_text(&c.sentence)
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
                    .map(|r| format!(" — {}", md_text(&scrub(r, &a.joined.repo_files))))
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

/// The one-line summary under a diagnosis's heading: level, confidence, kernels, configs,
/// location and rule.
pub(crate) fn diagnosis_meta(d: &Diagnosis) -> String {
    let mut meta = vec![
        d.level.as_str().to_string(),
        format!("confidence {}", d.confidence.as_str()),
    ];
    if d.untested() {
        meta.push("untested".to_string());
    }
    if !d.kernels.is_empty() {
        let kernels = d
            .kernels
            .iter()
            .map(|k| md_code(k))
            .collect::<Vec<_>>()
            .join(", ");
        // The kernel first, then the inlined helpers the accesses are in.
        meta.push(match crate::diagnosis::inlined_in(&d.helpers) {
            Some(inlined) => format!("{kernels}, {}", inlined.markdown()),
            None => kernels,
        });
    }
    if !d.configs.is_empty() {
        meta.push(format!(
            "{} {}",
            if d.configs.len() == 1 {
                "config"
            } else {
                "configs"
            },
            d.configs
                .iter()
                .map(|c| md_code(c))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(loc) = &d.location {
        meta.push(md_code(&loc.to_string()));
    }
    if let Some(call) = &d.call_site {
        meta.push(format!("launched from {}", md_code(&call.to_string())));
    }
    meta.push(format!("rule {}", md_code(d.rule.as_str())));
    meta.join(" · ")
}

/// What one more run needs to test a diagnosis's suggestion, while no run has.
pub(crate) fn untested(d: &Diagnosis) -> Option<&crate::hypothesis::Settle> {
    d.hypothesis
        .as_ref()
        .filter(|h| h.untested())
        .and_then(|h| h.settle.as_ref())
}

/// The same in one sentence, for a note or a summary: "Untested: the pipeline names no
/// `registers` knob (add `knobs: registers: { flag: ... }`, `experiments: auto`)."
pub(crate) fn untested_sentence(d: &Diagnosis) -> Option<String> {
    let settle = untested(d)?;
    let paste: Vec<String> = settle.inline().iter().map(|l| md_code(l)).collect();
    Some(if paste.is_empty() {
        format!("Untested: {}.", settle.why)
    } else {
        format!(
            "Untested: {}; one more run settles it with {} in `pipeline.yaml`.",
            settle.why,
            crate::text::join_words(&paste)
        )
    })
}

/// The labelled places of a diagnosis that has supporting ones besides what the summary line
/// names (its place, its helpers, its launch): "Sites: `a.cu:12` (shared-memory race),
/// `a.cu:10` (the write)".
pub(crate) fn sites_line(d: &Diagnosis) -> Option<String> {
    let named = |s: &&crate::diagnosis::Span| {
        s.primary
            || d.call_site.as_ref() == Some(&s.location)
            || d.helpers
                .iter()
                .any(|h| h.location.as_ref() == Some(&s.location))
    };
    if d.secondary_spans().all(|s| named(&s)) {
        return None;
    }
    let sites: Vec<String> = d
        .spans
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                md_code(&s.location.to_string()),
                s.label.markdown()
            )
        })
        .collect();
    Some(format!("Sites: {}.", sites.join(", ")))
}

fn root_causes(out: &mut String, a: &Analysis) {
    let causes: Vec<&Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.level > Level::Note)
        .collect();
    if causes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Root causes\n");
    for (i, d) in causes.iter().enumerate() {
        let _ = writeln!(out, "### {}. {}\n", i + 1, d.title.markdown());
        let _ = writeln!(out, "{}\n", diagnosis_meta(d));
        if let Some(sites) = sites_line(d) {
            let _ = writeln!(out, "{sites}\n");
        }
        let _ = writeln!(out, "{}\n", d.explanation().markdown());
        if !d.fix().is_empty() {
            let _ = writeln!(out, "**Fix:** {}\n", d.fix().markdown());
        }
        if let Some(settle) = untested(d) {
            let _ = writeln!(out, "**Untested:** {}.", settle.why);
            let yaml = settle.yaml();
            if yaml.is_empty() {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(
                    out,
                    "One more run settles it, with these lines in `pipeline.yaml`:\n\n```yaml\n{}\n```\n",
                    yaml.join("\n")
                );
            }
        }
        evidence_items(out, d);
    }
}

fn evidence_items(out: &mut String, d: &Diagnosis) {
    if d.evidence.is_empty() {
        return;
    }
    let _ = writeln!(out, "Evidence:\n");
    for e in &d.evidence {
        let mut from = vec![format!("**{}**", md_text(&e.stage))];
        if let Some(c) = &e.config {
            from.push(md_code(c));
        }
        if !e.log.is_empty() {
            from.push(md_code(&e.log));
        }
        let _ = writeln!(out, "- {}: {}", from.join(" · "), e.summary.markdown());
        excerpt_block(out, &e.excerpt);
    }
    let _ = writeln!(out);
}

/// Each experiment: the hypothesis it tests, its prediction, its runs, its conclusion and what
/// it cost; then the stress stages' launch searches in the same form.
fn experiments(out: &mut String, a: &Analysis) {
    if a.experiments.is_empty() && a.launch_searches.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Experiments\n");
    for c in &a.experiments {
        let kernel = c
            .kernel
            .as_deref()
            .map(|k| format!(" · {}", md_code(k)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "### {}: {}\n\n{}{kernel} · config {}\n",
            c.cause,
            c.outcome.as_str(),
            md_code(c.rule.as_str()),
            md_code(&c.config)
        );
        let _ = writeln!(out, "**Prediction:** {}\n", md_text(&c.prediction));
        let _ = writeln!(out, "| run | outcome | evidence |\n|---|---|---|");
        for r in &c.rows {
            let _ = writeln!(
                out,
                "| {} | {}{} | {} |",
                md_cell(&r.label),
                md_cell(&r.outcome),
                if r.cached { " (cached)" } else { "" },
                r.evidence.as_deref().map(md_code).unwrap_or_default()
            );
        }
        let _ = writeln!(
            out,
            "\n**Conclusion ({}):** {}\n\nCost: {}, {} of them from the cache, {} of unit time.\n",
            c.outcome.as_str(),
            md_text(&c.sentence),
            crate::text::plural(c.runs as u64, "run", "runs"),
            c.cached,
            seconds(c.cost_ms)
        );
    }
    for s in &a.launch_searches {
        let tried: Vec<String> = s
            .tried
            .iter()
            .map(|(n, ok)| format!("{n} {}", if *ok { "clean" } else { "fails" }))
            .collect();
        let _ = writeln!(
            out,
            "### Repeated launches: {}\n\nstage {}{}\n\n**Prediction:** if the fault needs \
             repeated launches, the program runs clean at few and fails from some count \
             on.\n\nTried: {}.\n\n**Conclusion ({}):** {}\n",
            s.outcome.as_str(),
            md_code(&s.stage),
            s.config
                .as_deref()
                .map(|c| format!(" · config {}", md_code(c)))
                .unwrap_or_default(),
            tried.join(", "),
            s.outcome.as_str(),
            md_text(&s.sentence)
        );
    }
}

fn notes(out: &mut String, a: &Analysis) {
    let notes: Vec<&Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.level == Level::Note)
        .collect();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Notes\n");
    // One title per kind of note, with how many kernels (or notes) share it.
    let mut grouped: Vec<(String, Vec<&Diagnosis>)> = Vec::new();
    for d in &notes {
        let title = d.title.markdown();
        match grouped.iter_mut().find(|(t, _)| *t == title) {
            Some((_, same)) => same.push(d),
            None => grouped.push((title, vec![d])),
        }
    }
    let titles: Vec<String> = grouped
        .iter()
        .map(|(title, same)| {
            let kernels: BTreeSet<&str> = same.iter().filter_map(|d| d.kernel.as_deref()).collect();
            let configs: BTreeSet<&str> = same.iter().filter_map(|d| d.config.as_deref()).collect();
            match same.len() {
                1 => title.to_string(),
                n if kernels.len() == n => format!("{title}: {n} kernels"),
                n if configs.len() == n => format!("{title}: {n} configs"),
                n => format!("{title} ({n} notes)"),
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "<details><summary>{}</summary>\n",
        html_text(&crate::text::join_words(&titles))
    );
    for d in notes {
        let _ = writeln!(
            out,
            "- **{}** ({}). {}",
            d.title.markdown(),
            diagnosis_meta(d),
            format!(
                "{} {} {}",
                d.explanation().markdown(),
                d.fix().markdown(),
                untested_sentence(d).unwrap_or_default()
            )
            .trim_end()
        );
        for e in &d.evidence {
            let _ = writeln!(
                out,
                "  - {}{}: {}",
                md_text(&e.stage),
                e.config
                    .as_deref()
                    .map(|c| format!(" {}", md_code(c)))
                    .unwrap_or_default(),
                e.summary.markdown()
            );
        }
    }
    let _ = writeln!(out, "\n</details>\n");
}

/// The rank of a status when several executions share a cell: the one that matters most.
fn status_rank(s: StageStatus) -> u8 {
    match s {
        StageStatus::Skipped => 0,
        StageStatus::Passed => 1,
        StageStatus::Findings => 2,
        StageStatus::Inconclusive => 3,
        StageStatus::Interrupted => 4,
        StageStatus::TimedOut => 5,
        StageStatus::Failed => 6,
    }
}

fn evidence(out: &mut String, a: &Analysis) {
    if a.coverage.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Evidence\n");
    let configs: Vec<String> = {
        let mut c: Vec<String> = a.coverage.iter().filter_map(|r| r.config.clone()).collect();
        c.sort();
        c.dedup();
        c
    };
    // Stages in run order: those run per config, and those run once for the whole run.
    let mut per_config: Vec<String> = Vec::new();
    let mut run_wide: Vec<String> = Vec::new();
    for r in &a.coverage {
        let list = if r.config.is_some() {
            &mut per_config
        } else {
            &mut run_wide
        };
        if !list.contains(&r.stage) {
            list.push(r.stage.clone());
        }
    }
    let cell = |stage: &str, config: Option<&str>| -> String {
        let rows: Vec<&CoverageRow> = a
            .coverage
            .iter()
            .filter(|r| r.stage == stage && r.config.as_deref() == config)
            .collect();
        if rows.is_empty() {
            // A config whose build another config's build served.
            let owner = config.and_then(|c| {
                a.joined.stages().iter().find_map(|s| {
                    (s.name == stage && s.unit().serves.iter().any(|x| x == c))
                        .then(|| s.config.clone())
                        .flatten()
                })
            });
            return owner
                .map(|o| format!("↗ the build of {}", md_code(&o)))
                .unwrap_or_default();
        }
        let worst = rows
            .iter()
            .map(|r| r.status)
            .max_by_key(|s| status_rank(*s))
            .unwrap_or(StageStatus::Skipped);
        let mut figures: Vec<String> = Vec::new();
        let tallies: Vec<Option<crate::analysis::Tally>> = rows.iter().map(|r| r.tally).collect();
        match crate::analysis::Tally::sum(&tallies) {
            Some(total) if rows.len() > 1 => figures.push(total.to_string()),
            _ => {
                for r in &rows {
                    if !figures.contains(&r.figure) {
                        figures.push(r.figure.clone());
                    }
                }
            }
        }
        let mut shown = if figures.len() > 3 {
            format!("{}; …", figures[..3].join("; "))
        } else {
            figures.join("; ")
        };
        // What profiling cost, summed over the cell's units.
        if let Some(ms) = rows
            .iter()
            .filter_map(|r| r.cost_ms)
            .reduce(u64::saturating_add)
        {
            shown = with_cost(&shown, ms);
        }
        let count = if rows.len() > 1 {
            format!(" ×{}", rows.len())
        } else {
            String::new()
        };
        let launched = if rows.iter().any(|r| r.launched == Some(false)) {
            " · not launched"
        } else {
            ""
        };
        format!(
            "{}{count} {}{launched}",
            status_icon(worst),
            md_text(&shown)
        )
    };
    // What ran once for the whole run is a list, so that the table holds one column per
    // config and no column of long text that no config shares.
    if !run_wide.is_empty() {
        if !per_config.is_empty() {
            let _ = writeln!(out, "Run-wide:\n");
        }
        for stage in &run_wide {
            let _ = writeln!(out, "- **{}**: {}", md_text(stage), cell(stage, None));
        }
        let _ = writeln!(out);
    }
    if !per_config.is_empty() {
        let mut head = vec!["Stage".to_string()];
        head.extend(configs.iter().map(|c| md_cell(&md_code(c))));
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
        for stage in &per_config {
            let mut row = vec![md_text(stage)];
            for c in &configs {
                row.push(cell(stage, Some(c)));
            }
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        let _ = writeln!(out);
    }
    for line in profile_launches(a) {
        let _ = writeln!(out, "{line}\n");
    }
    let tests = super::missing_markdown::test_lines(a);
    if !tests.is_empty() {
        let _ = writeln!(out, "Tests:\n");
        for line in tests {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
    }
    let legend: Vec<String> = [
        StageStatus::Passed,
        StageStatus::Findings,
        StageStatus::Failed,
        StageStatus::TimedOut,
        StageStatus::Inconclusive,
        StageStatus::Interrupted,
        StageStatus::Skipped,
    ]
    .iter()
    .filter(|s| a.coverage.iter().any(|r| r.status == **s))
    .map(|s| format!("{} {}", status_icon(*s), stage_status_word(*s)))
    .collect();
    let _ = writeln!(out, "{}\n", legend.join(" · "));

    if !a.verdict.not_run.is_empty() {
        let _ = writeln!(out, "Not run:\n");
        for n in &a.verdict.not_run {
            let _ = writeln!(
                out,
                "- **{}**{}: {}",
                md_text(&n.stage),
                if n.configs.is_empty() {
                    String::new()
                } else {
                    let mut c = n.configs.clone();
                    c.sort();
                    c.dedup();
                    format!(" ({})", md_text(&c.join(", ")))
                },
                md_text(&scrub(&n.reason, &a.joined.repo_files))
            );
        }
        let _ = writeln!(out);
    }

    let ran: Vec<&CoverageRow> = a
        .coverage
        .iter()
        .filter(|r| r.status != StageStatus::Skipped)
        .collect();
    if !ran.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Stage executions ({})</summary>\n",
            ran.len()
        );
        let _ = writeln!(
            out,
            "| Stage | Config | Case | Status | Key figure | Launched | Logs |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        for r in ran {
            let logs: Vec<String> = r.logs.iter().map(|l| md_cell(&md_code(l))).collect();
            let status = match (&r.cached_from, &r.reason) {
                (Some(from), _) => format!(
                    "{} {} (cached from {from})",
                    status_icon(r.status),
                    stage_status_word(r.status)
                ),
                (None, Some(reason)) if r.status != StageStatus::Passed => {
                    format!(
                        "{} {}: {reason}",
                        status_icon(r.status),
                        stage_status_word(r.status)
                    )
                }
                _ => format!("{} {}", status_icon(r.status), stage_status_word(r.status)),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                md_text(&r.stage),
                r.config.as_deref().map(md_text).unwrap_or_default(),
                r.case.as_deref().map(md_text).unwrap_or_default(),
                md_text(&status),
                md_text(&match r.cost_ms {
                    Some(ms) => with_cost(&r.figure, ms),
                    None => r.figure.clone(),
                }),
                match r.launched {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "",
                },
                logs.join("<br>")
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
}

/// A key figure with what its unit cost: `profiled k (1 launch); 30 metrics; 12.3 s`.
fn with_cost(figure: &str, ms: u64) -> String {
    if figure.is_empty() {
        seconds(ms)
    } else {
        format!("{figure}; {}", seconds(ms))
    }
}

/// For each profile stage whose launches the runner chose, a line saying which launch of each
/// kernel was profiled, what it cost, and how to choose another.
fn profile_launches(a: &Analysis) -> Vec<String> {
    let mut chosen: Vec<(&str, u32, Option<u64>)> = Vec::new();
    // Only a profile that ran profiled anything: a skipped one's plan is no claim.
    for r in a.coverage.iter().filter(|r| {
        matches!(
            r.status,
            StageStatus::Passed | StageStatus::Findings | StageStatus::Inconclusive
        )
    }) {
        let Some(crate::run::ProfileLaunches::FirstOfEachKernel { per_kernel }) =
            r.profile_launches
        else {
            continue;
        };
        match chosen
            .iter_mut()
            .find(|(stage, n, _)| *stage == r.stage && *n == per_kernel)
        {
            Some((_, _, cost)) => {
                *cost = match (*cost, r.cost_ms) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    (a, b) => a.or(b),
                }
            }
            None => chosen.push((&r.stage, per_kernel, r.cost_ms)),
        }
    }
    chosen
        .into_iter()
        .map(|(stage, n, cost)| {
            let which = match n {
                0 | 1 => "the first launch of each kernel".to_string(),
                n => format!(
                    "the first {n} launches of each kernel, the {} after a warm-up (a kernel \
                     launched once: its one launch)",
                    ordinal(n)
                ),
            };
            let cost = cost
                .map(|ms| format!(", in {}", seconds(ms)))
                .unwrap_or_default();
            format!(
                "**{}**: the runner profiled {which}{cost}. To profile another launch, give the stage a \
                 launch selection of its own: `args: [--kernel-name, regex:NAME, --launch-skip, \
                 N, --launch-count, 1]`.",
                md_text(stage)
            )
        })
        .collect()
}

/// `2nd`, `3rd`, `11th`.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "—".to_string())
}

fn per_config(out: &mut String, a: &Analysis) {
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

fn correctness(out: &mut String, a: &Analysis) {
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
                (_, Some(e)) => format!("💥 {}", md_text(&scrub(e, &a.joined.repo_files))),
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
                        .map(|e| format!(" ({})", md_text(&scrub(e, &a.joined.repo_files))))
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

fn bench(out: &mut String, a: &Analysis, run: &Run) {
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
        .joined
        .results
        .iter()
        .filter_map(|r| {
            r.result.skipped.as_ref().map(|why| {
                format!(
                    "{} ({}): {}",
                    md_code(&r.result.kernel),
                    md_text(&crate::tables::Case::of(r.result).label()),
                    md_text(&scrub(why, &a.joined.repo_files))
                )
            })
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
fn beside_baseline(out: &mut String, a: &Analysis) {
    let Some((own, theirs)) = crate::resources::beside_baseline(&a.joined) else {
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
    // What sets them apart where it does not depend on the problem size: the tensor cores.
    let ours = own.first();
    let best = theirs.first();
    if let (Some(ours), Some(best)) = (ours, best)
        && ours.tensor_instructions == Some(0)
        && best.tensor_instructions.is_some_and(|n| n > 0)
    {
        let _ = writeln!(
            out,
            "The baseline's {} runs on the tensor cores ({} tensor-core instructions executed); \
             the program's {} issues none.\n",
            md_code(&best.summary.kernel),
            best.tensor_instructions.unwrap_or(0),
            md_code(&ours.summary.kernel)
        );
    }
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

fn ncu(out: &mut String, a: &Analysis, run: &Run) {
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
    let advice: Vec<&crate::join::FindingRef> = a
        .joined
        .findings
        .iter()
        .filter(|f| f.finding.kind == parsers::FindingKind::ProfilerRule)
        .collect();
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
                md_text(&scrub(&f.finding.message, &a.joined.repo_files))
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
}

fn environment(out: &mut String, a: &Analysis, run: &Run) {
    let env = &run.environment;
    let _ = writeln!(out, "## Environment\n");
    let _ = writeln!(out, "| Item | Value |");
    let _ = writeln!(out, "|---|---|");
    if env.gpus.is_empty() {
        let _ = writeln!(
            out,
            "| GPU | none{} |",
            env.gpu_unavailable
                .as_deref()
                .map(|r| format!(" ({})", md_text(&scrub(r, &a.joined.repo_files))))
                .unwrap_or_default()
        );
    }
    for g in &env.gpus {
        let mut parts = vec![g.name.clone()];
        if let Some(cc) = &g.compute_capability {
            parts.push(format!("sm_{}", cc.replace('.', "")));
        }
        if let Some(n) = g.sm_count {
            parts.push(format!("{n} SMs"));
        }
        if let Some(m) = g.memory_mib {
            parts.push(format!("{m} MiB"));
        }
        if let Some(c) = g.sm_clock_mhz {
            parts.push(format!("SM clock {c} MHz"));
        }
        if let Some(e) = &g.ecc {
            parts.push(format!("ECC {e}"));
        }
        if let Some(m) = &g.mig {
            parts.push(format!("MIG {m}"));
        }
        let _ = writeln!(out, "| GPU | {} |", md_text(&parts.join(", ")));
    }
    if let Some(d) = &env.driver {
        let _ = writeln!(out, "| Driver | {} |", md_text(d));
    }
    if let Some(p) = env.counters_permitted {
        let _ = writeln!(
            out,
            "| Performance counters | {} |",
            if p { "permitted" } else { "not permitted" }
        );
    }
    for (tool, version) in &env.tools {
        let _ = writeln!(
            out,
            "| {} | {} |",
            md_text(tool),
            md_text(&scrub(version, &a.joined.repo_files))
        );
    }
    if let Some(s) = &env.toolchain_source {
        let _ = writeln!(out, "| Toolchain | {} |", md_text(s));
    }
    if let Some(failed) = &env.provisioning_failed {
        let _ = writeln!(
            out,
            "| Toolchain | failed to {} |",
            md_text(&scrub(failed, &a.joined.repo_files))
        );
    }
    if let Some(git) = &run.git {
        let _ = writeln!(
            out,
            "| Commit | `{}`{} |",
            git.commit,
            if git.dirty { " (dirty)" } else { "" }
        );
    }
    if let Some(host) = &env.host {
        let _ = writeln!(out, "| Host | {} (`--host`) |", md_code(host));
    }
    let _ = writeln!(out, "| OS | {} |", md_text(&env.os));
    if !env.preflight_cached.is_empty() {
        let _ = writeln!(
            out,
            "| Preflight | from its cache of earlier runs (nothing they depend on changed): {} |",
            md_text(&env.preflight_cached.join(", "))
        );
    }
    let _ = writeln!(out);
}

fn next_steps(out: &mut String, a: &Analysis) {
    let _ = writeln!(out, "## Next steps\n");
    let mut n = 0;
    let mut step = |out: &mut String, text: String| {
        n += 1;
        let _ = writeln!(out, "{n}. {text}");
    };
    for d in a.diagnoses.iter().filter(|d| d.level > Level::Note) {
        // The first sentence of the first help: the step to take.
        let first = d
            .help
            .first()
            .map(|h| h.first_sentence().markdown())
            .unwrap_or_default();
        step(
            out,
            format!(
                "{}{}: {}.",
                d.title.markdown(),
                d.location
                    .as_ref()
                    .map(|l| format!(" ({})", md_code(&l.to_string())))
                    .unwrap_or_default(),
                first
            ),
        );
    }
    for u in &a.verdict.unconcluded {
        step(
            out,
            format!(
                "Re-run {}{}: it {}{}.",
                md_code(&u.stage),
                u.config
                    .as_deref()
                    .map(|c| format!(" on {}", md_code(c)))
                    .unwrap_or_default(),
                md_text(&u.what),
                u.reason
                    .as_deref()
                    .map(|r| format!(" ({})", md_text(&scrub(r, &a.joined.repo_files))))
                    .unwrap_or_default()
            ),
        );
    }
    let mut reasons: Vec<String> = Vec::new();
    for nr in &a.verdict.not_run {
        if !reasons.contains(&nr.reason) {
            reasons.push(nr.reason.clone());
        }
    }
    for reason in reasons {
        let stages: Vec<String> = a
            .verdict
            .not_run
            .iter()
            .filter(|n| n.reason == reason)
            .map(|n| n.stage.clone())
            .collect();
        let mut stages = stages;
        stages.dedup();
        step(
            out,
            format!(
                "Run {} where they can run: skipped here ({}).",
                crate::text::join_words(&stages.iter().map(|s| md_code(s)).collect::<Vec<_>>()),
                md_text(&scrub(&reason, &a.joined.repo_files))
            ),
        );
    }
    if n == 0 {
        let _ = writeln!(out, "Nothing to fix: every stage that ran is clean.");
    }
    let _ = writeln!(out);
}

/// Raw lines quoted under a list item: an indented code block, fenced longer than any run of
/// backticks in them; nothing when there are none.
pub(crate) fn excerpt_block(out: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let fence = code_fence(lines);
    let _ = writeln!(out, "\n  {fence}text");
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "  {fence}\n");
}
