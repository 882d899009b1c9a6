//! One pipeline run, from preflight to report.
//!
//! [`run`] checks the machine, plans the units, creates `artifacts/<run-id>/`, and executes the
//! units, several at once where [`crate::planning::schedule`] allows: each is skipped with its reason,
//! served from the cache, or run under [`crate::process::exec`] and judged by [`crate::execution::stages::decide`].
//! Each unit runs on its own thread; this thread starts them, reports progress and records them
//! in plan order. The manifest is rewritten after every unit. An interrupt stops the units in
//! flight (their process groups are killed) and the run ends with its manifest marked
//! interrupted.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use report::{Git, Log, OutputFormat, Run, Stage, StageKind, StageStatus};

use crate::evidence::cache::{self, Index, Key};
use crate::evidence::hash;
use crate::evidence::rundir::{self, RunDir, WriteError, slash};
use crate::execution::stages::{self, Paths};
use crate::execution::steps;
use crate::pipeline::config::{self, Pipeline};
use crate::planning::plan::{self, Blocked, Plan, Selection, Unit};
use crate::planning::schedule::{Class, Limits, Scheduler};
use crate::process::exec::{self, Ending, device_env};
use crate::process::interrupt::Interrupt;
use crate::process::progress::{Event, Progress};
use crate::process::slurm::Launcher;
use crate::setup::preflight::{self, BuiltinHarness, Preflight};
use crate::setup::toolchain::Env;

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
    let mut inputs = BTreeMap::new();
    let hash_input =
        |inputs: &mut BTreeMap<String, String>, relative: &Path| -> Result<(), RunError> {
            let path = pipeline.resolve(relative);
            let sha = hash::file(&path).map_err(|source| RunError::Hash { path, source })?;
            inputs.insert(slash(relative), sha);
            Ok(())
        };
    hash_input(&mut inputs, Path::new(&pipeline_name))?;
    for source in pipeline.sources() {
        hash_input(&mut inputs, source)?;
    }
    if let Some(target) = &pipeline.target {
        for file in crate::pipeline::files::source_files(pipeline, target) {
            hash_input(&mut inputs, &file)?;
        }
    }
    let pipeline_hash = inputs.get(&pipeline_name).cloned().unwrap_or_default();
    let links: BTreeMap<String, String> = inputs
        .keys()
        .filter_map(|input| crate::execution::target::link_of(&pipeline.root, Path::new(input)))
        .collect();

    let mut preflight = preflight::check(pipeline, &cx.env, &cx.harness, &say, &cx.interrupt);
    if let Launcher::Slurm(_) = options.launcher {
        // The GPUs are on the compute nodes, not here.
        preflight.gpu_unavailable = None;
        say("preflight: gpu: on the Slurm compute nodes (--slurm)");
    }
    for line in preflight.summary() {
        say(&format!("preflight: {line}"));
    }
    say(&format!(
        "preflight: took {:.1} s",
        clock.elapsed().as_secs_f64()
    ));
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
        git: git(&pipeline.root, &cx.interrupt),
        environment: preflight.environment.clone(),
        inputs,
        stages: Vec::new(),
        wall_ms: None,
        links,
        knobs: crate::pipeline::config::knobs_of(pipeline),
        experiments: Vec::new(),
    };
    dir.write_manifest(&run)?;

    let index = if options.force {
        Index::default()
    } else {
        Index::load(&pipeline.root, &id, user_seal(&cx.env))
    };
    let limits = Limits {
        // On a cluster every job has its GPU: as many may be in flight as units at once.
        gpus: match options.launcher {
            Launcher::Slurm(_) => options.limits.jobs,
            Launcher::Local => devices.len().max(1),
        },
        gpu_jobs: match options.limits.gpu_jobs {
            0 => crate::planning::schedule::gpu_jobs_for(
                options.limits.jobs,
                &preflight.environment.gpus,
            ),
            n => n,
        },
        ..options.limits
    };
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
    for (label, reason) in skip_lines(planned_skips) {
        cx.progress.event(Event::Skipped {
            label: &label,
            reason: &reason,
        });
    }
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
    for (label, reason) in skip_lines(late) {
        cx.progress.event(Event::Skipped {
            label: &label,
            reason: &reason,
        });
    }

    // The report's hypotheses, tested where the pipeline asks for it; a run of chosen stages
    // (`--only`, every step of a bisection) runs only those.
    // The logs parsed for the experiments' proposals are not parsed again for the report.
    let mut parsed = crate::evidence::stored::Parsed::default();
    if pipeline.experiments_on() && options.selection.stages.is_empty() && !cx.interrupt.is_set() {
        experiments(
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

    let interrupted = cx.interrupt.is_set();
    run.finished = Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true));
    run.interrupted = interrupted;
    let mut report = None;
    // The report's judgement of the evidence: what the exit code's "findings" rests on.
    let mut judged = None;
    if let Some(unit) = report_unit
        && !interrupted
    {
        let label = unit.label();
        cx.progress.event(Event::Started { label: &label });
        let clock = Instant::now();
        let (stage, written) = write_report(pipeline, &dir, &run, unit, &mut parsed);
        // On the terminal, where the command ran from; the manifest keeps it under the
        // pipeline's directory.
        let shown = written
            .as_ref()
            .map(|(path, _)| format!("wrote {}", rundir::shown(&pipeline.root.join(path))));
        if let Some((path, verdict)) = written {
            report = Some(path);
            judged = Some(verdict);
        }
        cx.progress.event(Event::Finished {
            label: &label,
            status: stage.status,
            elapsed: clock.elapsed(),
            reason: shown.as_deref().or(stage.reason.as_deref()),
            cached_from: None,
        });
        run.stages.push(stage);
    }
    if judged.is_none() && !interrupted {
        let evidence = crate::evidence::stored::from_run_with(run.clone(), &dir.path, &mut parsed);
        judged = Some(report::analyze(&evidence).verdict);
    }
    run.wall_ms = Some(u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX));
    dir.finish_manifest(&run)?;
    cx.progress.event(Event::Done);
    let verdict = verdict(&run, judged.as_ref());
    Ok(Finished {
        run,
        dir: dir.relative.clone(),
        headline: report.as_ref().and(judged.map(|v| v.line)),
        report,
        verdict,
    })
}

