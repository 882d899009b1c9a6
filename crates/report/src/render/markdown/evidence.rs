//! The evidence section: what each stage ran, its status and cost, the coverage per tool and
//! config, and the launches the profiler saw.

use std::fmt::Write;

use crate::analysis::{Analysis, CoverageRow, stage_status_word};
use crate::run::StageStatus;
use crate::text::{md_cell, md_code, md_text};

use super::{seconds, status_icon};

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

pub(super) fn evidence(out: &mut String, a: &Analysis) {
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
    // What ran once for the whole run is a list, so that the table holds one column per
    // config and no column of long text that no config shares.
    if !run_wide.is_empty() {
        if !per_config.is_empty() {
            let _ = writeln!(out, "Run-wide:\n");
        }
        for stage in &run_wide {
            let _ = writeln!(
                out,
                "- **{}**: {}",
                md_text(stage),
                coverage_cell(a, stage, None)
            );
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
                row.push(coverage_cell(a, stage, Some(c)));
            }
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        let _ = writeln!(out);
    }
    for line in profile_launches(a) {
        let _ = writeln!(out, "{line}\n");
    }
    let tests = crate::render::missing_markdown::test_lines(a);
    if !tests.is_empty() {
        let _ = writeln!(out, "Tests:\n");
        for line in tests {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}\n", status_legend(a));

    not_run(out, a);
    stage_executions(out, a);
}

/// One cell of the evidence table: the worst status of a stage's units on a config (or run-wide
/// with `None`), their figures and what profiling cost, how many units, and whether the kernel
/// failed to launch; a config that another config's build served points at that build.
fn coverage_cell(a: &Analysis, stage: &str, config: Option<&str>) -> String {
    let rows: Vec<&CoverageRow> = a
        .coverage
        .iter()
        .filter(|r| r.stage == stage && r.config.as_deref() == config)
        .collect();
    if rows.is_empty() {
        // A config whose build another config's build served.
        let owner =
            config.and_then(|c| a.served.iter().find(|s| s.stage == stage && s.config == c));
        return owner
            .map(|o| format!("↗ the build of {}", md_code(&o.by)))
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
}

/// The legend of the status icons that the coverage shows.
fn status_legend(a: &Analysis) -> String {
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
    legend.join(" · ")
}

/// The stages that did not run, with their configs and the reason.
fn not_run(out: &mut String, a: &Analysis) {
    if a.verdict.not_run.is_empty() {
        return;
    }
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
            md_text(&n.reason)
        );
    }
    let _ = writeln!(out);
}

/// The folded table of every stage execution that was not skipped: its config, case, status,
/// key figure with its cost, whether the kernel launched, and its logs.
fn stage_executions(out: &mut String, a: &Analysis) {
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
