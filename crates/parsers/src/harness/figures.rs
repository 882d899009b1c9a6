//! What a harness result records beyond its schema's fields: the document's `details` object,
//! typed. Each mode writes its own (a check its bounds and worst element, a stress run its
//! first mismatch, a bench its sampling and clocks, the SDPA baseline why it stopped); a figure
//! is absent where the producer recorded none, and one of another type than the harness writes
//! is read as absent, so a producer's odd figure never makes its whole document unreadable.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

/// The figures of one result (`results[].details`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResultFigures {
    // A CUDA error, in any mode.
    /// The call that returned the result's CUDA `error` (`cuLaunchKernel`, `cuCtxSynchronize`).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cuda_error_call: Option<String>,
    /// Whether that error is sticky: the context is lost, and no later launch of the process
    /// can run.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub cuda_error_sticky: Option<bool>,

    // `--mode check`.
    /// The seed the check's inputs were drawn from.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The step a CUDA error came at when it was not the first launch (`second launch`).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub failed_on: Option<String>,
    /// Output elements a second launch on the same inputs changed.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub repeat_elements_differing: Option<u64>,
    /// Infinite output elements (check and once).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub inf_count: Option<u64>,
    /// Compared elements whose error exceeds their own bound.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub elements_over_bound: Option<u64>,
    /// The largest error / bound ratio over the compared elements.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub worst_bound_ratio: Option<f64>,
    /// The element with that ratio.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub worst_element: Option<WorstElement>,
    /// The first element still holding the poison pattern.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub first_unwritten: Option<ElementAt>,
    /// The first NaN or infinite element.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub first_nonfinite: Option<ElementAt>,
    /// Elements compared with the reference (all of them unless rows were sampled).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub elements_compared: Option<u64>,
    /// Elements in the output.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub elements_total: Option<u64>,
    /// Rows of each head the reference computed.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub rows_compared_per_head: Option<u64>,
    /// Whether the reference computed every row.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub reference_complete: Option<bool>,
    /// The dtype's unit roundoff and the factor of the per-element bound.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub unit_roundoff: Option<f64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub element_bound_factor: Option<f64>,
    /// Seconds the CPU reference took.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub reference_seconds: Option<f64>,
    /// The guard regions found overwritten, and how.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub canary_details: Option<Vec<Corruption>>,

    // `--mode once`.
    /// Elements still holding the poison pattern, and NaN elements.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub unwritten: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub nan_count: Option<u64>,
    /// The guard regions found overwritten, and how.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub canaries_corrupted: Option<Vec<Corruption>>,

    // `--mode stress`.
    /// Launches whose output was compared with the first's.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub launches_verified: Option<u64>,
    /// The first and last launch between the last good synchronisation and the failure.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub failure_window: Option<(u64, u64)>,
    /// The first launch whose output differed from the first launch's.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub first_mismatch: Option<MismatchDetail>,
    /// The first launch that changed a guard region, and how.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub first_corruption: Option<LaunchCorruption>,
    /// What the first launch's output held.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub first_output: Option<OutputScan>,
    /// Seconds the launches took.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,

    // `--mode bench`, and the SDPA baseline (`warmup_mean_us`, `launches_per_sample`, `stop`).
    /// Why the SM clock could not be measured.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub clock_probe_error: Option<String>,
    /// Warm-up launches, and their mean time in µs.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub warmup_launches: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub warmup_mean_us: Option<f64>,
    /// The buffer written between cold samples to flush L2, in bytes.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub flush_bytes: Option<u64>,
    /// Launches per timed sample (a CUDA graph's replay holds several).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub launches_per_sample: Option<u64>,
    /// Output elements unwritten, and NaN or infinite, after the last sample.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub output_unwritten: Option<u64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub output_nonfinite: Option<u64>,
    /// The slowest sample, in µs.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    /// Why sampling stopped (the harness's word).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Why sampling stopped (the SDPA baseline's word).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// The median's confidence interval and the mean's standard error, relative to them.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub median_ci_rel: Option<f64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub mean_rel_sem: Option<f64>,
    /// The relative noise sampling stops at.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub target_noise: Option<f64>,
    /// Seconds sampling took.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub sampling_seconds: Option<f64>,
    /// The problem's floating-point operations and its fewest bytes moved.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// How the SM clock was measured, in words.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub clock_method: Option<String>,
    /// The device's highest SM clock, in MHz.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    /// Measured device-to-device copy bandwidth (GB/s), the bench's share of it, or why it
    /// could not be measured.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub peak_copy_gbps: Option<f64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub gbps_share_of_copy_peak: Option<f64>,
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub peak_copy_error: Option<String>,
    /// The DRAM bandwidth the device's memory clock and bus width allow (GB/s).
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub dram_theoretical_gbps: Option<f64>,
    /// What the compute peak is compared with, in words.
    #[serde(deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub compute_peak: Option<String>,
}

/// Reads a figure as its type, or as absent when the producer wrote another.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// Where an element sits in `[batch, heads, seq_len, head_dim]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementAt {
    pub batch: usize,
    pub head: usize,
    pub row: usize,
    pub col: usize,
}

/// The worst element against its bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorstElement {
    pub at: ElementAt,
    pub got: f64,
    pub expected: f64,
    pub bound: f64,
}

/// A guard region whose bytes changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corruption {
    /// `buffer.side` (`o.after`).
    pub region: String,
    /// Number of bytes that differ.
    pub bytes_changed: usize,
    /// Distance in bytes from the data to the nearest changed byte: 0 is the byte right after
    /// the data's end (`after`) or right before its start (`before`).
    pub nearest_to_data: usize,
    /// Distance from the data to the farthest changed byte.
    pub farthest_from_data: usize,
}

/// The first launch whose output differed from the first launch's, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MismatchDetail {
    /// 1-based.
    pub launch: u64,
    pub elements_differing: u64,
    pub first_index: usize,
}

/// The first launch that changed a guard region, and the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchCorruption {
    pub launch: u64,
    pub corruption: Corruption,
}

/// What an output held: elements never written, NaN and infinite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputScan {
    pub unwritten: u64,
    pub nan_count: u64,
    pub inf_count: u64,
}