/// Runs the units of `plan` through `executor`, as many at once as `limits` allow, handing each
/// ended unit's record to `record` (with the flag input it hashed); returns the units skipped
/// once others ended (a failed build), with why, for [`skip_lines`].
#[allow(clippy::too_many_arguments)]
fn execute(
    plan: &Plan,
    executor: &Executor,
    limits: Limits,
    devices: &[String],
    cx: &Context<'_>,
    dir: &RunDir,
    min_free_bytes: u64,
    mut record: impl FnMut(usize, Stage, FlagInput) -> Result<(), RunError>,
) -> Result<Vec<(usize, String)>, RunError> {
    let mut late_skips: Vec<(usize, String)> = Vec::new();
    let mut scheduler = Scheduler::new(plan, limits, |u| u.kind == StageKind::Report);
    let failure = std::thread::scope(|scope| -> Result<(), RunError> {
        let (done, ended) = std::sync::mpsc::channel();
        let mut failure = None;
        loop {
            if !cx.interrupt.is_set() && failure.is_none() {
                for (i, slot) in scheduler.start() {
                    let Some(unit) = plan.units.get(i) else {
                        continue;
                    };
                    cx.progress.event(Event::Started {
                        label: &unit.label(),
                    });
                    let done = done.clone();
                    let device = slot.and_then(|g| devices.get(g)).map(String::as_str);
                    scope.spawn(move || {
                        let clock = Instant::now();
                        // The receiver outlives every sender: sending cannot fail.
                        let release = || {
                            let _ = done.send(Message::Released(i));
                        };
                        let result = executor.unit(i, unit, device, &release);
                        let _ = done.send(Message::Ended(i, Box::new(result), clock.elapsed()));
                    });
                }
            }
            if !scheduler.busy() {
                break;
            }
            let (i, result, elapsed) = match ended.recv() {
                Ok(Message::Ended(i, result, elapsed)) => (i, result, elapsed),
                Ok(Message::Released(i)) => {
                    scheduler.released(i);
                    continue;
                }
                Err(_) => break,
            };
            scheduler.ended(i);
            let (mut stage, flags) = match *result {
                Ok(ended) => ended,
                Err(e) => {
                    failure.get_or_insert(e);
                    continue;
                }
            };
            // A unit that ran is judged on what it could write.
            if stage.status != StageStatus::Skipped
                && stage.cached_from.is_none()
                && let Some(why) = storage_problem(dir, &stage, min_free_bytes)
            {
                not_kept(&mut stage, &why);
            }
            let label = plan.units.get(i).map(Unit::label).unwrap_or_default();
            cx.progress.event(Event::Finished {
                label: &label,
                status: stage.status,
                elapsed,
                reason: stage.reason.as_deref(),
                cached_from: stage.cached_from.as_deref(),
            });
            if stage.status == StageStatus::Skipped
                && stage.cached_from.is_none()
                && !matches!(
                    plan.units.get(i).and_then(|u| u.blocked.as_ref()),
                    Some(Blocked::Skip(_))
                )
            {
                late_skips.push((i, stage.reason.clone().unwrap_or_default()));
            }
            executor.set_status(i, &stage);
            if let Err(e) = record(i, stage, flags) {
                failure.get_or_insert(e);
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    });
    failure?;
    Ok(late_skips)
}

/// Runs the experiments the run's root causes call for ([`report::experiment::propose`]): each
/// trial a config of its own, planned, scheduled and cached like the run's units (the run's own
/// units serve their builds), recorded in `run.experiments`.
#[allow(clippy::too_many_arguments)]
fn experiments(
    pipeline: &Pipeline,
    preflight: &Preflight,
    dir: &RunDir,
    run: &mut Run,
    options: &Options,
    limits: Limits,
    devices: &[String],
    cx: &Context<'_>,
    parsed: &mut crate::evidence::stored::Parsed,
) -> Result<(), RunError> {
    use crate::execution::experiments as exp;
    let evidence = crate::evidence::stored::from_run_with(run.clone(), &dir.path, parsed);
    let mut proposed = {
        let analysis = report::analyze(&evidence);
        report::experiment::propose(&analysis.diagnoses, run)
    };
    if proposed.is_empty() {
        return Ok(());
    }
    for e in &proposed {
        cx.progress.event(Event::Note(&format!(
            "experiment: {} on `{}`: {} runs",
            e.cause,
            e.config,
            e.trials.len()
        )));
    }
    let (derived, selection) = exp::derived(pipeline, &proposed);
    let plan = plan::plan(&derived, preflight, &selection)?;
    let mut index = if options.force {
        Index::default()
    } else {
        Index::load(&pipeline.root, &run.id, user_seal(&cx.env))
    };
    // The run's own units (the builds the trials share) serve them too.
    index.add(&dir.path, run, &rundir::shown(&dir.path));
    let executor = Executor::new(
        &derived, preflight, &plan, dir, index, options, cx, &limits, run,
    );
    let mut records: Vec<Option<Stage>> = vec![None; plan.units.len()];
    let mut flags_seen = Vec::new();
    execute(
        &plan,
        &executor,
        limits,
        devices,
        cx,
        dir,
        options.min_free_bytes,
        |i, stage, flags| {
            flags_seen.extend(flags);
            if let Some(slot) = records.get_mut(i) {
                *slot = Some(stage);
            }
            Ok(())
        },
    )?;
    run.inputs.extend(flags_seen);
    exp::attach(&mut proposed, records.into_iter().flatten().collect());
    crate::evidence::trial_outputs::digest_outputs(&mut proposed, &dir.path);
    run.experiments = proposed;
    dir.write_manifest(run)?;
    Ok(())
}

/// One line per stage and reason for skipped units, in the order given (plan order): the
/// unit's label when it is the only one, else `stage (N units)`.
fn skip_lines<'u>(units: impl Iterator<Item = (&'u Unit, &'u str)>) -> Vec<(String, String)> {
    let mut groups: Vec<(&str, &str, String, usize)> = Vec::new();
    for (unit, reason) in units {
        match groups
            .iter_mut()
            .find(|(stage, r, _, _)| *stage == unit.name && *r == reason)
        {
            Some((_, _, _, count)) => *count += 1,
            None => groups.push((&unit.name, reason, unit.label(), 1)),
        }
    }
    groups
        .into_iter()
        .map(|(stage, reason, first, count)| {
            let label = if count == 1 {
                first
            } else {
                format!("{stage} ({count} units)")
            };
            (label, reason.to_string())
        })
        .collect()
}

/// What a unit's thread tells the run loop.
enum Message {
    /// Unit `i` is done with the GPU; what it does next needs only the CPU.
    Released(usize),
    /// Unit `i` ended, with its record (or the error that stops the run) and its wall time.
    Ended(usize, Box<Result<(Stage, FlagInput), RunError>>, Duration),
}

/// Removes the run directory's space reserve when the run ends, however it ends.
struct Reserve<'a>(&'a RunDir);

