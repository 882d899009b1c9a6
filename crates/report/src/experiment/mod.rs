//! Experiments: a hypothesis a root cause rests on, tested by a few more runs.
//!
//! A report's diagnosis predicts something one or two more runs would show: an unguarded tail
//! fails exactly when the size is not a multiple of the tile; a race changes the output between
//! identical runs; one block more per SM at a register budget runs faster. [`propose`] turns
//! the root causes of a finished run, and the knobs its pipeline names (`knobs:`, recorded in
//! the manifest as [`Knob`]s), into [`Experiment`]s: each a prediction and its trials, every
//! trial a config of its own (the cause's config with one input changed) that the runner runs
//! like any other unit and records in [`Experiment::trials`]. [`conclude`] reads what the
//! trials did against the prediction; [`apply`] sets each root cause's confidence by the
//! outcome and withdraws what a trial refuted. A stress stage's launch search is the same kind
//! of test, shown the same way ([`launch_searches`]).

mod conclude;
mod propose;

use crate::message::{Message, msg};
use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnosis::{Confidence, Diagnosis, Level};
pub use crate::hypothesis::{ExperimentKind, Hypothesis, KnobRole, Outcome, Settle};
pub use crate::run::{Conclusion, Expect, Experiment, Knob, KnobInput, Trial, TrialCase, TrialRow};
use crate::run::{Run, Stage, StageKind};
pub use conclude::{TrialLogs, conclude};
pub use propose::{RACE_RUNS, propose};

/// The stages of a run a trial can run: its name for a kind on a config, where it ran there.
fn stage_on<'r>(run: &'r Run, kind: StageKind, config: &str) -> Option<&'r Stage> {
    run.stages
        .iter()
        .find(|s| s.kind == kind && s.config.as_deref() == Some(config))
}

fn knob(run: &Run, role: KnobRole) -> Option<&Knob> {
    run.knobs.iter().find(|k| k.role == role)
}

/// Why a hypothesis was not tested in this run, and what one more run needs: the knob to
/// add (the line to paste), a bench stage, or experiments turned on.
fn settle(h: &Hypothesis, d: &Diagnosis, run: Option<&Run>) -> Settle {
    let Some(role) = h.kind.knob() else {
        return Settle {
            why: "no experiment tests it".into(),
            add_knob: None,
            turn_on: false,
        };
    };
    let knob = run.and_then(|r| knob(r, role));
    let config = d.config.as_deref().unwrap_or_default();
    let bench = run.and_then(|r| stage_on(r, StageKind::Bench, config));
    let why = match (knob, bench) {
        (None, _) => format!("the pipeline names no `{}` knob", role.as_str()),
        (Some(_), None) => "the pipeline has no bench stage to time a trial".to_string(),
        (Some(k), Some(_)) if h.kind == ExperimentKind::Registers && h.value.is_none() => {
            format!(
                "no register budget for one more block is known (ptxas's `-v` figures give it), \
                 though the `{}` knob stands ready",
                k.input.name()
            )
        }
        (Some(k), Some(_))
            if h.kind != ExperimentKind::Registers && !k.values.contains_key(config) =>
        {
            format!("the config sets no value of `{}` to change", k.input.name())
        }
        (Some(_), Some(_)) => {
            "no experiment ran (experiments off, or a run of chosen stages)".to_string()
        }
    };
    Settle {
        why,
        add_knob: knob.is_none().then_some(role),
        turn_on: run.is_none_or(|r| r.experiments.is_empty()),
    }
}

/// Whether a conclusion is about this diagnosis: its rule, kernel and one of its configs.
fn concerns(c: &Conclusion, d: &Diagnosis) -> bool {
    d.rule == c.rule
        && d.kernel == c.kernel
        && (d.config.as_deref() == Some(c.config.as_str()) || d.configs.contains(&c.config))
}

