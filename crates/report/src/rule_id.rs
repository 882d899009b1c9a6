//! Every rule's id: a bottom-layer value that diagnoses, experiments and runs carry, apart from
//! the rules themselves ([`crate::rules::RULES`] has a row per id).

use serde::{Deserialize, Serialize};

/// Every rule's id, as reports, SARIF and fingerprints spell it (`wmma-local-memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleId {
    CompileError,
    WmmaLocalMemory,
    SharedMemoryRace,
    OutOfBounds,
    UninitializedRead,
    DivergentBarrier,
    MisalignedAccess,
    LaunchRejected,
    RepeatedLaunchFailure,
    WrongOutput,
    LaunchFailure,
    RegisterSpills,
    OccupancyLimit,
    TensorCoresIdle,
    SlowKernel,
    Bottleneck,
    SlowerThanBaseline,
    CheckFailed,
    HostApiError,
    DebugBuild,
    LibraryKernel,
    SanitizerError,
    PerfRegression,
    PerfImprovement,
}

impl RuleId {
    /// Every id, in declaration order (the order of [`crate::rules::RULES`]).
    pub const ALL: [RuleId; 24] = [
        RuleId::CompileError,
        RuleId::WmmaLocalMemory,
        RuleId::SharedMemoryRace,
        RuleId::OutOfBounds,
        RuleId::UninitializedRead,
        RuleId::DivergentBarrier,
        RuleId::MisalignedAccess,
        RuleId::LaunchRejected,
        RuleId::RepeatedLaunchFailure,
        RuleId::WrongOutput,
        RuleId::LaunchFailure,
        RuleId::RegisterSpills,
        RuleId::OccupancyLimit,
        RuleId::TensorCoresIdle,
        RuleId::SlowKernel,
        RuleId::Bottleneck,
        RuleId::SlowerThanBaseline,
        RuleId::CheckFailed,
        RuleId::HostApiError,
        RuleId::DebugBuild,
        RuleId::LibraryKernel,
        RuleId::SanitizerError,
        RuleId::PerfRegression,
        RuleId::PerfImprovement,
    ];

    /// The id as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::CompileError => "compile-error",
            RuleId::WmmaLocalMemory => "wmma-local-memory",
            RuleId::SharedMemoryRace => "shared-memory-race",
            RuleId::OutOfBounds => "out-of-bounds",
            RuleId::UninitializedRead => "uninitialized-read",
            RuleId::DivergentBarrier => "divergent-barrier",
            RuleId::MisalignedAccess => "misaligned-access",
            RuleId::LaunchRejected => "launch-rejected",
            RuleId::RepeatedLaunchFailure => "repeated-launch-failure",
            RuleId::WrongOutput => "wrong-output",
            RuleId::LaunchFailure => "launch-failure",
            RuleId::RegisterSpills => "register-spills",
            RuleId::OccupancyLimit => "occupancy-limit",
            RuleId::TensorCoresIdle => "tensor-cores-idle",
            RuleId::SlowKernel => "slow-kernel",
            RuleId::Bottleneck => "bottleneck",
            RuleId::SlowerThanBaseline => "slower-than-baseline",
            RuleId::CheckFailed => "check-failed",
            RuleId::HostApiError => "host-api-error",
            RuleId::DebugBuild => "debug-build",
            RuleId::LibraryKernel => "library-kernel",
            RuleId::SanitizerError => "sanitizer-error",
            RuleId::PerfRegression => "perf-regression",
            RuleId::PerfImprovement => "perf-improvement",
        }
    }

    /// The id spelled `text`, if a rule has it.
    pub fn parse(text: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for RuleId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for RuleId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
