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
    let mut trial_cases = BTreeSet::new();
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
            // A trial that is a case of its own: the base case at the trial's length, run on the
            // cause's config.
            if let (Some(tc), Some(value)) = (&t.case, t.value) {
                let Some(mut case) = pipeline.cases.get(&tc.base).cloned() else {
                    continue;
                };
                case.shape.seq_len = u32::try_from(value).unwrap_or(u32::MAX);
                out.cases.insert(tc.name.clone(), case);
                for stage in out.stages.iter_mut().filter(|s| s.name == t.stage) {
                    if !stage.configs.contains(&t.config) {
                        stage.configs.push(t.config.clone());
                    }
                    if trial_cases.insert(stage.name.clone()) {
                        stage.cases.clear();
                    }
                    stage.cases.push(tc.name.clone());
                }
                stages.insert(t.stage.clone());
                continue;
            }
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
        let case = stage.unit.case.as_ref().map(|c| c.name.as_str());
        let Some(trial) = experiments
            .iter_mut()
            .flat_map(|e| e.trials.iter_mut())
            .find(|t| {
                stage.config.as_deref() == Some(t.config.as_str())
                    && t.case
                        .as_ref()
                        .is_none_or(|c| Some(c.name.as_str()) == case)
            })
        else {
            continue;
        };
        trial.units.push(stage);
    }
}
