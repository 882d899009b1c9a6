//! What counts as a correct output, and the comparison of a kernel's output with the reference.
//!
//! Two gates, both required:
//!
//! 1. **Relative L2 error** ||out - ref|| / ||ref|| over the compared rows: at most 1e-3 for
//!    f16 and 1e-2 for bf16 (`--tolerance` overrides). A FlashAttention kernel rounds twice on
//!    the way to its output: the probabilities P = exp(S - m) are rounded to the input dtype
//!    before the P.V matrix product, and O is rounded once when stored. Each rounding has a
//!    relative error of at most u = 2^-11 (f16) or 2^-8 (bf16), about u/sqrt(3) RMS, and the
//!    errors are independent across keys, so the expected relative L2 error is near
//!    sqrt(2/3) u: about 4e-4 for f16 and 3.2e-3 for bf16. The limits leave a factor of 2.5
//!    (f16) and 3 (bf16) for fp32 accumulation and `exp2` approximations, and are far below
//!    what any indexing, masking or rescaling bug produces (errors of order 1).
//! 2. **Per-element bound**, so that one wrong row in a large problem cannot hide in the norm:
//!    |out - ref| <= 4 u (|ref| + w) + S 2^-24 w, where w = sum_j p_j |v_j| (computed by the
//!    reference). The rounding of P contributes at most u w and the rounding of O, plus the
//!    normaliser computed from unrounded P, at most 2 u |ref|; 4 u (|ref| + w) covers both with
//!    a factor of at least 2, and S 2^-24 w is the worst-case fp32 accumulation error over S
//!    keys.
//!
//! Beyond the numbers: NaN or infinity never passes, every element must have been written (no
//! element may still hold the poison pattern), and no guard region may have changed.

use parsers::harness::figures::{ElementAt, WorstElement};

use crate::float::{Dtype, POISON_BITS};
use crate::problem::Problem;
use crate::reference::Reference;

/// The limits a check applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Largest accepted ||out - ref|| / ||ref||.
    pub rel_l2: f64,
    /// The dtype's unit roundoff u.
    pub unit_roundoff: f64,
    /// The factor in the per-element bound `factor * u * (|ref| + w)`.
    pub element_factor: f64,
}

impl Tolerance {
    /// The default limits for a dtype (see the module documentation for their derivation).
    pub fn for_dtype(dtype: Dtype) -> Self {
        Self {
            rel_l2: match dtype {
                Dtype::F16 => 1e-3,
                Dtype::Bf16 => 1e-2,
            },
            unit_roundoff: dtype.unit_roundoff(),
            element_factor: 4.0,
        }
    }

    /// The same limits with another relative L2 limit.
    pub fn with_rel_l2(self, rel_l2: f64) -> Self {
        Self { rel_l2, ..self }
    }

    /// The largest accepted |out - ref| for one element whose reference value is `expected`,
    /// with magnitude sum `weight` = sum_j p_j |v_j|, in a problem with `seq_len` keys.
    pub fn element_bound(&self, expected: f64, weight: f64, seq_len: usize) -> f64 {
        self.element_factor * self.unit_roundoff * (expected.abs() + weight)
            + seq_len as f64 * f64::from(f32::EPSILON) / 2.0 * weight
            + 1e-7
    }
}

/// The outcome of comparing one output with the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Largest |out - ref| over the compared finite elements.
    pub max_abs_err: f64,
    /// ||out - ref|| / ||ref|| over the compared finite elements.
    pub rel_l2_err: f64,
    /// NaN elements other than the poison pattern, over the whole output.
    pub nan_count: u64,
    /// Infinite elements over the whole output.
    pub inf_count: u64,
    /// Elements still holding the poison pattern, over the whole output.
    pub unwritten: u64,
    pub first_unwritten: Option<ElementAt>,
    pub first_nonfinite: Option<ElementAt>,
    /// Compared elements whose error exceeds their per-element bound.
    pub over_bound: u64,
    /// The element with the largest error / bound ratio.
    pub worst: Option<WorstElement>,
    /// Elements compared with the reference (all of them unless rows were sampled).
    pub compared: u64,
    /// Elements in the output.
    pub total: u64,
}

