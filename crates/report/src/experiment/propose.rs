//! Proposing experiments: the trials that would test the hypothesis each root cause rests on,
//! built from the knobs the pipeline names.

use std::collections::BTreeMap;

use crate::diagnosis::{Diagnosis, Figure, Level};
use crate::hypothesis::{ExperimentKind, Hypothesis, KnobRole};
use crate::rules::Proposes;
use crate::run::{
    Expect, Experiment, Knob, KnobInput, Run, StageKind, StageStatus, Trial, TrialCase,
};

use super::{knob, stage_on};

/// How many identical runs a race experiment compares.
pub const RACE_RUNS: u64 = 8;

/// The experiments the root causes of a run call for, given its knobs.
pub fn propose(diagnoses: &[Diagnosis], run: &Run) -> Vec<Experiment> {
    let mut out: Vec<Experiment> = Vec::new();
    for d in diagnoses {
        let configs: Vec<&str> = if d.configs.is_empty() {
            d.config.iter().map(String::as_str).collect()
        } else {
            d.configs.iter().map(String::as_str).collect()
        };
        // One experiment per cause: on its first config that can run it.
        let proposed = configs
            .iter()
            .find_map(|config| match d.rule.rule().proposes {
                Proposes::Tail if Figure::OvershootBytes.of(&d.figures).is_some() => {
                    tail(d, run, config)
                }
                Proposes::Race => race(d, run, config),
                Proposes::Sizes => sizes(d, run, config),
                _ => d
                    .hypothesis
                    .as_ref()
                    .filter(|h| h.outcome.is_none() && d.level != Level::Error)
                    .and_then(|h| benched(d, run, config, h)),
            });
        if let Some(e) = proposed
            && !out
                .iter()
                .any(|o| o.kind == e.kind && o.config == e.config && o.kernel == e.kernel)
        {
            out.push(e);
        }
    }
    out
}

/// A trial of `config` with `knob` set to `value`.
fn set(
    knob: &Knob,
    config: &str,
    case: Option<&str>,
    stage: &str,
    value: u64,
    expect: Option<Expect>,
) -> Trial {
    let name = knob.input.name();
    let mut trial = Trial {
        label: format!("{name}={value}"),
        config: format!("{config}@{name}={value}"),
        case: None,
        value: Some(value),
        expect,
        stage: stage.to_string(),
        env: BTreeMap::new(),
        defines: BTreeMap::new(),
        flags: Vec::new(),
        units: Vec::new(),
        output: None,
    };
    match &knob.input {
        KnobInput::Env(n) => {
            trial.env.insert(n.clone(), value.to_string());
        }
        KnobInput::Define(n) => {
            trial.defines.insert(n.clone(), value.to_string());
        }
        KnobInput::Flag(t) => trial.flags.push(t.replace("{value}", &value.to_string())),
        KnobInput::SeqLen => {
            let base = case.unwrap_or_default();
            trial.config = config.to_string();
            trial.case = Some(TrialCase {
                base: base.to_string(),
                name: format!("{base}@{name}={value}"),
            });
        }
    }
    trial
}

/// Sizes around the failing one: the multiples of the tile on either side should pass, another
/// size that is not a multiple should fail like this one.
fn tail(d: &Diagnosis, run: &Run, config: &str) -> Option<Experiment> {
    let knob = knob(run, KnobRole::Size)?;
    // The failing memcheck unit of the config (of a case, where the cases' S is the knob).
    let stage = run.stages.iter().find(|s| {
        s.kind == StageKind::Memcheck
            && s.config.as_deref() == Some(config)
            && s.status == StageStatus::Findings
            && (knob.input != KnobInput::SeqLen || s.unit.case.is_some())
    })?;
    let case = stage.unit.case.as_ref().map(|c| c.name.as_str());
    let key = match knob.input {
        KnobInput::SeqLen => case?,
        _ => config,
    };
    let size: u64 = knob.values.get(key)?.trim().parse().ok()?;
    let tile = knob.tile.unwrap_or(32);
    if tile < 2 || size.is_multiple_of(tile) {
        return None;
    }
    let below = size / tile * tile;
    let above = below + tile;
    let multiples = if below > 0 {
        [below, above]
    } else {
        [above, above + tile]
    };
    let other = above + tile / 2;
    let name = knob.input.name();
    let mut trials: Vec<Trial> = multiples
        .iter()
        .map(|m| set(knob, config, case, &stage.name, *m, Some(Expect::Clean)))
        .collect();
    for n in [size, other] {
        trials.push(set(knob, config, case, &stage.name, n, Some(Expect::Fails)));
    }
    Some(Experiment {
        kind: ExperimentKind::Tail,
        rule: d.rule,
        config: config.to_string(),
        kernel: d.kernel.clone(),
        cause: d.title.clone().markdown(),
        prediction: format!(
            "If the last tile runs past the end because {name} is not a multiple of {tile}, \
             {} fails exactly then: clean at {} and {}, failing at {size} and {other}.",
            stage.name, multiples[0], multiples[1]
        ),
        trials,
    })
}

/// How many smaller sizes a wrong output's experiment tries.
const SIZES: u32 = 5;

