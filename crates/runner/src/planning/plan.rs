//! Which stage runs for which config, arch and case, and which cannot run here and why.
//!
//! [`plan`] expands the pipeline's stages over the matrix into [`Unit`]s, in execution order:
//! compile and SASS per config and arch; the sanitizers, check, stress, bench and profile per
//! config, GPU arch and case; the baseline once for all its cases (one process: importing torch
//! takes seconds); the report once. A unit that cannot run is planned as skipped (a GPU stage
//! on a machine without one, a missing GPU tool) or as failed (a CPU stage whose tool is
//! missing: the run could not do what the pipeline asks), with the reason.

use std::path::PathBuf;

use report::StageKind;

use crate::pipeline::config::{self, CaseInstance, Pipeline};
use crate::setup::preflight::{self, Preflight};

/// The units of one run, in execution order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub units: Vec<Unit>,
}

/// One stage for one config, arch and case.
#[derive(Debug, Clone)]
pub struct Unit {
    /// Index into [`Pipeline::stages`].
    pub stage: usize,
    pub name: String,
    pub kind: StageKind,
    pub config: Option<String>,
    pub arch: Option<String>,
    pub case: Option<CaseInstance>,
    /// Every case of a unit that runs them all in one process (the built-in kernel's baseline).
    pub cases: Vec<CaseInstance>,
    /// The compile unit whose cubin this unit consumes.
    pub compile: Option<usize>,
    /// Set when the unit cannot run here.
    pub blocked: Option<Blocked>,
    /// Its directory, relative to the run directory.
    pub dir: PathBuf,
    /// For a build: the other configs whose build would be the same (same arch,
    /// defines and environment), which use this one's products instead of building again.
    pub serves: Vec<String>,
    /// Whether the unit runs several processes at once (see [`crate::planning::schedule::shares`]).
    pub parallel: Parallel,
    /// For a profile unit: the baseline stage (its index) whose command it profiles, beside the
    /// program's own profile units.
    pub profiles_baseline: Option<usize>,
}

/// The processes a unit runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallel {
    /// One at a time.
    One,
    /// `split: tests`: its program's tests, one per process.
    Tests,
    /// A stress search (`launches:`): its program at several launch counts.
    Launches,
}

/// Why a unit does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// Skipped, e.g. "no CUDA driver: libcuda.so.1 not found".
    Skip(String),
    /// Cannot run although it should: recorded as failed, e.g. "nvcc not found".
    Fail(String),
}

/// Which part of the pipeline a run covers (`--only`, `--config`).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub stages: Vec<String>,
    pub configs: Vec<String>,
}

/// A selection that names what the pipeline does not have.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    #[error("select stage `{0}`: no such stage in the pipeline (stages: {1})")]
    UnknownStage(String, String),
    #[error("select config `{0}`: no such config in matrix.configs (configs: {1})")]
    UnknownConfig(String, String),
}

