//! The experiments of a run: the configs its trials run as, and what the runner reads back
//! from them. [`report::experiment::propose`] decides what to test; `orchestrate` runs the
//! trials' units after the run's own, through the same scheduler and cache, and records them
//! in the manifest's `experiments`.

use std::collections::BTreeSet;

use report::experiment::Experiment;
use report::{Stage, StageKind};

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
