//! Timings read from a program's plain-text output with a regular expression: a bench or
//! baseline stage's `pattern:`, for programs that print their times in no known format
//! (`Average elapsed time: (0.021662) s, ... size: (4096).`, `sdpa: 0.052 ms`).
//!
//! A [`TimingPattern`] is the pattern as the pipeline gives it and the run manifest records it:
//! a regular expression (the `regex` crate's syntax) with the named groups
//!
//! - `value` (required): the time, a decimal number (`0.021662`, `1.5e-3`);
//! - `unit` (optional): `s`, `ms`, `us` (or `µs`, `μs`) or `ns`. Without the group, or where it
//!   took no part in a match, the pattern's fixed [`TimingPattern::unit`] applies; with neither,
//!   [`TimingPattern::compile`] refuses the pattern (a silent default would be a factor of a
//!   thousand away as often as not);
//! - `label` (optional): the timing's name. Without the group, or where it matched nothing, the
//!   match is a sample of the timing named [`TimingPattern::label`].
//!
//! [`TimingPattern::compile`] checks the pattern and gives a [`TimingMatcher`]; [`parse`] and
//! [`parse_reader`] scan text line by line, and every match is one sample of the timing its label
//! names. The samples of one label become one [`Timing`] (in microseconds, labels in the order
//! first seen): their count as `samples`, their min, median, mean and max, their sample
//! standard deviation (from two samples) and interquartile range (from four; linear
//! interpolation between order statistics).
//!
//! Lines the pattern does not match are the program's other output, neither counted nor kept.
//! A match whose value is not a finite, non-negative number or whose unit is not one of the
//! above is one unparsed line and makes the log incomplete; the other matches still count.
//! Whether anything matched at all is the caller's question: a log with no [`ParsedLog::timings`].

use std::collections::HashMap;
use std::io::{self, BufRead};

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::model::{Format, ParsedLog, Timing};
use crate::util::note_unparsed;

/// The most distinct labels one log holds timings for; matches of further labels are unparsed.
pub const MAX_LABELS: usize = 4096;

/// The largest compiled pattern accepted (the `regex` crate's size limit).
const SIZE_LIMIT: usize = 1 << 20;

/// The unit a time is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimeUnit {
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ms")]
    Milliseconds,
    #[serde(rename = "us")]
    Microseconds,
    #[serde(rename = "ns")]
    Nanoseconds,
}

impl TimeUnit {
    /// `s`, `ms`, `us` (`µs`, `μs`) or `ns`, as a program prints it.
    pub fn parse(text: &str) -> Option<TimeUnit> {
        match text.trim() {
            "s" => Some(TimeUnit::Seconds),
            "ms" => Some(TimeUnit::Milliseconds),
            // The micro sign (U+00B5) and the Greek small mu (U+03BC) both appear.
            "us" | "\u{b5}s" | "\u{3bc}s" => Some(TimeUnit::Microseconds),
            "ns" => Some(TimeUnit::Nanoseconds),
            _ => None,
        }
    }

    /// Its spelling in the manifest and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Microseconds => "us",
            TimeUnit::Nanoseconds => "ns",
        }
    }

    /// Microseconds in one of this unit.
    fn micros(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1e6,
            TimeUnit::Milliseconds => 1e3,
            TimeUnit::Microseconds => 1.0,
            TimeUnit::Nanoseconds => 1e-3,
        }
    }
}

/// How a stage reads its timings from text, as the run manifest records it: enough to read the
/// same timings from the same log again anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingPattern {
    /// The regular expression, with its `value` group and optional `unit` and `label` groups.
    pub pattern: String,
    /// The unit of a match without a `unit` group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<TimeUnit>,
    /// The name of the timing a match without a `label` group is a sample of.
    pub label: String,
}

/// Why a [`TimingPattern`] cannot read timings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// Not a regular expression the `regex` crate compiles (its reason, on one line).
    #[error("not a regular expression: {0}")]
    Regex(String),
    /// No group named `value`.
    #[error("the pattern has no `value` group: name the time with `(?P<value>...)`")]
    NoValue,
    /// No group named `unit`, and no fixed unit.
    #[error(
        "the pattern has no `unit` group: give the unit beside it (`unit: ms`; s, ms, us or ns)"
    )]
    NoUnit,
}

/// A compiled [`TimingPattern`].
#[derive(Debug, Clone)]
pub struct TimingMatcher {
    regex: Regex,
    unit: Option<TimeUnit>,
    label: String,
}

