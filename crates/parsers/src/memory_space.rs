//! Where a memory access goes, as the tools name it: a plain value that both the parsed log
//! (`model.rs`) and Nsight Compute's rule results (`ncu_rule.rs`) hold. It imports nothing of
//! the crate.

use serde::{Deserialize, Serialize};

/// A memory space named by compute-sanitizer (or by Nsight Compute's access-pattern rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySpace {
    Global,
    Shared,
    Local,
    Generic,
    /// Another block's shared memory in the same cluster (distributed shared memory, sm_90 on):
    /// memcheck's `__remote_shared__`.
    RemoteShared,
}
