//! One pipeline run, from preflight to report.
//!
//! [`run`] checks the machine, plans the units, creates `artifacts/<run-id>/`, and executes the
//! units, several at once where [`crate::planning::schedule`] allows: each is skipped with its reason,
//! served from the cache, or run under [`crate::process::exec`] and judged by [`crate::execution::stages::decide`].
//! Each unit runs on its own thread; this thread starts them, reports progress and records them
//! in plan order. The manifest is rewritten after every unit. An interrupt stops the units in
//! flight (their process groups are killed) and the run ends with its manifest marked
//! interrupted.
//!
//! Its parts: the run loop (`run_loop`), one unit's attempt and cache key (`executor`), the
//! experiments phase (`trials`), the report and the run's judgement (`report_unit`), and what
//! the manifest records of the run's inputs and commit (`provenance`).

use std::path::PathBuf;
use std::time::Instant;

use chrono::{SecondsFormat, Utc};
use report::{Run, Stage, StageKind, StageStatus};

use crate::evidence::cache::{Index, Seal};
use crate::evidence::rundir::{self, RunDir, WriteError};
use crate::evidence::stored::Parsed;
use crate::execution::stages;
use crate::pipeline::config::Pipeline;
use crate::planning::plan::{self, Blocked, Selection, Unit};
use crate::planning::schedule::{self, Limits};
use crate::process::interrupt::Interrupt;
use crate::process::progress::{Event, Progress};
use crate::process::slurm::Launcher;
use crate::setup::preflight::{self, BuiltinHarness, Preflight};
use crate::setup::toolchain::{self, Env};

use executor::Executor;
use run_loop::{execute, skip_lines};

mod executor;
mod provenance;
mod report_unit;
mod run_loop;
mod trials;

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Ignore earlier results.
    pub force: bool,
    pub selection: Selection,
    /// How many units may run at once (its `gpus` is decided by `gpus` below).
    pub limits: Limits,
    /// Which GPUs GPU units spread over.
    pub gpus: Gpus,
    /// Where GPU units run: here, or as jobs of a cluster.
    pub launcher: Launcher,
    /// Less free space than this on the run directory's file system after a unit makes the
    /// unit inconclusive ([`rundir::MIN_FREE_BYTES`] unless `EXHIBIT_MIN_FREE_BYTES` says).
    pub min_free_bytes: u64,
}

/// `--gpus`: the GPUs a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gpus {
    /// The GPU the CUDA runtime picks (device 0 of `CUDA_VISIBLE_DEVICES`); nothing is set.
    #[default]
    Default,
    /// Every GPU preflight found (or that `CUDA_VISIBLE_DEVICES` lists).
    All,
    /// The first N of them.
    Count(usize),
}

impl Default for Options {
    fn default() -> Options {
        Options {
            force: false,
            selection: Selection::default(),
            limits: Limits::SEQUENTIAL,
            gpus: Gpus::Default,
            launcher: Launcher::Local,
            min_free_bytes: rundir::MIN_FREE_BYTES,
        }
    }
}

/// What the run needs from its surroundings.
pub struct Context<'a> {
    pub env: Env,
    pub harness: BuiltinHarness,
    pub progress: &'a dyn Progress,
    pub interrupt: Interrupt,
}

/// A finished (or interrupted) run.
#[derive(Debug, Clone)]
pub struct Finished {
    pub run: Run,
    /// `artifacts/<run-id>`, relative to the pipeline root.
    pub dir: PathBuf,
    /// `reports/<run-id>.md`, relative to the pipeline root, when a report was written.
    pub report: Option<PathBuf>,
    /// The report's verdict sentence, when a report was written.
    pub headline: Option<String>,
    /// The report's kind of verdict (compile-only, not checked, ...), when it judged the run.
    pub judged: Option<report::VerdictKind>,
    pub verdict: Verdict,
}

/// The run's overall result, from which the exit code follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every unit passed or was skipped with a reason.
    Clean,
    /// Some unit found problems.
    Findings,
    /// Some unit failed, timed out or was inconclusive, and none found problems.
    Incomplete,
    /// The run was interrupted.
    Interrupted,
}

