//! The analysis of a run: its joined evidence, ranked diagnoses, verdict and coverage receipt.
//! Every renderer works from this one value.

use crate::rules::RuleId;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::diagnosis::{Diagnosis, Figure, Level};
use crate::join::{Joined, Unconcluded, join, kind_name};
use crate::text::{join_words, plural};
use crate::{
    evidence::Evidence, kernel_id::KernelId, run::Stage, run::StageKind, run::StageStatus,
};

/// Joins, diagnoses and judges a run.
pub fn analyze(evidence: &Evidence) -> Analysis<'_> {
    let joined = join(evidence);
    Analysis::from_joined(joined)
}

/// A run (or a set of logs) analysed.
#[derive(Debug, Clone)]
pub struct Analysis<'a> {
    pub joined: Joined<'a>,
    /// Ranked: most severe, most certain first.
    pub diagnoses: Vec<Diagnosis>,
    pub verdict: Verdict,
    pub coverage: Vec<CoverageRow>,
    /// The experiments run on its hypotheses, concluded.
    pub experiments: Vec<crate::experiment::Conclusion>,
    /// Its stress stages' launch searches, read as experiments.
    pub launch_searches: Vec<crate::experiment::LaunchSearchRow>,
}

impl<'a> Analysis<'a> {
    /// Diagnoses and judges already joined evidence.
    pub fn from_joined(joined: Joined<'a>) -> Analysis<'a> {
        let drafts = crate::drafting::draft_all(&joined);
        let mut diagnoses = crate::fold::fold(drafts, &crate::fold::Facts::of(&joined));
        let (experiments, launch_searches) = crate::experiment::of_run(&joined);
        crate::experiment::apply(&mut diagnoses, &experiments, joined.run);
        let mut coverage = coverage(&joined);
        if joined.run.is_none() {
            // Without a run, a log's status is what was found in it: a log a root cause cites
            // holds findings even when its own records are warnings (the WMMA warning).
            for row in coverage
                .iter_mut()
                .filter(|r| r.status == StageStatus::Passed)
            {
                let cited = diagnoses
                    .iter()
                    .filter(|d| d.level > Level::Note)
                    .any(|d| d.evidence.iter().any(|e| row.logs.contains(&e.log)));
                if cited {
                    row.status = StageStatus::Findings;
                }
            }
        }
        let verdict = verdict(&joined, &diagnoses, &coverage);
        Analysis {
            joined,
            diagnoses,
            verdict,
            coverage,
            experiments,
            launch_searches,
        }
    }
}

/// The overall outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Everything that ran concluded and found nothing above a note.
    Clean,
    /// Performance warnings only.
    Warnings,
    /// No error, and a kernel loses much of its time to a cause Nsight Compute measured.
    Slow,
    /// At least one error-level diagnosis.
    Failing,
    /// No error found, but some stage could not conclude (or nothing ran): never clean.
    Inconclusive,
    /// The compile-side stages found nothing, and none of the stages that run the kernel ran
    /// (no GPU here, say): a statement about the build only, never "clean".
    CompileOnly,
    /// No stage ran anything (no build, no program: a Triton script without a GPU, a PyTorch
    /// extension without torch): the run says nothing of the program, and never "no error".
    NotChecked,
}

/// The verdict line and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
    /// Stage executions that failed, timed out, were inconclusive or interrupted.
    pub unconcluded: Vec<Unconcluded>,
    /// Stages skipped, with their reasons.
    pub not_run: Vec<NotRun>,
    /// What the machine lacked for the skipped stages, with how to get it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<crate::missing::Missing>,
    /// One sentence, e.g. "Failing: 2 root causes (2 errors) across 3 configs."
    pub line: String,
}

impl Verdict {
    pub fn is_clean(&self) -> bool {
        self.kind == VerdictKind::Clean
    }
}

/// A skipped stage and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotRun {
    pub stage: String,
    pub configs: Vec<String>,
    pub reason: String,
}

