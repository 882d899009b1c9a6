//! One attempt at a unit: why it may not run here, its invocation and cache key, a result the
//! cache serves, and otherwise its run: the profile (ncu, then the report's exports), the SASS
//! dump, a sanitizer split over the program's tests, a stress search, or one process judged by
//! [`stages::decide`].

use std::path::{Path, PathBuf};

use report::{Log, Stage, StageKind, StageStatus};

use crate::evidence::cache;
use crate::evidence::hash;
use crate::evidence::rundir::slash;
use crate::execution::split::{Framework, ProgramIn, Split};
use crate::execution::stages::{self, Invocation, Paths};
use crate::execution::steps;
use crate::pipeline::config::{self, Target};
use crate::planning::plan::{Blocked, Unit};
use crate::planning::schedule::{self, Class};
use crate::process::exec::Ending;
use crate::setup::preflight;

use super::{Executor, FlagInput};
use crate::execution::orchestrate::{RunError, unit_stage};

/// A unit about to run: what it runs, where its files go and the GPU it was given.
struct Prepared<'u> {
    unit: &'u Unit,
    stage: &'u config::Stage,
    invocation: &'u Invocation,
    paths: &'u Paths,
    /// The unit's directory in the run directory, created.
    dest: &'u Path,
    device: Option<&'u str>,
}

