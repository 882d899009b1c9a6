//! The coverage receipt: one row per stage and config, with its status, tally and key figure.

use serde::Serialize;

use crate::join::{Joined, kind_name};
use crate::run::{Stage, StageKind, StageStatus};

pub use super::figure::Tally;
use super::figure::{figure, program_tally, search_figure, sources_of};

/// One stage execution in the coverage receipt: what ran where, whether the kernel launched under
/// it, and its key figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageRow {
    pub stage: String,
    pub kind: StageKind,
    pub config: Option<String>,
    pub status: StageStatus,
    /// Whether the kernel launched under this stage: from the harness JSON the stage kept, or
    /// from findings in the kernel; `None` when the stage records neither.
    pub launched: Option<bool>,
    /// The stage's key figure, e.g. `0 errors`, `3/3 passed`, `168 regs, 0 B spilled`.
    pub figure: String,
    /// The logs, relative to the run directory.
    pub logs: Vec<String>,
    pub reason: Option<String>,
    pub cached_from: Option<String>,
    /// The problem the stage ran, from its command (`2,8,512,64 f16 causal`).
    pub case: Option<String>,
    /// The key figure as numbers, for summing over the executions of one stage and config.
    pub tally: Option<Tally>,
    /// How a loose log was read, when its kind says more than the log (`compute-sanitizer,
    /// tool unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_as: Option<String>,
    /// What the unit cost, where the report shows it: a profile's wall time (profiling is the
    /// costly stage), when it ran in this run rather than came from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_ms: Option<u64>,
    /// A profile unit's launches, and who chose them (the stage's arguments or the runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_launches: Option<crate::run::ProfileLaunches>,
    /// The program's own tests its logs reported (JUnit XML), in their order: JUnit output
    /// lists each beside its stage execution.
    #[serde(skip)]
    pub tests: Vec<parsers::TestCase>,
}

pub(super) fn coverage(joined: &Joined) -> Vec<CoverageRow> {
    let mut rows = Vec::new();
    if joined.run.is_some() {
        for stage in joined.stages() {
            rows.push(row(
                joined,
                Some(stage),
                stage.kind,
                stage.config.as_deref(),
                stage.status,
            ));
        }
    } else {
        for (index, source) in joined.sources.iter().enumerate() {
            let mut r = row(joined, None, source.kind, None, StageStatus::Passed);
            r.stage = source.path.to_string();
            r.logs = vec![source.path.to_string()];
            r.read_as = crate::join::read_as(source);
            r.figure = figure(joined, source.kind, &[source.path]);
            let findings = joined
                .findings
                .iter()
                .any(|f| f.source == index && f.finding.severity == parsers::Severity::Error);
            r.status = if !source.log.complete && source.kind.is_sanitizer() {
                StageStatus::Inconclusive
            } else if source.log.holds_nothing() {
                // Nothing in it reads as the format it was read as (`--as` on a foreign
                // file): no evidence either way.
                r.figure = "nothing of this format in it".to_string();
                StageStatus::Inconclusive
            } else if source.log.every_test_skipped() {
                r.figure = "every test skipped".to_string();
                StageStatus::Inconclusive
            } else if findings {
                StageStatus::Findings
            } else {
                StageStatus::Passed
            };
            rows.push(r);
        }
    }
    for row in &mut rows {
        let logs: Vec<&str> = row.logs.iter().map(String::as_str).collect();
        row.tests = joined
            .sources_at(&logs)
            .into_iter()
            .filter_map(|i| joined.source(i))
            .flat_map(|s| s.log.tests.iter().cloned())
            .collect();
    }
    rows
}