/// Sets each root cause's confidence by its experiment's outcome, and says so in its notes: a
/// refuted suggestion is withdrawn from its help and is no longer a cause (a note). Each
/// hypothesis left untested says what one more run needs, and is at most of medium confidence.
/// The causes are ranked again: an outcome moves a cause.
pub fn apply(diagnoses: &mut [Diagnosis], conclusions: &[Conclusion], run: Option<&Run>) {
    for c in conclusions {
        let Some(d) = diagnoses.iter_mut().find(|d| concerns(c, d)) else {
            continue;
        };
        let suggestion = d.hypothesis.as_ref().is_some_and(|h| h.kind == c.kind);
        match c.outcome {
            Outcome::Confirmed => {
                d.confidence = Confidence::High;
                d.notes
                    .push(msg!("Confirmed by experiment: {}", &c.sentence));
            }
            Outcome::Refuted if suggestion => {
                d.help = vec![msg!("Withdrawn by experiment: {}", &c.sentence)];
                d.level = d.level.min(Level::Note);
            }
            Outcome::Refuted => {
                d.confidence = Confidence::Low;
                d.notes.push(msg!("Refuted by experiment: {}", &c.sentence));
            }
            Outcome::NotSeen | Outcome::Inconclusive => {
                d.notes
                    .push(msg!("Experiment ({}): {}", c.outcome.as_str(), &c.sentence));
            }
        }
    }
    for d in diagnoses.iter_mut() {
        let Some(mut h) = d.hypothesis.take() else {
            continue;
        };
        if let Some(c) = conclusions
            .iter()
            .find(|c| c.kind == h.kind && concerns(c, d))
        {
            h.outcome = Some(c.outcome);
        }
        if h.untested() {
            h.settle = Some(settle(&h, d, run));
            // A prediction no run has tested: at most medium, whatever a tool estimated.
            d.confidence = d.confidence.min(Confidence::Medium);
        }
        d.hypothesis = Some(h);
    }
    diagnoses.sort_by(crate::fold::rank);
}

/// A stress stage's launch search, in the form of an experiment: the counts tried and where
/// the program starts failing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchSearchRow {
    pub stage: String,
    pub config: Option<String>,
    pub outcome: Outcome,
    /// In JSON, as its Markdown.
    pub sentence: Message,
    /// `launches` and how each ended.
    pub tried: Vec<(u64, bool)>,
}

/// The launch searches of a run's stress stages.
pub fn launch_searches(run: &Run) -> Vec<LaunchSearchRow> {
    run.stages
        .iter()
        .filter_map(|s| {
            let search = s.launch_search.as_ref()?;
            let under_memcheck = search
                .memcheck
                .as_ref()
                .filter(|_| search.fails_at.is_none());
            let (outcome, sentence) = match (search.clean_at, search.fails_at, under_memcheck) {
                (Some(c), Some(f), _) => (
                    Outcome::Confirmed,
                    msg!(
                        "Clean at {} launches, fails at {}.",
                        c.to_string(),
                        f.to_string()
                    ),
                ),
                (None, Some(f), _) => (
                    Outcome::Refuted,
                    msg!(
                        "Fails at {}, the fewest tried: not only after repeats.",
                        crate::text::plural(f, "launch", "launches")
                    ),
                ),
                // Under memcheck, clean at few and failing from more: the fault needs repeats.
                (_, None, Some(m)) if m.clean_at.is_some() && m.fails_at.is_some() => (
                    Outcome::Confirmed,
                    msg!(
                        "The program's own runs are clean at every count up to {}; under \
                         memcheck clean at {}, errors from {} on.",
                        search.limit.to_string(),
                        crate::text::plural(m.clean_at.unwrap_or_default(), "launch", "launches"),
                        crate::text::plural(m.fails_at.unwrap_or_default(), "launch", "launches")
                    ),
                ),
                // Under memcheck, errors at the fewest launches tried: the fault is there at
                // every launch, and only the program's own check misses it.
                (_, None, Some(m)) if m.fails_at.is_some() => (
                    Outcome::Refuted,
                    msg!(
                        "The program's own runs are clean at every count up to {}, but memcheck \
                         reports errors from the fewest launches tried ({}) on: the fault is \
                         there at every launch, not only after repeats, and the program's check \
                         does not see it.",
                        search.limit.to_string(),
                        m.fails_at.unwrap_or_default().to_string()
                    ),
                ),
                _ => (
                    Outcome::NotSeen,
                    msg!(
                        "Clean at every count up to {} launches.",
                        search.limit.to_string()
                    ),
                ),
            };
            let attempts = match under_memcheck {
                Some(m) if m.fails_at.is_some() => &m.attempts,
                _ => &search.attempts,
            };
            Some(LaunchSearchRow {
                stage: s.name.clone(),
                config: s.config.clone(),
                outcome,
                sentence,
                tried: attempts.iter().map(|a| (a.launches, a.passed)).collect(),
            })
        })
        .collect()
}

