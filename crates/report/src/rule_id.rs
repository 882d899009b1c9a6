//! Every rule's id: a bottom-layer value that diagnoses, experiments and runs carry, apart from
//! the rules themselves ([`crate::rules::RULES`] has a row per id).

use serde::{Deserialize, Serialize};

/// Declares the rules, one line each (`Variant => "spelling" in module`): the enum,
/// [`RuleId::ALL`], [`RuleId::as_str`] and `with_rule_modules!`, which hands the registry
/// (`rules::RULES`) each id's module under `rules/`, whose `RULE` is its row. A new rule is its
/// module and its line here.
macro_rules! rule_ids {
    ($($id:ident => $text:literal in $module:ident,)*) => {
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

        /// Calls `$callback!` with every rule's module, in the order of the ids.
        macro_rules! with_rule_modules {
            ($callback:ident) => {
                $callback! { $($module,)* }
            };
        }
        pub(crate) use with_rule_modules;
    };
}

rule_ids! {
    CompileError => "compile-error" in compile_error,
    WmmaLocalMemory => "wmma-local-memory" in wmma_local,
    SharedMemoryRace => "shared-memory-race" in shared_race,
    OutOfBounds => "out-of-bounds" in out_of_bounds,
    UninitializedRead => "uninitialized-read" in uninitialized,
    DivergentBarrier => "divergent-barrier" in barrier,
    MisalignedAccess => "misaligned-access" in misaligned,
    LaunchRejected => "launch-rejected" in launch_rejected,
    RepeatedLaunchFailure => "repeated-launch-failure" in repeated_launch,
    WrongOutput => "wrong-output" in wrong_output,
    LaunchFailure => "launch-failure" in launch_failure,
    RegisterSpills => "register-spills" in local_memory,
    OccupancyLimit => "occupancy-limit" in occupancy,
    SlowKernel => "slow-kernel" in slow_kernel,
    Bottleneck => "bottleneck" in bottleneck,
    SlowerThanBaseline => "slower-than-baseline" in slower_than_baseline,
    CheckFailed => "check-failed" in check_failed,
    HostApiError => "host-api-error" in host_api,
    DebugBuild => "debug-build" in debug_build,
    LibraryKernel => "library-kernel" in library_kernel,
    SanitizerError => "sanitizer-error" in catch_all,
    PerfRegression => "perf-regression" in perf_regression,
    PerfImprovement => "perf-improvement" in perf_improvement,
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
