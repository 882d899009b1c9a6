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

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnosis::{Confidence, Diagnosis, Figure, Level};
pub use crate::hypothesis::{ExperimentKind, Hypothesis, KnobRole, Outcome, Settle};
use crate::rules::Proposes;
pub use crate::run::{Conclusion, Expect, Experiment, Knob, KnobInput, Trial, TrialCase, TrialRow};
use crate::run::{Run, Stage, StageKind, StageStatus};

/// The stages of a run a trial can run: its name for a kind on a config, where it ran there.
fn stage_on<'r>(run: &'r Run, kind: StageKind, config: &str) -> Option<&'r Stage> {
    run.stages
        .iter()
        .find(|s| s.kind == kind && s.config.as_deref() == Some(config))
}

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

fn knob(run: &Run, role: KnobRole) -> Option<&Knob> {
    run.knobs.iter().find(|k| k.role == role)
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
        cause: d.title.clone(),
        prediction: format!(
            "If the last tile runs past the end because {name} is not a multiple of {tile}, \
             {} fails exactly then: clean at {} and {}, failing at {size} and {other}.",
            stage.name, multiples[0], multiples[1]
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
        cause: d.title.clone(),
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
        ExperimentKind::Tail | ExperimentKind::Race => return None,
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
        cause: d.title.clone(),
        prediction,
        trials: vec![trial, again],
    })
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

/// How a trial's stage ended: `Some(true)` clean, `Some(false)` failing, `None` no outcome.
fn ended_clean(trial: &Trial) -> Option<bool> {
    let stage = trial.units.iter().find(|u| u.name == trial.stage)?;
    match stage.status {
        StageStatus::Passed => Some(true),
        StageStatus::Findings => Some(false),
        _ => None,
    }
}

fn stage_of(trial: &Trial) -> Option<&Stage> {
    trial.units.iter().find(|u| u.name == trial.stage)
}

