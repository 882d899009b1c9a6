//! The JSON that users' own programs print: benchmark timings from pytest-benchmark and Google
//! Benchmark, and check results in Exhibit's small `exhibit.results/1` schema.
//!
//! # pytest-benchmark (`--benchmark-json=FILE`)
//!
//! Top-level `machine_info`, `commit_info`, `benchmarks`, `datetime`, `version`. Each benchmark
//! has a `name` and `stats` in **seconds**: `min`, `max`, `mean`, `stddev`, `median`, `rounds`
//! and `iterations` (per round). One [`Timing`] per benchmark, converted to microseconds;
//! `samples` is the rounds.
//!
//! # Google Benchmark (`--benchmark_format=json`, or `--benchmark_out=FILE --benchmark_out_format=json`)
//!
//! Top-level `context` and `benchmarks`. Each row has `name`, `run_name`, `run_type`
//! (`iteration` or `aggregate`), `iterations`, `real_time`, `cpu_time` and `time_unit` (`ns`,
//! `us`, `ms` or `s`). The timing read is **`real_time`**, the wall-clock (or, with
//! `UseManualTime`, the time the benchmark reported itself, which is how CUDA-event timings are
//! reported): `cpu_time` is the host thread's CPU time, which says little about GPU work. An
//! iteration row's `real_time` is the mean over its iterations. With `--benchmark_repetitions`,
//! the `_mean`, `_median` and `_stddev` aggregate rows of one `run_name` fold into that
//! benchmark's single [`Timing`] (`samples` is the repetitions); other aggregates (`_cv`, BigO,
//! RMS) are not timings and are left out. A row with `"error_occurred": true` (a benchmark that
//! called `SkipWithError`) is no timing but a [`FindingKind::CheckFailed`] finding quoting its
//! `error_message`; a row with `"skipped": true` (`SkipWithMessage`) is neither.
//!
//! # `exhibit.results/1`
//!
//! What a user's check program writes when it compares its output with a reference:
//!
//! ```json
//! {"schema": "exhibit.results/1", "program": "check_softmax",
//!  "results": [{"name": "softmax_f16_tail", "passed": false,
//!               "message": "row 999 differs", "max_abs_err": 0.03125}]}
//! ```
//!
//! `schema`, `program`, and each result's `name` and `passed` are required; `message`,
//! `max_abs_err`, `file` and `line` (where the failing check is in the program's source), and
//! `mismatch` (which elements were wrong: [`crate::mismatch::ElementMismatch`], as
//! `helpers/exhibit_compare.py` and `helpers/exhibit_compare.h` write it) are optional. Fields may be added, never renamed or removed; readers ignore
//! fields they do not know. Each result becomes a [`ProgramCheck`]; a failed one is also a
//! [`FindingKind::CheckFailed`] finding naming the test and its message. An empty `results`
//! list is a complete document holding nothing (the caller decides that it is inconclusive).
//!
//! # Bad input
//!
//! A document that is not JSON, or not of the format's shape, parses to an incomplete log with
//! its non-blank lines counted as unparsed and the reason as an example, as a bad harness
//! document does. A row that cannot be read (a missing name, an unknown time unit) is counted as
//! one unparsed line and makes the log incomplete; the other rows still count.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::facts::TestFacts;
use crate::model::{FindingKind, Format, ParsedLog, ProgramCheck, Severity, Timing};
use crate::site::{Record, Site, Sites};
use crate::util::note_unparsed;

/// The schema string of a user program's results document.
pub const RESULTS_SCHEMA: &str = "exhibit.results/1";

/// A whole `exhibit.results/1` document, for programs written in Rust to build and serialise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsDocument {
    /// Always [`RESULTS_SCHEMA`].
    pub schema: String,
    /// The program's name, e.g. `check_softmax`.
    pub program: String,
    pub results: Vec<ProgramCheck>,
}

/// [`ResultsDocument`] with its results still unread, so that a bad entry does not lose the
/// others.
#[derive(Debug, Deserialize)]
struct RawResults {
    schema: String,
    program: String,
    results: Vec<Value>,
}

