//! The executor of one plan's units: the state they share (the cache index, each ended unit's
//! status, each build's identity) and what a unit's attempt asks of it (its build directory,
//! its command, why it cannot run). A unit's attempt is in [`attempt`], its cache key in
//! [`key`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use report::{Run, Stage, StageKind, StageStatus};

use crate::evidence::cache::Index;
use crate::evidence::hash;
use crate::evidence::rundir::{RunDir, slash};
use crate::execution::stages::{self, Paths};
use crate::execution::steps;
use crate::pipeline::config::{self, Pipeline};
use crate::planning::plan::{Blocked, Plan, Unit};
use crate::planning::schedule::Limits;
use crate::process::exec::{self, device_env};
use crate::process::interrupt::Interrupt;
use crate::process::slurm::Launcher;
use crate::setup::preflight::Preflight;

use super::{Context, Options, RunError};

mod attempt;
mod key;

/// Runs the units of one plan, each on the thread the run loop gives it, and holds what they
/// share: the cache index, the statuses their dependents read and the builds' identities.
pub(super) struct Executor<'a> {
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

/// A compile unit's `flags:` input: its name among the run's inputs and the hash of its
/// command line.
pub(super) type FlagInput = Option<(String, String)>;

/// How a unit ended: its status and its process's exit code.
type Ended = (StageStatus, Option<i32>);

impl<'a> Executor<'a> {
    /// An executor of `plan`'s units for `run`, none of them ended yet.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
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

    /// Records how unit `i` ended, for the units that depend on it.
    pub(super) fn set_status(&self, i: usize, stage: &Stage) {
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

    /// Records the identity of build unit `i` ([`Executor::build_identity`]).
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
    pub(super) fn unit(
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

    /// What a unit of several processes needs of the run ([`steps::StepCx`]).
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
}
