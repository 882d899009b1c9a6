//! Concluding experiments: what the trials did, read against the prediction.

use std::collections::BTreeMap;

use crate::hypothesis::{ExperimentKind, Outcome};
use crate::message::{Message, figure, msg, quote};
use crate::run::{
    Conclusion, Expect, Experiment, Run, Stage, StageKind, StageStatus, Trial, TrialRow,
};

use super::stage_on;

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

/// Why a trial has no outcome: its stage's status and the reason it gives (quoted), or that
/// it did not run.
fn why_not(trial: &Trial) -> Message {
    match stage_of(trial) {
        Some(s) => {
            let status = format!("{:?}", s.status).to_lowercase();
            match s.reason.as_deref() {
                Some(r) => msg!("{}: {}", status, quote(r)),
                None => msg!("{}", status),
            }
        }
        None => msg!("did not run"),
    }
}

/// [`why_not`] as a trial row's outcome: the reason as the stage gives it.
fn why_not_row(trial: &Trial) -> String {
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
        ExperimentKind::Sizes => sizes_outcome(e, &row),
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

/// Each trial's row: `clean` where its stage passed, "fails" where it found something, else
/// why it has no outcome.
fn ended_rows(e: &Experiment, row: &Row, clean: &str) -> Vec<TrialRow> {
    e.trials
        .iter()
        .map(|t| {
            let said = match ended_clean(t) {
                Some(true) => clean.to_string(),
                Some(false) => "fails".to_string(),
                None => why_not_row(t),
            };
            row(t, said)
        })
        .collect()
}

/// The knob the trials set, from their labels (`N=992`).
fn knob_name(e: &Experiment) -> String {
    e.trials
        .first()
        .and_then(|t| t.label.split('=').next())
        .unwrap_or("N")
        .to_string()
}

fn tail_outcome(e: &Experiment, row: &Row) -> (Outcome, Message, Vec<TrialRow>) {
    let rows = ended_rows(e, row, "clean");
    let name = knob_name(e);
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
    // The knob's values, quoted as the pipeline sets them, in words: "32 and 64".
    let values = |expect: Expect, clean: bool| -> Message {
        Message::words(
            e.trials
                .iter()
                .filter(|t| t.expect == Some(expect) && ended_clean(t) == Some(clean))
                .filter_map(|t| t.value.map(|v| quote(v.to_string()).into()))
                .collect(),
        )
    };
    if let Some(t) = e.trials.iter().find(|t| ended_clean(t).is_none()) {
        return (
            Outcome::Inconclusive,
            msg!(
                "{} {}: the sizes cannot be compared.",
                quote(&t.label),
                why_not(t)
            ),
            rows,
        );
    }
    let pass = values(Expect::Clean, true);
    let fail = values(Expect::Fails, false);
    let wrong_fail = values(Expect::Clean, false);
    let wrong_pass = values(Expect::Fails, true);
    let tile = figure(tile.to_string());
    if wrong_fail.is_empty() && wrong_pass.is_empty() {
        (
            Outcome::Confirmed,
            msg!(
                "Fails exactly when {} % {} != 0: {} pass, {} fail.",
                quote(name),
                tile,
                pass,
                fail
            ),
            rows,
        )
    } else {
        let mut parts = Vec::new();
        if !wrong_fail.is_empty() {
            parts.push(msg!(
                "fails at {} too, a multiple of {}",
                wrong_fail,
                tile.clone()
            ));
        }
        if !wrong_pass.is_empty() {
            parts.push(msg!(
                "clean at {}, not a multiple of {}",
                wrong_pass,
                tile.clone()
            ));
        }
        (
            Outcome::Refuted,
            msg!(
                "Not a tail of {}: {}. The tail explanation is withdrawn; the fault stands.",
                tile,
                Message::join(parts, "; ")
            ),
            rows,
        )
    }
}

/// The failing check at smaller sizes: the smallest size that still fails, and the largest
/// below it that passes. Some passing confirms a size-dependent fault; none is not seen.
fn sizes_outcome(e: &Experiment, row: &Row) -> (Outcome, Message, Vec<TrialRow>) {
    let rows = ended_rows(e, row, "passes");
    let name = knob_name(e);
    let ended: Vec<(u64, bool)> = e
        .trials
        .iter()
        .filter_map(|t| Some((t.value?, ended_clean(t)?)))
        .collect();
    if ended.is_empty() {
        let why = e.trials.first().map(why_not).unwrap_or_default();
        return (
            Outcome::Inconclusive,
            msg!("No smaller size concluded ({}).", why),
            rows,
        );
    }
    let smallest_failing = ended.iter().filter(|(_, c)| !c).map(|(v, _)| *v).min();
    let passing: Vec<u64> = ended.iter().filter(|(_, c)| *c).map(|(v, _)| *v).collect();
    let words = |vs: &[u64]| -> Message {
        let mut vs = vs.to_vec();
        vs.sort_unstable();
        Message::words(vs.iter().map(|v| figure(v.to_string()).into()).collect())
    };
    let failing: Vec<u64> = ended.iter().filter(|(_, c)| !c).map(|(v, _)| *v).collect();
    match (smallest_failing, passing.is_empty()) {
        (_, true) => (
            Outcome::NotSeen,
            msg!(
                "Fails at every smaller size too ({} = {}): no size bound shows, so what every \
                 element computes is wrong, or the fault needs less than the smallest size tried.",
                quote(&name),
                words(&failing)
            ),
            rows,
        ),
        (None, false) => (
            Outcome::Confirmed,
            msg!(
                "Passes at every smaller size ({} = {}): the fault needs the size that failed; \
                 look for what first happens between the largest of these and it (a second \
                 block, a second segment, a tail, an index past 2^31).",
                quote(&name),
                words(&passing)
            ),
            rows,
        ),
        (Some(low), false) => {
            let below: Vec<u64> = passing.iter().copied().filter(|v| *v < low).collect();
            let above: Vec<u64> = passing.iter().copied().filter(|v| *v > low).collect();
            let mut sentence = msg!(
                "The smallest failing size tried is {} = {}",
                quote(&name),
                figure(low.to_string())
            );
            if let Some(pass) = below.iter().max() {
                sentence.append(msg!(
                    "; it passes at {} and below: the fault starts between {} and {}",
                    figure(pass.to_string()),
                    figure(pass.to_string()),
                    figure(low.to_string())
                ));
            }
            if !above.is_empty() {
                sentence.append(msg!(
                    "; it passes at {} too, above a failing size: not one bound but a pattern \
                     of sizes (a multiple of a tile, a power of two)",
                    words(&above)
                ));
            }
            sentence.append(msg!("."));
            (Outcome::Confirmed, sentence, rows)
        }
    }
}

fn race_outcome(e: &Experiment, row: &Row) -> (Outcome, Message, Vec<TrialRow>) {
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
            _ => why_not_row(t),
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
            msg!(
                "{} of {} runs left an output to compare.",
                n.to_string(),
                e.trials.len().to_string()
            ),
            rows,
        );
    }
    let first = compared[0];
    let differ = compared.iter().filter(|o| **o != first).count();
    if differ > 0 {
        (
            Outcome::Confirmed,
            msg!(
                "The output differs between identical runs: {} of {} differ from the first ({} \
                 distinct outputs).",
                differ.to_string(),
                n.to_string(),
                seen.len().to_string()
            ),
            rows,
        )
    } else {
        (
            Outcome::NotSeen,
            msg!(
                "Identical in {} runs: the race has not shown in the output yet. The hazard \
                 racecheck reported stands.",
                n.to_string()
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
) -> (Outcome, Message, Vec<TrialRow>) {
    let Some(capped) = e.trials.iter().find(|t| t.value.is_some()) else {
        return (Outcome::Inconclusive, msg!("No trial."), Vec::new());
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
        rows.push(row(capped, why_not_row(capped)));
        return (
            Outcome::Inconclusive,
            msg!(
                "No timing to compare: {} of the build as it ran, {} of the capped one.",
                before.len().to_string(),
                after.len().to_string()
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
            msg!(
                "The budget did not take: the capped build still uses {} registers per thread \
                 (a `__launch_bounds__` on the kernel sets its own).",
                figure(a.to_string())
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
        (true, Some(b), Some(a)) => msg!("{} registers", figure(format!("{b} -> {a}"))),
        (true, _, Some(a)) => msg!("{} registers", figure(a.to_string())),
        _ => quote(&capped.label).into(),
    };
    let spill_text = match spills {
        Some(0) => Some(msg!("no spills")),
        Some(s) => Some(msg!("{} of spill stores", figure(crate::text::bytes(s)))),
        None if registers => Some(msg!("spills unknown")),
        None => None,
    };
    let over = if pairs.len() > 1 {
        msg!(" over {} timings", pairs.len().to_string())
    } else {
        Message::new()
    };
    let noise_text = (!second.is_empty()).then(|| {
        msg!(
            "two runs of the build as it ran differ by {}",
            figure(format!("{:.1}%", noise * 100.0))
        )
    });
    let said: Vec<Message> = spill_text.into_iter().chain(noise_text).collect();
    let detail = if said.is_empty() {
        Message::new()
    } else {
        msg!(" ({})", Message::join(said, "; "))
    };
    rows.push(row(
        capped,
        format!(
            "{speedup:.2}x{}; the longest {longest_after:.1} µs against {longest_before:.1} µs",
            over.plain()
        ),
    ));
    if let Some(t) = again {
        let said = if second.is_empty() {
            why_not_row(t)
        } else {
            format!("{:.1}% from the first run", noise * 100.0)
        };
        rows.push(row(t, said));
    }
    let (outcome, verdict) = benched_verdict(speedup, band, over, detail);
    (outcome, msg!("{}: {}", regs, verdict), rows)
}

/// A benched trial's verdict in words: faster beyond the noise `band` confirms the suggestion;
/// slower, or no change, withdraws it. `over` says over how many timings, `detail` what else
/// the trial showed.
fn benched_verdict(speedup: f64, band: f64, over: Message, detail: Message) -> (Outcome, Message) {
    let times = figure(format!("{speedup:.2}x"));
    if speedup >= 1.0 + band {
        (
            Outcome::Confirmed,
            msg!("{} faster{}{}.", times, over, detail),
        )
    } else if speedup <= 1.0 - band {
        (
            Outcome::Refuted,
            msg!(
                "slower, {}{}{}: the suggestion is withdrawn.",
                times,
                over,
                detail
            ),
        )
    } else {
        (
            Outcome::Refuted,
            msg!(
                "no change beyond {}, {}{}{}: the suggestion is withdrawn.",
                figure(format!("{:.0}%", band * 100.0)),
                times,
                over,
                detail
            ),
        )
    }
}