impl TimingPattern {
    /// Checks the pattern: it compiles, it has a `value` group, and it gives a unit (a `unit`
    /// group or [`TimingPattern::unit`]).
    pub fn compile(&self) -> Result<TimingMatcher, PatternError> {
        let regex = RegexBuilder::new(&self.pattern)
            .size_limit(SIZE_LIMIT)
            .build()
            .map_err(|e| PatternError::Regex(one_line(&e)))?;
        let has = |name: &str| regex.capture_names().flatten().any(|n| n == name);
        if !has("value") {
            return Err(PatternError::NoValue);
        }
        if !has("unit") && self.unit.is_none() {
            return Err(PatternError::NoUnit);
        }
        Ok(TimingMatcher {
            regex,
            unit: self.unit,
            label: self.label.clone(),
        })
    }
}

impl TimingMatcher {
    /// Whether the pattern names its timings itself (a `label` group).
    pub fn has_label_group(&self) -> bool {
        self.regex.capture_names().flatten().any(|n| n == "label")
    }
}

/// The `regex` crate's error on one line: a syntax error's own words (its message names the
/// problem after `error: `), else the whole message with its lines joined.
fn one_line(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
}

/// Reads the timings `matcher` finds in `text`. Never fails.
pub fn parse(text: &str, matcher: &TimingMatcher) -> ParsedLog {
    let mut p = Parser::new(matcher);
    for line in text.lines() {
        p.line(line);
    }
    p.finish()
}

/// [`parse`] from a reader, line by line; fails only when the reader does.
pub fn parse_reader<R: BufRead>(reader: R, matcher: &TimingMatcher) -> io::Result<ParsedLog> {
    let mut p = Parser::new(matcher);
    crate::lines::for_each_line(reader, |l| p.line(l))?;
    Ok(p.finish())
}

/// The samples of every label, in the order first seen.
struct Parser<'m> {
    matcher: &'m TimingMatcher,
    log: ParsedLog,
    labels: Vec<(String, Vec<f64>)>,
    index: HashMap<String, usize>,
}