fn row(
    joined: &Joined,
    stage: Option<&Stage>,
    kind: StageKind,
    config: Option<&str>,
    status: StageStatus,
) -> CoverageRow {
    let logs: Vec<&str> = stage
        .map(|s| s.logs.iter().map(|l| l.path.as_str()).collect())
        .unwrap_or_default();
    let launched = launched(joined, &logs);
    let figure = match status {
        StageStatus::Skipped => "skipped".to_string(),
        _ if kind == StageKind::Report => stage
            .and_then(|s| s.reason.clone())
            .unwrap_or_else(|| "rendered".to_string()),
        StageStatus::Failed | StageStatus::TimedOut | StageStatus::Interrupted
            if logs.iter().all(|l| !joined.has_source_at(l)) =>
        {
            stage_status_word(status).to_string()
        }
        _ => match stage.and_then(|s| s.launch_search.as_ref()) {
            Some(search) => search_figure(search),
            None => {
                let sources = sources_of(joined, &logs);
                let tool_found_nothing = !joined
                    .findings
                    .iter()
                    .any(|f| sources.contains(&f.source) && crate::rules::is_error(f.finding));
                if status == StageStatus::Findings && kind.is_sanitizer() && tool_found_nothing {
                    // The stage failed on the program's exit status alone.
                    "program failed; the tool found nothing".to_string()
                } else {
                    figure(joined, kind, &logs)
                }
            }
        },
    };
    CoverageRow {
        stage: stage
            .map(|s| s.name.clone())
            .unwrap_or_else(|| kind_name(kind).to_string()),
        kind,
        config: config.map(str::to_string),
        status,
        launched,
        figure,
        logs: logs.iter().map(|s| s.to_string()).collect(),
        reason: stage
            .and_then(|s| s.reason.clone())
            .map(|r| crate::text::scrub(&r, &joined.repo_files)),
        cached_from: stage.and_then(|s| s.cached_from.clone()),
        case: stage.and_then(crate::tables::case_label),
        read_as: None,
        tally: match status {
            StageStatus::Passed | StageStatus::Findings => tally(joined, kind, &logs),
            _ => None,
        },
        cost_ms: stage
            .filter(|s| {
                kind == StageKind::Profile
                    && s.cached_from.is_none()
                    && status != StageStatus::Skipped
            })
            .map(|s| s.duration_ms),
        profile_launches: stage.and_then(|s| s.unit.profile_launches),
        tests: Vec::new(),
    }
}

/// A stage's key figure as numbers, where it is a count.
fn tally(joined: &Joined, kind: StageKind, logs: &[&str]) -> Option<Tally> {
    let sources = sources_of(joined, logs);
    if kind.is_sanitizer() && kind != StageKind::Racecheck {
        let log = sources
            .iter()
            .filter_map(|&i| joined.source(i))
            .find(|s| s.kind.is_sanitizer())?
            .log;
        return log.reported_errors.map(|n| Tally {
            count: n,
            of: None,
            unit: "errors",
        });
    }
    if kind == StageKind::Check {
        let checks: Vec<bool> = joined
            .results_of(&sources)
            .filter_map(|r| r.result.check.as_ref().map(|c| c.passed))
            .collect();
        if checks.is_empty() {
            return program_tally(joined, &sources);
        }
        let passed = checks.iter().filter(|p| **p).count() as u64;
        return Some(Tally {
            count: passed,
            of: Some(checks.len() as u64),
            unit: "passed",
        });
    }
    None
}

/// The word for a stage status.
pub fn stage_status_word(status: StageStatus) -> &'static str {
    match status {
        StageStatus::Passed => "passed",
        StageStatus::Findings => "findings",
        StageStatus::Failed => "failed",
        StageStatus::TimedOut => "timed out",
        StageStatus::Skipped => "skipped",
        StageStatus::Inconclusive => "inconclusive",
        StageStatus::Interrupted => "interrupted",
    }
}

fn launched(joined: &Joined, logs: &[&str]) -> Option<bool> {
    let sources = sources_of(joined, logs);
    let results: Vec<bool> = joined
        .results_of(&sources)
        .filter(|r| !crate::join::is_baseline(r.result))
        .map(|r| r.result.launched)
        .collect();
    if !results.is_empty() {
        return Some(results.iter().all(|l| *l));
    }
    let kernel_findings = joined.findings_of(&sources).any(|f| {
        f.kernel.as_ref().is_some_and(|k| joined.is_target(k))
            && joined
                .source(f.source)
                .is_some_and(|s| s.kind.is_sanitizer())
    });
    if kernel_findings {
        return Some(true);
    }
    let profiled = joined
        .metrics_of(&sources)
        .any(|m| joined.is_target(&m.kernel));
    profiled.then_some(true)
}
