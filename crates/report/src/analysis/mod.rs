//! The analysis of a run: its joined evidence, ranked diagnoses, verdict and coverage receipt.
//! Every renderer works from this one value.

mod coverage;
mod figure;

use coverage::coverage;
pub use coverage::{CoverageRow, Tally, stage_status_word};
use figure::longest_against_the_limit;

use crate::rules::RuleId;

use serde::Serialize;

use crate::diagnosis::{Diagnosis, Figure, Level};
use crate::join::{Joined, Unconcluded, join};
use crate::text::{join_words, plural};
use crate::{evidence::Evidence, kernel_id::KernelId, run::StageKind, run::StageStatus};

/// Joins, diagnoses and judges a run.
pub fn analyze(evidence: &Evidence) -> Analysis<'_> {
    let joined = join(evidence);
    Analysis::from_joined(joined)
}

/// A run (or a set of logs) analysed.
#[derive(Debug, Clone)]
pub struct Analysis<'a> {
    /// The evidence joined: what the rules and experiments read. No emitter reads it; each
    /// renders the fields below.
    pub(crate) joined: Joined<'a>,
    /// Ranked: most severe, most certain first.
    pub diagnoses: Vec<Diagnosis>,
    pub verdict: Verdict,
    pub coverage: Vec<CoverageRow>,
    /// The experiments run on its hypotheses, concluded.
    pub experiments: Vec<crate::experiment::Conclusion>,
    /// Its stress stages' launch searches, read as experiments.
    pub launch_searches: Vec<crate::experiment::LaunchSearchRow>,
    /// The report's tables, built once from the evidence.
    pub tables: Tables,
    /// The machine the run ran on, as the report shows it: versions and reasons scrubbed of
    /// paths, no card's id. `None` for logs given without a run.
    pub environment: Option<crate::run::Environment>,
    /// The configs whose build another config's build served, by stage.
    pub served: Vec<Served>,
}

/// A config whose build another config's build served (their builds are the same).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Served {
    pub stage: String,
    pub config: String,
    /// The config whose build served it.
    pub by: String,
}

/// The run's environment as the report shows it ([`Analysis::environment`]).
fn environment(joined: &Joined) -> Option<crate::run::Environment> {
    let mut env = joined.run?.environment.clone();
    for version in env.tools.values_mut() {
        *version = joined.scrub(version);
    }
    for text in [&mut env.gpu_unavailable, &mut env.provisioning_failed] {
        *text = text.take().map(|t| joined.scrub(&t));
    }
    for gpu in &mut env.gpus {
        gpu.uuid = None;
    }
    Some(env)
}

/// Which configs' builds other configs' builds served.
fn served(joined: &Joined) -> Vec<Served> {
    let mut out = Vec::new();
    for stage in joined.stages() {
        let Some(by) = &stage.config else {
            continue;
        };
        out.extend(stage.unit().serves.iter().map(|c| Served {
            stage: stage.name.clone(),
            config: c.clone(),
            by: by.clone(),
        }));
    }
    out
}

/// The tables every emitter shows, built once per run.
#[derive(Debug, Clone)]
pub struct Tables {
    /// Each kernel's registers, shared memory, spills and occupancy, per config.
    pub kernels: Vec<crate::resources::KernelResources>,
    /// The correctness checks, per config and shape.
    pub checks: Vec<crate::tables::CheckRow>,
    /// The stress stages' launch counts and first failures.
    pub stress: Vec<crate::tables::StressRow>,
    /// The benchmarks' timings beside their baselines.
    pub bench: Vec<crate::tables::BenchRow>,
    /// Nsight Compute's figures per profiled kernel.
    pub ncu: Vec<crate::resources::NcuSummary>,
    /// The bench and baseline stages' timings, paired by name.
    pub timings: crate::timings::Timings,
    /// The benchmarks the program skipped instead of timing, and why.
    pub not_timed: Vec<crate::tables::NotTimed>,
    /// Nsight Compute's rule results, as it words them.
    pub profiler_remarks: Vec<crate::tables::ProfilerRemark>,
    /// The program's longest profiled kernel beside the baseline's two longest, each as its
    /// own profile measured it; `None` without a profile of both.
    pub beside_baseline: Option<(
        Vec<crate::resources::KernelFigures>,
        Vec<crate::resources::KernelFigures>,
    )>,
    /// The program's kernel and the baseline's, figure by figure.
    pub contrast: Option<crate::contrast::Comparison>,
}

