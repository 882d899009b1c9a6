//! The rows of the report's result tables (correctness, stress, bench), built once from the
//! joined evidence and shared by the Markdown, JSON and SVG renderers.

use std::collections::BTreeMap;

use parsers::harness::{HarnessResult, Shape};
use serde::Serialize;

use crate::join::{Joined, ResultRef, is_baseline};

/// A problem: shape, dtype and mask.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Case {
    pub batch: u32,
    pub heads: u32,
    pub seq_len: u32,
    pub head_dim: u32,
    pub dtype: String,
    pub causal: bool,
}

impl Case {
    pub fn of(r: &HarnessResult) -> Case {
        let Shape {
            batch,
            heads,
            seq_len,
            head_dim,
        } = r.shape;
        Case {
            batch,
            heads,
            seq_len,
            head_dim,
            dtype: r.dtype.clone(),
            causal: r.causal,
        }
    }

    /// No case: a program's own benchmark, named by itself.
    pub fn none() -> Case {
        Case {
            batch: 0,
            heads: 0,
            seq_len: 0,
            head_dim: 0,
            dtype: String::new(),
            causal: false,
        }
    }

    /// `B=2 H=8 S=512 D=64 f16` with ` causal` when masked; empty for [`Case::none`].
    pub fn label(&self) -> String {
        if *self == Case::none() {
            return String::new();
        }
        format!(
            "B={} H={} S={} D={} {}{}",
            self.batch,
            self.heads,
            self.seq_len,
            self.head_dim,
            self.dtype,
            if self.causal { " causal" } else { "" }
        )
    }
}

/// One correctness check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckRow {
    pub config: Option<String>,
    pub kernel: String,
    pub case: Case,
    pub launched: bool,
    pub error: Option<String>,
    pub passed: Option<bool>,
    pub max_abs_err: Option<f64>,
    pub rel_l2_err: Option<f64>,
    pub tolerance: Option<f64>,
    pub nan_count: Option<u64>,
    pub unwritten: Option<u64>,
    pub canaries_corrupted: Vec<String>,
    /// For a failed check whose error is within its tolerance, what failed it
    /// ([`crate::check_failure::within_tolerance_failure`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_within_tolerance: Option<String>,
}

/// One stress result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StressRow {
    pub config: Option<String>,
    pub kernel: String,
    pub case: Case,
    pub launches: u64,
    pub sync: String,
    pub first_failure: Option<u64>,
    pub failure_kind: Option<String>,
    pub mismatched_launches: u64,
    pub canaries_corrupted: Vec<String>,
    pub error: Option<String>,
}

/// One timing, of the kernel in one config or of a baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRow {
    pub case: Case,
    /// The config name for the kernel, the `<producer>:<backend>` for a baseline.
    pub implementation: String,
    pub baseline: bool,
    pub cache: String,
    pub timing: String,
    pub samples: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub tflops: f64,
    /// (p90 - p50) / p50: the spread the run measured.
    pub noise: f64,
    pub throttled: bool,
    /// For a baseline: its p50 over the best kernel config's p50 with the same timing method
    /// (above 1: the kernel is faster). For the best kernel row: `None`.
    pub speedup: Option<f64>,
    /// Whether this is the fastest kernel config for its case and timing method.
    pub best: bool,
}

/// The correctness checks, in config and case order.
pub fn check_rows(joined: &Joined) -> Vec<CheckRow> {
    let mut rows: Vec<CheckRow> = joined
        .results
        .iter()
        .filter(|r| !is_baseline(r.result) && r.result.stress.is_none() && r.result.bench.is_none())
        // Check mode only: a single launch under a sanitizer or ncu is not a correctness check.
        .filter(|r| r.result.mode == parsers::harness::Mode::Check)
        .map(|r| {
            let c = r.result.check.as_ref();
            CheckRow {
                config: r.config.clone(),
                kernel: r.kernel.to_string(),
                case: Case::of(r.result),
                launched: r.result.launched,
                error: r.result.error.as_deref().map(|e| joined.scrub(e)),
                passed: c.map(|c| c.passed),
                max_abs_err: c.map(|c| c.max_abs_err),
                rel_l2_err: c.map(|c| c.rel_l2_err),
                tolerance: c.map(|c| c.tolerance),
                nan_count: c.map(|c| c.nan_count),
                unwritten: c.map(|c| c.unwritten),
                canaries_corrupted: c.map(|c| c.canaries_corrupted.clone()).unwrap_or_default(),
                failed_within_tolerance: crate::check_failure::within_tolerance_failure(r.result),
            }
        })
        .collect();
    rows.sort_by(|a, b| (&a.config, &a.case, &a.kernel).cmp(&(&b.config, &b.case, &b.kernel)));
    rows
}

