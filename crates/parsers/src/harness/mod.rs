//! The harness JSON schema (`exhibit.harness/1`), written by the `harness` binary and by the
//! baseline scripts in `kernel/baselines/`, read back by [`crate::parse`].
//!
//! One document per process:
//!
//! ```json
//! {"schema": "exhibit.harness/1", "producer": "harness" | "sdpa", "device": {...},
//!  "results": [{"mode": "check" | "stress" | "bench" | "once", ...}]}
//! ```
//!
//! Fields may be added; none is renamed or removed. Times are microseconds. Each result's
//! `details` object is typed in [`figures`] (a figure with no value is left out; older harnesses
//! wrote `null`). The parser reads a document into a parsed log, its results' failures as
//! findings (`harness_json.rs`); the schema itself reads nothing.

use serde::{Deserialize, Serialize};

use figures::ResultFigures;

pub mod figures;

pub const SCHEMA: &str = "exhibit.harness/1";

/// A whole harness or baseline document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessOutput {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `harness`, or the baseline's name (`sdpa`).
    pub producer: String,
    pub device: Option<Device>,
    pub results: Vec<HarnessResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Device {
    pub name: String,
    pub sm_count: Option<u32>,
    pub compute_capability: Option<String>,
    pub driver_version: Option<String>,
    pub l2_bytes: Option<u64>,
    pub memory_bytes: Option<u64>,
}

/// The problem a result is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub batch: u32,
    pub heads: u32,
    pub seq_len: u32,
    pub head_dim: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Once,
    Check,
    Stress,
    Bench,
}

/// One measurement or check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessResult {
    pub mode: Mode,
    /// Kernel entry point, or `sdpa:<backend>` for the baseline.
    pub kernel: String,
    /// The named config from pipeline.yaml, when known.
    #[serde(default)]
    pub config: Option<String>,
    pub shape: Shape,
    /// `f16` or `bf16`.
    pub dtype: String,
    pub causal: bool,
    /// Whether the kernel launched at all (false: a load or launch error came first).
    pub launched: bool,
    /// The CUDA error, if any, e.g. `CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure`.
    #[serde(default)]
    pub error: Option<String>,
    /// A reason the result was skipped (e.g. a baseline backend that is not available).
    #[serde(default)]
    pub skipped: Option<String>,
    #[serde(default)]
    pub check: Option<Check>,
    #[serde(default)]
    pub stress: Option<Stress>,
    #[serde(default)]
    pub bench: Option<Bench>,
    /// What the fields above have no place for (the document's `details` object: a check's
    /// `repeat_elements_differing`, `inf_count`, `elements_over_bound`, ...), typed; empty for
    /// a producer that records none.
    #[serde(default, rename = "details")]
    pub figures: ResultFigures,
}

/// Comparison with the f64 CPU reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub passed: bool,
    pub max_abs_err: f64,
    /// ||out - ref|| / ||ref||.
    pub rel_l2_err: f64,
    pub tolerance: f64,
    pub nan_count: u64,
    /// Elements still holding the NaN poison after the launch.
    pub unwritten: u64,
    /// Names of the guard regions found overwritten, if any.
    pub canaries_corrupted: Vec<String>,
}

/// Repeated launches on the same inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stress {
    pub launches: u64,
    /// `every`, `every:K` or `end`.
    pub sync: String,
    /// Launches whose output differed bitwise from the first.
    pub mismatched_launches: u64,
    /// 1-based index of the first launch that failed, if any.
    pub first_failure: Option<u64>,
    /// What failed there: `error`, `mismatch` or `canary`.
    pub failure_kind: Option<String>,
    pub canaries_corrupted: Vec<String>,
}

/// Timing statistics over the samples kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bench {
    /// `warm` or `cold` (L2 flushed between samples).
    pub cache: String,
    /// `events` or `graph` (CUDA-graph replay).
    pub timing: String,
    pub samples: u64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub tflops: f64,
    pub gbps: f64,
    #[serde(default)]
    pub sm_clock_mhz_before: Option<u32>,
    #[serde(default)]
    pub sm_clock_mhz_after: Option<u32>,
    #[serde(default)]
    pub throttled: Option<bool>,
    /// Every timing sample, in µs, in the order taken (absent from documents of older harnesses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_us: Vec<f64>,
}

/// The launch geometry the kernel reports through `attention_launch_info` (the kernel ABI's
/// eight ints), as the harness writes it under the top-level `harness.launch_info` object. The
/// harness launches the kernel with exactly these threads per block and this much dynamic
/// shared memory. Baseline documents carry none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchInfo {
    pub abi_version: u32,
    #[serde(default)]
    pub block_m: Option<u32>,
    #[serde(default)]
    pub block_n: Option<u32>,
    #[serde(default)]
    pub stages: Option<u32>,
    /// Threads per block the harness launches with.
    pub threads: u32,
    /// Dynamic shared memory per block the harness launches with, in bytes.
    pub dynamic_smem_bytes: u64,
    #[serde(default)]
    pub head_dim: Option<u32>,
}
