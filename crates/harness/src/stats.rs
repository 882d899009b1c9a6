//! Timing statistics and the adaptive stopping rule of the bench mode.

/// Summary statistics of a set of timing samples (microseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub samples: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator; 0 for one sample).
    pub stdev: f64,
}

/// Summarises samples; `None` when there are none or any is not finite.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let stdev = if n > 1 {
        (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    Some(Summary {
        samples: n,
        min: sorted[0],
        p50: percentile_sorted(&sorted, 50.0),
        p90: percentile_sorted(&sorted, 90.0),
        p99: percentile_sorted(&sorted, 99.0),
        max: sorted[n - 1],
        mean,
        stdev,
    })
}

/// The `p`-th percentile (0..=100) of ascending `sorted` samples, linearly interpolated between
/// closest ranks (rank = p/100 * (n - 1), as NumPy's default). `NaN` for no samples.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let (a, b) = (sorted[lo.min(n - 1)], sorted[hi.min(n - 1)]);
    a + (b - a) * (rank - lo as f64)
}

/// Relative standard error of the mean: stdev / sqrt(n) / mean. `None` under two samples or for
/// a non-positive mean.
pub fn relative_sem(summary: &Summary) -> Option<f64> {
    if summary.samples < 2 || summary.mean <= 0.0 {
        return None;
    }
    Some(summary.stdev / (summary.samples as f64).sqrt() / summary.mean)
}

/// Half the width of a distribution-free 95% confidence interval of the median, relative to
/// the median. The interval runs between the order statistics of rank n/2 -+ 1.96 sqrt(n)/2
/// (normal approximation to the binomial), so one slow outlier moves it far less than it moves
/// the mean. `None` under 8 samples (too few for the approximation) or a non-positive median.
pub fn median_ci_relative(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n < 8 {
        return None;
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let centre = n as f64 / 2.0;
    let lo = (centre - half).floor().max(0.0) as usize;
    let hi = ((centre + half).ceil() as usize).min(n - 1);
    let median = percentile_sorted(sorted, 50.0);
    if median <= 0.0 {
        return None;
    }
    Some((sorted[hi] - sorted[lo]) / 2.0 / median)
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The median's relative confidence half-width fell under the target.
    Converged,
    /// The time cap was reached first.
    TimeCap,
    /// The sample cap was reached first.
    SampleCap,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Converged => "converged",
            StopReason::TimeCap => "time_cap",
            StopReason::SampleCap => "sample_cap",
        }
    }
}

/// When to stop taking samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Target for [`median_ci_relative`], e.g. 0.005.
    pub target_noise: f64,
    /// Wall-clock cap on sampling, seconds.
    pub max_seconds: f64,
    /// Never stop on convergence before this many samples.
    pub min_samples: usize,
    /// Stop at this many samples regardless.
    pub max_samples: usize,
}

impl StopRule {
    /// Decides, from the samples so far (any order) and the seconds spent, whether to stop.
    pub fn decide(&self, samples: &[f64], elapsed_seconds: f64) -> Option<StopReason> {
        if samples.len() >= self.min_samples {
            let mut sorted = samples.to_vec();
            sorted.sort_by(f64::total_cmp);
            if median_ci_relative(&sorted).is_some_and(|noise| noise <= self.target_noise) {
                return Some(StopReason::Converged);
            }
        }
        if samples.len() >= self.max_samples {
            return Some(StopReason::SampleCap);
        }
        if elapsed_seconds >= self.max_seconds {
            return Some(StopReason::TimeCap);
        }
        None
    }
}