fn verdict(joined: &Joined, diagnoses: &[Diagnosis], coverage: &[CoverageRow]) -> Verdict {
    let count = |l: Level| diagnoses.iter().filter(|d| d.level == l).count();
    let (errors, warnings, notes) = (
        count(Level::Error),
        count(Level::Warning),
        count(Level::Note),
    );
    let unconcluded = joined.unconcluded();
    let not_run = not_run(joined.stages());
    // The measured performance causes, strongest first (diagnoses come ranked).
    let slow: Vec<&Diagnosis> = diagnoses
        .iter()
        .filter(|d| d.rule.rule().slows && d.level == Level::Warning)
        .collect();
    let ran = coverage
        .iter()
        .any(|c| matches!(c.status, StageStatus::Passed | StageStatus::Findings))
        || (joined.run.is_none() && !joined.sources.is_empty());
    // Stages that run the kernel or the program, and whether any of them did.
    let gpu_stage = |kind: StageKind| {
        kind.is_sanitizer()
            || matches!(
                kind,
                StageKind::Check
                    | StageKind::Stress
                    | StageKind::Bench
                    | StageKind::Baseline
                    | StageKind::Profile
            )
    };
    let gpu_planned = joined.stages().iter().any(|s| gpu_stage(s.kind));
    let gpu_ran = joined
        .stages()
        .iter()
        .any(|s| gpu_stage(s.kind) && s.status != StageStatus::Skipped);
    // Whether any stage but the report produced evidence: a build, a program's run.
    let checked = coverage.iter().any(|c| {
        c.kind != StageKind::Report
            && matches!(c.status, StageStatus::Passed | StageStatus::Findings)
    });
    let kind = if errors > 0 {
        VerdictKind::Failing
    } else if joined.run.is_some() && unconcluded.is_empty() && !checked && !not_run.is_empty() {
        VerdictKind::NotChecked
    } else if !unconcluded.is_empty() || !ran {
        VerdictKind::Inconclusive
    } else if gpu_planned && !gpu_ran {
        VerdictKind::CompileOnly
    } else if !slow.is_empty() {
        VerdictKind::Slow
    } else if warnings > 0 {
        VerdictKind::Warnings
    } else {
        VerdictKind::Clean
    };
    let configs = joined.config_names().into_iter().flatten().count();
    let on = if configs > 0 {
        format!(" on {}", plural(configs as u64, "config", "configs"))
    } else {
        String::new()
    };
    // "N causes, top: <title> in <kernel>": the performance causes, beside any fault.
    let slow_line = || {
        // The largest estimated gain; among equal ones the first in rank order, as the
        // root causes list them.
        // A suggestion no run tested leads only where nothing measured does.
        let top = slow
            .iter()
            .rev()
            .max_by(|a, b| {
                b.untested()
                    .cmp(&a.untested())
                    .then(speedup(a).total_cmp(&speedup(b)))
            })
            .copied();
        // The top cause's kernel against its binding roof, where its title does not say it.
        let roof = top
            .filter(|d| !d.title.contains("% of"))
            .and_then(|d| {
                let kernel = KernelId::of(d.kernel.as_deref()?);
                crate::roofline::of_kernel(joined, d.config.as_deref(), &kernel)
            })
            .map(|p| format!(", {}", p.phrase()))
            .unwrap_or_default();
        format!(
            "{}, top: {}{}{roof}",
            plural(slow.len() as u64, "cause", "causes"),
            top.map(|d| d.title.clone()).unwrap_or_default(),
            top.and_then(|d| d.kernel.as_deref())
                .map(|k| format!(" in {}", crate::text::short_kernel(k)))
                .unwrap_or_default()
        )
    };
    // The faults' warnings, without the performance causes said beside them.
    let fault_warnings = warnings.saturating_sub(slow.len());
    let mut line = match kind {
        VerdictKind::Failing => format!(
            "Failing: {} ({}{}).{}",
            plural(
                (errors + fault_warnings) as u64,
                "root cause",
                "root causes"
            ),
            plural(errors as u64, "error", "errors"),
            if fault_warnings > 0 {
                format!(", {}", plural(fault_warnings as u64, "warning", "warnings"))
            } else {
                String::new()
            },
            if slow.is_empty() {
                String::new()
            } else {
                format!(" Slow as well: {}.", slow_line())
            }
        ),
        VerdictKind::Inconclusive if !ran => {
            "Inconclusive: no stage ran to completion.".to_string()
        }
        VerdictKind::Inconclusive => format!(
            "Inconclusive: {} could not conclude{}.",
            plural(unconcluded.len() as u64, "stage", "stages"),
            if warnings > 0 {
                format!("; {} found", plural(warnings as u64, "warning", "warnings"))
            } else {
                "; no error found in what did".to_string()
            }
        ),
        VerdictKind::Warnings => format!(
            "No errors; {} ({}{on}).",
            plural(
                warnings as u64,
                "performance warning",
                "performance warnings"
            ),
            ran_tools(coverage)
        ),
        VerdictKind::Slow => match crate::rules::slower_than_baseline::verdict_phrase(joined) {
            // The program's own benchmark says how slow; the causes say why.
            Some(slower) if slow.iter().any(|d| d.rule != RuleId::SlowerThanBaseline) => {
                format!("Slow: {slower}; {}.", slow_line())
            }
            _ => format!("Slow: {}.", slow_line()),
        },
        VerdictKind::Clean => format!(
            "Clean: no problems found by {}{on}.{}",
            ran_tools(coverage),
            longest_against_the_limit(joined)
        ),
        // Worded below, once what is missing is known.
        VerdictKind::NotChecked => String::new(),
        VerdictKind::CompileOnly => format!(
            "Compile-only: {} found no error{on}{}; nothing ran the kernel, so nothing is known \
             of how it runs.",
            ran_tools(coverage),
            if warnings > 0 {
                format!(
                    " ({})",
                    plural(
                        warnings as u64,
                        "performance warning",
                        "performance warnings"
                    )
                )
            } else {
                String::new()
            }
        ),
    };
    let missing = crate::missing::of_stages(joined.stages());
    if kind == VerdictKind::NotChecked {
        line = "Not checked: no stage could run here, so this run says nothing of the program."
            .to_string();
        if !missing.is_empty() {
            let needs: Vec<String> = missing
                .iter()
                .map(|m| match &m.command {
                    Some(command) => format!("{} ({command})", m.what),
                    None => m.what.clone(),
                })
                .collect();
            line.push_str(&format!(" Missing: {}.", join_words(&needs)));
        }
    }
    if kind == VerdictKind::Failing && !unconcluded.is_empty() {
        line.push_str(&format!(
            " {} could not conclude.",
            plural(unconcluded.len() as u64, "stage", "stages")
        ));
    }
    if !not_run.is_empty() {
        let names: Vec<String> = not_run.iter().map(|n| n.stage.clone()).collect();
        let label = if kind == VerdictKind::NotChecked {
            "Not checked"
        } else {
            "Not run"
        };
        line.push_str(&format!(" {label}: {}.", join_words(&names)));
    }
    Verdict {
        kind,
        errors,
        warnings,
        notes,
        unconcluded,
        not_run,
        missing,
        line,
    }
}