/// The top level of a pytest-benchmark or Google Benchmark document: the rows are read one by
/// one, so a bad row does not lose the others.
#[derive(Debug, Deserialize)]
struct PytestDocument {
    #[serde(rename = "machine_info")]
    _machine_info: Map<String, Value>,
    benchmarks: Vec<Value>,
}

#[derive(Debug, Deserialize)]
struct PytestBenchmark {
    name: String,
    stats: PytestStats,
}

/// pytest-benchmark's statistics, in seconds.
#[derive(Debug, Deserialize)]
struct PytestStats {
    min: Option<f64>,
    max: Option<f64>,
    mean: Option<f64>,
    stddev: Option<f64>,
    median: Option<f64>,
    iqr: Option<f64>,
    rounds: Option<u64>,
    iterations: Option<u64>,
    /// Every round's time, in seconds (with `--benchmark-save-data`).
    #[serde(default)]
    data: Vec<f64>,
}

#[derive(Debug, Deserialize)]
struct GoogleDocument {
    #[serde(rename = "context")]
    _context: Map<String, Value>,
    benchmarks: Vec<Value>,
}

#[derive(Debug, Deserialize)]
struct GoogleRow {
    name: String,
    #[serde(default)]
    run_name: Option<String>,
    #[serde(default)]
    run_type: Option<String>,
    #[serde(default)]
    aggregate_name: Option<String>,
    #[serde(default)]
    repetitions: Option<u64>,
    #[serde(default)]
    iterations: Option<u64>,
    #[serde(default)]
    real_time: Option<f64>,
    #[serde(default)]
    time_unit: Option<String>,
    #[serde(default)]
    error_occurred: bool,
    /// `SkipWithMessage`: a deliberate skip, neither a timing nor a failure.
    #[serde(default)]
    skipped: bool,
    #[serde(default)]
    error_message: Option<String>,
}

/// Parses a pytest-benchmark `--benchmark-json` document.
pub(crate) fn parse_pytest(text: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::PytestBenchmark, None);
    let Some(doc) = document::<PytestDocument>(text, "pytest-benchmark", &mut log) else {
        return log;
    };
    log.complete = true;
    for (i, row) in doc.benchmarks.into_iter().enumerate() {
        let b = match serde_json::from_value::<PytestBenchmark>(row) {
            Ok(b) => b,
            Err(e) => {
                bad_row(&mut log, i, &e.to_string());
                continue;
            }
        };
        let us = |s: Option<f64>| s.map(|s| s * 1e6).filter(|v| v.is_finite());
        log.timings.push(Timing {
            name: b.name,
            format: Format::PytestBenchmark,
            samples: b.stats.rounds,
            iterations: b.stats.iterations,
            min_us: us(b.stats.min),
            median_us: us(b.stats.median),
            mean_us: us(b.stats.mean),
            stdev_us: us(b.stats.stddev),
            max_us: us(b.stats.max),
            iqr_us: us(b.stats.iqr),
            samples_us: b
                .stats
                .data
                .iter()
                .map(|s| s * 1e6)
                .filter(|v| v.is_finite())
                .collect(),
        });
    }
    log
}

