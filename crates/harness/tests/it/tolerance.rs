use harness::float::{Dtype, POISON_BITS};
use harness::problem::{Inputs, Problem, Shape};
use harness::reference::{Reference, RowSelection};
use harness::tolerance::{Tolerance, compare};

/// What a correct FlashAttention kernel computes: scores and row sums in f32, probabilities
/// rounded to the input dtype before the P.V product (f32 accumulation), O rounded on store.
/// `keys_seen` lets a test plant a masking bug.
fn emulate_kernel(p: &Problem, inputs: &Inputs, keys_seen: impl Fn(usize) -> usize) -> Vec<u16> {
    let s = p.shape;
    let d = s.head_dim;
    let dec = |b: u16| p.dtype.decode(b) as f32;
    let mut out = vec![0u16; s.elements()];
    for bh in 0..s.batch_heads() {
        let base = bh * s.seq_len * d;
        for i in 0..s.seq_len {
            let keys = keys_seen(i).min(s.seq_len);
            let scores: Vec<f32> = (0..keys)
                .map(|j| {
                    let dot: f32 = (0..d)
                        .map(|c| dec(inputs.q[base + i * d + c]) * dec(inputs.k[base + j * d + c]))
                        .sum();
                    dot * p.softmax_scale
                })
                .collect();
            let m = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let probs: Vec<f32> = scores.iter().map(|x| (x - m).exp()).collect();
            let l: f32 = probs.iter().sum();
            for c in 0..d {
                let acc: f32 = probs
                    .iter()
                    .enumerate()
                    .map(|(j, &pj)| {
                        let pr = p.dtype.decode(p.dtype.encode(f64::from(pj))) as f32;
                        pr * dec(inputs.v[base + j * d + c])
                    })
                    .sum();
                out[base + i * d + c] = p.dtype.encode(f64::from(acc / l));
            }
        }
    }
    out
}

fn setup(dtype: Dtype, causal: bool, seq_len: usize) -> (Problem, Inputs, Reference) {
    let p = Problem::new(Shape::new(1, 3, seq_len, 32), dtype, causal);
    let inputs = Inputs::generate(p.shape, dtype, 21);
    let r = Reference::compute(&p, &inputs, &RowSelection::all(seq_len));
    (p, inputs, r)
}

#[test]
fn a_correct_kernel_passes_with_margin_in_both_dtypes() {
    for dtype in [Dtype::F16, Dtype::Bf16] {
        for causal in [false, true] {
            let (p, inputs, r) = setup(dtype, causal, 150);
            let tol = Tolerance::for_dtype(dtype);
            let out = emulate_kernel(&p, &inputs, |i| if causal { i + 1 } else { usize::MAX });
            let c = compare(&p, &out, &r, &tol);
            assert!(c.passed(&tol), "{dtype} causal={causal}: {c:?}");
            assert!(c.rel_l2_err < tol.rel_l2 / 2.0, "{dtype}: {}", c.rel_l2_err);
            assert!(
                c.worst_ratio() < 0.75,
                "{dtype}: worst ratio {}",
                c.worst_ratio()
            );
            assert_eq!(c.compared, p.shape.elements() as u64);
        }
    }
}

#[test]
fn the_reference_rounded_to_the_dtype_passes() {
    for dtype in [Dtype::F16, Dtype::Bf16] {
        let (p, _, r) = setup(dtype, false, 64);
        let mut out = vec![0u16; p.shape.elements()];
        for bh in 0..p.shape.batch_heads() {
            for (ri, &i) in r.rows().iter().enumerate() {
                for (c, &x) in r.output(bh, ri).iter().enumerate() {
                    out[(bh * 64 + i) * 32 + c] = dtype.encode(x);
                }
            }
        }
        let tol = Tolerance::for_dtype(dtype);
        let c = compare(&p, &out, &r, &tol);
        assert!(c.passed(&tol), "{c:?}");
        assert!(c.max_abs_err > 0.0);
    }
}

#[test]
fn a_causal_mask_off_by_one_fails() {
    let (p, inputs, r) = setup(Dtype::F16, true, 150);
    let out = emulate_kernel(&p, &inputs, |i| i + 2);
    let tol = Tolerance::for_dtype(Dtype::F16);
    let c = compare(&p, &out, &r, &tol);
    assert!(!c.passed(&tol));
    assert!(c.over_bound > 0);
}