/// A performance cause's estimated speedup (percent), 0 when it has none.
fn speedup(d: &Diagnosis) -> f64 {
    Figure::EstimatedSpeedup
        .of(&d.figures)
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

fn ran_tools(coverage: &[CoverageRow]) -> String {
    let mut names: Vec<String> = Vec::new();
    for c in coverage {
        if matches!(c.status, StageStatus::Passed | StageStatus::Findings)
            && c.kind != StageKind::Report
            && !names.contains(&c.stage)
        {
            names.push(c.stage.clone());
        }
    }
    if names.is_empty() {
        "the logs given".to_string()
    } else {
        join_words(&names)
    }
}

fn not_run(stages: &[Stage]) -> Vec<NotRun> {
    let mut out: Vec<NotRun> = Vec::new();
    for stage in stages.iter().filter(|s| s.status == StageStatus::Skipped) {
        let reason = stage
            .reason
            .clone()
            .unwrap_or_else(|| "no reason recorded".to_string());
        match out
            .iter_mut()
            .find(|n| n.stage == stage.name && n.reason == reason)
        {
            Some(n) => n.configs.extend(stage.config.clone()),
            None => out.push(NotRun {
                stage: stage.name.clone(),
                configs: stage.config.clone().into_iter().collect(),
                reason,
            }),
        }
    }
    out
}

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
}

