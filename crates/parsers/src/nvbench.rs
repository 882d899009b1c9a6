//! nvbench's JSON (`--json FILE`).
//!
//! Top-level `meta` (the argv and `version.nvbench`), `devices` and `benchmarks`. Each benchmark
//! has a `name` and `states`: one per point of its axes (`Device=0 T=F32 Stride=33`), each with
//! `summaries`, a list of `{tag, name, hint, data: [{name, type, value}]}` whose values are
//! strings (`"830"`, `"0.00041834573938595457"`). The timing read is nvbench's **cold GPU
//! time**, each launch measured in isolation with the L2 flushed: `nv/cold/time/gpu/mean`,
//! `median`, `min`, `max`, `stdev/absolute` and `iqr/absolute` in seconds, over
//! `nv/cold/sample_size` samples. nvbench's "noise" is the relative standard deviation
//! (`nv/cold/time/gpu/stdev/relative`): the stdev over the mean. Versions before the median was
//! added give mean and stdev only. One [`Timing`] per state, named by its benchmark and its axis
//! values (`bench_scale_strided T=F32 Stride=33`; the device is named only when the document
//! measured several). A skipped state (`is_skipped`) is no timing. A state without a cold GPU
//! time (a batch-only run) is one unparsed row and the log is incomplete.
//!
//! A document that is not JSON, or not of nvbench's shape, parses to an incomplete log, as the
//! other JSON formats do.

use serde::Deserialize;
use serde_json::Value;

use crate::model::{Format, ParsedLog, Timing};
use crate::util::note_unparsed;

/// The document's shape: `meta` and every benchmark's `states` are required, so that another
/// format's `benchmarks` list is never read as nvbench's.
#[derive(Deserialize)]
struct Document {
    #[serde(rename = "meta")]
    _meta: serde::de::IgnoredAny,
    benchmarks: Vec<Benchmark>,
}

#[derive(Deserialize)]
struct Benchmark {
    name: String,
    states: Vec<Value>,
}

#[derive(Deserialize)]
struct State {
    name: String,
    #[serde(default)]
    device: Option<i64>,
    #[serde(default)]
    summaries: Vec<Summary>,
    #[serde(default)]
    is_skipped: bool,
}

#[derive(Deserialize)]
struct Summary {
    tag: String,
    #[serde(default)]
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    name: String,
    value: Value,
}

/// Parses an nvbench `--json` document.
pub(crate) fn parse(text: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::Nvbench, None);
    let doc = match serde_json::from_str::<Document>(text) {
        Ok(doc) => doc,
        Err(e) => {
            log.unparsed_lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
            log.unparsed_examples
                .push(format!("not an nvbench JSON document: {e}"));
            return log;
        }
    };
    log.complete = true;
    let mut states: Vec<(String, State)> = Vec::new();
    for bench in doc.benchmarks {
        for (i, value) in bench.states.into_iter().enumerate() {
            match serde_json::from_value::<State>(value) {
                Ok(state) => states.push((bench.name.clone(), state)),
                Err(e) => bad_row(&mut log, &format!("{} state {i}: {e}", bench.name)),
            }
        }
    }
    let mut devices: Vec<i64> = states.iter().filter_map(|(_, s)| s.device).collect();
    devices.sort_unstable();
    devices.dedup();
    for (bench, state) in states {
        if state.is_skipped {
            continue;
        }
        let axes = if devices.len() > 1 {
            state.name.clone()
        } else {
            without_device(&state.name)
        };
        let name = if axes.is_empty() {
            bench.clone()
        } else {
            format!("{bench} {axes}")
        };
        let value = |tag: &str| -> Option<f64> {
            let summary = state.summaries.iter().find(|s| s.tag == tag)?;
            let datum = summary.data.iter().find(|d| d.name == "value")?;
            match &datum.value {
                Value::String(s) => s.trim().parse::<f64>().ok(),
                Value::Number(n) => n.as_f64(),
                _ => None,
            }
            .filter(|v| v.is_finite())
        };
        let us = |tag: &str| value(tag).map(|s| s * 1e6);
        let mean = us("nv/cold/time/gpu/mean");
        let median = us("nv/cold/time/gpu/median");
        if mean.is_none() && median.is_none() {
            bad_row(&mut log, &format!("{name}: no cold GPU time"));
            continue;
        }
        log.timings.push(Timing {
            name,
            format: Format::Nvbench,
            samples: value("nv/cold/sample_size").map(|n| n as u64),
            iterations: None,
            min_us: us("nv/cold/time/gpu/min"),
            median_us: median,
            mean_us: mean,
            stdev_us: us("nv/cold/time/gpu/stdev/absolute"),
            max_us: us("nv/cold/time/gpu/max"),
            iqr_us: us("nv/cold/time/gpu/iqr/absolute"),
            // nvbench keeps its samples in a binary file beside the JSON, not in it.
            samples_us: Vec::new(),
        });
    }
    log
}

/// `Device=0 T=F32 Stride=33` as `T=F32 Stride=33`.
fn without_device(state: &str) -> String {
    state
        .split_whitespace()
        .filter(|part| !part.starts_with("Device="))
        .collect::<Vec<_>>()
        .join(" ")
}

fn bad_row(log: &mut ParsedLog, why: &str) {
    note_unparsed(log, why);
    log.complete = false;
}
