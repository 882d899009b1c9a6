//! The timings table for users' programs' own benchmark output (pytest-benchmark, Google
//! Benchmark and nvbench JSON, or text read with a stage's `pattern:`, into
//! `ParsedLog.timings`): each benchmark of a bench stage beside the
//! baseline stage's benchmark of the same name, with their ratio.

use std::collections::BTreeMap;

use parsers::Timing;
use serde::Serialize;

use crate::message::{Message, code, msg};
use crate::text::sig3;

use crate::join::Joined;
use crate::run::StageKind;

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

    /// Each config's slowest benchmark that is slower than its baseline beyond noise: beyond
    /// the larger relative spread of the two sides, counted on both.
    pub fn slowest_per_config(&self) -> BTreeMap<Option<&str>, Slowdown<'_>> {
        let mut slowest: BTreeMap<Option<&str>, Slowdown> = BTreeMap::new();
        for row in &self.rows {
            let Some(ratio) = row.ratio.filter(|r| *r > 0.0) else {
                continue;
            };
            let limit = match row.spread {
                Some(spread) => 1.0 / (1.0 + 2.0 * spread),
                None => WITHOUT_SPREAD,
            };
            if ratio >= limit || row.baseline.is_none() {
                continue;
            }
            let config = row.bench.config.as_deref();
            let slower = 1.0 / ratio;
            if slowest
                .get(&config)
                .is_none_or(|known| known.slower < slower)
            {
                slowest.insert(config, Slowdown { row, slower });
            }
        }
        slowest
    }

    /// The program's largest slowdown against its baseline beyond noise, over its configs.
    pub fn slowest(&self) -> Option<Slowdown<'_>> {
        self.slowest_per_config()
            .into_values()
            .max_by(|a, b| a.slower.total_cmp(&b.slower))
    }
}

/// Without a spread from either side, a slowdown counts beyond this ratio (baseline / program).
const WITHOUT_SPREAD: f64 = 0.8;

/// A benchmark slower than its baseline's benchmark of the same name beyond noise.
#[derive(Debug, Clone, Copy)]
pub struct Slowdown<'t> {
    pub row: &'t TimingRow,
    /// How many times slower.
    pub slower: f64,
}

impl Slowdown<'_> {
    /// "24.1x slower than its baseline by its own benchmark `64`".
    pub fn words(&self) -> Message {
        msg!(
            "{}x slower than its baseline by its own benchmark {}",
            sig3(self.slower),
            code(&self.row.bench.timing.name)
        )
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
pub(crate) fn typical(t: &Timing) -> Option<f64> {
    t.median_us.or(t.mean_us)
}

/// stdev / mean, when both are given.
fn spread(t: &Timing) -> Option<f64> {
    let (stdev, mean) = (t.stdev_us?, t.mean_us?);
    (mean > 0.0).then_some(stdev / mean)
}

/// Relative noise ((p90 - p50) / p50) above which a timing is flagged as noisy.
pub const NOISY: f64 = 0.10;
