//! The timings table for users' programs' own benchmark output (pytest-benchmark, Google
//! Benchmark and nvbench JSON, or text read with a stage's `pattern:`, into
//! `ParsedLog.timings`): each benchmark of a bench stage beside the
//! baseline stage's benchmark of the same name, with their ratio.

use std::fmt::Write;

use parsers::Timing;
use serde::Serialize;

use crate::StageKind;
use crate::analysis::Analysis;
use crate::join::Joined;
use crate::render::markdown::NOISY;
use crate::text::{fixed, md_cell, md_code, md_text, sig3};

/// A timing and the log it was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingRef {
    /// The log, relative to the run directory.
    pub log: String,
    pub config: Option<String>,
    pub timing: Timing,
}

/// One benchmark of a bench stage, paired with the baseline of the same name when there is one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingRow {
    pub bench: TimingRef,
    pub baseline: Option<TimingRef>,
    /// The statistic the ratio compares: `median` when both sides give one, else `mean`.
    pub statistic: Option<&'static str>,
    /// Baseline over the program, on `statistic`: above 1 the program is faster.
    pub ratio: Option<f64>,
    /// The larger relative spread (stdev / mean) of the two sides, when they give one.
    pub spread: Option<f64>,
}

/// The bench stages' timings with their baselines, and the baseline timings no bench timing
/// has the name of.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    pub rows: Vec<TimingRow>,
    pub unpaired_baselines: Vec<TimingRef>,
}

impl Timings {
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.unpaired_baselines.is_empty()
    }
}

/// Collects the timings of bench and baseline stages in the order the logs list them. A bench
/// timing pairs with the baseline timing of the same name, of its own config when there is one.
pub fn timings(joined: &Joined) -> Timings {
    let of_kind = |kind: StageKind| -> Vec<TimingRef> {
        joined
            .sources
            .iter()
            .filter(|s| s.kind == kind)
            .flat_map(|s| {
                s.log.timings.iter().map(|t| TimingRef {
                    log: s.path.to_string(),
                    config: s.config.map(str::to_string),
                    timing: t.clone(),
                })
            })
            .collect()
    };
    let benches = of_kind(StageKind::Bench);
    let baselines = of_kind(StageKind::Baseline);
    let mut used = vec![false; baselines.len()];
    let mut rows = Vec::new();
    for bench in benches {
        let same_name = |b: &&TimingRef| b.timing.name == bench.timing.name;
        let pick = baselines
            .iter()
            .position(|b| same_name(&b) && b.config == bench.config)
            .or_else(|| baselines.iter().position(|b| same_name(&b)));
        if let Some(slot) = pick.and_then(|i| used.get_mut(i)) {
            *slot = true;
        }
        let baseline = pick.and_then(|i| baselines.get(i)).cloned();
        let compared = baseline
            .as_ref()
            .and_then(|b| compare(&bench.timing, &b.timing));
        let spread = [Some(&bench), baseline.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|t| spread(&t.timing))
            .reduce(f64::max);
        rows.push(TimingRow {
            bench,
            baseline,
            statistic: compared.map(|(s, _)| s),
            ratio: compared.map(|(_, r)| r),
            spread,
        });
    }
    let unpaired_baselines = baselines
        .into_iter()
        .zip(used)
        .filter_map(|(b, used)| (!used).then_some(b))
        .collect();
    Timings {
        rows,
        unpaired_baselines,
    }
}

/// The statistic both timings give (median first, then mean) and baseline / bench on it.
fn compare(bench: &Timing, baseline: &Timing) -> Option<(&'static str, f64)> {
    let pairs = [
        ("median", bench.median_us, baseline.median_us),
        ("mean", bench.mean_us, baseline.mean_us),
    ];
    pairs.into_iter().find_map(|(name, b, base)| {
        let (b, base) = (b?, base?);
        let ratio = base / b;
        (b > 0.0 && ratio.is_finite()).then_some((name, ratio))
    })
}

/// The time a timing is shown by: its median, else its mean.
fn typical(t: &Timing) -> Option<f64> {
    t.median_us.or(t.mean_us)
}

/// stdev / mean, when both are given.
fn spread(t: &Timing) -> Option<f64> {
    let (stdev, mean) = (t.stdev_us?, t.mean_us?);
    (mean > 0.0).then_some(stdev / mean)
}