/// A countable key figure: sanitizer errors, or checks passed of checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub count: u64,
    /// The total `count` is out of (checks run), when it is a share.
    pub of: Option<u64>,
    /// `errors` or `passed`.
    pub unit: &'static str,
}

impl Tally {
    /// Sums tallies of one unit; `None` when they differ in unit or there are none.
    pub fn sum(tallies: &[Option<Tally>]) -> Option<Tally> {
        let first = (*tallies.first()?)?;
        let mut total = Tally {
            count: 0,
            of: first.of.map(|_| 0),
            unit: first.unit,
        };
        for t in tallies {
            let t = (*t)?;
            if t.unit != first.unit || t.of.is_some() != first.of.is_some() {
                return None;
            }
            total.count = total.count.saturating_add(t.count);
            total.of = total.of.zip(t.of).map(|(a, b)| a.saturating_add(b));
        }
        Some(total)
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.of {
            Some(of) => write!(f, "{}/{of} {}", self.count, self.unit),
            None if self.unit == "errors" => f.write_str(&plural(self.count, "error", "errors")),
            None => write!(f, "{} {}", self.count, self.unit),
        }
    }
}

fn coverage(joined: &Joined) -> Vec<CoverageRow> {
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

/// The checks a user's program reported (`exhibit.results/1`) in these sources, as passed of
/// run; `None` when there are none.
fn program_tally(joined: &Joined, sources: &[usize]) -> Option<Tally> {
    let checks: Vec<bool> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .flat_map(|s| {
            // A test framework's cases (JUnit XML), those that ran.
            let tests = s
                .log
                .tests
                .iter()
                .filter(|t| t.outcome != parsers::TestOutcome::Skipped)
                .map(|t| t.outcome == parsers::TestOutcome::Passed);
            s.log.checks.iter().map(|c| c.passed).chain(tests)
        })
        .collect();
    if checks.is_empty() {
        return None;
    }
    Some(Tally {
        count: checks.iter().filter(|p| **p).count() as u64,
        of: Some(checks.len() as u64),
        unit: "passed",
    })
}

/// What a test framework's cases add to a check's count: those skipped, and the slowest few
/// that ran (`; 2 skipped; slowest: test_a 1.20 s, test_b 0.41 s`).
fn tests_note(joined: &Joined, sources: &[usize]) -> String {
    let tests: Vec<&parsers::TestCase> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .flat_map(|s| &s.log.tests)
        .collect();
    let mut note = String::new();
    let skipped = tests
        .iter()
        .filter(|t| t.outcome == parsers::TestOutcome::Skipped)
        .count();
    if skipped > 0 {
        note.push_str(&format!("; {skipped} skipped"));
    }
    let mut timed: Vec<(&str, f64)> = tests
        .iter()
        .filter(|t| t.outcome != parsers::TestOutcome::Skipped)
        .filter_map(|t| Some((t.id.as_str(), t.time_s?)))
        .filter(|(_, s)| *s >= 0.005)
        .collect();
    timed.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !timed.is_empty() {
        let slowest: Vec<String> = timed
            .iter()
            .take(3)
            .map(|(id, s)| format!("{} {s:.2} s", crate::text::md_code(id)))
            .collect();
        note.push_str(&format!("; slowest: {}", slowest.join(", ")));
    }
    note
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

/// An Nsight Compute argument that chooses which kernels or launches it profiles.
fn profile_filter(arg: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    matches!(
        name,
        "-k" | "--kernel-name"
            | "--kernel-id"
            | "--kernel-regex"
            | "-c"
            | "--launch-count"
            | "-s"
            | "--launch-skip"
            | "--launch-skip-before-match"
            | "--nvtx-include"
    )
}

/// Where the longest profiled kernel stands, for a clean verdict: clean is no cause found, not
/// at the limit (" Its longest kernel, reduce3<int>, runs at 52.1% of DRAM bandwidth.").
fn longest_against_the_limit(joined: &Joined) -> String {
    crate::resources::ncu_summaries(joined)
        .into_iter()
        .filter(|n| n.limit.is_some())
        .max_by(|a, b| {
            a.duration_us
                .unwrap_or(0.0)
                .total_cmp(&b.duration_us.unwrap_or(0.0))
        })
        .and_then(|n| {
            let p = n.limit?;
            Some(format!(
                " Its longest kernel, {}, runs {}.",
                crate::text::short_kernel(&n.kernel),
                p.phrase()
            ))
        })
        .unwrap_or_default()
}

/// A stage's key figure from its logs.
/// A launch search in a few words: `clean at 64 launches`, `clean at 8, fails at 9`.
fn search_figure(search: &crate::run::LaunchSearch) -> String {
    let own = match (search.clean_at, search.fails_at) {
        (Some(clean), Some(fails)) => format!("clean at {clean}, fails at {fails}"),
        (None, Some(fails)) => format!("fails at {fails}"),
        (Some(clean), None) => format!("clean at {clean} launches"),
        (None, None) => "no launch ran".to_string(),
    };
    match search.memcheck.as_ref().map(|m| (m.clean_at, m.fails_at)) {
        Some((Some(clean), Some(fails))) => {
            format!("{own}; memcheck clean at {clean}, errors from {fails}")
        }
        Some((None, Some(fails))) => format!("{own}; memcheck errors from {fails}"),
        _ => own,
    }
}

fn figure(joined: &Joined, kind: StageKind, logs: &[&str]) -> String {
    let sources = sources_of(joined, logs);
    if sources.is_empty() {
        // The baseline's profile is joined on its own.
        if let Some(baseline) = joined.baseline.as_deref()
            && !sources_of(baseline, logs).is_empty()
        {
            let kernels = crate::resources::ncu_summaries(baseline).len();
            return format!("the baseline's kernels: {} profiled", kernels);
        }
        return "no log".to_string();
    }
    let findings = || joined.findings_of(&sources);
    let results = || joined.results_of(&sources);
    match kind {
        StageKind::Compile => {
            let errors = findings()
                .filter(|f| f.finding.kind == parsers::FindingKind::CompileError)
                .count();
            if errors > 0 {
                return plural(errors as u64, "compile error", "compile errors");
            }
            let kernels: Vec<_> = joined
                .kernels_with_resources_from(&sources)
                .filter(|k| joined.is_target(&k.name))
                .collect();
            let regs = kernels.iter().filter_map(|k| k.registers()).max();
            let spills: Option<u64> = kernels.iter().filter_map(|k| k.spill_bytes()).max();
            let warnings = findings()
                .filter(|f| f.finding.severity == parsers::Severity::Warning)
                .count();
            let mut parts = Vec::new();
            if let Some(r) = regs {
                parts.push(format!("{r} regs"));
            }
            parts.push(match spills {
                Some(s) => format!("{s} B spilled"),
                None => "spills unknown".to_string(),
            });
            if warnings > 0 {
                parts.push(plural(warnings as u64, "warning", "warnings"));
            }
            parts.join(", ")
        }
        StageKind::Sass => {
            let kernels: Vec<_> = joined
                .kernels_with_sass_from(&sources)
                .filter(|k| joined.is_target(&k.name))
                .collect();
            let sum = |f: fn(&parsers::SassCounts) -> u64| {
                kernels
                    .iter()
                    .filter_map(|k| k.sass)
                    .map(f)
                    .fold(0u64, u64::saturating_add)
            };
            let mma = sum(|s| s.hmma.saturating_add(s.hgmma).saturating_add(s.imma));
            let local = sum(|s| s.ldl.saturating_add(s.stl));
            let traps = sum(|s| s.bpt_trap);
            let mut text = format!("{mma} MMA, {local} LDL/STL");
            if traps > 0 {
                text.push_str(&format!(", {traps} BPT.TRAP"));
            }
            text
        }
        k if k.is_sanitizer() => {
            let logs: Vec<&parsers::ParsedLog> = sources
                .iter()
                .filter_map(|&i| joined.source(i))
                .filter(|s| s.kind.is_sanitizer())
                .map(|s| s.log)
                .collect();
            if logs.is_empty() {
                return "no sanitizer log".to_string();
            }
            let records: u64 = findings()
                .filter(|f| {
                    joined
                        .source(f.source)
                        .is_some_and(|s| s.kind.is_sanitizer())
                })
                .map(|f| f.finding.count)
                .fold(0, u64::saturating_add);
            let reported: Option<u64> = logs
                .iter()
                .map(|l| l.reported_errors)
                .try_fold(0u64, |acc, x| x.map(|x| acc.saturating_add(x)));
            let n = reported.unwrap_or(records);
            let unprinted: u64 = logs
                .iter()
                .map(|l| l.unprinted_errors)
                .fold(0, u64::saturating_add);
            let mut text = if k == StageKind::Racecheck {
                let hazards: u64 = findings()
                    .filter(|f| f.finding.kind == parsers::FindingKind::Race)
                    .map(|f| {
                        crate::rules::detail_u64(f.finding, "hazards").unwrap_or(f.finding.count)
                    })
                    .fold(0, u64::saturating_add);
                let warnings: u64 = logs
                    .iter()
                    .filter_map(|l| l.reported_warnings)
                    .fold(0, u64::saturating_add);
                if n.saturating_add(warnings) == 0 && hazards == 0 {
                    "0 hazards".to_string()
                } else {
                    format!(
                        "{}, {} ({})",
                        plural(n, "error", "errors"),
                        plural(warnings, "warning", "warnings"),
                        plural(hazards, "hazard", "hazards")
                    )
                }
            } else {
                plural(n, "error", "errors")
            };
            if unprinted > 0 {
                text.push_str(&format!(" ({unprinted} not printed)"));
            }
            if logs.iter().any(|l| !l.complete) {
                text.push_str(", no summary");
            }
            text
        }
        StageKind::Check => {
            let checks: Vec<_> = results().filter_map(|r| r.result.check.as_ref()).collect();
            if checks.is_empty() {
                if let Some(t) = program_tally(joined, &sources) {
                    return format!("{t}{}", tests_note(joined, &sources));
                }
                return error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no check result".to_string());
            }
            let passed = checks.iter().filter(|c| c.passed).count();
            format!("{passed}/{} passed", checks.len())
        }
        StageKind::Stress => {
            let mut parts = Vec::new();
            for r in results() {
                if let Some(s) = &r.result.stress {
                    parts.push(match s.first_failure {
                        Some(n) => format!("fails at launch {n}/{}", s.launches),
                        None if s.mismatched_launches > 0 => {
                            format!("{}/{} differ", s.mismatched_launches, s.launches)
                        }
                        None => format!("{} launches ok", s.launches),
                    });
                }
            }
            if parts.is_empty() {
                error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no stress result".to_string())
            } else {
                parts.join("; ")
            }
        }
        StageKind::Bench | StageKind::Baseline => {
            let benches: Vec<_> = results().filter_map(|r| r.result.bench.as_ref()).collect();
            if benches.is_empty() {
                // A user's program's own benchmark timings (pytest-benchmark, Google Benchmark).
                let timings: usize = sources
                    .iter()
                    .filter_map(|&i| joined.source(i))
                    .map(|s| s.log.timings.len())
                    .sum();
                if timings > 0 {
                    return plural(timings as u64, "timing", "timings");
                }
                let skipped = results().filter(|r| r.result.skipped.is_some()).count();
                if skipped > 0 {
                    return format!("{skipped} skipped");
                }
                return error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no timing".to_string());
            }
            let best = benches.iter().map(|b| b.tflops).fold(0.0f64, f64::max);
            format!(
                "{}, best {} TFLOP/s",
                plural(benches.len() as u64, "timing", "timings"),
                crate::text::sig3(best)
            )
        }
        StageKind::Profile => {
            // Each profiled kernel with its launches (ncu's launch ids); a source page names
            // its kernels without them.
            let mut launches: BTreeMap<KernelId, BTreeSet<u64>> = BTreeMap::new();
            for m in joined.metrics_of(&sources) {
                let ids = launches.entry(m.kernel.clone()).or_default();
                ids.extend(m.metric.launch);
            }
            let mut lines = 0;
            for s in sources.iter().filter_map(|&i| joined.source(i)) {
                lines += s.log.source_lines.len();
                for function in s.log.source_lines.iter().map(|l| &l.function) {
                    launches.entry(KernelId::of(function)).or_default();
                }
            }
            // The kernels ncu measured that the program does not own (a framework's).
            let config = sources
                .iter()
                .filter_map(|&i| joined.source(i))
                .find_map(|s| s.config);
            let (launches, foreign): (BTreeMap<_, _>, BTreeMap<_, _>) = launches
                .into_iter()
                .partition(|(kernel, _)| joined.is_own(config, kernel));
            let kernels: Vec<KernelId> = launches.keys().cloned().collect();
            let n = joined.metrics_of(&sources).count();
            // The kernels the config's build defined that no profiled launch of its program
            // ran (a harness unit launches one kernel by choice).
            let configs: Vec<Option<&str>> = sources
                .iter()
                .filter_map(|&i| joined.source(i))
                .filter(|s| {
                    s.stage
                        .is_some_and(|st| st.unit().target == crate::run::TargetKind::Program)
                })
                .map(|s| s.config)
                .collect();
            let mut idle: Vec<KernelId> = joined
                .kernels
                .iter()
                .filter(|k| k.resources.is_some() && configs.contains(&k.config.as_deref()))
                .map(|k| k.name.clone())
                .filter(|name| !kernels.contains(name))
                .collect();
            idle.sort();
            idle.dedup();
            let named: Vec<String> = launches
                .iter()
                .map(|(kernel, ids)| match ids.len() {
                    0 => kernel.to_string(),
                    k => format!("{kernel} ({})", plural(k as u64, "launch", "launches")),
                })
                .collect();
            let mut counted = Vec::new();
            if n > 0 {
                counted.push(plural(n as u64, "metric", "metrics"));
            }
            if lines > 0 {
                counted.push(plural(lines as u64, "source line", "source lines"));
            }
            let mut text = if kernels.is_empty() {
                "no kernel profiled".to_string()
            } else {
                format!("profiled {}; {}", named.join(", "), counted.join(", "))
            };
            // A library builds many instantiations its program never launches: a few named,
            // the rest counted. Where ncu was told which kernels or launches to profile, the
            // others may well have run: not profiled, not "never launched".
            let filtered = sources
                .iter()
                .filter_map(|&i| joined.source(i))
                .filter_map(|s| s.stage)
                .any(|st| st.command.iter().any(|a| profile_filter(a)));
            let idle_word = if filtered {
                "not profiled"
            } else {
                "never launched"
            };
            const NAMED_IDLE: usize = 6;
            if idle.len() > NAMED_IDLE {
                let shown: Vec<&str> = idle.iter().take(NAMED_IDLE).map(KernelId::as_str).collect();
                text.push_str(&format!(
                    "; {idle_word}: {} kernels of the build ({} and {} more)",
                    idle.len(),
                    shown.join(", "),
                    idle.len() - NAMED_IDLE
                ));
            } else if !idle.is_empty() {
                text.push_str(&format!("; {idle_word}: {}", idle.join(", ")));
            }
            if !foreign.is_empty() {
                let names: Vec<KernelId> = foreign.into_keys().collect();
                text.push_str(&format!(
                    "; also measured, not the program's own: {}",
                    names.join(", ")
                ));
            }
            text
        }
        StageKind::Report => "rendered".to_string(),
        _ => String::new(),
    }
}

fn error_figure<'r>(
    results: impl Iterator<Item = &'r parsers::harness::HarnessResult>,
) -> Option<String> {
    results
        .filter_map(|r| r.error.as_deref())
        .next()
        .map(|e| e.split(':').next().unwrap_or(e).trim().to_string())
}

/// The indices of the joined sources read from `logs`.
fn sources_of(joined: &Joined, logs: &[&str]) -> Vec<usize> {
    joined.sources_at(logs)
}