/// Expands the pipeline into units for this machine.
pub fn plan(
    pipeline: &Pipeline,
    preflight: &Preflight,
    selection: &Selection,
) -> Result<Plan, PlanError> {
    check_selection(pipeline, selection)?;
    let configs: Vec<&String> = pipeline
        .matrix
        .configs
        .keys()
        .filter(|c| selection.configs.is_empty() || selection.configs.contains(c))
        .collect();

    let mut units: Vec<Unit> = Vec::new();
    let mut compile_units: Vec<(String, String, usize)> = Vec::new();
    for (index, stage) in pipeline.stages.iter().enumerate() {
        if !config::runs(pipeline, &selection.stages, stage) {
            continue;
        }
        let blocked = stage_blocked(stage, preflight);
        let unit = |config: Option<&str>, arch: Option<&str>, case: Option<CaseInstance>| {
            let mut dir = PathBuf::from(&stage.name);
            for part in [config, arch].into_iter().flatten() {
                dir.push(part);
            }
            if let Some(case) = &case {
                dir.push(case.label());
            }
            Unit {
                stage: index,
                name: stage.name.clone(),
                kind: stage.kind,
                config: config.map(str::to_string),
                arch: arch.map(str::to_string),
                case,
                cases: Vec::new(),
                compile: None,
                blocked: blocked.clone(),
                dir,
                serves: Vec::new(),
                parallel: parallel_of(pipeline, stage),
                profiles_baseline: None,
            }
        };
        let stage_configs = configs
            .iter()
            .filter(|c| stage.configs.is_empty() || stage.configs.contains(c));
        match stage.kind {
            StageKind::Compile => {
                for config in stage_configs {
                    for arch in pipeline.archs_of(config) {
                        // A target's build that another config already makes the same way
                        // (same arch, defines and environment, and a build command that does
                        // not name its config) runs once, its products shared.
                        let same = compile_units.iter().find(|(other, other_arch, _)| {
                            other_arch == arch && same_build(pipeline, other, config)
                        });
                        if let Some(&(_, _, index)) = same {
                            if let Some(u) = units.get_mut(index) {
                                u.serves.push(config.to_string());
                            }
                            compile_units.push((config.to_string(), arch.clone(), index));
                            continue;
                        }
                        compile_units.push((config.to_string(), arch.clone(), units.len()));
                        units.push(unit(Some(config), Some(arch), None));
                    }
                }
            }
            StageKind::Sass => {
                for config in stage_configs {
                    for arch in pipeline.archs_of(config) {
                        let mut u = unit(Some(config), Some(arch), None);
                        // A target's SASS needs no build of its own: the program's JIT caches
                        // land in the config's build directory too.
                        if !compile_units.is_empty() {
                            attach_compile(&mut u, &compile_units, &units, pipeline);
                        }
                        units.push(u);
                    }
                }
            }
            StageKind::Baseline if !compile_units.is_empty() && pipeline.kernel.is_none() => {
                // A target's baseline runs what the build made: in the build of each config
                // it is bound to, so that `{build_dir}` and `EXHIBIT_BUILD_DIR` are that
                // build's.
                for config in baseline_configs(pipeline, stage, &configs) {
                    let arch = gpu_arches(pipeline, preflight, config).into_iter().next();
                    let mut u = unit(Some(config), arch.as_deref(), None);
                    attach_compile(&mut u, &compile_units, &units, pipeline);
                    units.push(u);
                }
            }
            StageKind::Baseline => {
                // One process for every case (the built-in kernel's baseline command takes
                // them all): the baseline imports torch once.
                let mut u = unit(None, None, None);
                u.cases = pipeline.case_instances(stage, None);
                if !u.cases.is_empty() {
                    u.dir.push(ALL_CASES);
                }
                units.push(u);
            }
            StageKind::Report => units.push(unit(None, None, None)),
            _ => {
                // The program (the built-in kernel's harness or a target's own): one unit per
                // config, GPU arch and case; a target's stage without cases runs its program
                // once per config and arch.
                for config in stage_configs {
                    for arch in &gpu_arches(pipeline, preflight, config) {
                        let cases: Vec<Option<CaseInstance>> = if stage.cases.is_empty() {
                            vec![None]
                        } else {
                            pipeline
                                .case_instances(stage, Some(config))
                                .into_iter()
                                .map(Some)
                                .collect()
                        };
                        for case in cases {
                            let mut u = unit(Some(config), Some(arch), case);
                            if !compile_units.is_empty() {
                                attach_compile(&mut u, &compile_units, &units, pipeline);
                            }
                            units.push(u);
                        }
                    }
                }
            }
        }
    }
    // The baseline's kernels beside the program's: a target's pipeline that profiles its
    // program and runs a baseline of its own command profiles that command too, once, in the
    // build of the first config the baseline ran in.
    let bound = units
        .iter()
        .position(|u| u.kind == StageKind::Baseline && u.config.is_some());
    units.extend(
        baseline_profile(pipeline, preflight, selection).map(|mut u| {
            if let Some(b) = bound.and_then(|i| units.get(i)) {
                (u.config, u.arch, u.compile) = (b.config.clone(), b.arch.clone(), b.compile);
                if u.blocked.is_none() {
                    u.blocked.clone_from(&b.blocked);
                }
            }
            u
        }),
    );
    Ok(Plan { units })
}

