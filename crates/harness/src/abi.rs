//! The kernel ABI's launch description: `attention_launch_info(int* out)` writes eight ints,
//! `{abi_version, BLOCK_M, BLOCK_N, STAGES, threads_per_block, dynamic_smem_bytes, HEAD_DIM, 0}`.

use serde::Serialize;

/// The ABI version this harness speaks.
pub const ABI_VERSION: i32 = 1;

/// The entry point that describes a compiled config.
pub const LAUNCH_INFO_SYMBOL: &str = "attention_launch_info";

/// The value the harness fills the eight ints with before asking: a kernel that writes nothing
/// leaves it there.
pub const UNWRITTEN_WORD: i32 = -1;

/// A compiled config as the kernel describes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LaunchInfo {
    pub abi_version: i32,
    pub block_m: u32,
    pub block_n: u32,
    pub stages: u32,
    pub threads: u32,
    pub dynamic_smem_bytes: u32,
    pub head_dim: u32,
}

/// Why the eight ints do not describe a launchable config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AbiError {
    #[error("attention_launch_info wrote nothing (its output still holds the fill value)")]
    NotWritten,
    #[error("attention_launch_info reports abi_version {0}, this harness speaks {ABI_VERSION}")]
    Version(i32),
    #[error("attention_launch_info reports {field} = {value}, which cannot be launched")]
    Field { field: &'static str, value: i32 },
}

impl LaunchInfo {
    /// Validates the eight ints.
    pub fn from_words(words: &[i32; 8]) -> Result<Self, AbiError> {
        if words.iter().all(|&w| w == UNWRITTEN_WORD) {
            return Err(AbiError::NotWritten);
        }
        if words[0] != ABI_VERSION {
            return Err(AbiError::Version(words[0]));
        }
        let positive = |field: &'static str, value: i32, max: i32| {
            if (1..=max).contains(&value) {
                Ok(value as u32)
            } else {
                Err(AbiError::Field { field, value })
            }
        };
        let threads = positive("threads_per_block", words[4], 1024)?;
        if !threads.is_multiple_of(32) {
            return Err(AbiError::Field {
                field: "threads_per_block",
                value: words[4],
            });
        }
        let dynamic_smem_bytes = u32::try_from(words[5]).map_err(|_| AbiError::Field {
            field: "dynamic_smem_bytes",
            value: words[5],
        })?;
        Ok(Self {
            abi_version: words[0],
            block_m: positive("BLOCK_M", words[1], 1 << 16)?,
            block_n: positive("BLOCK_N", words[2], 1 << 16)?,
            stages: positive("STAGES", words[3], 64)?,
            threads,
            dynamic_smem_bytes,
            head_dim: positive("HEAD_DIM", words[6], 1 << 16)?,
        })
    }

    /// Thread blocks along the sequence: ceil(seq_len / BLOCK_M).
    pub fn grid_x(&self, seq_len: usize) -> usize {
        seq_len.div_ceil(self.block_m as usize)
    }
}
