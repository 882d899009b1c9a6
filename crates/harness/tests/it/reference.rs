use harness::float::Dtype;
use harness::problem::{Inputs, Problem, Shape};
use harness::reference::{Reference, RowSelection, attend_row};

fn row(q: &[f64], k: &[f64], v: &[f64], keys: usize, scale: f64) -> (Vec<f64>, Vec<f64>) {
    let d = q.len();
    let (mut out, mut weight) = (vec![0.0; d], vec![0.0; d]);
    attend_row(q, k, v, keys, scale, &mut out, &mut weight, &mut Vec::new());
    (out, weight)
}

#[test]
fn one_key_returns_its_value() {
    let (out, weight) = row(&[0.3, -2.0], &[1.5, 0.25], &[4.0, -7.0], 1, 0.7);
    assert_eq!(out, vec![4.0, -7.0]);
    assert_eq!(weight, vec![4.0, 7.0]);
}

#[test]
fn two_keys_weighted_as_worked_by_hand() {
    // Scores 0 and ln 3: softmax (1/4, 3/4); values 1 and 5 give 1/4 + 15/4 = 4.
    let (out, _) = row(&[1.0], &[0.0, 3f64.ln()], &[1.0, 5.0], 2, 1.0);
    assert!((out[0] - 4.0).abs() < 1e-12, "{out:?}");
    // With values -1 and 5: -1/4 + 15/4 = 3.5, and sum p|v| = 1/4 + 15/4 = 4.
    let (out, weight) = row(&[1.0], &[0.0, 3f64.ln()], &[-1.0, 5.0], 2, 1.0);
    assert!((out[0] - 3.5).abs() < 1e-12);
    assert!((weight[0] - 4.0).abs() < 1e-12);
}

#[test]
fn zero_query_averages_the_values() {
    let v = [1.0, 2.0, 3.0, 10.0, -4.0, 0.5];
    let (out, _) = row(&[0.0, 0.0], &[9.0, 1.0, -3.0, 2.0, 5.0, 5.0], &v, 3, 1.0);
    assert!((out[0] - (1.0 + 3.0 - 4.0) / 3.0).abs() < 1e-12);
    assert!((out[1] - (2.0 + 10.0 + 0.5) / 3.0).abs() < 1e-12);
}

#[test]
fn huge_scores_select_the_best_key_without_overflow() {
    let (out, _) = row(&[1.0], &[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0], 3, 1e6);
    assert_eq!(out, vec![30.0]);
    let (out, _) = row(&[1.0], &[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0], 3, -1e6);
    assert_eq!(out, vec![10.0]);
}

#[test]
fn no_keys_is_defined_as_zero() {
    let (out, weight) = row(&[1.0, 2.0], &[], &[], 0, 1.0);
    assert_eq!(out, vec![0.0, 0.0]);
    assert_eq!(weight, vec![0.0, 0.0]);
}

fn small_problem(causal: bool) -> (Problem, Inputs) {
    let problem = Problem::new(Shape::new(2, 3, 37, 16), Dtype::F16, causal);
    let inputs = Inputs::generate(problem.shape, problem.dtype, 99);
    (problem, inputs)
}

#[test]
fn every_output_is_a_convex_combination_of_values() {
    for causal in [false, true] {
        let (p, inputs) = small_problem(causal);
        let s = p.shape;
        let r = Reference::compute(&p, &inputs, &RowSelection::all(s.seq_len));
        for bh in 0..s.batch_heads() {
            for (ri, &i) in r.rows().iter().enumerate() {
                let keys = if causal { i + 1 } else { s.seq_len };
                for d in 0..s.head_dim {
                    let col: Vec<f64> = (0..keys)
                        .map(|j| {
                            p.dtype
                                .decode(inputs.v[(bh * s.seq_len + j) * s.head_dim + d])
                        })
                        .collect();
                    let lo = col.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let o = r.output(bh, ri)[d];
                    assert!(o >= lo - 1e-12 && o <= hi + 1e-12);
                    assert!(r.weight(bh, ri)[d] >= o.abs() - 1e-12);
                }
            }
        }
    }
}

