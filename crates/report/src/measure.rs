//! The figures of a profile a performance cause stands on, which the comparison with the
//! baseline's profile weighs (`contrast.rs`). A leaf: it imports nothing of the crate, so
//! that a draft can say what it stands on (`Draft::stands_on`) without the comparison.

/// A figure the comparison reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// 32-byte sectors the global loads touched over the fewest their bytes needed: 1 when
    /// coalesced.
    LoadSectors,
    /// The same for global stores.
    StoreSectors,
    /// Shared-memory wavefronts over the ideal: 1 without bank conflicts.
    SharedWavefronts,
    /// Tensor-core instructions executed.
    TensorInstructions,
    /// Waves of blocks per SM (ncu's `Waves Per SM`).
    WavesPerSm,
    /// Warps active per SM, achieved.
    WarpsPerSm,
    /// Global atomic operations per thread launched.
    Atomics,
    /// Local-memory bytes per thread launched.
    LocalBytes,
    /// Floating-point operations per byte loaded from global memory.
    Reuse,
    /// Achieved occupancy, percent of the SM's warp slots.
    Occupancy,
    /// DRAM throughput, percent of its peak.
    DramThroughput,
    /// L2 throughput, percent of its peak.
    L2Throughput,
    /// Warp instructions executed by the whole launch.
    Instructions,
    /// Warp instructions executed per element of the problem, where the pipeline gives the
    /// problem's size (`elements:` on the profile stage).
    InstructionsPerElement,
}

impl Measure {
    /// Whether a larger value costs time (else a smaller one does).
    pub(crate) fn higher_is_worse(self) -> bool {
        matches!(
            self,
            Measure::LoadSectors
                | Measure::StoreSectors
                | Measure::SharedWavefronts
                | Measure::Atomics
                | Measure::LocalBytes
                | Measure::Instructions
                | Measure::InstructionsPerElement
        )
    }

    /// Whether a figure that separates the two kernels is a cause of its own; the others
    /// (reuse, occupancy, throughputs, instructions) describe the two launches.
    pub fn names_cause(self) -> bool {
        !matches!(
            self,
            Measure::Reuse
                | Measure::Occupancy
                | Measure::DramThroughput
                | Measure::L2Throughput
                | Measure::Instructions
                | Measure::InstructionsPerElement
        )
    }

    /// How much worse than the baseline a figure must be to separate the two: sectors and
    /// wavefronts are bounded (4 to 32, 1 to 32), counts and rates are not.
    pub(crate) fn separates_at(self) -> f64 {
        match self {
            Measure::LoadSectors | Measure::StoreSectors | Measure::SharedWavefronts => 2.0,
            _ => 4.0,
        }
    }
}
