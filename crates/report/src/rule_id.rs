//! Every rule's id: a bottom-layer value that diagnoses, experiments and runs carry, apart from
//! the rules themselves ([`crate::rules::RULES`] has a row per id).

use serde::{Deserialize, Serialize};

/// Declares the ids, one line each (`Variant => "spelling"`): the enum, [`RuleId::ALL`] and
/// [`RuleId::as_str`]. A new rule adds its line here and its row to `rules::RULES`.
macro_rules! rule_ids {
    ($($id:ident => $text:literal,)*) => {
        /// Every rule's id, as reports, SARIF and fingerprints spell it (`wmma-local-memory`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum RuleId {
            $(#[serde(rename = $text)] $id,)*
        }

        impl RuleId {
            /// Every id, in declaration order (the order of `rules::RULES`).
            pub const ALL: &[RuleId] = &[$(RuleId::$id,)*];

            /// The id as reports spell it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$id => $text,)*
                }
            }
        }
    };
}

rule_ids! {
    CompileError => "compile-error",
    WmmaLocalMemory => "wmma-local-memory",
    SharedMemoryRace => "shared-memory-race",
    OutOfBounds => "out-of-bounds",
    UninitializedRead => "uninitialized-read",
    DivergentBarrier => "divergent-barrier",
    MisalignedAccess => "misaligned-access",
    LaunchRejected => "launch-rejected",
    RepeatedLaunchFailure => "repeated-launch-failure",
    WrongOutput => "wrong-output",
    LaunchFailure => "launch-failure",
    RegisterSpills => "register-spills",
    OccupancyLimit => "occupancy-limit",
    TensorCoresIdle => "tensor-cores-idle",
    SlowKernel => "slow-kernel",
    Bottleneck => "bottleneck",
    SlowerThanBaseline => "slower-than-baseline",
    CheckFailed => "check-failed",
    HostApiError => "host-api-error",
    DebugBuild => "debug-build",
    LibraryKernel => "library-kernel",
    SanitizerError => "sanitizer-error",
    PerfRegression => "perf-regression",
    PerfImprovement => "perf-improvement",
}

impl RuleId {
    /// The id spelled `text`, if a rule has it.
    pub fn parse(text: &str) -> Option<RuleId> {
        RuleId::ALL.iter().copied().find(|r| r.as_str() == text)
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