impl Drop for Reserve<'_> {
    fn drop(&mut self) {
        self.0.release_reserve();
    }
}

/// Why a unit's logs may not hold what its processes wrote: a log that reached the file size
/// limit (`ulimit -f`: writes past it fail), or a run directory whose file system was (nearly)
/// full when the unit ended (writes may have failed with ENOSPC, which a program can ignore).
fn storage_problem(dir: &RunDir, stage: &Stage, min_free: u64) -> Option<String> {
    if let Some(limit) = rundir::file_size_limit()
        && let Some(log) = stage
            .logs
            .iter()
            .find(|l| std::fs::metadata(dir.path.join(&l.path)).is_ok_and(|m| m.len() >= limit))
    {
        return Some(format!(
            "writing {} stopped at the file size limit ({} bytes): the log is cut short",
            log.path, limit
        ));
    }
    match dir.free_bytes() {
        Ok(free) if free < min_free => Some(format!(
            "the run directory's file system had {} free after the unit (less than {}):              writes may have failed, its logs may be cut short",
            report::text::bytes(free),
            report::text::bytes(min_free)
        )),
        Ok(_) => None,
        Err(e) => Some(format!(
            "the free space of the run directory could not be read after the unit: {e}"
        )),
    }
}

/// Records that a unit's evidence may be incomplete: a unit that passed is inconclusive (a
/// clean log that was cut short proves nothing); what it found stands, with the reason added.
fn not_kept(stage: &mut Stage, why: &str) {
    if stage.status == StageStatus::Passed {
        stage.status = StageStatus::Inconclusive;
        stage.reason = Some(match stage.reason.take() {
            Some(r) => format!("{why} ({r})"),
            None => why.to_string(),
        });
    } else {
        stage.reason = Some(match stage.reason.take() {
            Some(r) => format!("{r}; {why}"),
            None => why.to_string(),
        });
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

struct Executor<'a> {
    pipeline: &'a Pipeline,
    preflight: &'a Preflight,
    plan: &'a Plan,
    dir: &'a RunDir,
    index: Index,
    force: bool,
    interrupt: &'a Interrupt,
    launcher: &'a Launcher,
    /// Each ended unit's status and exit code: what its dependents read.
    statuses: Mutex<Vec<Option<Ended>>>,
    /// The shares of a GPU a split unit holds: its tests at once.
    gpu_jobs: usize,
    /// Build unit index to its identity ([`Executor::build_identity`]).
    builds: Mutex<HashMap<usize, String>>,
    harness_hash: OnceLock<String>,
    /// The run's input files, relative to the pipeline's directory: where the lines at the
    /// tools' sites are read from.
    inputs: Vec<String>,
}

type FlagInput = Option<(String, String)>;

/// How a unit ended: its status and its process's exit code.
type Ended = (StageStatus, Option<i32>);

impl<'a> Executor<'a> {
    /// An executor of `plan`'s units for `run`, none of them ended yet.
    #[allow(clippy::too_many_arguments)]
    fn new(
        pipeline: &'a Pipeline,
        preflight: &'a Preflight,
        plan: &'a Plan,
        dir: &'a RunDir,
        index: Index,
        options: &'a Options,
        cx: &'a Context<'_>,
        limits: &Limits,
        run: &Run,
    ) -> Executor<'a> {
        Executor {
            pipeline,
            preflight,
            plan,
            dir,
            index,
            force: options.force,
            interrupt: &cx.interrupt,
            launcher: &options.launcher,
            statuses: Mutex::new(vec![None; plan.units.len()]),
            builds: Mutex::new(HashMap::new()),
            harness_hash: OnceLock::new(),
            gpu_jobs: limits.gpu_jobs,
            inputs: run.inputs.keys().cloned().collect(),
        }
    }
}