#[test]
fn causal_rows_ignore_later_keys_and_first_row_copies_v0() {
    let (p, mut inputs) = small_problem(true);
    let s = p.shape;
    let rows = RowSelection::all(s.seq_len);
    let before = Reference::compute(&p, &inputs, &rows);
    // Change the last key and value of every head: only the last row may move.
    for bh in 0..s.batch_heads() {
        for d in 0..s.head_dim {
            let at = (bh * s.seq_len + s.seq_len - 1) * s.head_dim + d;
            inputs.k[at] = Dtype::F16.encode(3.0);
            inputs.v[at] = Dtype::F16.encode(-5.0);
        }
    }
    let after = Reference::compute(&p, &inputs, &rows);
    for bh in 0..s.batch_heads() {
        for i in 0..s.seq_len - 1 {
            assert_eq!(before.output(bh, i), after.output(bh, i));
        }
        assert_ne!(
            before.output(bh, s.seq_len - 1),
            after.output(bh, s.seq_len - 1)
        );
        let v0: Vec<f64> = (0..s.head_dim)
            .map(|d| p.dtype.decode(inputs.v[bh * s.seq_len * s.head_dim + d]))
            .collect();
        assert_eq!(after.output(bh, 0), v0.as_slice());
    }
}

#[test]
fn non_causal_output_is_invariant_under_key_permutation() {
    let (p, inputs) = small_problem(false);
    let s = p.shape;
    let mut permuted = inputs.clone();
    let d = s.head_dim;
    for bh in 0..s.batch_heads() {
        for j in 0..s.seq_len {
            let src = (bh * s.seq_len + (s.seq_len - 1 - j)) * d;
            let dst = (bh * s.seq_len + j) * d;
            permuted.k[dst..dst + d].copy_from_slice(&inputs.k[src..src + d]);
            permuted.v[dst..dst + d].copy_from_slice(&inputs.v[src..src + d]);
        }
    }
    let rows = RowSelection::all(s.seq_len);
    let a = Reference::compute(&p, &inputs, &rows);
    let b = Reference::compute(&p, &permuted, &rows);
    for bh in 0..s.batch_heads() {
        for i in 0..s.seq_len {
            for (x, y) in a.output(bh, i).iter().zip(b.output(bh, i)) {
                assert!((x - y).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn parallel_reference_matches_row_by_row_computation() {
    // More heads than most hosts have cores, so chunks of several heads are exercised.
    let p = Problem::new(Shape::new(3, 23, 9, 8), Dtype::Bf16, false);
    let inputs = Inputs::generate(p.shape, p.dtype, 5);
    let rows = RowSelection::sampled(9, 4, 4, 4, 1);
    let r = Reference::compute(&p, &inputs, &rows);
    let dec = |t: &[u16]| t.iter().map(|&b| p.dtype.decode(b)).collect::<Vec<f64>>();
    let (q, k, v) = (dec(&inputs.q), dec(&inputs.k), dec(&inputs.v));
    let (s, d) = (9, 8);
    for bh in 0..p.shape.batch_heads() {
        for (ri, &i) in r.rows().iter().enumerate() {
            let base = bh * s * d;
            let (out, _) = row(
                &q[base + i * d..base + (i + 1) * d],
                &k[base..base + s * d],
                &v[base..base + s * d],
                s,
                f64::from(p.softmax_scale),
            );
            assert_eq!(r.output(bh, ri), out.as_slice(), "bh {bh} row {i}");
        }
    }
}

#[test]
fn sampled_rows_cover_edges_and_tile_boundaries() {
    let rows = RowSelection::sampled(1000, 40, 64, 128, 3);
    let r = rows.rows();
    assert!(r.len() >= 40);
    for must in [0, 1, 63, 64, 127, 128, 998, 999, 960, 896] {
        assert!(r.contains(&must), "row {must} missing from {r:?}");
    }
    assert!(r.windows(2).all(|w| w[0] < w[1]));
    assert!(!rows.is_complete());
    assert!(RowSelection::sampled(10, 40, 64, 64, 3).is_complete());
}

#[test]
fn budget_decides_between_all_rows_and_a_sample() {
    let small = Problem::new(Shape::new(2, 8, 512, 64), Dtype::F16, false);
    assert!(RowSelection::for_budget(&small, 2e10, 64, 64, 0).is_complete());
    let large = Problem::new(Shape::new(4, 16, 4096, 128), Dtype::Bf16, true);
    let rows = RowSelection::for_budget(&large, 2e10, 128, 64, 0);
    assert!(!rows.is_complete());
    let cost = 4.0 * 4096.0 * 128.0 * rows.rows().len() as f64 * 64.0;
    assert!(cost <= 2e10 * 1.5, "sampled reference costs {cost}");
}