/// A kernel's name without its template arguments and parameters: `reduce5<int,256>` and
/// `void reduce5<int, 256>(int*)` are `reduce5`.
fn base_name(name: &str) -> &str {
    let name = name.trim_start_matches("void ").trim();
    let end = name.find(['<', '(']).unwrap_or(name.len());
    name[..end].trim()
}

impl TrialLogs for crate::join::Joined<'_> {
    fn timings_us(&self, stage: &Stage) -> BTreeMap<String, f64> {
        self.logs_of(stage)
            .flat_map(|l| &l.timings)
            .filter_map(|t| Some((t.name.clone(), t.median_us.or(t.mean_us)?)))
            .collect()
    }

    fn spill_bytes(&self, stage: &Stage, kernel: &str) -> Option<u64> {
        self.same_kernel(stage, kernel)
            .filter_map(|k| k.spill_store_bytes)
            .max()
    }

    fn registers(&self, stage: &Stage, kernel: &str) -> Option<u32> {
        self.same_kernel(stage, kernel)
            .filter_map(|k| k.registers)
            .max()
    }
}

impl crate::join::Joined<'_> {
    /// The kernels of a stage's build logs that are `kernel`: its own instantiation where the
    /// logs name it (SGEMM_CUDA builds `sgemm2DBlocktiling` at two tile sizes, 96 and 109
    /// registers), else every one of its name.
    fn same_kernel<'s>(
        &'s self,
        stage: &'s Stage,
        kernel: &'s str,
    ) -> impl Iterator<Item = &'s parsers::Kernel> + 's {
        let id = crate::kernel_id::KernelId::of(kernel);
        let exact = self
            .logs_of(stage)
            .flat_map(|l| &l.kernels)
            .any(|k| crate::kernel_id::KernelId::of(&k.name) == id);
        self.logs_of(stage)
            .flat_map(|l| &l.kernels)
            .filter(move |k| {
                if exact {
                    crate::kernel_id::KernelId::of(&k.name) == id
                } else {
                    base_name(&k.name) == base_name(kernel)
                }
            })
    }

    /// The parsed logs of a stage record: the run's own, or a trial's.
    fn logs_of<'s>(&'s self, stage: &'s Stage) -> impl Iterator<Item = &'s parsers::ParsedLog> {
        stage.logs.iter().filter_map(move |log| {
            self.trial_logs.get(log.path.as_str()).copied().or_else(|| {
                self.sources
                    .iter()
                    .find(|s| s.path == log.path)
                    .map(|s| s.log)
            })
        })
    }
}

/// Every experiment of a joined run, concluded, and its launch searches.
pub fn of_run(joined: &crate::join::Joined) -> (Vec<Conclusion>, Vec<LaunchSearchRow>) {
    match joined.run {
        Some(run) => (
            run.experiments
                .iter()
                .map(|e| conclude(e, run, joined))
                .collect(),
            launch_searches(run),
        ),
        None => (Vec::new(), Vec::new()),
    }
}