fn why_not(trial: &Trial) -> String {
    match stage_of(trial) {
        Some(s) => format!(
            "{}{}",
            format!("{:?}", s.status).to_lowercase(),
            s.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
        None => "did not run".to_string(),
    }
}

/// What a trial's logs say, for the experiments that read more than its status.
pub trait TrialLogs {
    /// Each timing a stage's logs hold, by name: its median (else mean) in µs.
    fn timings_us(&self, stage: &Stage) -> BTreeMap<String, f64>;
    /// The spill stores of `kernel` (bytes) in a stage's build logs.
    fn spill_bytes(&self, stage: &Stage, kernel: &str) -> Option<u64>;
    /// The registers per thread of `kernel` in a stage's build logs.
    fn registers(&self, stage: &Stage, kernel: &str) -> Option<u32>;
}

/// An experiment read against its prediction.
pub fn conclude(e: &Experiment, run: &Run, logs: &dyn TrialLogs) -> Conclusion {
    let runs = e.trials.iter().map(|t| t.units.len()).sum();
    let cached = e
        .trials
        .iter()
        .flat_map(|t| &t.units)
        .filter(|u| u.cached_from.is_some())
        .count();
    let cost_ms = e
        .trials
        .iter()
        .flat_map(|t| &t.units)
        .filter(|u| u.cached_from.is_none())
        .map(|u| u.duration_ms)
        .sum();
    let row = |t: &Trial, outcome: String| TrialRow {
        label: t.label.clone(),
        outcome,
        evidence: stage_of(t)
            .and_then(|s| s.logs.first())
            .map(|l| l.path.clone()),
        cached: stage_of(t).is_some_and(|s| s.cached_from.is_some()),
    };
    let (outcome, sentence, rows) = match e.kind {
        ExperimentKind::Tail => tail_outcome(e, &row),
        ExperimentKind::Race => race_outcome(e, &row),
        ExperimentKind::Registers | ExperimentKind::BlockSize | ExperimentKind::Tile => {
            benched_outcome(e, run, logs, &row)
        }
    };
    Conclusion {
        kind: e.kind,
        rule: e.rule,
        config: e.config.clone(),
        kernel: e.kernel.clone(),
        cause: e.cause.clone(),
        prediction: e.prediction.clone(),
        outcome,
        sentence,
        rows,
        runs,
        cached,
        cost_ms,
    }
}

type Row<'a> = dyn Fn(&Trial, String) -> TrialRow + 'a;

fn tail_outcome(e: &Experiment, row: &Row) -> (Outcome, String, Vec<TrialRow>) {
    let rows = e
        .trials
        .iter()
        .map(|t| {
            let said = match ended_clean(t) {
                Some(true) => "clean".to_string(),
                Some(false) => "fails".to_string(),
                None => why_not(t),
            };
            row(t, said)
        })
        .collect();
    let name = e
        .trials
        .first()
        .and_then(|t| t.label.split('=').next())
        .unwrap_or("N")
        .to_string();
    let tile = e
        .trials
        .iter()
        .filter(|t| t.expect == Some(Expect::Clean))
        .filter_map(|t| t.value)
        .min()
        .and_then(|a| {
            let b = e
                .trials
                .iter()
                .filter(|t| t.expect == Some(Expect::Clean))
                .filter_map(|t| t.value)
                .max()?;
            (b > a).then_some(b - a)
        })
        .unwrap_or(32);
    let values = |expect: Expect, clean: bool| -> Vec<String> {
        e.trials
            .iter()
            .filter(|t| t.expect == Some(expect) && ended_clean(t) == Some(clean))
            .filter_map(|t| t.value.map(|v| v.to_string()))
            .collect()
    };
    if let Some(t) = e.trials.iter().find(|t| ended_clean(t).is_none()) {
        return (
            Outcome::Inconclusive,
            format!("{} {}: the sizes cannot be compared.", t.label, why_not(t)),
            rows,
        );
    }
    let pass = values(Expect::Clean, true);
    let fail = values(Expect::Fails, false);
    let wrong_fail = values(Expect::Clean, false);
    let wrong_pass = values(Expect::Fails, true);
    let words = crate::text::join_words;
    if wrong_fail.is_empty() && wrong_pass.is_empty() {
        (
            Outcome::Confirmed,
            format!(
                "Fails exactly when {name} % {tile} != 0: {} pass, {} fail.",
                words(&pass),
                words(&fail)
            ),
            rows,
        )
    } else {
        let mut parts = Vec::new();
        if !wrong_fail.is_empty() {
            parts.push(format!(
                "fails at {} too, a multiple of {tile}",
                words(&wrong_fail)
            ));
        }
        if !wrong_pass.is_empty() {
            parts.push(format!(
                "clean at {}, not a multiple of {tile}",
                words(&wrong_pass)
            ));
        }
        (
            Outcome::Refuted,
            format!(
                "Not a tail of {tile}: {}. The tail explanation is withdrawn; the fault stands.",
                parts.join("; ")
            ),
            rows,
        )
    }
}

fn race_outcome(e: &Experiment, row: &Row) -> (Outcome, String, Vec<TrialRow>) {
    // Outputs in order of first appearance: A, B, ...
    let mut seen: Vec<&str> = Vec::new();
    let mut rows = Vec::new();
    for t in &e.trials {
        let said = match (&t.output, ended_clean(t)) {
            (Some(o), Some(_)) => {
                let i = seen
                    .iter()
                    .position(|s| *s == o.as_str())
                    .unwrap_or_else(|| {
                        seen.push(o);
                        seen.len() - 1
                    });
                let letter = char::from(b'A' + u8::try_from(i % 26).unwrap_or(0));
                format!("output {letter}")
            }
            _ => why_not(t),
        };
        rows.push(row(t, said));
    }
    let compared: Vec<&str> = e
        .trials
        .iter()
        .filter(|t| ended_clean(t).is_some())
        .filter_map(|t| t.output.as_deref())
        .collect();
    let n = compared.len();
    if n < 2 {
        return (
            Outcome::Inconclusive,
            format!("{n} of {} runs left an output to compare.", e.trials.len()),
            rows,
        );
    }
    let first = compared[0];
    let differ = compared.iter().filter(|o| **o != first).count();
    if differ > 0 {
        (
            Outcome::Confirmed,
            format!(
                "The output differs between identical runs: {differ} of {n} differ from the \
                 first ({} distinct outputs).",
                seen.len()
            ),
            rows,
        )
    } else {
        (
            Outcome::NotSeen,
            format!(
                "Identical in {n} runs: the race has not shown in the output yet. The hazard \
                 racecheck reported stands."
            ),
            rows,
        )
    }
}

/// A gain or a loss smaller than this is no change.
const SAME: f64 = 0.03;

/// A benched trial against the build as it ran: faster beyond the noise confirms the
/// suggestion; slower, or no change, withdraws it.
fn benched_outcome(
    e: &Experiment,
    run: &Run,
    logs: &dyn TrialLogs,
    row: &Row,
) -> (Outcome, String, Vec<TrialRow>) {
    let Some(capped) = e.trials.iter().find(|t| t.value.is_some()) else {
        return (Outcome::Inconclusive, "No trial.".into(), Vec::new());
    };
    let again = e.trials.iter().find(|t| t.value.is_none());
    let kernel = e.kernel.as_deref().unwrap_or("");
    // Each stage's timings by name; a timing named after its unit's config is the same timing
    // in every build.
    let named = |stage: Option<&Stage>, config: &str| -> BTreeMap<String, f64> {
        stage
            .map(|s| logs.timings_us(s))
            .unwrap_or_default()
            .into_iter()
            .map(|(n, v)| (if n == config { String::new() } else { n }, v))
            .collect()
    };
    let first = named(stage_on(run, StageKind::Bench, &e.config), &e.config);
    let second = again
        .map(|t| named(stage_of(t), &t.config))
        .unwrap_or_default();
    let after = named(stage_of(capped), &capped.config);
    // The build as it ran: the mean of its two runs by name, their spread its noise.
    let before: BTreeMap<&String, f64> = first
        .iter()
        .map(|(n, a)| (n, second.get(n).map_or(*a, |b| (a + b) / 2.0)))
        .collect();
    let noise = first
        .iter()
        .filter_map(|(n, a)| Some((a - second.get(n)?).abs() / a))
        .fold(0.0, f64::max);
    let band = SAME.max(2.0 * noise);
    let build = capped.units.iter().find(|u| u.name != capped.stage);
    let spills = build.and_then(|b| logs.spill_bytes(b, kernel));
    let regs_after = build.and_then(|b| logs.registers(b, kernel));
    let regs_before = run
        .stages
        .iter()
        .filter(|s| s.kind == StageKind::Compile && s.config.as_deref() == Some(e.config.as_str()))
        .find_map(|s| logs.registers(s, kernel));
    let registers = e.kind == ExperimentKind::Registers;
    let pairs: Vec<(f64, f64)> = before
        .iter()
        .filter_map(|(name, b)| Some((*b, *after.get(*name)?)))
        .filter(|(b, a)| *b > 0.0 && *a > 0.0)
        .collect();
    let mut rows = vec![];
    if pairs.is_empty() {
        rows.push(row(capped, why_not(capped)));
        return (
            Outcome::Inconclusive,
            format!(
                "No timing to compare: {} of the build as it ran, {} of the capped one.",
                before.len(),
                after.len()
            ),
            rows,
        );
    }
    if let (true, Some(b), Some(a)) = (registers, regs_before, regs_after)
        && a >= b
    {
        rows.push(row(capped, format!("{a} registers")));
        return (
            Outcome::Inconclusive,
            format!(
                "The budget did not take: the capped build still uses {a} registers per thread \
                 (a `__launch_bounds__` on the kernel sets its own)."
            ),
            rows,
        );
    }
    let speedup = (pairs.iter().map(|(b, a)| (b / a).ln()).sum::<f64>() / pairs.len() as f64).exp();
    let (longest_before, longest_after) = pairs
        .iter()
        .copied()
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .unwrap_or((0.0, 0.0));
    let regs = match (registers, regs_before, regs_after) {
        (true, Some(b), Some(a)) => format!("{b} -> {a} registers"),
        (true, _, Some(a)) => format!("{a} registers"),
        _ => capped.label.clone(),
    };
    let spill_text = match spills {
        Some(0) => Some("no spills".to_string()),
        Some(s) => Some(format!("{} of spill stores", crate::text::bytes(s))),
        None if registers => Some("spills unknown".to_string()),
        None => None,
    };
    let over = if pairs.len() > 1 {
        format!(" over {} timings", pairs.len())
    } else {
        String::new()
    };
    let noise_text = (!second.is_empty()).then(|| {
        format!(
            "two runs of the build as it ran differ by {:.1}%",
            noise * 100.0
        )
    });
    let said: Vec<String> = spill_text.into_iter().chain(noise_text).collect();
    let detail = if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", said.join("; "))
    };
    rows.push(row(
        capped,
        format!(
            "{speedup:.2}x{over}; the longest {longest_after:.1} µs against {longest_before:.1} µs"
        ),
    ));
    if let Some(t) = again {
        let said = if second.is_empty() {
            why_not(t)
        } else {
            format!("{:.1}% from the first run", noise * 100.0)
        };
        rows.push(row(t, said));
    }
    let (outcome, verdict) = if speedup >= 1.0 + band {
        (
            Outcome::Confirmed,
            format!("{speedup:.2}x faster{over}{detail}."),
        )
    } else if speedup <= 1.0 - band {
        (
            Outcome::Refuted,
            format!("slower, {speedup:.2}x{over}{detail}: the suggestion is withdrawn."),
        )
    } else {
        (
            Outcome::Refuted,
            format!(
                "no change beyond {:.0}%, {speedup:.2}x{over}{detail}: the suggestion is \
                 withdrawn.",
                band * 100.0
            ),
        )
    };
    (outcome, format!("{regs}: {verdict}"), rows)
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
                    .push(format!("Confirmed by experiment: {}", c.sentence));
            }
            Outcome::Refuted if suggestion => {
                d.help = vec![format!("Withdrawn by experiment: {}", c.sentence)];
                d.level = d.level.min(Level::Note);
            }
            Outcome::Refuted => {
                d.confidence = Confidence::Low;
                d.notes
                    .push(format!("Refuted by experiment: {}", c.sentence));
            }
            Outcome::NotSeen | Outcome::Inconclusive => {
                d.notes.push(format!(
                    "Experiment ({}): {}",
                    c.outcome.as_str(),
                    c.sentence
                ));
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
    pub sentence: String,
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
                    format!("Clean at {c} launches, fails at {f}."),
                ),
                (None, Some(f), _) => (
                    Outcome::Refuted,
                    format!("Fails at {f} launches, the fewest tried: not only after repeats."),
                ),
                (_, None, Some(m)) if m.fails_at.is_some() => (
                    Outcome::Confirmed,
                    format!(
                        "The program's own runs are clean at every count up to {}; under \
                         memcheck {}errors from {} launches on.",
                        search.limit,
                        m.clean_at
                            .map(|c| format!("clean at {c}, "))
                            .unwrap_or_default(),
                        m.fails_at.unwrap_or_default()
                    ),
                ),
                _ => (
                    Outcome::NotSeen,
                    format!("Clean at every count up to {} launches.", search.limit),
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