/// Refuses a selection that names a stage or config the pipeline does not have.
pub fn check_selection(pipeline: &Pipeline, selection: &Selection) -> Result<(), PlanError> {
    for stage in &selection.stages {
        if pipeline.stage(stage).is_none() {
            let names: Vec<&str> = pipeline.stages.iter().map(|s| s.name.as_str()).collect();
            return Err(PlanError::UnknownStage(stage.clone(), names.join(", ")));
        }
    }
    for config in &selection.configs {
        if !pipeline.matrix.configs.contains_key(config) {
            let names: Vec<&str> = pipeline.matrix.configs.keys().map(String::as_str).collect();
            return Err(PlanError::UnknownConfig(config.clone(), names.join(", ")));
        }
    }
    Ok(())
}

/// The processes a unit of `stage` runs at once: a sanitizer's `split:` its tests, a target's
/// stress search (`launches:`) its launch counts, any other one.
fn parallel_of(pipeline: &Pipeline, stage: &config::Stage) -> Parallel {
    if stage.split.is_some() && config::is_sanitizer(stage.kind) {
        Parallel::Tests
    } else if stage.kind == StageKind::Stress
        && stage.launches.is_some()
        && pipeline.target.is_some()
    {
        Parallel::Launches
    } else {
        Parallel::One
    }
}

/// The unit that profiles the baseline's command, when a target's pipeline (not the built-in
/// kernel's) runs both a profile stage and a baseline stage of the selection.
fn baseline_profile(
    pipeline: &Pipeline,
    preflight: &Preflight,
    selection: &Selection,
) -> Option<Unit> {
    if pipeline.kernel.is_some() {
        return None;
    }
    let runs = |kind: StageKind| {
        pipeline
            .stages
            .iter()
            .enumerate()
            .find(|(_, s)| s.kind == kind && config::runs(pipeline, &selection.stages, s))
    };
    let (Some((profile, stage)), Some((baseline, _))) =
        (runs(StageKind::Profile), runs(StageKind::Baseline))
    else {
        return None;
    };
    Some(Unit {
        stage: profile,
        name: stage.name.clone(),
        kind: StageKind::Profile,
        config: None,
        arch: None,
        case: None,
        cases: Vec::new(),
        compile: None,
        blocked: stage_blocked(stage, preflight),
        dir: PathBuf::from(&stage.name).join(BASELINE_DIR),
        serves: Vec::new(),
        parallel: Parallel::One,
        profiles_baseline: Some(baseline),
    })
}

/// The configs a target's baseline runs in, each in that config's build: every config of the
/// stage when its command or environment names one of a config's placeholders (`{build_dir}`,
/// `{config}`, `{arch}`, `{source}`, `{env:NAME}`), else the first (the matrix's only one, or
/// any: the command is the same in each). Configs are the matrix's, sorted.
pub fn baseline_configs<'c>(
    pipeline: &Pipeline,
    stage: &config::Stage,
    configs: &[&'c String],
) -> Vec<&'c String> {
    let mut of_stage = configs
        .iter()
        .copied()
        .filter(|c| stage.configs.is_empty() || stage.configs.contains(c));
    let per_config = stage
        .command
        .iter()
        .chain(stage.args.iter())
        .chain(stage.env.values())
        .any(|w| config::names_config(w));
    if per_config || pipeline.matrix.configs.len() == 1 {
        of_stage.collect()
    } else {
        of_stage.next().into_iter().collect()
    }
}

/// The directory, under the profile stage's, of the unit that profiles the baseline.
pub const BASELINE_DIR: &str = "of-baseline";