impl Tables {
    fn of(joined: &Joined) -> Tables {
        Tables {
            kernels: crate::resources::kernel_resources(joined),
            checks: crate::tables::check_rows(joined),
            stress: crate::tables::stress_rows(joined),
            bench: crate::tables::bench_rows(joined),
            ncu: crate::resources::ncu_summaries(joined),
            timings: crate::timings::timings(joined),
            not_timed: crate::tables::not_timed(joined),
            profiler_remarks: crate::tables::profiler_remarks(joined),
            beside_baseline: crate::resources::beside_baseline(joined),
            contrast: crate::contrast::Comparison::of(joined),
        }
    }
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
        let tables = Tables::of(&joined);
        let verdict = verdict(&joined, &diagnoses, &coverage, &tables);
        let environment = environment(&joined);
        let served = served(&joined);
        Analysis {
            joined,
            diagnoses,
            verdict,
            coverage,
            experiments,
            launch_searches,
            tables,
            environment,
            served,
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

impl VerdictKind {
    /// The verdict as a table says it: "compile-only", "not checked".
    pub fn word(self) -> &'static str {
        match self {
            VerdictKind::Clean => "clean",
            VerdictKind::Warnings => "warnings",
            VerdictKind::Slow => "slow",
            VerdictKind::Failing => "failing",
            VerdictKind::Inconclusive => "inconclusive",
            VerdictKind::CompileOnly => "compile-only",
            VerdictKind::NotChecked => "not checked",
        }
    }
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

fn verdict(
    joined: &Joined,
    diagnoses: &[Diagnosis],
    coverage: &[CoverageRow],
    tables: &Tables,
) -> Verdict {
    let count = |l: Level| diagnoses.iter().filter(|d| d.level == l).count();
    let (errors, warnings, notes) = (
        count(Level::Error),
        count(Level::Warning),
        count(Level::Note),
    );
    let unconcluded = joined.unconcluded();
    let not_run = not_run(joined);
    // The measured performance causes, strongest first (diagnoses come ranked).
    let slow: Vec<&Diagnosis> = diagnoses
        .iter()
        .filter(|d| d.rule.rule().slows && d.level == Level::Warning)
        .collect();
    let ran = coverage
        .iter()
        .any(|c| matches!(c.status, StageStatus::Passed | StageStatus::Findings))
        || (joined.run.is_none() && !joined.sources.is_empty());
    let (gpu_planned, gpu_ran) = gpu_stages(joined);
    // Whether any stage but the report produced evidence: a build, a program's run.
    let checked = coverage.iter().any(|c| {
        c.kind != StageKind::Report
            && matches!(c.status, StageStatus::Passed | StageStatus::Findings)
    });
    let kind = if errors > 0 {
        VerdictKind::Failing
    } else if joined.run.is_some() && unconcluded.is_empty() && !checked && !not_run.is_empty() {
        VerdictKind::NotChecked
    } else if !slow.is_empty() && ran {
        // A measured slowness stands whatever else could not conclude; those stages are
        // listed after it.
        VerdictKind::Slow
    } else if !unconcluded.is_empty() || !ran {
        VerdictKind::Inconclusive
    } else if gpu_planned && !gpu_ran {
        VerdictKind::CompileOnly
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
                format!(" Slow as well: {}.", slow_line(joined, &slow))
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
        VerdictKind::Slow => match tables.timings.slowest() {
            // The program's own benchmark says how slow; the causes say why.
            Some(slower) if slow.iter().any(|d| d.rule != RuleId::SlowerThanBaseline) => {
                format!(
                    "Slow: {}; {}.",
                    slower.words().markdown(),
                    slow_line(joined, &slow)
                )
            }
            _ => format!("Slow: {}.", slow_line(joined, &slow)),
        },
        VerdictKind::Clean => format!(
            "Clean: no problems found by {}{on}.{}",
            ran_tools(coverage),
            longest_against_the_limit(joined, &tables.ncu)
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
    let mut missing = crate::missing::of_stages(joined.stages());
    for m in &mut missing {
        m.reason = m.reason.take().map(|r| joined.scrub(&r));
    }
    with_gaps(&mut line, kind, &missing, &unconcluded, &not_run);
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

/// "N causes, top: <title> in <kernel>": the performance causes, beside any fault; the top one
/// is the largest estimated gain, a measured one before an untested suggestion.
fn slow_line(joined: &Joined, slow: &[&Diagnosis]) -> String {
    // The first in rank order, as the root causes list them (`fold::rank`: a measured cause
    // before a suggestion no run tested, then the largest gain to the program).
    let top = slow.first().copied();
    // The top cause's kernel against its binding roof, where its title does not say it.
    let roof = top
        .filter(|d| Figure::PercentOfPeak.of(&d.figures).is_none())
        .and_then(|d| {
            let kernel = KernelId::of(d.kernel.as_deref()?);
            crate::roofline::of_kernel(joined, d.config.as_deref(), &kernel)
        })
        .map(|p| format!(", {}", p.phrase()))
        .unwrap_or_default();
    format!(
        "{}, top: {}{}{roof}",
        plural(slow.len() as u64, "cause", "causes"),
        top.map(|d| d.title.clone()).unwrap_or_default().markdown(),
        top.and_then(|d| d.kernel.as_deref())
            .map(|k| format!(" in {}", crate::text::short_kernel(k)))
            .unwrap_or_default()
    )
}

/// Whether the pipeline plans a stage that runs the kernel or the program, and whether any of
/// them ran.
fn gpu_stages(joined: &Joined) -> (bool, bool) {
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
    (gpu_planned, gpu_ran)
}

/// Appends to the verdict's line what the run lacks: for a run that checked nothing, the tools
/// missing here; the stages that could not conclude beside a failure; the stages not run.
fn with_gaps(
    line: &mut String,
    kind: VerdictKind,
    missing: &[crate::missing::Missing],
    unconcluded: &[Unconcluded],
    not_run: &[NotRun],
) {
    if kind == VerdictKind::NotChecked {
        *line = "Not checked: no stage could run here, so this run says nothing of the program."
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
    if matches!(kind, VerdictKind::Failing | VerdictKind::Slow) && !unconcluded.is_empty() {
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

fn not_run(joined: &Joined) -> Vec<NotRun> {
    let mut out: Vec<NotRun> = Vec::new();
    for stage in joined
        .stages()
        .iter()
        .filter(|s| s.status == StageStatus::Skipped)
    {
        let reason = stage
            .reason
            .as_deref()
            .map_or_else(|| "no reason recorded".to_string(), |r| joined.scrub(r));
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