/// The stress results, in config and case order.
pub fn stress_rows(joined: &Joined) -> Vec<StressRow> {
    let mut rows: Vec<StressRow> = joined
        .results
        .iter()
        .filter_map(|r| {
            let s = r.result.stress.as_ref()?;
            Some(StressRow {
                config: r.config.clone(),
                kernel: r.kernel.to_string(),
                case: Case::of(r.result),
                launches: s.launches,
                sync: s.sync.clone(),
                first_failure: s.first_failure,
                failure_kind: s.failure_kind.clone(),
                mismatched_launches: s.mismatched_launches,
                canaries_corrupted: s.canaries_corrupted.clone(),
                error: r.result.error.as_deref().map(|e| joined.scrub(e)),
            })
        })
        .collect();
    rows.sort_by(|a, b| (&a.config, &a.case, &a.kernel).cmp(&(&b.config, &b.case, &b.kernel)));
    rows
}

/// The timings, grouped by case and timing method: kernel configs fastest first, then the
/// baselines.
pub fn bench_rows(joined: &Joined) -> Vec<BenchRow> {
    let mut rows: Vec<BenchRow> = joined.results.iter().filter_map(bench_row).collect();
    // Best kernel p50 per case, cache and timing method: one pass to find them, one to mark the
    // rows, so the table is linear in results (a scan of every row for each row made a report
    // of 20,000 stage records quadratic).
    let mut best: BTreeMap<(&Case, &str, &str), f64> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.baseline && r.p50_us > 0.0) {
        best.entry((&r.case, &r.cache, &r.timing))
            .and_modify(|b| *b = b.min(r.p50_us))
            .or_insert(r.p50_us);
    }
    let best: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            best.get(&(&r.case, r.cache.as_str(), r.timing.as_str()))
                .copied()
        })
        .collect();
    for (row, b) in rows.iter_mut().zip(best) {
        if row.baseline {
            row.speedup = b.filter(|b| *b > 0.0).map(|b| row.p50_us / b);
        } else {
            row.best = b == Some(row.p50_us);
            row.speedup = None;
        }
    }
    rows.sort_by(|a, b| {
        (&a.case, &a.timing, &a.cache, a.baseline)
            .cmp(&(&b.case, &b.timing, &b.cache, b.baseline))
            .then(a.p50_us.total_cmp(&b.p50_us))
            .then(a.implementation.cmp(&b.implementation))
    });
    rows
}

fn bench_row(r: &ResultRef) -> Option<BenchRow> {
    let b = r.result.bench.as_ref()?;
    let baseline = is_baseline(r.result);
    let implementation = if baseline {
        r.result.kernel.clone()
    } else {
        r.config.clone().unwrap_or_else(|| r.kernel.to_string())
    };
    Some(BenchRow {
        case: Case::of(r.result),
        implementation,
        baseline,
        cache: b.cache.clone(),
        timing: b.timing.clone(),
        samples: b.samples,
        p50_us: b.p50_us,
        p90_us: b.p90_us,
        tflops: b.tflops,
        noise: if b.p50_us > 0.0 {
            ((b.p90_us - b.p50_us) / b.p50_us).max(0.0)
        } else {
            f64::NAN
        },
        throttled: b.throttled.unwrap_or(false),
        speedup: None,
        best: false,
    })
}

/// A benchmark the program did not time, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotTimed {
    pub kernel: String,
    pub case: Case,
    /// Why, as the program said it (scrubbed of paths, addresses and pids).
    pub why: String,
}

/// The results the program skipped instead of timing, in the order the logs list them.
pub fn not_timed(joined: &Joined) -> Vec<NotTimed> {
    joined
        .results
        .iter()
        .filter_map(|r| {
            let why = r.result.skipped.as_deref()?;
            Some(NotTimed {
                kernel: r.result.kernel.clone(),
                case: Case::of(r.result),
                why: joined.scrub(why),
            })
        })
        .collect()
}

/// A rule result of Nsight Compute's, as it words it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfilerRemark {
    pub config: Option<String>,
    pub kernel: Option<String>,
    /// Its words (scrubbed of paths, addresses and pids).
    pub message: String,
}

/// Every Nsight Compute rule result of the run, in the order the logs list them.
pub fn profiler_remarks(joined: &Joined) -> Vec<ProfilerRemark> {
    joined
        .findings
        .iter()
        .filter(|f| f.finding.kind == parsers::FindingKind::ProfilerRule)
        .map(|f| ProfilerRemark {
            config: f.config.clone(),
            kernel: f.kernel.as_ref().map(|k| k.to_string()),
            message: joined.scrub(&f.finding.message),
        })
        .collect()
}

/// A stage's case as people read it, e.g. `2,8,512,64 f16 causal`; the cases of a unit that
/// runs several, separated by `; `.
pub fn case_label(stage: &crate::run::Stage) -> Option<String> {
    let unit = stage.unit();
    match &unit.case {
        Some(case) => Some(case.label.clone()),
        None if !unit.cases.is_empty() => Some(
            unit.cases
                .iter()
                .map(|c| c.label.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        ),
        None => None,
    }
}
