//! Seeded random problem shapes for `--random-shapes`, led by the sequence lengths where tiled
//! kernels go wrong.

use crate::prng::SplitMix64;
use crate::problem::Shape;

/// `count` shapes with the kernel's fixed `head_dim`. The first ones cover, in order: S = 1;
/// S < BLOCK_N; S = BLOCK_N + 1 and S = 2*BLOCK_M + 3 (a partial last tile of both kinds);
/// S = 3*BLOCK_M (whole tiles only); S = BLOCK_N - 1. The rest draw S up to 6 tiles and B, H
/// small, so each shape stays quick to check against the f64 reference.
pub fn random_shapes(
    count: usize,
    seed: u64,
    head_dim: usize,
    block_m: usize,
    block_n: usize,
) -> Vec<Shape> {
    let (bm, bn) = (block_m.max(1), block_n.max(1));
    let mut rng = SplitMix64::for_stream(seed, "random-shapes");
    let edges = [
        1,
        (bn / 2).max(1) + 1,
        bn + 1,
        2 * bm + 3,
        3 * bm,
        bn.saturating_sub(1).max(1),
    ];
    let longest = 6 * bm.max(bn);
    (0..count)
        .map(|i| {
            let seq_len = match edges.get(i) {
                Some(&s) => s,
                None => rng.range_inclusive(1, longest as u64) as usize,
            };
            let batch = rng.range_inclusive(1, 3) as usize;
            let heads = rng.range_inclusive(1, 4) as usize;
            Shape::new(batch, heads, seq_len, head_dim)
        })
        .collect()
}