#[test]
fn a_tail_tile_that_drops_the_last_keys_fails_even_in_bf16() {
    // Keys past 128 ignored: only a 22-key tail is wrong.
    let (p, inputs, r) = setup(Dtype::Bf16, false, 150);
    let out = emulate_kernel(&p, &inputs, |_| 128);
    let tol = Tolerance::for_dtype(Dtype::Bf16);
    let c = compare(&p, &out, &r, &tol);
    assert!(!c.passed(&tol), "{c:?}");
}

#[test]
fn one_wrong_row_fails_even_when_the_norm_hides_it() {
    let p = Problem::new(Shape::new(1, 4, 1024, 16), Dtype::Bf16, false);
    let inputs = Inputs::generate(p.shape, p.dtype, 4);
    let r = Reference::compute(&p, &inputs, &RowSelection::all(1024));
    let tol = Tolerance::for_dtype(p.dtype);
    let mut out = vec![POISON_BITS; p.shape.elements()];
    for bh in 0..4 {
        for i in 0..1024 {
            for (c, &x) in r.output(bh, i).iter().enumerate() {
                out[(bh * 1024 + i) * 16 + c] = p.dtype.encode(x);
            }
        }
    }
    // Row 1023 of head 0 off by twice its bound: small in the norm of 4096 rows.
    for c in 0..16 {
        let (e, w) = (r.output(0, 1023)[c], r.weight(0, 1023)[c]);
        out[1023 * 16 + c] = p.dtype.encode(e + 2.0 * tol.element_bound(e, w, 1024));
    }
    let c = compare(&p, &out, &r, &tol);
    assert!(
        c.rel_l2_err < tol.rel_l2,
        "the norm alone would pass: {}",
        c.rel_l2_err
    );
    assert!(!c.passed(&tol));
    assert_eq!(c.over_bound, 16);
    let worst = c.worst.expect("a worst element");
    assert_eq!((worst.at.batch, worst.at.head, worst.at.row), (0, 0, 1023));
}

#[test]
fn unwritten_nan_and_infinite_elements_are_counted_and_fail() {
    let (p, inputs, r) = setup(Dtype::F16, false, 40);
    let tol = Tolerance::for_dtype(Dtype::F16);
    let good = emulate_kernel(&p, &inputs, |_| usize::MAX);
    assert!(compare(&p, &good, &r, &tol).passed(&tol));

    let mut out = good.clone();
    out[5] = POISON_BITS;
    out[6] = POISON_BITS;
    let c = compare(&p, &out, &r, &tol);
    assert_eq!((c.unwritten, c.nan_count, c.inf_count), (2, 0, 0));
    let at = c.first_unwritten.expect("located");
    assert_eq!((at.row, at.col), (0, 5));
    assert!(!c.passed(&tol));

    let mut out = good.clone();
    out[40 * 32 + 3] = Dtype::F16.encode(f64::NAN);
    out[7] = Dtype::F16.encode(f64::INFINITY);
    let c = compare(&p, &out, &r, &tol);
    assert_eq!((c.unwritten, c.nan_count, c.inf_count), (0, 1, 1));
    assert!(c.rel_l2_err.is_finite());
    assert!(!c.passed(&tol));
    let at = c.first_nonfinite.expect("located");
    assert_eq!((at.head, at.row, at.col), (0, 0, 7));
}

#[test]
fn a_missing_softmax_scale_fails() {
    let (p, inputs, r) = setup(Dtype::F16, false, 64);
    let unscaled = Problem {
        softmax_scale: 1.0,
        ..p
    };
    let out = emulate_kernel(&unscaled, &inputs, |_| usize::MAX);
    let tol = Tolerance::for_dtype(Dtype::F16);
    assert!(!compare(&p, &out, &r, &tol).passed(&tol));
}

#[test]
fn default_tolerances_and_override() {
    assert_eq!(Tolerance::for_dtype(Dtype::F16).rel_l2, 1e-3);
    assert_eq!(Tolerance::for_dtype(Dtype::Bf16).rel_l2, 1e-2);
    let t = Tolerance::for_dtype(Dtype::F16).with_rel_l2(5e-2);
    assert_eq!(t.rel_l2, 5e-2);
    assert_eq!(t.unit_roundoff, Dtype::F16.unit_roundoff());
    // The bound grows with |ref|, with w and with S.
    let b = |e, w, s| t.element_bound(e, w, s);
    assert!(b(2.0, 1.0, 64) > b(1.0, 1.0, 64));
    assert!(b(1.0, 2.0, 64) > b(1.0, 1.0, 64));
    assert!(b(1.0, 1.0, 4096) > b(1.0, 1.0, 64));
}
