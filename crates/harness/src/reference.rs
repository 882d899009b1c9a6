//! The f64 CPU reference: plain (not online) softmax attention over the exact values the kernel
//! received, plus, per output element, the magnitude sum that bounds its rounding error (see
//! [`crate::tolerance`]).

use crate::prng::SplitMix64;
use crate::problem::{Inputs, Problem, Shape};

/// Reference outputs for a set of query rows, the same rows in every (batch, head).
#[derive(Debug, Clone)]
pub struct Reference {
    shape: Shape,
    rows: Vec<usize>,
    /// `[bh][row][d]`: sum_j p_j v_j.
    out: Vec<f64>,
    /// `[bh][row][d]`: sum_j p_j |v_j|, the scale of the rounding error of `out`.
    weight: Vec<f64>,
}

impl Reference {
    /// Computes the reference for `rows` (query positions; sorted, unique, each `< seq_len`) on
    /// every available core.
    pub fn compute(problem: &Problem, inputs: &Inputs, rows: &RowSelection) -> Reference {
        let shape = problem.shape;
        let decode =
            |t: &[u16]| -> Vec<f64> { t.iter().map(|&b| problem.dtype.decode(b)).collect() };
        let (q, k, v) = (decode(&inputs.q), decode(&inputs.k), decode(&inputs.v));
        let rows = rows.rows().to_vec();
        let d = shape.head_dim;
        let per_bh = rows.len() * d;
        let mut out = vec![0.0; shape.batch_heads() * per_bh];
        let mut weight = vec![0.0; shape.batch_heads() * per_bh];
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 64);
        let bh_per_thread = shape.batch_heads().div_ceil(threads).max(1);
        let chunk = (bh_per_thread * per_bh).max(1);
        let scale = f64::from(problem.softmax_scale);
        let causal = problem.causal;
        std::thread::scope(|scope| {
            for (t, (out_chunk, weight_chunk)) in out
                .chunks_mut(chunk)
                .zip(weight.chunks_mut(chunk))
                .enumerate()
            {
                let (q, k, v, rows) = (&q, &k, &v, &rows);
                scope.spawn(move || {
                    let mut scores = Vec::with_capacity(shape.seq_len);
                    let first_bh = t * bh_per_thread;
                    for (local, (o_bh, w_bh)) in out_chunk
                        .chunks_mut(per_bh.max(1))
                        .zip(weight_chunk.chunks_mut(per_bh.max(1)))
                        .enumerate()
                    {
                        let bh = first_bh + local;
                        let base = bh * shape.seq_len * d;
                        let span = base..base + shape.seq_len * d;
                        let (k_bh, v_bh) = (&k[span.clone()], &v[span]);
                        for (r, &i) in rows.iter().enumerate() {
                            let q_row = &q[base + i * d..base + (i + 1) * d];
                            let keys = if causal { i + 1 } else { shape.seq_len };
                            attend_row(
                                q_row,
                                k_bh,
                                v_bh,
                                keys,
                                scale,
                                &mut o_bh[r * d..(r + 1) * d],
                                &mut w_bh[r * d..(r + 1) * d],
                                &mut scores,
                            );
                        }
                    }
                });
            }
        });
        Reference {
            shape,
            rows,
            out,
            weight,
        }
    }

    /// The query positions this reference covers (the same in every batch and head).
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Reference output of row number `r` of [`Self::rows`] in (batch, head) pair `bh`.
    pub fn output(&self, bh: usize, r: usize) -> &[f64] {
        let d = self.shape.head_dim;
        let at = (bh * self.rows.len() + r) * d;
        &self.out[at..at + d]
    }

    /// sum_j p_j |v_j| for the same row: what the rounding error of that row is proportional to.
    pub fn weight(&self, bh: usize, r: usize) -> &[f64] {
        let d = self.shape.head_dim;
        let at = (bh * self.rows.len() + r) * d;
        &self.weight[at..at + d]
    }
}

/// One query row against the first `keys` keys: softmax(scale * q.K^T) V with the maximum
/// subtracted before `exp` (plain softmax, no online rescaling). A row with no keys is defined
/// as zero.
#[allow(clippy::too_many_arguments)]
pub fn attend_row(
    q_row: &[f64],
    k: &[f64],
    v: &[f64],
    keys: usize,
    scale: f64,
    out: &mut [f64],
    weight: &mut [f64],
    scores: &mut Vec<f64>,
) {
    let d = q_row.len();
    out.fill(0.0);
    weight.fill(0.0);
    if keys == 0 || d == 0 {
        return;
    }
    scores.clear();
    scores.extend(
        k.chunks_exact(d)
            .take(keys)
            .map(|k_row| scale * q_row.iter().zip(k_row).map(|(a, b)| a * b).sum::<f64>()),
    );
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        total += *s;
    }
    for (p, v_row) in scores.iter().zip(v.chunks_exact(d)) {
        for ((o, w), &x) in out.iter_mut().zip(weight.iter_mut()).zip(v_row) {
            *o += p * x;
            *w += p * x.abs();
        }
    }
    for (o, w) in out.iter_mut().zip(weight.iter_mut()) {
        *o /= total;
        *w /= total;
    }
}

/// The query positions a check compares against the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSelection {
    rows: Vec<usize>,
    seq_len: usize,
}

impl RowSelection {
    pub fn all(seq_len: usize) -> Self {
        Self {
            rows: (0..seq_len).collect(),
            seq_len,
        }
    }

    /// About `count` rows: the first and last rows, the rows on either side of every tile
    /// boundary of `block_m` and `block_n` (where masking and tail handling go wrong), and
    /// seeded random rows for the rest.
    pub fn sampled(
        seq_len: usize,
        count: usize,
        block_m: usize,
        block_n: usize,
        seed: u64,
    ) -> Self {
        if count >= seq_len {
            return Self::all(seq_len);
        }
        let mut rows = vec![0, 1, seq_len.saturating_sub(2), seq_len - 1];
        for block in [block_m, block_n] {
            if block == 0 {
                continue;
            }
            let mut edge = block;
            while edge < seq_len && rows.len() < count {
                rows.extend([edge - 1, edge]);
                edge += block;
            }
            // The last, partial tile.
            let tail = seq_len - seq_len % block;
            if tail < seq_len {
                rows.push(tail);
            }
        }
        let mut rng = SplitMix64::for_stream(seed, "rows");
        rows.retain(|&r| r < seq_len);
        rows.sort_unstable();
        rows.dedup();
        while rows.len() < count {
            let r = rng.below(seq_len as u64) as usize;
            if let Err(at) = rows.binary_search(&r) {
                rows.insert(at, r);
            }
        }
        Self { rows, seq_len }
    }

    /// All rows when the reference costs at most `max_flops`, else a sample sized to fit it (at
    /// least 32 rows per head).
    pub fn for_budget(
        problem: &Problem,
        max_flops: f64,
        block_m: usize,
        block_n: usize,
        seed: u64,
    ) -> Self {
        let s = problem.shape;
        let per_row = 4.0 * s.seq_len as f64 * s.head_dim as f64;
        let rows_total = (s.batch_heads() * s.seq_len) as f64;
        if per_row * rows_total <= max_flops {
            return Self::all(s.seq_len);
        }
        let per_head = (max_flops / per_row / s.batch_heads() as f64)
            .floor()
            .max(32.0) as usize;
        Self::sampled(s.seq_len, per_head, block_m, block_n, seed)
    }

    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// Whether every row is covered.
    pub fn is_complete(&self) -> bool {
        self.rows.len() == self.seq_len
    }
}
