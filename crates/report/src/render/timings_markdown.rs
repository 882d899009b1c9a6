//! The "Timings" section of the Markdown report, from the timing table ([`crate::timings`]).

use crate::analysis::Analysis;
use crate::text::{fixed, md_cell, md_code, md_text, sig3};
use crate::timings::{NOISY, typical};
use std::fmt::Write;

/// Renders the "Timings" section of the Markdown report; nothing when there are no timings.
pub(crate) fn render(out: &mut String, a: &Analysis) {
    let t = &a.tables.timings;
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
