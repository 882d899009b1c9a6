//! IEEE binary16 (`f16`) and bfloat16 (`bf16`) encoding and decoding, round-to-nearest-even,
//! straight from `f64` (no double rounding through `f32`).

use serde::{Deserialize, Serialize};

/// The element type of Q, K, V and O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F16,
    Bf16,
}

/// The bit pattern written over outputs before each launch: `0xFFFF` is a NaN in both formats
/// (all exponent bits set, non-zero mantissa, sign set). Kernels that compute a NaN produce a
/// canonical positive NaN instead, so an element still holding exactly this pattern was never
/// written.
pub const POISON_BITS: u16 = 0xFFFF;

impl Dtype {
    /// `f16` or `bf16`, as the JSON and the CLI spell it.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }

    /// Bytes per element (both formats are 16-bit).
    pub fn size_bytes(self) -> usize {
        2
    }

    /// The kernel entry point that the ABI names for this dtype.
    pub fn default_kernel(self) -> &'static str {
        match self {
            Dtype::F16 => "attention_fwd_f16",
            Dtype::Bf16 => "attention_fwd_bf16",
        }
    }

    /// The unit roundoff u = 2^-(mantissa bits + 1): the largest relative error of one rounding.
    pub fn unit_roundoff(self) -> f64 {
        exp2i(-(self.format().man_bits as i32) - 1)
    }

    /// Rounds `x` to the nearest representable value (ties to even) and returns its bits.
    pub fn encode(self, x: f64) -> u16 {
        self.format().encode(x)
    }

    /// The exact value of a bit pattern.
    pub fn decode(self, bits: u16) -> f64 {
        self.format().decode(bits)
    }

    /// Whether a bit pattern is a NaN.
    pub fn is_nan(self, bits: u16) -> bool {
        let f = self.format();
        let exp_mask = ((1u32 << f.exp_bits) - 1) << f.man_bits;
        let man_mask = (1u32 << f.man_bits) - 1;
        let b = u32::from(bits);
        b & exp_mask == exp_mask && b & man_mask != 0
    }

    /// Whether a bit pattern is +-infinity.
    pub fn is_infinite(self, bits: u16) -> bool {
        let f = self.format();
        let exp_mask = ((1u32 << f.exp_bits) - 1) << f.man_bits;
        u32::from(bits) & 0x7FFF == exp_mask
    }

    fn format(self) -> Format {
        match self {
            Dtype::F16 => Format {
                exp_bits: 5,
                man_bits: 10,
            },
            Dtype::Bf16 => Format {
                exp_bits: 8,
                man_bits: 7,
            },
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A 16-bit binary floating-point format: 1 sign bit, `exp_bits`, `man_bits`.
#[derive(Debug, Clone, Copy)]
struct Format {
    exp_bits: u32,
    man_bits: u32,
}

impl Format {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    fn max_biased_exp(self) -> i32 {
        (1 << self.exp_bits) - 1
    }

    fn decode(self, bits: u16) -> f64 {
        let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> self.man_bits) & ((1 << self.exp_bits) - 1) as u16);
        let man = f64::from(bits & ((1u16 << self.man_bits) - 1));
        let scale = exp2i(self.man_bits as i32);
        if exp == self.max_biased_exp() {
            if man == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            }
        } else if exp == 0 {
            sign * man / scale * exp2i(1 - self.bias())
        } else {
            sign * (1.0 + man / scale) * exp2i(exp - self.bias())
        }
    }

    fn encode(self, x: f64) -> u16 {
        let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
        let inf_bits = (self.max_biased_exp() as u16) << self.man_bits;
        if x.is_nan() {
            // The canonical quiet NaN: all exponent bits and the top mantissa bit.
            return inf_bits | (1 << (self.man_bits - 1));
        }
        let a = x.abs();
        if a.is_infinite() {
            return sign | inf_bits;
        }
        if a == 0.0 {
            return sign;
        }
        let raw_exp = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        let min_normal_exp = 1 - self.bias();
        let man_bits = self.man_bits as i32;
        if raw_exp < min_normal_exp {
            // Subnormal (or zero after rounding): units of 2^(min_normal_exp - man_bits). A
            // result of 2^man_bits is the smallest normal, whose bits are that same integer.
            let q = (a * exp2i(man_bits - min_normal_exp)).round_ties_even();
            return sign | q as u16;
        }
        let q = (a * exp2i(man_bits - raw_exp)).round_ties_even() as u32;
        let (exp, q) = if q == 1 << (man_bits + 1) {
            (raw_exp + 1, q >> 1)
        } else {
            (raw_exp, q)
        };
        let biased = exp + self.bias();
        if biased >= self.max_biased_exp() {
            return sign | inf_bits;
        }
        sign | ((biased as u16) << self.man_bits) | (q - (1 << self.man_bits)) as u16
    }
}

/// 2^k exactly, for k in the normal range of f64.
fn exp2i(k: i32) -> f64 {
    let k = k.clamp(-1022, 1023);
    f64::from_bits(((k + 1023) as u64) << 52)
}