/// Why a run could not proceed at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// `--gpus` asks for GPUs the machine does not show.
    #[error("{0}")]
    Gpus(String),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("hash {path}: {source}")]
    Hash {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Runs the pipeline.
pub fn run(pipeline: &Pipeline, options: &Options, cx: &Context<'_>) -> Result<Finished, RunError> {
    let started = Utc::now();
    let clock = Instant::now();
    let say = |line: &str| cx.progress.event(Event::Note(line));
    let pipeline_name = pipeline.path.file_name().map_or_else(
        || "pipeline.yaml".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let inputs = provenance::input_hashes(pipeline, &pipeline_name)?;
    let pipeline_hash = inputs.get(&pipeline_name).cloned().unwrap_or_default();
    let links = provenance::links(pipeline, &inputs);

    let preflight = preflight_here(pipeline, options, cx, clock);
    let plan = plan::plan(pipeline, &preflight, &options.selection)?;
    let devices = devices(options.gpus, &preflight)?;

    let id = rundir::run_id(started, &pipeline_hash);
    let dir = RunDir::create(&pipeline.root, &id)?;
    let _reserve = Reserve(&dir);
    say(&format!(
        "run {id}: {}",
        rundir::shown(&pipeline.root.join(&dir.relative))
    ));
    let mut run = Run {
        schema: report::RUN_SCHEMA.to_string(),
        id: id.clone(),
        pipeline: pipeline_name,
        started: started.to_rfc3339_opts(SecondsFormat::Secs, true),
        finished: None,
        // Until the run finishes, a reader of the manifest sees it as cut short.
        interrupted: true,
        git: provenance::git(&pipeline.root, &cx.interrupt),
        environment: preflight.environment.clone(),
        inputs,
        stages: Vec::new(),
        wall_ms: None,
        links,
        knobs: crate::pipeline::config::knobs_of(pipeline),
        experiments: Vec::new(),
        source_maps: Vec::new(),
    };
    dir.write_manifest(&run)?;

    let index = cache_index(pipeline, options, &id, cx);
    let limits = limits(options, &devices, &preflight);
    let executor = Executor::new(
        pipeline, &preflight, &plan, &dir, index, options, cx, &limits, &run,
    );
    let report_unit = plan.units.iter().find(|u| u.kind == StageKind::Report);
    // What cannot run here (no GPU, a missing tool) is said once per stage and reason, in plan
    // order, before anything runs; what is skipped later (a build that failed, nothing to do)
    // once the units ended.
    let planned_skips = plan.units.iter().filter_map(|u| match &u.blocked {
        Some(Blocked::Skip(reason)) if u.kind != StageKind::Report => Some((u, reason.as_str())),
        _ => None,
    });
    say_skips(cx, planned_skips);
    // Each unit's record, in plan order, once it ended.
    let mut records: Vec<Option<Stage>> = vec![None; plan.units.len()];
    let mut late_skips = execute(
        &plan,
        &executor,
        limits,
        &devices,
        cx,
        &dir,
        options.min_free_bytes,
        |i, stage, flags| {
            // Each unit's record goes to the journal as it ends, the manifest only at the end:
            // a run's writes grow with its units, not with their square.
            dir.record_unit(i, &stage, flags.clone())?;
            if let Some((key, sha)) = flags {
                run.inputs.insert(key, sha);
            }
            if let Some(slot) = records.get_mut(i) {
                *slot = Some(stage);
            }
            Ok(())
        },
    )?;
    run.stages = records.into_iter().flatten().collect();
    late_skips.sort();
    let late = late_skips
        .iter()
        .filter_map(|(i, reason)| Some((plan.units.get(*i)?, reason.as_str())));
    say_skips(cx, late);

    // The report's hypotheses, tested where the pipeline asks for it; a run of chosen stages
    // (`--only`, every step of a bisection) runs only those.
    // The logs parsed for the experiments' proposals are not parsed again for the report.
    let mut parsed = Parsed::default();
    if pipeline.experiments_on() && options.selection.stages.is_empty() && !cx.interrupt.is_set() {
        trials::experiments(
            pipeline,
            &preflight,
            &dir,
            &mut run,
            options,
            limits,
            &devices,
            cx,
            &mut parsed,
        )?;
    }

    run.finished = Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true));
    run.interrupted = cx.interrupt.is_set();
    // Found while the JIT caches that hold the generated files are still in the run.
    run.source_maps = crate::evidence::inline_sources::maps(&run, &dir.path);
    let (report, judged) =
        report_unit::conclude(pipeline, &dir, &mut run, report_unit, cx, &mut parsed);
    run.wall_ms = Some(u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX));
    dir.finish_manifest(&run)?;
    cx.progress.event(Event::Done);
    let verdict = verdict(&run, judged.as_ref());
    Ok(Finished {
        run,
        dir: dir.relative.clone(),
        judged: judged.as_ref().map(|v| v.kind),
        headline: report.as_ref().and(judged.map(|v| v.line)),
        report,
        verdict,
    })
}

/// What this machine can run, said on the progress line by line: under `--slurm` the GPUs are
/// taken to be on the compute nodes. `clock` is the run's: the time said is since it started.
fn preflight_here(
    pipeline: &Pipeline,
    options: &Options,
    cx: &Context<'_>,
    clock: Instant,
) -> Preflight {
    // What preflight warns of is a note; its summary, a preflight line.
    let say = |line: &str| cx.progress.event(Event::Note(line));
    let mut preflight = preflight::check(pipeline, &cx.env, &cx.harness, &say, &cx.interrupt);
    let summary = |line: &str| cx.progress.event(Event::Preflight(line));
    if let Launcher::Slurm(_) = options.launcher {
        // The GPUs are on the compute nodes, not here.
        preflight.gpu_unavailable = None;
        summary("gpu: on the Slurm compute nodes (--slurm)");
    }
    for line in preflight.summary() {
        summary(&line);
    }
    summary(&format!("took {:.1} s", clock.elapsed().as_secs_f64()));
    preflight
}