/// Whether two configs of a target build alike: the same defines and build environment (the
/// build command and its own environment are the pipeline's, the same for every config; a
/// config's `env` is its program's).
fn same_build(pipeline: &Pipeline, a: &str, b: &str) -> bool {
    // A build command that names its config (`{config}`) builds something of its own for each.
    let build = pipeline.target.as_ref().and_then(|t| t.build.as_ref());
    if build.is_some_and(|b| {
        b.command
            .iter()
            .chain(b.env.values())
            .any(|word| word.contains("{config}"))
    }) {
        return false;
    }
    let configs = &pipeline.matrix.configs;
    match (configs.get(a), configs.get(b)) {
        (Some(a), Some(b)) => {
            a.defines == b.defines
                && a.flags == b.flags
                && a.build_env == b.build_env
                && a.arch == b.arch
                && a.source == b.source
        }
        _ => false,
    }
}

/// The directory, under the stage's, of a unit that runs every case of its stage.
pub const ALL_CASES: &str = "all";

/// The archs GPU stages run `config` for: those of its archs the GPUs here match; when the GPU's
/// arch is unknown or there is no GPU, its first arch (the others are compile-only).
fn gpu_arches(pipeline: &Pipeline, preflight: &Preflight, config: &str) -> Vec<String> {
    let archs = pipeline.archs_of(config);
    let matching: Vec<String> = archs
        .iter()
        .filter(|a| {
            preflight
                .gpu_archs
                .iter()
                .any(|g| preflight::arch_matches(a, g))
        })
        .cloned()
        .collect();
    if !matching.is_empty() {
        return matching;
    }
    if preflight.gpu_archs.is_empty() || preflight.gpu_unavailable.is_some() {
        return archs.iter().take(1).cloned().collect();
    }
    // A GPU whose arch the matrix does not list: GPU stages would load a cubin it cannot run.
    Vec::new()
}

fn stage_blocked(stage: &config::Stage, preflight: &Preflight) -> Option<Blocked> {
    if !stage.enabled {
        return Some(Blocked::Skip("disabled in the pipeline".to_string()));
    }
    let reason = preflight::unmet(stage, preflight)?;
    // A target that needs Python or torch is skipped, with the reason, where they are missing:
    // a laptop without torch still gets everything else.
    let python = stage
        .needs
        .tools
        .iter()
        .any(|t| t == "torch" || t == "python3");
    Some(if stage.needs.gpu || python {
        Blocked::Skip(reason)
    } else {
        Blocked::Fail(reason)
    })
}

fn attach_compile(
    unit: &mut Unit,
    compile_units: &[(String, String, usize)],
    units: &[Unit],
    pipeline: &Pipeline,
) {
    let found = compile_units
        .iter()
        .find(|(c, a, _)| Some(c) == unit.config.as_ref() && Some(a) == unit.arch.as_ref());
    match found {
        Some(&(_, _, index)) => {
            unit.compile = Some(index);
            if unit.blocked.is_none()
                && let Some(compile) = units.get(index)
                && let Some(Blocked::Skip(reason)) = &compile.blocked
            {
                unit.blocked = Some(Blocked::Skip(format!("compile skipped: {reason}")));
            }
        }
        None if unit.blocked.is_none() => {
            let why = match pipeline
                .stages
                .iter()
                .find(|s| s.kind == StageKind::Compile)
            {
                Some(s) if !s.configs.is_empty() => "the compile stage does not build this config",
                _ => "no compile stage",
            };
            unit.blocked = Some(Blocked::Skip(format!("needs a cubin: {why}")));
        }
        None => {}
    }
}

impl Unit {
    /// `stage config arch case`, for progress lines.
    pub fn label(&self) -> String {
        let mut parts = vec![self.name.clone()];
        if self.profiles_baseline.is_some() {
            parts.push("baseline".to_string());
        }
        parts.extend(self.config.clone());
        parts.extend(self.arch.clone());
        parts.extend(self.case.as_ref().map(CaseInstance::label));
        match self.cases.as_slice() {
            [] => {}
            [case] => parts.push(case.label()),
            cases => parts.push(format!("{} cases", cases.len())),
        }
        parts.join(" ")
    }
}
