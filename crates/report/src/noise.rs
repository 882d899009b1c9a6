//! Judging a change in kernel time, in the classes of nvbench's compare script (SAME, FAST,
//! SLOW, AMBIGUOUS).
//!
//! When both runs kept their raw samples (at least [`NoiseOptions::min_raw`] each), the change
//! is tested for significance as Google Benchmark's `compare.py` does, by a Mann-Whitney U test
//! ([`crate::significance`]): a change under the minimum effect is SAME; a larger one is FAST or
//! SLOW only when p is under `alpha`, else AMBIGUOUS.
//!
//! Otherwise the change is judged against the noise each run measured: inside the noise (or
//! under the minimum effect) SAME; beyond twice the noise FAST or SLOW; in between, or when a
//! run throttled or kept too few samples, AMBIGUOUS. The noise of a run is the larger of its
//! (p90 - p50) / p50 and its coefficient of variation, at least 0.5%; the comparison takes the
//! larger of the two runs' noise.

use parsers::harness::Bench;
use serde::Serialize;

/// How two timings compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    Same,
    Faster,
    Slower,
    /// Beyond the noise but within twice it, or measured throttled or with too few samples.
    Ambiguous,
}

impl Judgement {
    pub fn as_str(self) -> &'static str {
        match self {
            Judgement::Same => "same",
            Judgement::Faster => "faster",
            Judgement::Slower => "slower",
            Judgement::Ambiguous => "ambiguous",
        }
    }
}

/// The thresholds of a judgement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseOptions {
    /// The smallest relative change ever reported as faster or slower (0.01 = 1%): the minimum
    /// effect.
    pub min_change: f64,
    /// The relative noise assumed at least, however quiet a run claims to be.
    pub noise_floor: f64,
    /// Fewer samples than this make a verdict unsure.
    pub min_samples: u64,
    /// The significance level of the Mann-Whitney U test on raw samples.
    pub alpha: f64,
    /// Raw samples each run must have kept for the test to be made.
    pub min_raw: usize,
}

impl Default for NoiseOptions {
    fn default() -> NoiseOptions {
        NoiseOptions {
            min_change: 0.01,
            noise_floor: 0.005,
            min_samples: 10,
            alpha: 0.05,
            // At 4 vs 4 the smallest two-sided p is 2/70 (0.029), under the default alpha.
            min_raw: 4,
        }
    }
}

/// A judgement and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub judgement: Judgement,
    /// (b.p50 - a.p50) / a.p50: positive is slower.
    pub change: f64,
    /// The larger of the two runs' relative noise (at least the floor).
    pub noise: f64,
    /// Why the judgement is ambiguous, when it is.
    pub reason: Option<String>,
    /// The Mann-Whitney U test on the two runs' raw samples, when both kept enough.
    pub test: Option<SampleTest>,
}

/// A significance test made on raw samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SampleTest {
    /// The two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (else the normal approximation).
    pub exact: bool,
    /// The samples each run kept.
    pub a_samples: usize,
    pub b_samples: usize,
}

/// A run's relative noise for one timing: the larger of (p90 - p50) / p50 and the coefficient
/// of variation, at least `floor`.
pub fn relative_noise(b: &Bench, floor: f64) -> f64 {
    let spread = if b.p50_us > 0.0 {
        (b.p90_us - b.p50_us) / b.p50_us
    } else {
        f64::NAN
    };
    let cv = if b.mean_us > 0.0 {
        b.stdev_us / b.mean_us
    } else {
        f64::NAN
    };
    [spread, cv, floor]
        .into_iter()
        .filter(|x| x.is_finite())
        .fold(floor, f64::max)
}

/// Judges `b` against `a`.
pub fn judge(a: &Bench, b: &Bench, opts: &NoiseOptions) -> Comparison {
    let valid = |x: &Bench| x.p50_us.is_finite() && x.p50_us > 0.0;
    if !valid(a) || !valid(b) {
        return Comparison {
            judgement: Judgement::Ambiguous,
            change: f64::NAN,
            noise: f64::NAN,
            reason: Some("a timing is missing or not positive".to_string()),
            test: None,
        };
    }
    let change = (b.p50_us - a.p50_us) / a.p50_us;
    let noise = relative_noise(a, opts.noise_floor).max(relative_noise(b, opts.noise_floor));
    let magnitude = change.abs();
    let ambiguous = |reason: String| Comparison {
        judgement: Judgement::Ambiguous,
        change,
        noise,
        reason: Some(reason),
        test: None,
    };
    let same = Comparison {
        judgement: Judgement::Same,
        change,
        noise,
        reason: None,
        test: None,
    };
    let direction = if change > 0.0 {
        Judgement::Slower
    } else {
        Judgement::Faster
    };
    let raw = |x: &Bench| x.samples_us.len() >= opts.min_raw.max(1);
    if raw(a)
        && raw(b)
        && let Some(t) = crate::significance::mann_whitney(&a.samples_us, &b.samples_us)
    {
        let test = Some(SampleTest {
            p: t.p,
            exact: t.exact,
            a_samples: a.samples_us.len(),
            b_samples: b.samples_us.len(),
        });
        let judged = |judgement, reason| Comparison {
            judgement,
            change,
            noise,
            reason,
            test,
        };
        return if magnitude < opts.min_change {
            judged(Judgement::Same, None)
        } else if t.p >= opts.alpha {
            judged(
                Judgement::Ambiguous,
                Some(format!(
                    "not significant: {} (Mann-Whitney U, {} and {} samples), alpha {}",
                    p_clause(t.p),
                    a.samples_us.len(),
                    b.samples_us.len(),
                    opts.alpha
                )),
            )
        } else if a.throttled == Some(true) || b.throttled == Some(true) {
            judged(
                Judgement::Ambiguous,
                Some("the GPU throttled during a measurement".to_string()),
            )
        } else if magnitude <= noise {
            // The test treats each sample as a draw of its own, but a run's samples share its
            // clocks and its memory placement: with hundreds of them it finds the shift
            // between two runs of one build significant (1.8% at p < 0.001, two runs of the
            // same build on an H100). A change within the larger run's own spread waits for
            // another run.
            judged(
                Judgement::Ambiguous,
                Some(format!(
                    "significant ({}, Mann-Whitney U) but within the larger run's own \
                     spread ({:.1}%), which two runs of one build can differ by",
                    p_clause(t.p),
                    noise * 100.0
                )),
            )
        } else {
            judged(direction, None)
        };
    }
    if magnitude <= noise || magnitude < opts.min_change {
        return same;
    }
    if magnitude < 2.0 * noise {
        return ambiguous(format!(
            "the change is between 1x and 2x the measured noise ({:.1}%)",
            noise * 100.0
        ));
    }
    if a.throttled == Some(true) || b.throttled == Some(true) {
        return ambiguous("the GPU throttled during a measurement".to_string());
    }
    let samples = a.samples.min(b.samples);
    if samples < opts.min_samples {
        return ambiguous(format!(
            "only {samples} samples (at least {} wanted)",
            opts.min_samples
        ));
    }
    Comparison {
        judgement: direction,
        change,
        noise,
        reason: None,
        test: None,
    }
}

/// A p-value as a clause: "p = 0.012", or "p < 0.001".
pub fn p_clause(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {}", p_text(p))
    }
}

/// A p-value for a table cell, in three significant figures: "0.012", or "< 0.001".
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        crate::text::sig3(p)
    }
}