/// Parses a Google Benchmark JSON document, folding each benchmark's aggregate rows into one
/// timing and turning error rows into findings.
pub(crate) fn parse_google(text: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::GoogleBenchmark, None);
    let Some(doc) = document::<GoogleDocument>(text, "Google Benchmark", &mut log) else {
        return log;
    };
    log.complete = true;
    let mut sites = Sites::default();
    // Benchmarks in first-seen order, each with its iteration rows and aggregates.
    let mut folded: Vec<Folded> = Vec::new();
    for (i, value) in doc.benchmarks.into_iter().enumerate() {
        let row = match serde_json::from_value::<GoogleRow>(value) {
            Ok(row) => row,
            Err(e) => {
                bad_row(&mut log, i, &e.to_string());
                continue;
            }
        };
        let run_name = row.run_name.clone().unwrap_or_else(|| row.name.clone());
        if row.error_occurred {
            let message = row
                .error_message
                .clone()
                .unwrap_or_else(|| "no error message".to_string());
            let (index, _) = sites.add(Record {
                site: site(&run_name),
                severity: Severity::Error,
                access: None,
                message: &format!("benchmark {run_name} stopped with an error: {message}"),
                example: None,
                excerpt: &[fields(&[
                    ("name", json!(row.name)),
                    ("error_occurred", json!(true)),
                    ("error_message", json!(row.error_message)),
                ])],
                occurrences: 1,
            });
            if let Some(f) = sites.get_mut(index) {
                f.facts.test = Some(Box::new(TestFacts {
                    name: run_name,
                    message: Some(message),
                    ..TestFacts::default()
                }));
            }
            continue;
        }
        if row.skipped {
            continue;
        }
        let aggregate = row.run_type.as_deref() == Some("aggregate");
        let stat = match (aggregate, row.aggregate_name.as_deref()) {
            (false, _) => Stat::Iteration,
            (true, Some("mean")) => Stat::Mean,
            (true, Some("median")) => Stat::Median,
            (true, Some("stddev")) => Stat::Stddev,
            // `cv` is a ratio, BigO and RMS are fits: none is a time.
            (true, _) => continue,
        };
        let Some(us) = to_us(row.real_time, row.time_unit.as_deref()) else {
            bad_row(
                &mut log,
                i,
                &format!(
                    "{}: no real_time in a known time_unit ({:?})",
                    row.name, row.time_unit
                ),
            );
            continue;
        };
        let at = match folded.iter().position(|f| f.name == run_name) {
            Some(at) => at,
            None => {
                folded.push(Folded::new(run_name));
                folded.len() - 1
            }
        };
        if let Some(f) = folded.get_mut(at) {
            f.add(stat, us, &row);
        }
    }
    log.findings = sites.into_findings();
    log.timings = folded.into_iter().map(Folded::timing).collect();
    log
}

/// Parses an `exhibit.results/1` document.
pub(crate) fn parse_results(text: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::ProgramResults, None);
    let Some(doc) = document::<RawResults>(text, RESULTS_SCHEMA, &mut log) else {
        return log;
    };
    log.complete = doc.schema == RESULTS_SCHEMA;
    if !log.complete {
        log.unparsed_examples.push(format!(
            "schema {:?}, expected {RESULTS_SCHEMA:?}",
            doc.schema
        ));
    }
    let mut sites = Sites::default();
    for (i, value) in doc.results.into_iter().enumerate() {
        let entry = match serde_json::from_value::<ProgramCheck>(value) {
            Ok(entry) => entry,
            Err(e) => {
                bad_row(&mut log, i, &e.to_string());
                continue;
            }
        };
        if !entry.passed {
            let key = format!("{}::{}", doc.program, entry.name);
            let mut message = format!("{}: {} failed", doc.program, entry.name);
            if let Some(err) = entry.max_abs_err {
                message.push_str(&format!(" (max abs error {err})"));
            }
            if let Some(m) = entry.message.as_deref().filter(|m| !m.trim().is_empty()) {
                message.push_str(&format!(": {}", crate::util::scrub_addresses(m.trim())));
            }
            let (index, _) = sites.add(Record {
                site: Site {
                    file: entry.file.as_deref(),
                    line: entry.line,
                    ..site(&key)
                },
                severity: Severity::Error,
                access: None,
                message: &message,
                example: None,
                excerpt: &[fields(&[
                    ("name", json!(entry.name)),
                    ("passed", json!(false)),
                    ("message", json!(entry.message)),
                    ("max_abs_err", json!(entry.max_abs_err)),
                ])],
                occurrences: 1,
            });
            if let Some(f) = sites.get_mut(index) {
                f.facts.test = Some(Box::new(TestFacts {
                    name: entry.name.clone(),
                    program: Some(doc.program.clone()),
                    message: entry.message.clone(),
                    max_abs_err: entry.max_abs_err.filter(|e| e.is_finite()),
                    mismatch: entry.mismatch.clone().or_else(|| {
                        entry
                            .message
                            .as_deref()
                            .and_then(crate::mismatch::element_mismatch)
                    }),
                    ..TestFacts::default()
                }));
            }
        }
        log.checks.push(entry);
    }
    log.findings = sites.into_findings();
    log
}