impl Comparison {
    /// Whether the output passes every numeric gate under `tol`.
    pub fn passed(&self, tol: &Tolerance) -> bool {
        self.nan_count == 0
            && self.inf_count == 0
            && self.unwritten == 0
            && self.over_bound == 0
            && self.compared > 0
            && self.rel_l2_err.is_finite()
            && self.rel_l2_err <= tol.rel_l2
    }

    /// The largest error / bound ratio (at most 1 when the per-element gate passes).
    pub fn worst_ratio(&self) -> f64 {
        self.worst.map_or(0.0, |w| {
            let err = (w.got - w.expected).abs();
            if w.bound > 0.0 { err / w.bound } else { 0.0 }
        })
    }
}

/// Compares a kernel's output (raw bits in the problem's layout) with the reference.
pub fn compare(
    problem: &Problem,
    out: &[u16],
    reference: &Reference,
    tol: &Tolerance,
) -> Comparison {
    let shape = problem.shape;
    let dtype = problem.dtype;
    let d = shape.head_dim;
    let locate = |index: usize| {
        let col = index % d;
        let row = (index / d) % shape.seq_len;
        let bh = index / (d * shape.seq_len);
        ElementAt {
            batch: bh / shape.heads,
            head: bh % shape.heads,
            row,
            col,
        }
    };
    let mut c = Comparison {
        max_abs_err: 0.0,
        rel_l2_err: 0.0,
        nan_count: 0,
        inf_count: 0,
        unwritten: 0,
        first_unwritten: None,
        first_nonfinite: None,
        over_bound: 0,
        worst: None,
        compared: 0,
        total: out.len() as u64,
    };
    for (index, &bits) in out.iter().enumerate() {
        if bits == POISON_BITS {
            c.unwritten += 1;
            c.first_unwritten.get_or_insert_with(|| locate(index));
        } else if dtype.is_nan(bits) {
            c.nan_count += 1;
            c.first_nonfinite.get_or_insert_with(|| locate(index));
        } else if dtype.is_infinite(bits) {
            c.inf_count += 1;
            c.first_nonfinite.get_or_insert_with(|| locate(index));
        }
    }
    let (mut err_sq, mut ref_sq) = (0.0f64, 0.0f64);
    let mut worst_ratio = -1.0f64;
    for bh in 0..shape.batch_heads() {
        for (r, &row) in reference.rows().iter().enumerate() {
            let expected = reference.output(bh, r);
            let weight = reference.weight(bh, r);
            let at = (bh * shape.seq_len + row) * d;
            let Some(got_row) = out.get(at..at + d) else {
                continue;
            };
            for (col, ((&bits, &e), &w)) in got_row.iter().zip(expected).zip(weight).enumerate() {
                let got = dtype.decode(bits);
                if !got.is_finite() {
                    continue;
                }
                c.compared += 1;
                let err = (got - e).abs();
                err_sq += err * err;
                ref_sq += e * e;
                c.max_abs_err = c.max_abs_err.max(err);
                let bound = tol.element_bound(e, w, shape.seq_len);
                if err > bound {
                    c.over_bound += 1;
                }
                let ratio = err / bound;
                if ratio > worst_ratio {
                    worst_ratio = ratio;
                    c.worst = Some(WorstElement {
                        at: ElementAt {
                            batch: bh / shape.heads,
                            head: bh % shape.heads,
                            row,
                            col,
                        },
                        got,
                        expected: e,
                        bound,
                    });
                }
            }
        }
    }
    c.rel_l2_err = if ref_sq > 0.0 {
        (err_sq / ref_sq).sqrt()
    } else if err_sq > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    c
}