impl<'m> Parser<'m> {
    fn new(matcher: &'m TimingMatcher) -> Parser<'m> {
        let mut log = ParsedLog::new(Format::TextTimings, None);
        log.complete = true;
        Parser {
            matcher,
            log,
            labels: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// One line of output; a literal `\n` in it is a line break the program meant (a C
    /// `printf("...\\n")` prints one), so each piece is matched as a line of its own.
    fn line(&mut self, line: &str) {
        for piece in line.trim_end_matches('\r').split("\\n") {
            self.piece(piece);
        }
    }

    fn piece(&mut self, line: &str) {
        for caps in self.matcher.regex.captures_iter(line) {
            let value = caps.name("value").map_or("", |m| m.as_str()).trim();
            let unit = match caps.name("unit") {
                Some(m) => TimeUnit::parse(m.as_str()).ok_or_else(|| {
                    format!("`{}` is not a time unit (s, ms, us or ns)", m.as_str())
                }),
                None => self
                    .matcher
                    .unit
                    .ok_or_else(|| "the `unit` group matched nothing".to_string()),
            };
            let label = caps
                .name("label")
                .map(|m| m.as_str().trim())
                .filter(|l| !l.is_empty())
                .unwrap_or(&self.matcher.label);
            let sample = unit.and_then(|unit| match value.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * unit.micros()),
                _ => Err(format!("`{value}` is not a time")),
            });
            let problem = match sample {
                Ok(us) => self.add(label, us).err(),
                Err(why) => Some(why),
            };
            if let Some(why) = problem {
                note_unparsed(&mut self.log, &format!("{why}: {line}"));
                self.log.complete = false;
            }
        }
    }

    /// Adds one sample to `label`'s timing; `Err` when there are too many labels already.
    fn add(&mut self, label: &str, us: f64) -> Result<(), String> {
        let at = match self.index.get(label) {
            Some(&at) => at,
            None if self.labels.len() >= MAX_LABELS => {
                return Err(format!("more than {MAX_LABELS} timings"));
            }
            None => {
                self.labels.push((label.to_string(), Vec::new()));
                self.index.insert(label.to_string(), self.labels.len() - 1);
                self.labels.len() - 1
            }
        };
        if let Some((_, samples)) = self.labels.get_mut(at) {
            samples.push(us);
        }
        Ok(())
    }

    fn finish(mut self) -> ParsedLog {
        self.log.timings = self
            .labels
            .into_iter()
            .filter_map(|(name, samples)| summarise(name, samples))
            .collect();
        self.log
    }
}

/// One label's samples as a [`Timing`]; `None` without a sample.
fn summarise(name: String, taken: Vec<f64>) -> Option<Timing> {
    let mut samples = taken.clone();
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    let (&min, &max) = (samples.first()?, samples.last()?);
    let mean = samples.iter().sum::<f64>() / n as f64;
    let stdev = (n >= 2).then(|| {
        let squares: f64 = samples.iter().map(|x| (x - mean).powi(2)).sum();
        (squares / (n - 1) as f64).sqrt()
    });
    let iqr = (n >= 4).then(|| quantile(&samples, 0.75) - quantile(&samples, 0.25));
    Some(Timing {
        name,
        format: Format::TextTimings,
        samples: Some(n as u64),
        iterations: None,
        min_us: Some(min),
        median_us: Some(quantile(&samples, 0.5)),
        mean_us: Some(mean),
        stdev_us: stdev,
        max_us: Some(max),
        iqr_us: iqr,
        samples_us: taken,
    })
}

/// The `q` quantile of sorted, non-empty samples, interpolated linearly between the order
/// statistics around it (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len().saturating_sub(1);
    let at = q * last as f64;
    let below = at.floor() as usize;
    let above = at.ceil() as usize;
    let (lo, hi) = (
        sorted.get(below).copied().unwrap_or(f64::NAN),
        sorted.get(above).copied().unwrap_or(f64::NAN),
    );
    lo + (hi - lo) * (at - below as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(pattern: &str, unit: Option<TimeUnit>) -> TimingMatcher {
        TimingPattern {
            pattern: pattern.to_string(),
            unit,
            label: "default".to_string(),
        }
        .compile()
        .expect("a valid pattern")
    }

    /// The first `Average elapsed time` line for size 4096 is real output of siboehm/SGEMM_CUDA's
    /// `sgemm` on an H100, captured verbatim; every other line is hand-written in its shape (a
    /// line that does not match, a smaller size, a second sample of 4096).
    const SGEMM: &str = "\
dimensions(m=n=k) 128, alpha: 0.5, beta: 3
Average elapsed time: (0.000103) s, performance: (   40.7) GFLOPS. size: (128).
dimensions(m=n=k) 4096, alpha: 0.5, beta: 3
Average elapsed time: (0.021662) s, performance: (6342.3) GFLOPS. size: (4096).
Average elapsed time: (0.021700) s, performance: (6331.2) GFLOPS. size: (4096).
";

    const SGEMM_PATTERN: &str = r"Average elapsed time: \((?P<value>[0-9.]+)\) (?P<unit>s), performance: .* size: \((?P<label>\d+)\)";

    #[test]
    fn sgemm_cuda_gives_one_timing_per_size() {
        let log = parse(SGEMM, &pattern(SGEMM_PATTERN, None));
        assert!(log.complete, "{log:#?}");
        assert_eq!(log.format, Format::TextTimings);
        let names: Vec<&str> = log.timings.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["128", "4096"]);
        let small = &log.timings[0];
        assert_eq!(small.samples, Some(1));
        assert_eq!(small.median_us, Some(103.0));
        assert_eq!(small.stdev_us, None);
        let large = &log.timings[1];
        assert_eq!(large.samples, Some(2));
        assert!(
            (large.median_us.unwrap() - 21_681.0).abs() < 1e-6,
            "{large:?}"
        );
        assert!((large.min_us.unwrap() - 21_662.0).abs() < 1e-6, "{large:?}");
        assert!((large.max_us.unwrap() - 21_700.0).abs() < 1e-6, "{large:?}");
        // Two samples 38 us apart: a sample standard deviation of 38 / sqrt(2).
        assert!((large.stdev_us.unwrap() - 38.0 / 2f64.sqrt()).abs() < 1e-6);
        assert_eq!(large.iqr_us, None);
    }

    #[test]
    fn the_real_sgemm_line_alone() {
        // Captured from siboehm/SGEMM_CUDA on an H100, verbatim.
        let line =
            "Average elapsed time: (0.021662) s, performance: (6342.3) GFLOPS. size: (4096).";
        let log = parse(line, &pattern(SGEMM_PATTERN, None));
        let t = &log.timings[0];
        assert_eq!(t.name, "4096");
        assert!((t.median_us.unwrap() - 21_662.0).abs() < 1e-6, "{t:?}");
    }

    #[test]
    fn unlabelled_matches_are_samples_of_the_fixed_label_in_the_fixed_unit() {
        let text = "warm-up\nminimal_attn: 1.5 ms\nsdpa: 0.052 ms\nminimal_attn: 1.0 ms\n\
                    minimal_attn: 2.0 ms\nminimal_attn: 1.25 ms\n";
        let m = pattern(
            r"^minimal_attn: (?P<value>\S+) ms$",
            Some(TimeUnit::Milliseconds),
        );
        let log = parse(text, &m);
        assert!(log.complete);
        assert_eq!(log.timings.len(), 1);
        let t = &log.timings[0];
        assert_eq!(t.name, "default");
        assert_eq!(t.samples, Some(4));
        assert_eq!(t.median_us, Some(1375.0));
        assert_eq!(t.mean_us, Some(1437.5));
        // Quartiles of 1000, 1250, 1500, 2000: 1187.5 and 1625.
        assert_eq!(t.iqr_us, Some(437.5));
        assert_eq!(log.unparsed_lines, 0);
    }