/// Renders the "Timings" section of the Markdown report; nothing when there are no timings.
pub(crate) fn markdown(out: &mut String, a: &Analysis) {
    let t = timings(&a.joined);
    if t.is_empty() {
        return;
    }
    let configs = t.rows.iter().any(|r| r.bench.config.is_some());
    let _ = writeln!(out, "## Timings\n");
    let _ = writeln!(
        out,
        "The programs' own benchmarks, in µs, each with the format it came from and that \
         format's statistics: pytest-benchmark's rounds and interquartile range, Google \
         Benchmark's repetitions of `real_time`. Ratio = baseline / program on the median when \
         both give one, else the mean (above 1: the program is faster)."
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| Benchmark |{} Source | Samples | Median µs | Mean µs | Spread µs | Baseline µs | Ratio |",
        if configs { " Config |" } else { "" }
    );
    let _ = writeln!(
        out,
        "|---|{}---|--:|--:|--:|--:|--:|--:|",
        if configs { "---|" } else { "" }
    );
    let num = |x: Option<f64>| x.map(sig3).unwrap_or_else(|| "—".to_string());
    for r in &t.rows {
        let b = &r.bench.timing;
        let config = if configs {
            format!(" {} |", md_text(r.bench.config.as_deref().unwrap_or("—")))
        } else {
            String::new()
        };
        let source = match b.format {
            parsers::Format::PytestBenchmark => "pytest-benchmark",
            parsers::Format::GoogleBenchmark => "Google Benchmark (`real_time`)",
            parsers::Format::Nvbench => "nvbench (cold GPU time)",
            parsers::Format::Harness => "exhibit.harness/1",
            parsers::Format::TextTimings => "text (`pattern:`)",
            _ => "the program",
        };
        let unit = match b.format {
            parsers::Format::PytestBenchmark => "rounds",
            parsers::Format::GoogleBenchmark => "reps",
            parsers::Format::TextTimings if b.samples == Some(1) => "match",
            parsers::Format::TextTimings => "matches",
            _ => "samples",
        };
        let samples = match (b.samples, b.iterations) {
            (Some(s), Some(i)) => format!("{s} {unit} × {i} it"),
            (Some(s), None) => format!("{s} {unit}"),
            _ => "—".to_string(),
        };
        // The spread in the format's own terms: nvbench's noise (the relative stdev),
        // pytest-benchmark's IQR, else the stdev.
        let noise = match (b.format, b.stdev_us, b.mean_us) {
            (parsers::Format::Nvbench, Some(sd), Some(mean)) if mean > 0.0 => Some(sd / mean),
            _ => None,
        };
        let spread = match (noise, b.iqr_us, b.stdev_us) {
            (Some(noise), _, _) => format!("noise {}%", fixed(noise * 100.0, 2)),
            (None, Some(iqr), _) => format!("IQR {}", sig3(iqr)),
            (None, None, Some(sd)) => format!("σ {}", sig3(sd)),
            (None, None, None) => "—".to_string(),
        };
        let baseline = r.baseline.as_ref().map(|base| match r.statistic {
            Some("mean") => base.timing.mean_us,
            _ => typical(&base.timing),
        });
        let ratio = match (r.ratio, r.spread) {
            // A ratio against a spread this wide says little, as in the bench table.
            (Some(x), Some(s)) if s > NOISY => format!("{}× (noisy)", fixed(x, 2)),
            (Some(x), _) => format!("{}×", fixed(x, 2)),
            (None, _) => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} |{config} {source} | {samples} | {} | {} | {spread} | {} | {ratio} |",
            md_cell(&md_code(&b.name)),
            num(b.median_us),
            num(b.mean_us),
            num(baseline.flatten()),
        );
    }
    let _ = writeln!(out);
    if !t.unpaired_baselines.is_empty() {
        let _ = writeln!(out, "Baseline timings no benchmark is named like:\n");
        for b in &t.unpaired_baselines {
            let _ = writeln!(
                out,
                "- {}: {} µs ({})",
                md_code(&b.timing.name),
                num(typical(&b.timing)),
                md_code(&b.log)
            );
        }
        let _ = writeln!(out);
    }
}