/// The results earlier runs left that run `run_id` may be served from: none under `--force`.
fn cache_index(pipeline: &Pipeline, options: &Options, run_id: &str, cx: &Context<'_>) -> Index {
    if options.force {
        Index::default()
    } else {
        Index::load(&pipeline.root, run_id, user_seal(&cx.env))
    }
}

/// How many units may run at once: the options' limits, with one GPU slot per device of
/// `devices` (at least one; on a cluster as many as units at once), and `--gpu-jobs` 0 read as
/// the default for this machine's GPUs.
fn limits(options: &Options, devices: &[String], preflight: &Preflight) -> Limits {
    Limits {
        // On a cluster every job has its GPU: as many may be in flight as units at once.
        gpus: match options.launcher {
            Launcher::Slurm(_) => options.limits.jobs,
            Launcher::Local => devices.len().max(1),
        },
        gpu_jobs: match options.limits.gpu_jobs {
            0 => schedule::gpu_jobs_for(options.limits.jobs, &preflight.environment.gpus),
            n => n,
        },
        ..options.limits
    }
}

/// Says the skipped units on the progress, one line per stage and reason ([`skip_lines`]).
fn say_skips<'u>(cx: &Context<'_>, units: impl Iterator<Item = (&'u Unit, &'u str)>) {
    for (label, reason) in skip_lines(units) {
        cx.progress.event(Event::Skipped {
            label: &label,
            reason: &reason,
        });
    }
}

/// A unit's record before anything is known of how it ends: skipped, with no reason, naming
/// what its unit runs ([`stages::unit_record`]) and the GPU it was given.
fn unit_stage(unit: &Unit, pipeline: &Pipeline, device: Option<&str>) -> Stage {
    Stage {
        name: unit.name.clone(),
        kind: unit.kind,
        config: unit.config.clone(),
        arch: unit.arch.clone(),
        status: StageStatus::Skipped,
        reason: None,
        command: Vec::new(),
        exit_code: None,
        duration_ms: 0,
        cached_from: None,
        input_hash: None,
        logs: Vec::new(),
        unit: stages::unit_record(unit, pipeline),
        launch_search: None,
        leftovers: Vec::new(),
        device: device.map(str::to_string),
        outputs: Default::default(),
        cut: Default::default(),
        split: Vec::new(),
        site_lines: Default::default(),
        seal: None,
        missing: Vec::new(),
    }
}

/// The overall verdict, from which the exit code follows: interrupted, else findings, else
/// incomplete, else clean. Findings are a unit's findings that the report judged a root cause
/// at warning level or above (`judged`, the report's verdict over the run's evidence): findings
/// it reads as notes only (a compiler remark of low confidence) never make a run fail. Without
/// a judgement (an interrupted run), a unit with findings counts.
pub fn verdict(run: &Run, judged: Option<&report::Verdict>) -> Verdict {
    let any = |status: StageStatus| run.stages.iter().any(|s| s.status == status);
    let findings = any(StageStatus::Findings) && judged.is_none_or(|j| j.errors + j.warnings > 0);
    if run.interrupted || any(StageStatus::Interrupted) {
        Verdict::Interrupted
    } else if findings {
        Verdict::Findings
    } else if any(StageStatus::Failed)
        || any(StageStatus::TimedOut)
        || any(StageStatus::Inconclusive)
    {
        Verdict::Incomplete
    } else if judged.is_some_and(|j| j.kind == report::VerdictKind::NotChecked) {
        // Nothing ran: no evidence is no pass.
        Verdict::Incomplete
    } else {
        Verdict::Clean
    }
}

/// Removes the run directory's space reserve when the run ends, however it ends.
struct Reserve<'a>(&'a RunDir);

impl Drop for Reserve<'_> {
    fn drop(&mut self) {
        self.0.release_reserve();
    }
}

/// The `CUDA_VISIBLE_DEVICES` value of each GPU slot: empty when the run leaves the choice to
/// the CUDA runtime.
fn devices(gpus: Gpus, preflight: &Preflight) -> Result<Vec<String>, RunError> {
    let visible: Vec<String> = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect(),
        _ => (0..preflight.environment.gpus.len())
            .map(|i| i.to_string())
            .collect(),
    };
    match gpus {
        Gpus::Default => Ok(Vec::new()),
        Gpus::All if visible.is_empty() => Err(RunError::Gpus(
            "--gpus all: preflight found no GPU".to_string(),
        )),
        Gpus::All => Ok(visible),
        Gpus::Count(n) if n > visible.len() => Err(RunError::Gpus(format!(
            "--gpus {n}: {} GPU{} visible ({})",
            visible.len(),
            if visible.len() == 1 { "" } else { "s" },
            if visible.is_empty() {
                "none".to_string()
            } else {
                visible.join(", ")
            }
        ))),
        Gpus::Count(n) => Ok(visible.into_iter().take(n).collect()),
    }
}

/// This user's seal for the cache ([`Seal`]), from the user's cache directory.
fn user_seal(env: &Env) -> Option<Seal> {
    toolchain::cache_home(env).and_then(|home| Seal::of_user(&home))
}