/// Reads a whole document, tolerating lines a program printed before it (a banner, a warning).
/// On failure, counts the text's non-blank lines as unparsed, says why, and returns `None`.
fn document<T: DeserializeOwned>(text: &str, what: &str, log: &mut ParsedLog) -> Option<T> {
    let first = match serde_json::from_str::<T>(text) {
        Ok(doc) => return Some(doc),
        Err(e) => e,
    };
    let later = text
        .find("\n{")
        .and_then(|i| text.get(i + 1..))
        .and_then(|json| serde_json::from_str::<T>(json).ok());
    if later.is_none() {
        log.unparsed_lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        log.unparsed_examples
            .push(format!("not a {what} JSON document: {first}"));
    }
    later
}

/// Counts one row that could not be read; the log is no longer complete.
fn bad_row(log: &mut ParsedLog, index: usize, why: &str) {
    note_unparsed(log, &format!("row {index}: {why}"));
    log.complete = false;
}

/// The site of a failed check or benchmark: its kind and name, nothing volatile.
fn site(name: &str) -> Site<'_> {
    Site {
        kind: FindingKind::CheckFailed,
        kernel: None,
        file: None,
        line: None,
        space: None,
        size: None,
        discriminator: name,
    }
}

/// The fields of a row a finding rests on, as one line of JSON in the format's own key order
/// (absent ones left out), for its excerpt.
fn fields(pairs: &[(&str, Value)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// A Google Benchmark time in microseconds.
fn to_us(time: Option<f64>, unit: Option<&str>) -> Option<f64> {
    let factor = match unit? {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return None,
    };
    time.map(|t| t * factor).filter(|v| v.is_finite())
}

/// Which statistic a Google Benchmark row holds.
#[derive(Debug, Clone, Copy)]
enum Stat {
    Iteration,
    Mean,
    Median,
    Stddev,
}

/// One Google Benchmark benchmark's rows, folded.
struct Folded {
    name: String,
    /// The iteration rows' `real_time`s, in microseconds.
    runs: Vec<f64>,
    iterations: Option<u64>,
    repetitions: Option<u64>,
    mean: Option<f64>,
    median: Option<f64>,
    stddev: Option<f64>,
}

impl Folded {
    fn new(name: String) -> Folded {
        Folded {
            name,
            runs: Vec::new(),
            iterations: None,
            repetitions: None,
            mean: None,
            median: None,
            stddev: None,
        }
    }

    fn add(&mut self, stat: Stat, us: f64, row: &GoogleRow) {
        match stat {
            Stat::Iteration => {
                self.runs.push(us);
                self.iterations = self.iterations.or(row.iterations);
            }
            Stat::Mean => self.mean = Some(us),
            Stat::Median => self.median = Some(us),
            Stat::Stddev => self.stddev = Some(us),
        }
        if !matches!(stat, Stat::Iteration) {
            self.repetitions = self.repetitions.or(row.repetitions);
        }
    }

    /// The timing: the aggregates when Google Benchmark computed them, else the one run's mean
    /// per iteration.
    fn timing(self) -> Timing {
        let single = match self.runs.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        let samples = self
            .repetitions
            .or_else(|| (!self.runs.is_empty()).then_some(self.runs.len() as u64));
        Timing {
            name: self.name,
            format: Format::GoogleBenchmark,
            samples,
            iterations: self.iterations,
            min_us: None,
            median_us: self.median,
            mean_us: self.mean.or(single),
            stdev_us: self.stddev,
            max_us: None,
            iqr_us: None,
            samples_us: self.runs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_units_convert_to_microseconds() {
        assert_eq!(to_us(Some(1500.0), Some("ns")), Some(1.5));
        assert_eq!(to_us(Some(2.0), Some("us")), Some(2.0));
        assert_eq!(to_us(Some(3.0), Some("ms")), Some(3000.0));
        assert_eq!(to_us(Some(0.5), Some("s")), Some(500_000.0));
        assert_eq!(to_us(Some(1.0), Some("fortnights")), None);
        assert_eq!(to_us(Some(1.0), None), None);
        assert_eq!(to_us(None, Some("ns")), None);
    }
}