/// The failing check again at halves of its size (down to one), to find the smallest size at
/// which it still fails: a size-dependent fault (a tail, a boundary between blocks or
/// segments, an overflow) passes below its bound, an error in what every element computes
/// fails at every size.
fn sizes(d: &Diagnosis, run: &Run, config: &str) -> Option<Experiment> {
    let knob = knob(run, KnobRole::Size)?;
    if knob.input == KnobInput::SeqLen {
        return None;
    }
    let check =
        stage_on(run, StageKind::Check, config).filter(|s| s.status == StageStatus::Findings)?;
    let size: u64 = knob.values.get(config)?.trim().parse().ok()?;
    let values: Vec<u64> = (1..=SIZES)
        .map(|k| size >> k)
        .take_while(|v| *v >= 1)
        .collect();
    if values.is_empty() {
        return None;
    }
    let name = knob.input.name();
    let trials = values
        .iter()
        .map(|v| set(knob, config, None, &check.name, *v, None))
        .collect();
    Some(Experiment {
        kind: ExperimentKind::Sizes,
        rule: d.rule,
        config: config.to_string(),
        kernel: d.kernel.clone(),
        cause: d.title.clone().markdown(),
        prediction: format!(
            "{} fails at {name}={size}. Run again at {}, it fails from the smallest size the \
             fault needs: a tail, a boundary between blocks or an overflow passes below its \
             bound; an error in what every element computes fails at every size.",
            check.name,
            values
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        trials,
    })
}

/// The program's check run again, unchanged, to see whether its output varies.
fn race(d: &Diagnosis, run: &Run, config: &str) -> Option<Experiment> {
    let check = stage_on(run, StageKind::Check, config)
        .filter(|s| matches!(s.status, StageStatus::Passed | StageStatus::Findings))?;
    let trials = (1..=RACE_RUNS)
        .map(|i| Trial {
            label: format!("run {i}"),
            config: format!("{config}@run-{i}"),
            value: None,
            expect: None,
            stage: check.name.clone(),
            case: None,
            // Each run its own unit: the same inputs would be served from the cache.
            env: BTreeMap::from([("EXHIBIT_TRIAL".to_string(), i.to_string())]),
            defines: BTreeMap::new(),
            flags: Vec::new(),
            units: Vec::new(),
            output: None,
        })
        .collect();
    Some(Experiment {
        kind: ExperimentKind::Race,
        rule: d.rule,
        config: config.to_string(),
        kernel: d.kernel.clone(),
        cause: d.title.clone().markdown(),
        prediction: format!(
            "If the race changes what the kernel computes, {}'s output differs between {} \
             identical runs.",
            check.name, RACE_RUNS
        ),
        trials,
    })
}

/// A suggestion's test: the build or run with its knob set to what the hypothesis says pays
/// (the register budget that fits one more block, twice the block size, half the tile), benched
/// against the one that ran, which is benched again beside it.
fn benched(d: &Diagnosis, run: &Run, config: &str, h: &Hypothesis) -> Option<Experiment> {
    let role = h.kind.knob()?;
    let knob = knob(run, role)?;
    if knob.input == KnobInput::SeqLen {
        return None;
    }
    let bench = stage_on(run, StageKind::Bench, config)
        .filter(|s| matches!(s.status, StageStatus::Passed | StageStatus::Findings))?;
    let current = knob
        .values
        .get(config)
        .and_then(|v| v.trim().parse::<u64>().ok());
    let name = knob.input.name();
    let (value, prediction) = match h.kind {
        ExperimentKind::Registers => {
            let budget = h.value?;
            let from = Figure::Registers.of(&d.figures).and_then(|v| v.as_u64());
            (
                budget,
                format!(
                    "At {budget} registers per thread{} one more block fits on an SM; if the \
                     kernel is short of warps to hide latency, {} runs faster.",
                    from.map(|f| format!(" (from {f})")).unwrap_or_default(),
                    bench.name
                ),
            )
        }
        ExperimentKind::BlockSize => {
            let now = current?;
            (
                now * 2,
                format!(
                    "At {name}={} (from {now}) each block brings twice the warps, so more warps \
                     are resident under the same limit on blocks per SM; if the kernel is short \
                     of warps to hide latency, {} runs faster.",
                    now * 2,
                    bench.name
                ),
            )
        }
        ExperimentKind::Tile => {
            let now = current.filter(|&n| n >= 2)?;
            (
                now / 2,
                format!(
                    "At {name}={} (from {now}) each block holds about half the shared memory, so \
                     more blocks fit on an SM; if the kernel is short of warps to hide latency \
                     (and not of reuse), {} runs faster.",
                    now / 2,
                    bench.name
                ),
            )
        }
        ExperimentKind::Tail | ExperimentKind::Race | ExperimentKind::Sizes => return None,
    };
    let trial = set(knob, config, None, &bench.name, value, None);
    // The build as it ran, benched again beside it: the spread of its two runs is the noise
    // a change must clear.
    let again = Trial {
        label: "as built, again".to_string(),
        config: format!("{config}@again"),
        value: None,
        expect: None,
        stage: bench.name.clone(),
        case: None,
        env: BTreeMap::from([("EXHIBIT_TRIAL".to_string(), "again".to_string())]),
        defines: BTreeMap::new(),
        flags: Vec::new(),
        units: Vec::new(),
        output: None,
    };
    Some(Experiment {
        kind: h.kind,
        rule: d.rule,
        config: config.to_string(),
        kernel: d.kernel.clone(),
        cause: d.title.clone().markdown(),
        prediction,
        trials: vec![trial, again],
    })
}