impl Executor<'_> {
    /// The status and exit code of unit `i`, once it ended.
    fn ending(&self, i: usize) -> Option<Ended> {
        let statuses = self.statuses.lock().unwrap_or_else(|e| e.into_inner());
        statuses.get(i).copied().flatten()
    }

    fn set_status(&self, i: usize, stage: &Stage) {
        let mut statuses = self.statuses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = statuses.get_mut(i) {
            *slot = Some((stage.status, stage.exit_code));
        }
    }

    /// The identity of build unit `i`, once it ended well.
    fn build_sha(&self, i: usize) -> Option<String> {
        let builds = self.builds.lock().unwrap_or_else(|e| e.into_inner());
        builds.get(&i).cloned()
    }

    fn set_build_sha(&self, i: usize, sha: String) {
        let mut builds = self.builds.lock().unwrap_or_else(|e| e.into_inner());
        builds.insert(i, sha);
    }

    /// Records in a unit that does not run the command it would have run and what that command
    /// runs, so its record still names the kernel, case and mode. Its cubin is the one its
    /// compile unit writes, whether or not that exists. A command that cannot be built leaves
    /// the command empty and the unit record as the plan says it ([`stages::unit_record`]).
    fn planned(&self, record: &mut Stage, unit: &Unit, stage_cfg: &config::Stage) {
        let paths = Paths {
            unit_dir: self.dir.relative.join(&unit.dir),
            build_dir: self.build_dir(unit),
        };
        if let Some(planned) =
            stages::planned(unit, stage_cfg, self.pipeline, self.preflight, &paths)
        {
            record.command = planned.display;
            record.unit = planned.unit;
        }
    }

    /// Runs (or skips, or restores) one unit and returns its record, plus the `flags:` input
    /// entry of a compile unit. A unit that ran records the hash of every file it left, which
    /// the cache checks before serving it; a target's build then has an identity (the content of
    /// its products), which its dependents' cache keys hold.
    fn unit(
        &self,
        index: usize,
        unit: &Unit,
        device: Option<&str>,
        release: &dyn Fn(),
    ) -> Result<(Stage, FlagInput), RunError> {
        let (mut record, flags) = self.attempt(unit, device, release)?;
        let succeeded = matches!(record.status, StageStatus::Passed | StageStatus::Findings);
        if succeeded && record.cached_from.is_none() {
            let dir = self.pipeline.resolve(&self.dir.relative.join(&unit.dir));
            record.outputs = crate::execution::target::file_hashes(
                &self.pipeline.resolve(&self.dir.relative),
                &dir,
            );
        }
        if succeeded {
            record.seal = self.index.seal(&record);
        }
        if succeeded && unit.kind == StageKind::Compile {
            self.set_build_sha(index, self.build_identity(unit, &record));
        }
        Ok((record, flags))
    }

    /// What a target's build made, as one hash: the files it left in its unit directory (build
    /// directory included) and those in its declared product directories, by content. Its
    /// dependents' cache keys hold it, so a build that changed (a define, a source) never serves
    /// their earlier results, whether the build ran or was served.
    fn build_identity(&self, unit: &Unit, record: &Stage) -> String {
        let unit_dir = slash(&self.dir.relative.join(&unit.dir));
        let mut lines = Vec::new();
        for (path, sha) in &record.outputs {
            let path = path.strip_prefix(&unit_dir).unwrap_or(path);
            lines.push(format!("{path}\t{sha}"));
        }
        if let Some(build) = self.pipeline.target.as_ref().and_then(|t| t.build.as_ref()) {
            for dir in &build.products {
                let dir = self.pipeline.resolve(dir);
                for (path, sha) in crate::execution::target::file_hashes(&dir, &dir) {
                    lines.push(format!("product:{path}\t{sha}"));
                }
            }
        }
        hash::bytes(lines.join("\n").as_bytes())
    }

    fn attempt(
        &self,
        unit: &Unit,
        device: Option<&str>,
        release: &dyn Fn(),
    ) -> Result<(Stage, FlagInput), RunError> {
        let stage_cfg = self.pipeline.stages.get(unit.stage);
        // Every record names what its unit runs, whether or not it ran.
        let mut record = Stage {
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
            unit: stages::unit_record(unit, self.pipeline),
            launch_search: None,
            leftovers: Vec::new(),
            device: device.map(str::to_string),
            outputs: Default::default(),
            cut: Default::default(),
            split: Vec::new(),
            site_lines: Default::default(),
            seal: None,
            missing: Vec::new(),
        };
        let Some(stage_cfg) = stage_cfg else {
            record.status = StageStatus::Failed;
            record.reason = Some("the unit names no stage".into());
            return Ok((record, None));
        };
        if let Some(reason) = self.nothing_to_inspect(unit) {
            record.reason = Some(reason);
            return Ok((record, None));
        }
        match &unit.blocked {
            Some(Blocked::Skip(reason)) => {
                record.reason = Some(reason.clone());
                record.missing = preflight::unmet_names(stage_cfg, self.preflight);
                if stage_cfg.enabled {
                    self.planned(&mut record, unit, stage_cfg);
                }
                return Ok((record, None));
            }
            Some(Blocked::Fail(reason)) => {
                record.status = StageStatus::Failed;
                record.reason = Some(reason.clone());
                return Ok((record, None));
            }
            None => {}
        }
        let unit_dir = self.dir.relative.join(&unit.dir);
        if let Some(reason) = self.build_blocker(unit) {
            record.reason = Some(reason);
            self.planned(&mut record, unit, stage_cfg);
            return Ok((record, None));
        }
        let paths = Paths {
            unit_dir: unit_dir.clone(),
            build_dir: self.build_dir(unit),
        };
        let invocation =
            match stages::invocation(unit, stage_cfg, self.pipeline, self.preflight, &paths) {
                Ok(i) => i,
                Err(reason) => {
                    record.status = if stage_cfg.needs.gpu {
                        StageStatus::Skipped
                    } else {
                        StageStatus::Failed
                    };
                    record.reason = Some(reason);
                    return Ok((record, None));
                }
            };
        record.command = invocation.display.clone();
        record.unit = invocation.unit.clone();
        let flags = (unit.kind == StageKind::Compile).then(|| {
            (
                format!("flags:{}", slash(&unit.dir)),
                hash::bytes(invocation.display.join("\0").as_bytes()),
            )
        });
        let key = self.key(unit, stage_cfg, &invocation);
        let input_hash = key.hash();
        record.input_hash = Some(input_hash.clone());
        let log_path = |name: &str| slash(&unit.dir.join(name));

        if stage_cfg.cache
            && !self.force
            && let Some(hit) = self.index.get(&input_hash)
        {
            let dest = self.pipeline.resolve(&unit_dir);
            if let Ok(outputs) = cache::restore(hit, &dest, &unit.dir) {
                record.outputs = outputs;
                record.status = hit.stage.status;
                record.reason = hit.stage.reason.clone();
                record.exit_code = hit.stage.exit_code;
                record.duration_ms = hit.stage.duration_ms;
                record.cached_from = Some(hit.origin.clone());
                record.site_lines.clone_from(&hit.stage.site_lines);
                record.logs = hit
                    .stage
                    .logs
                    .iter()
                    .filter_map(|log| {
                        let name = Path::new(&log.path).file_name()?;
                        Some(Log {
                            path: log_path(&name.to_string_lossy()),
                            format: log.format,
                        })
                    })
                    .collect();
                return Ok((record, flags));
            }
        }

        let dest = self.dir.unit_dir(&unit.dir)?;
        if let Some(build_dir) = self.build_dir(unit) {
            self.dir.unit_dir(
                build_dir
                    .strip_prefix(&self.dir.relative)
                    .unwrap_or(&build_dir),
            )?;
        }
        if unit.kind == StageKind::Profile {
            // The profiling run alone on the GPU, through the launcher (a cluster job under
            // --slurm); the exports from its report after.
            let command = self.command(&invocation, stage_cfg, &dest, device);
            let profiled = self
                .launcher
                .run(&command, &unit.label(), Some(true), self.interrupt)
                .map_err(|e| e.to_string());
            // Exporting the report's pages needs no GPU: other units may have it meanwhile.
            release();
            steps::profile(
                &mut record,
                &invocation,
                &dest,
                profiled,
                &self.exits(unit),
                self.step_cx(stage_cfg, device),
            );
            return Ok((record, flags));
        }
        match (unit.kind, &self.pipeline.target) {
            (StageKind::Sass, _) => {
                let dirs = self.product_dirs(unit);
                // The line table, where nvdisasm is at hand: the call sites of a -G build.
                let nvdisasm = self
                    .preflight
                    .toolchain
                    .get("nvdisasm")
                    .map(|t| t.path.as_path());
                steps::sass(
                    &mut record,
                    &invocation,
                    &dirs,
                    &dest,
                    nvdisasm,
                    self.step_cx(stage_cfg, device),
                );
                return Ok((record, flags));
            }
            (kind, Some(target))
                if config::is_sanitizer(kind) && stage_cfg.split == Some(config::Split::Tests) =>
            {
                // The program's line in a unit directory: the split's own, then each test's.
                let program_in = |unit_dir: &Path| {
                    let paths = Paths {
                        unit_dir: unit_dir.to_path_buf(),
                        build_dir: paths.build_dir.clone(),
                    };
                    let line = stages::program_line(
                        unit,
                        stage_cfg,
                        self.pipeline,
                        self.preflight,
                        target,
                        &paths,
                        None,
                    );
                    stages::resolve_program(self.preflight, &line.argv).map(|argv| {
                        crate::execution::split::ProgramIn {
                            argv,
                            env: line.env,
                        }
                    })
                };
                let program = match program_in(&paths.unit_dir) {
                    Ok(program) => program.argv,
                    Err(reason) => {
                        record.status = StageStatus::Failed;
                        record.reason = Some(reason);
                        return Ok((record, flags));
                    }
                };
                let cwd = invocation
                    .cwd
                    .as_ref()
                    .map_or_else(|| self.pipeline.root.clone(), |c| self.pipeline.resolve(c));
                let split = crate::execution::split::Split {
                    kind,
                    framework: crate::execution::split::Framework::of(target.command_of(stage_cfg)),
                    invocation: &invocation,
                    program: &program,
                    cwd: &cwd,
                    exits: &self.exits(unit),
                    program_in: &program_in,
                    width: crate::planning::schedule::shares(unit, self.gpu_jobs),
                };
                split.run(&mut record, &dest, self.step_cx(stage_cfg, device));
                return Ok((record, flags));
            }
            (StageKind::Stress, Some(target)) if stage_cfg.launches.is_some() => {
                let search = steps::Search {
                    unit,
                    stage: stage_cfg,
                    pipeline: self.pipeline,
                    target,
                    preflight: self.preflight,
                    paths: &paths,
                    width: crate::planning::schedule::shares(unit, self.gpu_jobs),
                };
                search.run(&mut record, &dest, self.step_cx(stage_cfg, device));
                return Ok((record, flags));
            }
            _ => {}
        }
        let command = self.command(&invocation, stage_cfg, &dest, device);
        let gpu = match crate::planning::schedule::class(unit) {
            Class::SharedGpu => Some(false),
            Class::Alone => Some(true),
            Class::Free | Class::Cpu => None,
        };
        let outcome = match self
            .launcher
            .run(&command, &unit.label(), gpu, self.interrupt)
        {
            Ok(outcome) => outcome,
            Err(e) => {
                record.status = StageStatus::Failed;
                record.reason = Some(format!("failed to {e}"));
                record.logs = present_logs(&dest, &invocation.logs, &log_path);
                return Ok((record, flags));
            }
        };
        record.duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX);
        steps::note_outcome(
            &mut record,
            &self.pipeline.resolve(&self.dir.relative),
            &outcome,
        );
        if let Ending::Exited(code) = outcome.ending {
            record.exit_code = Some(code);
        }
        let gathered = stages::gather(&dest, &invocation);
        let (status, reason) = stages::decide(
            unit.kind,
            &invocation.tool,
            stage_cfg.timeout,
            outcome.ending,
            &gathered,
            &self.exits(unit),
        );
        record.status = status;
        record.reason = reason;
        record.site_lines = crate::evidence::site_lines::at_sites(
            &self.pipeline.root,
            &self.inputs,
            &gathered.parsed,
        );
        record.logs = gathered
            .present
            .iter()
            .map(|(name, format)| Log {
                path: log_path(name),
                format: *format,
            })
            .collect();
        Ok((record, flags))
    }

    /// What the exit statuses of a unit's process mean besides a finding: the program's own
    /// (`target.program.exit_codes`) when the unit runs it.
    fn exits(&self, unit: &Unit) -> config::ExitCodes {
        match &self.pipeline.target {
            Some(target) if config::launches_kernel(unit.kind) => target.program.exit_codes.clone(),
            _ => config::ExitCodes::default(),
        }
    }

    /// The process of a single-step unit: its argv, working directory, environment and logs.
    fn command(
        &self,
        invocation: &stages::Invocation,
        stage: &config::Stage,
        dest: &Path,
        device: Option<&str>,
    ) -> exec::Command {
        let cwd = invocation
            .cwd
            .as_ref()
            .map_or_else(|| self.pipeline.root.clone(), |c| self.pipeline.resolve(c));
        let mut command = exec::Command::new(invocation.argv.iter().cloned(), &cwd, stage.timeout);
        command.grace = self.pipeline.grace;
        command.env = invocation
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        command.env.extend(device_env(device));
        command.stdout = Some(dest.join(&invocation.stdout));
        command.stderr = Some(dest.join(&invocation.stderr));
        command
    }

    fn step_cx<'s>(&'s self, stage: &config::Stage, device: Option<&'s str>) -> steps::StepCx<'s> {
        steps::StepCx {
            root: &self.pipeline.root,
            run_dir: &self.dir.relative,
            timeout: stage.timeout,
            grace: self.pipeline.grace,
            interrupt: self.interrupt,
            device,
        }
    }

    /// A target unit's build directory: inside its config's build unit, or, for a target without
    /// a build, `build/<config>/<arch>` in the run directory.
    fn build_dir(&self, unit: &Unit) -> Option<PathBuf> {
        self.pipeline.target.as_ref()?;
        let compile = unit.compile.and_then(|c| self.plan.units.get(c));
        Some(match compile {
            Some(c) => self.dir.relative.join(&c.dir).join("build"),
            None if unit.kind == StageKind::Compile => {
                self.dir.relative.join(&unit.dir).join("build")
            }
            None => {
                let mut dir = self.dir.relative.join("build");
                dir.extend(unit.config.iter());
                dir.extend(unit.arch.iter());
                dir
            }
        })
    }

    /// Why a target unit cannot run: its config's build did not succeed.
    fn build_blocker(&self, unit: &Unit) -> Option<String> {
        self.pipeline.target.as_ref()?;
        let compile = unit.compile?;
        let (status, exit) = self.ending(compile).unzip();
        match status {
            // A build that found errors and exited non-zero left nothing to run.
            Some(StageStatus::Findings) if exit.flatten().is_some_and(|c| c != 0) => Some(format!(
                "the build for {} {} failed (exit {})",
                unit.config.as_deref().unwrap_or_default(),
                unit.arch.as_deref().unwrap_or_default(),
                exit.flatten().unwrap_or_default()
            )),
            Some(StageStatus::Passed | StageStatus::Findings) => None,
            status => Some(format!(
                "the build for {} {} {}",
                unit.config.as_deref().unwrap_or_default(),
                unit.arch.as_deref().unwrap_or_default(),
                status.map_or_else(
                    || "did not run".to_string(),
                    |s| crate::process::progress::status_word(s).replace('_', " ")
                )
            )),
        }
    }

    /// Why a SASS unit has nothing to do: no build stage made products for its config, and
    /// none of the config's units that run the program ran here (no GPU), so nothing was
    /// compiled just in time either (a Triton script on a machine without a GPU). A skip, not a
    /// broken pipeline: its tool is not even needed. A build that ran, or a program that ran,
    /// and left no device code is still inconclusive ([`steps::sass`]).
    fn nothing_to_inspect(&self, unit: &Unit) -> Option<String> {
        // A unit the plan skipped keeps the plan's reason (said before anything ran).
        if unit.kind != StageKind::Sass
            || self.pipeline.target.is_none()
            || unit.compile.is_some()
            || matches!(unit.blocked, Some(Blocked::Skip(_)))
        {
            return None;
        }
        let ran = self.plan.units.iter().enumerate().any(|(j, other)| {
            other.config == unit.config
                && !matches!(
                    other.kind,
                    StageKind::Compile | StageKind::Sass | StageKind::Report
                )
                && self
                    .ending(j)
                    .is_some_and(|(status, _)| status != StageStatus::Skipped)
        });
        if ran || !crate::execution::target::products(&self.product_dirs(unit)).is_empty() {
            return None;
        }
        Some(
            "nothing to inspect: no build stage made device code, and no stage ran the program \
             here to compile a kernel just in time"
                .to_string(),
        )
    }

    /// Where a target's SASS stage looks for products: the build directory (JIT caches
    /// included) and the build's declared product directories.
    fn product_dirs(&self, unit: &Unit) -> Vec<PathBuf> {
        let absolute = |p: &Path| {
            let p = self.pipeline.resolve(p);
            std::path::absolute(&p).unwrap_or(p)
        };
        let mut dirs: Vec<PathBuf> = self
            .build_dir(unit)
            .map(|d| absolute(&d))
            .into_iter()
            .collect();
        if let Some(build) = self.pipeline.target.as_ref().and_then(|t| t.build.as_ref()) {
            dirs.extend(build.products.iter().map(|p| absolute(p)));
        }
        dirs
    }

    fn key(&self, unit: &Unit, stage: &config::Stage, invocation: &stages::Invocation) -> Key {
        let run = slash(&self.dir.relative);
        let mut key = Key {
            kind: config::kind_name(unit.kind).to_string(),
            stage: unit.name.clone(),
            command: invocation
                .display
                .iter()
                .map(|w| w.replace(&run, "<run>"))
                .collect(),
            ..Key::default()
        };
        if let Some(target) = &self.pipeline.target {
            // Every file of the target's tree, for the units that may read it (the build, a
            // program that reads more than its build's products): a changed header or script
            // never serves stale evidence. SASS keys on the products themselves. The
            // environment counts as much as the argv.
            let reads_sources = match unit.kind {
                StageKind::Compile => true,
                StageKind::Sass => false,
                _ => !target.program.reads_only_build,
            };
            if reads_sources {
                for file in crate::pipeline::files::source_files(self.pipeline, target) {
                    key.files.insert(key_path(&file), self.input_sha(&file));
                }
            }
            for (name, value) in &invocation.unit.env {
                key.command
                    .push(format!("{name}={}", value.replace(&run, "<run>")));
            }
            // What the program's exit statuses mean decides the unit's ending.
            let exits = self.exits(unit);
            if exits != config::ExitCodes::default() {
                key.command.push(format!(
                    "exit_codes: skipped {:?} broken {:?}",
                    exits.skipped, exits.broken
                ));
            }
            if let Some(compile) = unit.compile {
                // A build with no identity (it cannot happen: a dependent runs only after its
                // build succeeded) matches no earlier run.
                let identity = self
                    .build_sha(compile)
                    .unwrap_or_else(|| format!("unknown in {run}"));
                key.files.insert("<build>".into(), identity);
            }
            if unit.kind == StageKind::Sass {
                // The build's products; not the programs' JIT caches (`<build>/jit`): those
                // follow from the sources and environment already in the key, and are absent
                // when the program units were served from the cache.
                let jit = self.build_dir(unit).map(|d| {
                    let d = self.pipeline.resolve(&d.join("jit"));
                    std::path::absolute(&d).unwrap_or(d)
                });
                for dir in self.product_dirs(unit) {
                    for (product, _) in crate::execution::target::products(&[dir]) {
                        if jit.as_ref().is_some_and(|j| product.starts_with(j)) {
                            continue;
                        }
                        let name = product
                            .strip_prefix(&self.pipeline.root)
                            .map_or_else(|_| slash(&product), slash);
                        let sha = hash::file(&product).unwrap_or_default();
                        key.files.insert(name.replace(&run, "<run>"), sha);
                    }
                }
            }
        }
        if let Some(file) = &stage.suppressions {
            key.files.insert(slash(file), self.input_sha(file));
        }
        // What reads a bench's or baseline's timings from its text decides its status.
        if let Some(pattern) = &invocation.unit.timing_pattern {
            key.command.push(format!(
                "pattern={}",
                serde_json::to_string(pattern).unwrap_or_default()
            ));
        }
        if unit.kind == StageKind::Baseline {
            for word in &stage.command {
                let path = self.pipeline.resolve(Path::new(word));
                if path.is_file()
                    && let Ok(sha) = hash::file(&path)
                {
                    key.files.insert(word.clone(), sha);
                }
            }
        }
        let mut tools: Vec<&str> = stage.needs.tools.iter().map(String::as_str).collect();
        if unit.kind == StageKind::Compile {
            tools.push("ptxas");
        }
        for tool in tools {
            let version = match tool {
                "harness" => self.harness_sha(),
                _ => self
                    .preflight
                    .environment
                    .tools
                    .get(tool)
                    .cloned()
                    .unwrap_or_default(),
            };
            key.tools.insert(tool.to_string(), version);
        }
        if stage.needs.gpu {
            let env = &self.preflight.environment;
            key.gpu.extend(env.driver.clone());
            for gpu in &env.gpus {
                key.gpu.push(gpu.name.clone());
                key.gpu.extend(gpu.uuid.clone());
            }
        }
        key
    }

    fn input_sha(&self, relative: &Path) -> String {
        hash::file(&self.pipeline.resolve(relative)).unwrap_or_default()
    }

    /// The sha256 of the harness executable, computed once.
    fn harness_sha(&self) -> String {
        self.harness_hash
            .get_or_init(|| {
                self.preflight
                    .harness
                    .as_ref()
                    .ok()
                    .and_then(|argv| argv.first())
                    .and_then(|exe| hash::file(exe).ok())
                    .unwrap_or_default()
            })
            .clone()
    }
}

