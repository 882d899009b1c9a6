//! `cases:`: problems (shape, dtypes, masks), and one instance of a case a unit runs.

use super::*;

/// A problem to run the kernel on: one shape, every listed dtype and mask.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub shape: Shape,
    #[serde(default = "default_dtypes")]
    pub dtypes: Vec<Dtype>,
    #[serde(default = "default_causal")]
    pub causal: Vec<bool>,
}

/// `B,H,S,D`: batch, heads, sequence length, head dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Shape {
    pub batch: u32,
    pub heads: u32,
    pub seq_len: u32,
    pub head_dim: u32,
}

/// Element type of Q, K, V and O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F16,
    Bf16,
}

/// One concrete problem a stage runs: a case with one dtype and one mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseInstance {
    pub case: String,
    pub shape: Shape,
    pub dtype: Dtype,
    pub causal: bool,
}

impl CaseInstance {
    /// A name usable as a path component, e.g. `seed-f16` or `long-bf16-causal`.
    pub fn label(&self) -> String {
        let mut label = format!("{}-{}", self.case, self.dtype);
        if self.causal {
            label.push_str("-causal");
        }
        label
    }
}

pub(crate) fn default_dtypes() -> Vec<Dtype> {
    vec![Dtype::F16]
}

pub(crate) fn default_causal() -> Vec<bool> {
    vec![false]
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shape `B,H,S,D` of four positive integers, e.g. \"2,8,512,64\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Shape, E> {
                v.parse().map_err(|()| {
                    E::custom(format!(
                        "invalid shape `{v}`: expected `B,H,S,D`, four positive integers such as \"2,8,512,64\""
                    ))
                })
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl std::str::FromStr for Shape {
    type Err = ();
    fn from_str(s: &str) -> Result<Shape, ()> {
        let parts: Vec<u32> = s
            .split(',')
            .map(|p| p.trim().parse::<u32>().map_err(|_| ()))
            .collect::<Result<_, _>>()?;
        match parts.as_slice() {
            &[batch, heads, seq_len, head_dim]
                if batch > 0 && heads > 0 && seq_len > 0 && head_dim > 0 =>
            {
                Ok(Shape {
                    batch,
                    heads,
                    seq_len,
                    head_dim,
                })
            }
            _ => Err(()),
        }
    }
}

/// The most device memory any GPU offers (288 GB of HBM3e on B300), as a bound on shapes.
pub const LARGEST_DEVICE_MEMORY: u128 = 288_000_000_000;

impl Shape {
    /// Elements in each of Q, K, V and O.
    pub fn elements(&self) -> u128 {
        [self.batch, self.heads, self.seq_len, self.head_dim]
            .iter()
            .map(|&n| u128::from(n))
            .product()
    }

    /// Why no GPU could hold this shape's Q, K, V and O in 16-bit floats, if none could.
    pub fn too_large(&self) -> Option<String> {
        let bytes = self.elements() * 4 * 2;
        (bytes > LARGEST_DEVICE_MEMORY).then(|| {
            format!(
                "shape `{self}` has {} elements per tensor: Q, K, V and O in 16-bit floats take \
                 {:.1} GB of device memory, more than any GPU has ({} GB)",
                self.elements(),
                bytes as f64 / 1e9,
                LARGEST_DEVICE_MEMORY / 1_000_000_000
            )
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.batch, self.heads, self.seq_len, self.head_dim
        )
    }
}

impl From<Shape> for String {
    fn from(shape: Shape) -> String {
        shape.to_string()
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        })
    }
}
