//! A small seeded pseudo-random generator (SplitMix64), so that every input, canary pattern and
//! random shape is reproducible from one `--seed` without an external dependency.

/// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit state advanced by a Weyl sequence and mixed
/// by a bijective finaliser. Fast, statistically sound for test data, and trivially seedable.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
    spare_normal: Option<f64>,
}

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    /// A generator whose whole output sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed,
            spare_normal: None,
        }
    }

    /// A generator for one named purpose (a tensor, a canary region) derived from a run seed, so
    /// that adding a new consumer never shifts the values another one draws.
    pub fn for_stream(seed: u64, stream: &str) -> Self {
        let mut h = Self::new(seed ^ 0xC0FF_EE00_D15E_A5E5);
        let mut acc = h.next_u64();
        for byte in stream.bytes() {
            acc = mix(acc ^ u64::from(byte));
        }
        Self::new(acc)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// The `index`-th value [`SplitMix64::next_u64`] returns (0 first), without advancing: the
    /// state is a Weyl sequence, so any position is one multiplication away, and draws can be
    /// made in any order, on any number of threads, with the same result.
    pub fn u64_at(&self, index: u64) -> u64 {
        mix(self
            .state
            .wrapping_add(GOLDEN_GAMMA.wrapping_mul(index.wrapping_add(1))))
    }

    /// Two independent standard normal values from the `index`-th pair of draws (Box-Muller):
    /// a function of the index alone.
    pub fn normal_pair_at(&self, index: u64) -> (f64, f64) {
        let unit = |x: u64| (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let pair = index.wrapping_mul(2);
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - unit(self.u64_at(pair));
        let u2 = unit(self.u64_at(pair.wrapping_add(1)));
        let r = (-2.0 * u1.ln()).sqrt();
        let (sin, cos) = (std::f64::consts::TAU * u2).sin_cos();
        (r * cos, r * sin)
    }

    /// A uniform integer in `[0, bound)`; `bound` must be non-zero (0 gives 0). Unbiased
    /// (rejection of the short last interval).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % bound;
            }
        }
    }

    /// A uniform integer in `[lo, hi]` (the bounds in either order).
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// A standard normal value (Box-Muller; the second value of each pair is kept for the next
    /// call).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::TAU * u2;
        self.spare_normal = Some(r * theta.sin());
        r * theta.cos()
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