    #[test]
    fn labels_and_units_from_the_line() {
        let text = "minimal_attn: 1.234 ms\nsdpa: 52 us\nsdpa: 54 µs\nother: 3 ns\n";
        let log = parse(
            text,
            &pattern(r"(?P<label>\w+): (?P<value>[0-9.]+) (?P<unit>\S+)", None),
        );
        let got: Vec<(&str, Option<f64>, Option<u64>)> = log
            .timings
            .iter()
            .map(|t| (t.name.as_str(), t.median_us, t.samples))
            .collect();
        assert_eq!(
            got,
            [
                ("minimal_attn", Some(1234.0), Some(1)),
                ("sdpa", Some(53.0), Some(2)),
                ("other", Some(0.003), Some(1)),
            ]
        );
    }

    #[test]
    fn a_bad_match_is_unparsed_and_the_others_still_count() {
        let text = "t: 1 ms\nt: 2 fortnights\nt: 3 ms\n";
        let log = parse(text, &pattern(r"t: (?P<value>\S+) (?P<unit>\S+)", None));
        assert!(!log.complete);
        assert_eq!(log.unparsed_lines, 1);
        assert!(
            log.unparsed_examples[0].contains("`fortnights` is not a time unit"),
            "{:?}",
            log.unparsed_examples
        );
        assert_eq!(log.timings[0].samples, Some(2));
        let log = parse(
            "t: nan\nt: -1\n",
            &pattern(r"t: (?P<value>\S+)", Some(TimeUnit::Seconds)),
        );
        assert!(log.timings.is_empty());
        assert_eq!(log.unparsed_lines, 2);
    }

    #[test]
    fn a_literal_backslash_n_starts_a_line() {
        // flash-attention-minimal's extension prints `...%d \\n` with a literal backslash-n
        // before each launch, so the driver's timing line follows it on the same line (corpus
        // `fa-minimal-slow`, H100).
        let m = pattern(
            r"^minimal seq_len (?P<label>\d+): (?P<value>[0-9.]+) (?P<unit>ms)$",
            None,
        );
        let log = parse(
            "Max shared memory: 49152, requested shared memory: 28672 \\nMax shared memory: \
             49152, requested shared memory: 28672 \\nminimal seq_len 64: 0.2169 ms\n",
            &m,
        );
        assert_eq!(log.timings.len(), 1, "{log:?}");
        assert_eq!(log.timings[0].name, "64");
    }

    #[test]
    fn nothing_matched_is_an_empty_log() {
        let log = parse(
            "hello\n",
            &pattern(r"t: (?P<value>\S+)", Some(TimeUnit::Seconds)),
        );
        assert!(log.timings.is_empty());
        assert!(log.holds_nothing());
    }

    #[test]
    fn a_pattern_is_refused_without_a_value_or_a_unit_or_when_it_does_not_compile() {
        let compile = |p: &str, unit: Option<TimeUnit>| {
            TimingPattern {
                pattern: p.to_string(),
                unit,
                label: "x".into(),
            }
            .compile()
            .err()
        };
        assert_eq!(
            compile(r"(?P<time>\d+) ms", Some(TimeUnit::Milliseconds)),
            Some(PatternError::NoValue)
        );
        assert_eq!(
            compile(r"(?P<value>\d+) ms", None),
            Some(PatternError::NoUnit)
        );
        assert_eq!(compile(r"(?P<value>\d+) (?P<unit>ms)", None), None);
        let Some(PatternError::Regex(why)) = compile(r"(?P<value>\d+", None) else {
            panic!("an unclosed group is refused");
        };
        assert!(
            !why.contains('\n') && why.contains("unclosed group"),
            "{why}"
        );
    }

    #[test]
    fn units_read_as_printed() {
        assert_eq!(TimeUnit::parse("µs"), Some(TimeUnit::Microseconds));
        assert_eq!(TimeUnit::parse("μs"), Some(TimeUnit::Microseconds));
        assert_eq!(TimeUnit::parse(" ms "), Some(TimeUnit::Milliseconds));
        assert_eq!(TimeUnit::parse("sec"), None);
        assert_eq!(
            serde_json::to_string(&TimeUnit::Microseconds).unwrap(),
            "\"us\""
        );
    }
}