fn present_logs(
    dir: &Path,
    logs: &[(String, Option<parsers::Format>)],
    log_path: &dyn Fn(&str) -> String,
) -> Vec<Log> {
    logs.iter()
        .filter(|(name, _)| dir.join(name).is_file())
        .map(|(name, format)| Log {
            path: log_path(name),
            format: *format,
        })
        .collect()
}

/// Renders the report from the run's evidence and writes `reports/<id>.md` and
/// `reports/latest.md`; returns its stage record and, when written, its path and the report's
/// verdict.
fn write_report(
    pipeline: &Pipeline,
    dir: &RunDir,
    run: &Run,
    unit: &Unit,
    parsed: &mut crate::evidence::stored::Parsed,
) -> (Stage, Option<(PathBuf, report::Verdict)>) {
    let started = Instant::now();
    let mut record = Stage {
        name: unit.name.clone(),
        kind: StageKind::Report,
        config: None,
        arch: None,
        status: StageStatus::Passed,
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
        device: None,
        outputs: Default::default(),
        cut: Default::default(),
        split: Vec::new(),
        site_lines: Default::default(),
        seal: None,
        missing: Vec::new(),
    };
    if let Some(Blocked::Skip(reason) | Blocked::Fail(reason)) = &unit.blocked {
        record.status = StageStatus::Skipped;
        record.reason = Some(reason.clone());
        return (record, None);
    }
    let mut with_report = run.clone();
    with_report.stages.push(record.clone());
    let evidence = crate::evidence::stored::from_run_with(with_report, &dir.path, parsed);
    // One analysis for the report, its charts and the verdict.
    let analysis = report::analyze(&evidence);
    let text = report::render_analysis(&analysis, &evidence.run, OutputFormat::Markdown);
    let judged = analysis.verdict.clone();
    let relative = Path::new(rundir::REPORTS).join(format!("{}.md", run.id));
    let reports = Path::new(rundir::REPORTS);
    // The chart first: the markdown links it.
    let chart = report::render_bench_svg(&analysis)
        .map_or(Ok(()), |svg| {
            let name = report::bench_svg_file_name(run);
            rundir::write_atomic(&pipeline.resolve(&reports.join(name)), svg.as_bytes())
        })
        .and_then(|()| {
            report::render_roofline_svg(&analysis).map_or(Ok(()), |svg| {
                let name = report::roofline_svg_file_name(run);
                rundir::write_atomic(&pipeline.resolve(&reports.join(name)), svg.as_bytes())
            })
        });
    let result = chart
        .and_then(|()| rundir::write_atomic(&pipeline.resolve(&relative), text.as_bytes()))
        .and_then(|()| {
            rundir::write_atomic(
                &pipeline.resolve(&reports.join("latest.md")),
                text.as_bytes(),
            )
        });
    record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ok(()) => {
            record.reason = Some(format!("wrote {}", slash(&relative)));
            (record, Some((relative, judged)))
        }
        Err(e) => {
            record.status = StageStatus::Failed;
            record.reason = Some(format!("failed to {e}"));
            (record, None)
        }
    }
}

