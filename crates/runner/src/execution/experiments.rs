//! The experiments of a run: the configs its trials run as, and what the runner reads back
//! from them. [`report::experiment::propose`] decides what to test; `orchestrate` runs the
//! trials' units after the run's own, through the same scheduler and cache, and records them
//! in the manifest's `experiments`.

use std::collections::BTreeSet;
use std::path::Path;

use report::experiment::{Experiment, ExperimentKind};
use report::{Stage, StageKind};

use crate::evidence::hash;
use crate::pipeline::config::{Define, Pipeline};
use crate::planning::plan::Selection;

/// The pipeline with one config per trial (the cause's config with the trial's change) and
/// the selection that runs only the trials' stages on them (their builds come with them).
pub fn derived(pipeline: &Pipeline, experiments: &[Experiment]) -> (Pipeline, Selection) {
    let mut out = pipeline.clone();
    let mut stages = BTreeSet::new();
    let mut configs = BTreeSet::new();
    // Each trial runs its own stage only: every stage but the build lists the trials that run
    // it, and nothing else.
    for stage in &mut out.stages {
        if stage.kind != StageKind::Compile {
            stage.configs.clear();
        }
    }
    for e in experiments {
        let Some(base) = pipeline.matrix.configs.get(&e.config) else {
            continue;
        };
        // The cause's own config is selected too: where a trial builds alike, the run's own
        // build (served from this run's cache) serves it instead of a build of its own.
        configs.insert(e.config.clone());
        for t in &e.trials {
            let mut config = base.clone();
            config.env.extend(t.env.clone());
            for (k, v) in &t.defines {
                config.defines.insert(k.clone(), Define(v.clone()));
            }
            config.flags.extend(t.flags.iter().cloned());
            out.matrix.configs.insert(t.config.clone(), config);
            for stage in out.stages.iter_mut().filter(|s| s.name == t.stage) {
                stage.configs.push(t.config.clone());
            }
            stages.insert(t.stage.clone());
            configs.insert(t.config.clone());
        }
    }
    let selection = Selection {
        stages: stages.into_iter().collect(),
        configs: configs.into_iter().collect(),
    };
    (out, selection)
}

/// Gives each trial the records of its units (its build, when it had its own, and its stage).
pub fn attach(experiments: &mut [Experiment], records: Vec<Stage>) {
    for stage in records {
        let Some(trial) = experiments
            .iter_mut()
            .flat_map(|e| e.trials.iter_mut())
            .find(|t| stage.config.as_deref() == Some(t.config.as_str()))
        else {
            continue;
        };
        trial.units.push(stage);
    }
}

/// The digests the race trials compare: of the `{out}` file the run left, else of its stdout
/// without the lines that print a time or a rate (which differ between identical runs).
pub fn digest_outputs(experiments: &mut [Experiment], run_dir: &Path) {
    for e in experiments
        .iter_mut()
        .filter(|e| e.kind == ExperimentKind::Race)
    {
        for t in &mut e.trials {
            let Some(stage) = t.units.iter().find(|u| u.name == t.stage) else {
                continue;
            };
            t.output = output_digest(run_dir, stage);
        }
    }
}

fn output_digest(run_dir: &Path, stage: &Stage) -> Option<String> {
    if stage.kind != StageKind::Check && stage.kind != StageKind::Bench {
        return None;
    }
    let results = stage
        .outputs
        .iter()
        .find(|(path, _)| path.ends_with(crate::execution::stages::PROGRAM_OUT))
        .map(|(_, sha)| sha.clone());
    if results.is_some() {
        return results;
    }
    let stdout = stage.logs.iter().find(|l| l.path.ends_with("stdout.log"))?;
    let path = crate::evidence::rundir::inside(run_dir, &stdout.path).ok()?;
    let text = crate::evidence::rundir::read_file(&path, 64 << 20).ok()?;
    let text = String::from_utf8_lossy(&text);
    let timing = regex::Regex::new(
        r"(?i)\d\s*(ns|us|µs|ms|s|sec|seconds|gb/s|tb/s|gflops|tflops|flop/s|it/s)\b",
    )
    .ok()?;
    let kept: Vec<&str> = text.lines().filter(|l| !timing.is_match(l)).collect();
    Some(hash::bytes(kept.join("\n").as_bytes()))
}
