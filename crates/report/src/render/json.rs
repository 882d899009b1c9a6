//! The machine-readable report (`exhibit.report/1`): the verdict, the ranked diagnoses, the
//! coverage receipt and every table, with floats rounded to six significant digits.

use serde_json::{Value, json};

use crate::analysis::Analysis;
use crate::run::Run;
use crate::text::{round_json, without_controls};

/// The schema name of the JSON report.
pub const SCHEMA: &str = "exhibit.report/1";

/// Renders the JSON report, pretty-printed, with a trailing newline.
pub fn render(a: &Analysis, run: Option<&Run>) -> String {
    let value = document(a, run);
    let mut text =
        serde_json::to_string_pretty(&value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The JSON report as a value.
pub fn document(a: &Analysis, run: Option<&Run>) -> Value {
    let run_value = run.map(|run| {
        json!({
            "id": run.id,
            "pipeline": run.pipeline,
            "started": run.started,
            "finished": run.finished,
            "interrupted": run.interrupted,
            "commit": run.git.as_ref().map(|g| g.commit.clone()),
            "dirty": run.git.as_ref().map(|g| g.dirty),
        })
    });
    let value = json!({
        "schema": SCHEMA,
        "run": run_value,
        "verdict": a.verdict,
        "diagnoses": a.diagnoses,
        "experiments": a.experiments,
        "launch_searches": a.launch_searches,
        "coverage": a.coverage,
        "kernels": &a.tables.kernels,
        "checks": &a.tables.checks,
        "stress": &a.tables.stress,
        "bench": &a.tables.bench,
        "ncu": &a.tables.ncu,
        "beside_baseline": &a.tables.contrast,
        "environment": a.environment,
    });
    round(value)
}

/// Rounds every float in a JSON value to six significant digits, and strips terminal escape
/// sequences and control characters from every string ([`strip`]).
pub fn round(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => n.as_f64().map(round_json).unwrap_or(Value::Null),
        Value::Array(items) => Value::Array(items.into_iter().map(round).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (without_controls(k), round(v)))
                .collect(),
        ),
        Value::String(s) => Value::String(without_controls(s)),
        other => other,
    }
}

/// Strips terminal escape sequences and control characters ([`without_controls`]) from every
/// string and key of a JSON value.
pub fn strip(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(strip).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (without_controls(k), strip(v)))
                .collect(),
        ),
        Value::String(s) => Value::String(without_controls(s)),
        other => other,
    }
}
