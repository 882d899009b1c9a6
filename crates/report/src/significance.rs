//! The Mann-Whitney U test (Wilcoxon rank-sum) of two sets of timing samples, as Google
//! Benchmark's `compare.py` runs it through SciPy: the exact distribution of U for small samples
//! without ties, the normal approximation with tie and continuity corrections otherwise. Pure
//! arithmetic: no I/O, no clock.

use serde::Serialize;

/// Samples larger than this on either side use the normal approximation.
const EXACT_UP_TO: usize = 20;

/// The outcome of the test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample: how many (a, b) pairs have a above b (ties count a half).
    pub u: f64,
    /// The two-sided p-value: the chance of a U this far from its mean were both samples drawn
    /// from one distribution.
    pub p: f64,
    /// Whether `p` is from U's exact distribution (else from the normal approximation).
    pub exact: bool,
}

/// Tests whether `a` and `b` come from one distribution; `None` when either side is empty or
/// holds a value that is not finite.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    // Ranks of the pooled samples, ties sharing their mean rank.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        let tied = (j - i + 1) as f64;
        tie_term += tied.powi(3) - tied;
        rank_sum_a += mean_rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let (nf, mf) = (n as f64, m as f64);
    let u = rank_sum_a - nf * (nf + 1.0) / 2.0;
    if tie_term == 0.0 && n <= EXACT_UP_TO && m <= EXACT_UP_TO {
        return Some(MannWhitney {
            u,
            p: exact_p(n, m, u.round() as usize),
            exact: true,
        });
    }
    let mean = nf * mf / 2.0;
    let total = nf + mf;
    let variance = nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if variance <= 0.0 {
        // Every sample equal: nothing tells the two apart.
        return Some(MannWhitney {
            u,
            p: 1.0,
            exact: false,
        });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    Some(MannWhitney {
        u,
        p: erfc(z / std::f64::consts::SQRT_2).min(1.0),
        exact: false,
    })
}

/// The two-sided p-value of `u` under U's exact null distribution for sizes `n` and `m`.
fn exact_p(n: usize, m: usize, u: usize) -> f64 {
    let counts = u_counts(n, m);
    let total: f64 = counts.iter().sum();
    let below: f64 = counts[..=u.min(counts.len() - 1)].iter().sum();
    let above: f64 = counts[u.min(counts.len() - 1)..].iter().sum();
    (2.0 * below.min(above) / total).min(1.0)
}

/// How many arrangements of `n` and `m` samples give each U from 0 to n·m: the recurrence
/// c(n, m, u) = c(n - 1, m, u - m) + c(n, m - 1, u).
fn u_counts(n: usize, m: usize) -> Vec<f64> {
    let width = n * m + 1;
    // table[i][j] holds the counts for sizes i and j.
    let mut table = vec![vec![Vec::<f64>::new(); m + 1]; n + 1];
    for i in 0..=n {
        for j in 0..=m {
            let mut c = vec![0.0; i * j + 1];
            if i == 0 || j == 0 {
                c[0] = 1.0;
            } else {
                for (u, slot) in c.iter_mut().enumerate() {
                    let with_a_last = if u >= j {
                        table[i - 1][j].get(u - j).copied().unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let with_b_last = table[i][j - 1].get(u).copied().unwrap_or(0.0);
                    *slot = with_a_last + with_b_last;
                }
            }
            table[i][j] = c;
        }
    }
    let mut out = std::mem::take(&mut table[n][m]);
    out.resize(width, 0.0);
    out
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (`erfcc`):
/// fractional error under 1.2e-7 everywhere, ample for a p-value.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The p-values are SciPy's for the same samples: `scipy.stats.mannwhitneyu(a, b)` (SciPy
    // 1.17.1, two-sided, method 'auto').

    #[test]
    fn fully_separated_small_samples_take_the_exact_tail() {
        // 5 vs 5, every a below every b: U = 0, p = 2 / C(10, 5) = 2/252 (SciPy: 0.0079365).
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(t.exact);
        assert_eq!(t.u, 0.0);
        assert!((t.p - 2.0 / 252.0).abs() < 1e-12, "{}", t.p);
    }

    #[test]
    fn interleaved_samples_are_not_significant() {
        let t = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert!(t.exact);
        assert_eq!(t.u, 6.0);
        // P(U <= 6) for 4 vs 4 is 24/70; two-sided 48/70 (SciPy: 0.6857142857142857).
        assert!((t.p - 48.0 / 70.0).abs() < 1e-12, "{}", t.p);
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        let a = [10.0, 10.0, 11.0, 11.0, 12.0, 12.0];
        let b = [12.0, 13.0, 13.0, 14.0, 14.0, 15.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert!(!t.exact);
        assert_eq!(t.u, 1.0);
        // SciPy: 0.007365274980311024 (four pairs and a triple tied).
        assert!((t.p - 0.007_365_275).abs() < 1e-8, "{}", t.p);
    }

    #[test]
    fn large_samples_shifted_by_their_spread_are_significant_and_equal_ones_are_not() {
        let a: Vec<f64> = (0..40).map(|i| 100.0 + f64::from(i % 10)).collect();
        let shifted: Vec<f64> = a.iter().map(|x| x + 3.0).collect();
        let t = mann_whitney(&a, &shifted).unwrap();
        assert_eq!(t.u, 392.0);
        // SciPy: 8.280045222122682e-05.
        assert!((t.p - 8.280_045e-5).abs() < 1e-9, "{}", t.p);
        assert!((mann_whitney(&a, &a).unwrap().p - 1.0).abs() < 1e-6);
    }

    #[test]
    fn the_error_function_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        assert!((erfc(2.0) - 0.004_677_735).abs() < 1e-8);
    }

    #[test]
    fn empty_or_non_finite_samples_are_not_tested() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(mann_whitney(&[1.0, f64::NAN], &[1.0]).is_none());
    }
}