/// The commit the pipeline's tree is at. A copy of the tree without `.git` (a source tree carried
/// to a GPU machine) names its commit in `EXHIBIT_COMMIT`; its dirty flag is then unknown and
/// recorded as dirty.
fn git(root: &Path, interrupt: &Interrupt) -> Option<Git> {
    git_status(root, interrupt).or_else(|| {
        let commit = std::env::var("EXHIBIT_COMMIT").ok()?;
        let commit = commit.trim();
        (!commit.is_empty()).then(|| Git {
            commit: commit.to_string(),
            dirty: true,
        })
    })
}

fn git_status(root: &Path, interrupt: &Interrupt) -> Option<Git> {
    let run = |args: &[&str]| {
        let mut argv: Vec<OsString> = vec!["git".into()];
        argv.extend(args.iter().map(OsString::from));
        exec::capture(&argv, root, Duration::from_secs(30), interrupt)
            .filter(|(code, _, _)| *code == 0)
            .map(|(_, out, _)| out)
    };
    let commit = run(&["rev-parse", "HEAD"])?.trim().to_string();
    let status = run(&["status", "--porcelain", "--untracked-files=no"])?;
    Some(Git {
        commit,
        dirty: !status.trim().is_empty(),
    })
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

/// This user's seal for the cache ([`cache::Seal`]), from the user's cache directory.
fn user_seal(env: &Env) -> Option<crate::evidence::cache::Seal> {
    crate::setup::toolchain::cache_home(env)
        .and_then(|home| crate::evidence::cache::Seal::of_user(&home))
}

/// A file's path as a cache key holds it, byte-exact: `slash` where it is UTF-8, else its raw
/// bytes in hex, so two names that differ only in bytes that are not UTF-8 are two inputs.
fn key_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    match path.to_str() {
        Some(_) => slash(path),
        None => {
            let bytes = path.as_os_str().as_bytes();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("<bytes:{hex}>")
        }
    }
}
