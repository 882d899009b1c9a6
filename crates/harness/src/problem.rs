//! One attention problem: its shape, dtype, mask and scale, its seeded inputs, and the work it
//! represents (FLOPs and bytes) for throughput figures.

use crate::float::Dtype;
use crate::prng::SplitMix64;

/// `[batch, heads, seq_len, head_dim]`, the layout of Q, K, V and O (contiguous).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub batch: usize,
    pub heads: usize,
    pub seq_len: usize,
    pub head_dim: usize,
}

/// Why a `B,H,S,D` string is not a usable shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("expected four comma-separated integers B,H,S,D, got `{0}`")]
    Syntax(String),
    #[error("{dim} must be at least 1")]
    Zero { dim: &'static str },
    #[error("{dim} = {value} does not fit the kernel's 32-bit int parameters")]
    TooLarge { dim: &'static str, value: usize },
    #[error("B*H = {0} exceeds the grid's y limit of 65535 blocks")]
    GridY(usize),
    #[error("B*H*S*D = {0} elements overflow a 32-bit element index")]
    Elements(usize),
}

impl Shape {
    pub fn new(batch: usize, heads: usize, seq_len: usize, head_dim: usize) -> Self {
        Self {
            batch,
            heads,
            seq_len,
            head_dim,
        }
    }

    /// Parses `B,H,S,D` and checks that the kernel ABI can address it.
    pub fn parse(text: &str) -> Result<Self, ShapeError> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let [b, h, s, d] = parts.as_slice() else {
            return Err(ShapeError::Syntax(text.to_string()));
        };
        let num = |t: &str| {
            t.parse::<usize>()
                .map_err(|_| ShapeError::Syntax(text.to_string()))
        };
        let shape = Shape::new(num(b)?, num(h)?, num(s)?, num(d)?);
        shape.validate()?;
        Ok(shape)
    }

    /// Checks the limits the kernel ABI imposes (32-bit int parameters, grid y = B*H).
    pub fn validate(&self) -> Result<(), ShapeError> {
        for (dim, value) in [
            ("B", self.batch),
            ("H", self.heads),
            ("S", self.seq_len),
            ("D", self.head_dim),
        ] {
            if value == 0 {
                return Err(ShapeError::Zero { dim });
            }
            if value > i32::MAX as usize {
                return Err(ShapeError::TooLarge { dim, value });
            }
        }
        let bh = self.batch.saturating_mul(self.heads);
        if bh > 65535 {
            return Err(ShapeError::GridY(bh));
        }
        let elements = bh
            .saturating_mul(self.seq_len)
            .saturating_mul(self.head_dim);
        if elements > i32::MAX as usize {
            return Err(ShapeError::Elements(elements));
        }
        Ok(())
    }

    /// Elements in each of Q, K, V and O.
    pub fn elements(&self) -> usize {
        self.batch * self.heads * self.seq_len * self.head_dim
    }

    /// Number of (batch, head) pairs: the grid's y dimension.
    pub fn batch_heads(&self) -> usize {
        self.batch * self.heads
    }

    pub fn to_schema(&self) -> parsers::harness::Shape {
        let c = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        parsers::harness::Shape {
            batch: c(self.batch),
            heads: c(self.heads),
            seq_len: c(self.seq_len),
            head_dim: c(self.head_dim),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.batch, self.heads, self.seq_len, self.head_dim
        )
    }
}

/// Everything that defines the function the kernel must compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Problem {
    pub shape: Shape,
    pub dtype: Dtype,
    pub causal: bool,
    /// Passed to the kernel as given; the reference uses this exact `f32` value.
    pub softmax_scale: f32,
}

impl Problem {
    /// A problem with the conventional scale 1/sqrt(head_dim).
    pub fn new(shape: Shape, dtype: Dtype, causal: bool) -> Self {
        Self {
            shape,
            dtype,
            causal,
            softmax_scale: 1.0 / (shape.head_dim as f32).sqrt(),
        }
    }

    /// Floating-point operations of one forward pass: two matrix products of 2*S*S*D each per
    /// (batch, head), so 4*B*H*S*S*D; causal masking skips half of them.
    pub fn flops(&self) -> f64 {
        let s = self.shape;
        let full =
            4.0 * (s.batch * s.heads) as f64 * (s.seq_len as f64).powi(2) * s.head_dim as f64;
        if self.causal { full / 2.0 } else { full }
    }

    /// The fewest bytes a forward pass moves through device memory: Q, K and V read once, O
    /// written once.
    pub fn min_bytes(&self) -> f64 {
        4.0 * self.shape.elements() as f64 * self.dtype.size_bytes() as f64
    }

    /// A one-line description for messages: `2,8,512,64 f16 causal`.
    pub fn label(&self) -> String {
        format!(
            "{} {} {}",
            self.shape,
            self.dtype,
            if self.causal { "causal" } else { "non-causal" }
        )
    }
}

/// Q, K and V as raw 16-bit patterns, in the kernel's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub q: Vec<u16>,
    pub k: Vec<u16>,
    pub v: Vec<u16>,
}

impl Inputs {
    /// Standard normal values rounded to the dtype, each tensor from its own stream of `seed`.
    /// No element is zero: a draw that rounds to +-0 is drawn again, so an output that a kernel
    /// never wrote cannot pass for a product of zeros. Element `i` is a function of `i` (its
    /// draws sit at fixed positions of the stream), so the tensors are filled by every core at
    /// once, with the same values on any machine.
    pub fn generate(shape: Shape, dtype: Dtype, seed: u64) -> Self {
        let n = shape.elements();
        let tensor = |name: &str| {
            let rng = SplitMix64::for_stream(seed, name);
            // Elements 2p and 2p + 1 are the two values of pair p; a redraw of either takes the
            // same branch of a pair past every first draw (p + pairs, p + 2 pairs, ...).
            let pairs = n.div_ceil(2) as u64;
            let redraw = |i: usize| {
                (1u64..)
                    .map(|attempt| {
                        let (a, b) = rng.normal_pair_at((i / 2) as u64 + attempt * pairs);
                        dtype.encode(if i.is_multiple_of(2) { a } else { b })
                    })
                    .find(|bits| bits & 0x7FFF != 0)
                    .unwrap_or(1)
            };
            let (rng, redraw) = (&rng, &redraw);
            let mut out = vec![0u16; n];
            let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
            // Chunks of whole pairs.
            let chunk = (n.div_ceil(threads).max(1 << 16) + 1) & !1;
            std::thread::scope(|scope| {
                for (c, part) in out.chunks_mut(chunk).enumerate() {
                    scope.spawn(move || {
                        let first = c * chunk;
                        for (j, slots) in part.chunks_mut(2).enumerate() {
                            let i = first + 2 * j;
                            let (a, b) = rng.normal_pair_at((i / 2) as u64);
                            for (k, (slot, z)) in slots.iter_mut().zip([a, b]).enumerate() {
                                let bits = dtype.encode(z);
                                *slot = if bits & 0x7FFF != 0 {
                                    bits
                                } else {
                                    redraw(i + k)
                                };
                            }
                        }
                    });
                }
            });
            out
        };
        Inputs {
            q: tensor("q"),
            k: tensor("k"),
            v: tensor("v"),
        }
    }
}