impl Executor<'_> {
    /// Skips, restores or runs `unit` and returns its record, plus the `flags:` input entry of a
    /// compile unit. `release` gives the GPU back while the unit still works on the CPU.
    pub(super) fn attempt(
        &self,
        unit: &Unit,
        device: Option<&str>,
        release: &dyn Fn(),
    ) -> Result<(Stage, FlagInput), RunError> {
        let stage_cfg = self.pipeline.stages.get(unit.stage);
        // Every record names what its unit runs, whether or not it ran.
        let mut record = unit_stage(unit, self.pipeline, device);
        let Some(stage_cfg) = stage_cfg else {
            record.status = StageStatus::Failed;
            record.reason = Some("the unit names no stage".into());
            return Ok((record, None));
        };
        if self.held_back(unit, stage_cfg, &mut record) {
            return Ok((record, None));
        }
        let paths = Paths {
            unit_dir: self.dir.relative.join(&unit.dir),
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
        let flags = flag_input(unit, &invocation);
        let key = self.key(unit, stage_cfg, &invocation);
        let input_hash = key.hash();
        record.input_hash = Some(input_hash.clone());

        if stage_cfg.cache && !self.force && self.served_from_cache(unit, &input_hash, &mut record)
        {
            return Ok((record, flags));
        }

        let dest = self.create_dirs(unit)?;
        let prepared = Prepared {
            unit,
            stage: stage_cfg,
            invocation: &invocation,
            paths: &paths,
            dest: &dest,
            device,
        };
        self.launch(&prepared, &mut record, release);
        Ok((record, flags))
    }

    /// Whether `unit` does not run here, its record then saying why: a SASS unit with nothing
    /// to inspect, a unit the plan skipped or failed, a unit whose build did not succeed. A
    /// skipped unit still records the command it would have run.
    fn held_back(&self, unit: &Unit, stage_cfg: &config::Stage, record: &mut Stage) -> bool {
        if let Some(reason) = self.nothing_to_inspect(unit) {
            record.reason = Some(reason);
            return true;
        }
        match &unit.blocked {
            Some(Blocked::Skip(reason)) => {
                record.reason = Some(reason.clone());
                record.missing = preflight::unmet_names(stage_cfg, self.preflight);
                if stage_cfg.enabled {
                    self.planned(record, unit, stage_cfg);
                }
                return true;
            }
            Some(Blocked::Fail(reason)) => {
                record.status = StageStatus::Failed;
                record.reason = Some(reason.clone());
                return true;
            }
            None => {}
        }
        if let Some(reason) = self.build_blocker(unit) {
            record.reason = Some(reason);
            self.planned(record, unit, stage_cfg);
            return true;
        }
        false
    }

    /// Whether the cache served `unit`: an earlier result under `input_hash`, its files
    /// restored into the unit's directory and its ending copied into `record`.
    fn served_from_cache(&self, unit: &Unit, input_hash: &str, record: &mut Stage) -> bool {
        let Some(hit) = self.index.get(input_hash) else {
            return false;
        };
        let dest = self.pipeline.resolve(&self.dir.relative.join(&unit.dir));
        let Ok(outputs) = cache::restore(hit, &dest, &unit.dir) else {
            return false;
        };
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
                    path: log_path(unit, &name.to_string_lossy()),
                    format: log.format,
                })
            })
            .collect();
        true
    }

    /// Creates the unit's directory in the run directory, and its build directory when it has
    /// one; returns the unit's.
    fn create_dirs(&self, unit: &Unit) -> Result<PathBuf, RunError> {
        let dest = self.dir.unit_dir(&unit.dir)?;
        if let Some(build_dir) = self.build_dir(unit) {
            self.dir.unit_dir(
                build_dir
                    .strip_prefix(&self.dir.relative)
                    .unwrap_or(&build_dir),
            )?;
        }
        Ok(dest)
    }

    /// Runs a prepared unit the way its kind asks, filling in `record`.
    fn launch(&self, prepared: &Prepared<'_>, record: &mut Stage, release: &dyn Fn()) {
        let (unit, stage_cfg) = (prepared.unit, prepared.stage);
        match (unit.kind, &self.pipeline.target) {
            (StageKind::Profile, _) => self.profile(prepared, record, release),
            (StageKind::Sass, _) => self.sass(prepared, record),
            (kind, Some(target))
                if config::is_sanitizer(kind) && stage_cfg.split == Some(config::Split::Tests) =>
            {
                self.split(prepared, kind, target, record);
            }
            (StageKind::Stress, Some(target)) if stage_cfg.launches.is_some() => {
                let search = steps::Search {
                    unit,
                    stage: stage_cfg,
                    pipeline: self.pipeline,
                    target,
                    preflight: self.preflight,
                    paths: prepared.paths,
                    width: schedule::shares(unit, self.gpu_jobs),
                };
                search.run(
                    record,
                    prepared.dest,
                    self.step_cx(stage_cfg, prepared.device),
                );
            }
            _ => self.single(prepared, record),
        }
    }

    /// The profile: the profiling run alone on the GPU, through the launcher (a cluster job
    /// under --slurm), then the exports from its report, after the GPU was given back.
    fn profile(&self, prepared: &Prepared<'_>, record: &mut Stage, release: &dyn Fn()) {
        let Prepared {
            unit,
            stage,
            invocation,
            dest,
            device,
            ..
        } = *prepared;
        let command = self.command(invocation, stage, dest, device);
        let profiled = self
            .launcher
            .run(&command, &unit.label(), Some(true), self.interrupt)
            .map_err(|e| e.to_string());
        // Exporting the report's pages needs no GPU: other units may have it meanwhile.
        release();
        steps::profile(
            record,
            invocation,
            dest,
            profiled,
            &self.exits(unit),
            self.step_cx(stage, device),
        );
    }

    /// The SASS dump of the unit's products, with the line table where nvdisasm is at hand
    /// (the call sites of a -G build).
    fn sass(&self, prepared: &Prepared<'_>, record: &mut Stage) {
        let dirs = self.product_dirs(prepared.unit);
        let nvdisasm = self
            .preflight
            .toolchain
            .get("nvdisasm")
            .map(|t| t.path.as_path());
        steps::sass(
            record,
            prepared.invocation,
            &dirs,
            prepared.dest,
            nvdisasm,
            self.step_cx(prepared.stage, prepared.device),
        );
    }

    /// `split: tests`: the sanitizer over each of the program's tests in a process of its own.
    fn split(&self, prepared: &Prepared<'_>, kind: StageKind, target: &Target, record: &mut Stage) {
        let Prepared {
            unit,
            stage: stage_cfg,
            invocation,
            paths,
            dest,
            device,
        } = *prepared;
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
            stages::resolve_program(self.preflight, &line.argv).map(|argv| ProgramIn {
                argv,
                env: line.env,
            })
        };
        let program = match program_in(&paths.unit_dir) {
            Ok(program) => program.argv,
            Err(reason) => {
                record.status = StageStatus::Failed;
                record.reason = Some(reason);
                return;
            }
        };
        let cwd = invocation
            .cwd
            .as_ref()
            .map_or_else(|| self.pipeline.root.clone(), |c| self.pipeline.resolve(c));
        let split = Split {
            kind,
            framework: Framework::of(target.command_of(stage_cfg)),
            invocation,
            program: &program,
            cwd: &cwd,
            exits: &self.exits(unit),
            program_in: &program_in,
            width: schedule::shares(unit, self.gpu_jobs),
        };
        split.run(record, dest, self.step_cx(stage_cfg, device));
    }

    /// A unit of one process: run through the launcher, with the GPU as the schedule gave it,
    /// and judged on its ending, its logs and the program's exit codes.
    fn single(&self, prepared: &Prepared<'_>, record: &mut Stage) {
        let Prepared {
            unit,
            stage: stage_cfg,
            invocation,
            dest,
            device,
            ..
        } = *prepared;
        let command = self.command(invocation, stage_cfg, dest, device);
        let gpu = match schedule::class(unit) {
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
                record.logs = present_logs(dest, &invocation.logs, unit);
                return;
            }
        };
        record.duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX);
        steps::note_outcome(record, &self.pipeline.resolve(&self.dir.relative), &outcome);
        if let Ending::Exited(code) = outcome.ending {
            record.exit_code = Some(code);
        }
        let gathered = stages::gather(dest, invocation);
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
                path: log_path(unit, name),
                format: *format,
            })
            .collect();
    }
}

/// A compile unit's `flags:` input: the hash of the command line it runs, so that a changed
/// flag shows among the run's inputs.
fn flag_input(unit: &Unit, invocation: &Invocation) -> FlagInput {
    (unit.kind == StageKind::Compile).then(|| {
        (
            format!("flags:{}", slash(&unit.dir)),
            hash::bytes(invocation.display.join("\0").as_bytes()),
        )
    })
}

/// A log of `unit` as its record names it: relative to the run directory.
fn log_path(unit: &Unit, name: &str) -> String {
    slash(&unit.dir.join(name))
}

/// The logs of `unit` that exist in its directory `dir`, for a unit whose process could not
/// be run to its end.
fn present_logs(dir: &Path, logs: &[(String, Option<parsers::Format>)], unit: &Unit) -> Vec<Log> {
    logs.iter()
        .filter(|(name, _)| dir.join(name).is_file())
        .map(|(name, format)| Log {
            path: log_path(unit, name),
            format: *format,
        })
        .collect()
}
