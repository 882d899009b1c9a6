//! Theoretical occupancy from ptxas's figures, by the CUDA occupancy calculator's rules:
//! registers are allocated per warp in units of 256 from each of the SM's four sub-partitions,
//! shared memory per block in units of 128 bytes plus 1 KiB the system reserves per block, and
//! the SM's thread and block limits cap the rest.

use serde::Serialize;

/// The per-SM limits of one compute capability, from the CUDA C++ Programming Guide's
/// "Technical Specifications per Compute Capability".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchLimits {
    pub arch: &'static str,
    pub registers_per_sm: u32,
    pub max_registers_per_block: u32,
    pub max_registers_per_thread: u32,
    pub register_unit: u32,
    pub sub_partitions: u32,
    /// The largest shared-memory carveout per SM, in bytes.
    pub shared_per_sm: u64,
    /// The most shared memory one block may opt in to, in bytes.
    pub max_shared_per_block: u64,
    pub shared_reserved_per_block: u64,
    pub shared_unit: u64,
    pub max_threads_per_sm: u32,
    pub max_threads_per_block: u32,
    pub max_blocks_per_sm: u32,
}

impl ArchLimits {
    pub fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / 32
    }
}

const fn limits_with(
    arch: &'static str,
    shared_kib: u64,
    block_kib: u64,
    threads: u32,
    blocks: u32,
) -> ArchLimits {
    ArchLimits {
        arch,
        registers_per_sm: 65536,
        max_registers_per_block: 65536,
        max_registers_per_thread: 255,
        register_unit: 256,
        sub_partitions: 4,
        shared_per_sm: shared_kib * 1024,
        max_shared_per_block: block_kib * 1024,
        shared_reserved_per_block: 1024,
        shared_unit: 128,
        max_threads_per_sm: threads,
        max_threads_per_block: 1024,
        max_blocks_per_sm: blocks,
    }
}

/// sm_90 (H100, H200): 65536 registers, 228 KiB shared memory per SM, 227 KiB per block,
/// 2048 threads and 32 blocks per SM.
pub const SM_90: ArchLimits = limits_with("sm_90", 228, 227, 2048, 32);
/// sm_80 (A100): 164 KiB per SM, 163 KiB per block, 2048 threads, 32 blocks.
pub const SM_80: ArchLimits = limits_with("sm_80", 164, 163, 2048, 32);
/// sm_86: 100 KiB per SM, 99 KiB per block, 1536 threads, 16 blocks.
pub const SM_86: ArchLimits = limits_with("sm_86", 100, 99, 1536, 16);
/// sm_89 (L4, L40S): 100 KiB per SM, 99 KiB per block, 1536 threads, 24 blocks.
pub const SM_89: ArchLimits = limits_with("sm_89", 100, 99, 1536, 24);

/// The limits of an arch named like `sm_90`, `sm_90a` or `compute_90`; `None` when unknown.
pub fn limits(arch: &str) -> Option<ArchLimits> {
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.as_str() {
        "90" => Some(SM_90),
        "80" => Some(SM_80),
        "86" => Some(SM_86),
        "89" => Some(SM_89),
        _ => None,
    }
}

/// What occupancy is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OccupancyInput {
    pub registers: u32,
    pub threads_per_block: u32,
    /// Static plus dynamic shared memory per block, in bytes.
    pub shared_bytes: u64,
}

/// Which limit sets the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Registers,
    SharedMemory,
    Threads,
    Blocks,
}

impl Limiter {
    /// The limit as the subject of a sentence: "the register file binds first".
    pub fn phrase(self) -> &'static str {
        match self {
            Limiter::Registers => "the register file",
            Limiter::SharedMemory => "shared memory",
            Limiter::Threads => "the thread limit",
            Limiter::Blocks => "the block limit",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Threads => "threads",
            Limiter::Blocks => "blocks per SM",
        }
    }
}

/// Resident blocks per SM and what limits them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Occupancy {
    pub blocks_per_sm: u32,
    /// Blocks per SM each limit allows on its own, capped at the SM's block limit (as Nsight
    /// Compute's "Block Limit" figures are).
    pub by_registers: u32,
    pub by_shared: u32,
    pub by_threads: u32,
    pub by_blocks: u32,
    pub limiter: Limiter,
    pub warps_per_sm: u32,
    /// Resident warps over the SM's maximum, 0 to 1.
    pub fraction: f64,
    /// With registers binding: the most registers per thread that fit one more block (with
    /// every other binding limit lifted too; None when one cannot be).
    pub registers_for_next_block: Option<u32>,
    /// With shared memory binding: the most shared memory per block (bytes, static plus
    /// dynamic) that fits one more block, on the same terms.
    pub shared_for_next_block: Option<u64>,
}

/// Computes occupancy. A block that cannot be resident at all gives `blocks_per_sm == 0` with
/// the limit it breaks as the limiter.
pub fn compute(limits: &ArchLimits, input: OccupancyInput) -> Occupancy {
    let warps_per_block = input.threads_per_block.div_ceil(32).max(1);
    let by_registers = blocks_by_registers(limits, input.registers, warps_per_block);
    let by_shared = blocks_by_shared(limits, input.shared_bytes);
    let by_threads = if input.threads_per_block > limits.max_threads_per_block {
        0
    } else {
        limits.max_warps_per_sm() / warps_per_block
    };
    let by_blocks = limits.max_blocks_per_sm;
    let candidates = [
        (by_registers, Limiter::Registers),
        (by_shared, Limiter::SharedMemory),
        (by_threads, Limiter::Threads),
        (by_blocks, Limiter::Blocks),
    ];
    let (blocks, limiter) = candidates
        .iter()
        .copied()
        .min_by_key(|(n, l)| (*n, *l))
        .unwrap_or((0, Limiter::Blocks));
    // One more block needs every limit that stops at `blocks` lifted: a budget for each of
    // registers and shared memory that binds, and room in threads and the SM's block count.
    let room = blocks > 0 && by_threads > blocks && by_blocks > blocks;
    let registers_bind = by_registers == blocks;
    let shared_binds = by_shared == blocks;
    let registers_budget = (room && registers_bind)
        .then(|| {
            (1..input.registers)
                .rev()
                .find(|&r| blocks_by_registers(limits, r, warps_per_block) > blocks)
        })
        .flatten();
    let shared_budget = (room && shared_binds)
        .then(|| {
            let per_block = limits.shared_per_sm / u64::from(blocks + 1);
            let per_block = per_block / limits.shared_unit * limits.shared_unit;
            per_block.checked_sub(limits.shared_reserved_per_block)
        })
        .flatten();
    let complete = (!registers_bind || registers_budget.is_some())
        && (!shared_binds || shared_budget.is_some());
    let (registers_for_next_block, shared_for_next_block) = if complete {
        (registers_budget, shared_budget)
    } else {
        (None, None)
    };
    // Report each limit as Nsight Compute does: never above the SM's block limit.
    let cap = |n: u32| n.min(limits.max_blocks_per_sm);
    let (by_registers, by_shared, by_threads) =
        (cap(by_registers), cap(by_shared), cap(by_threads));
    let warps = blocks * warps_per_block;
    Occupancy {
        blocks_per_sm: blocks,
        by_registers,
        by_shared,
        by_threads,
        by_blocks,
        limiter,
        warps_per_sm: warps,
        fraction: f64::from(warps) / f64::from(limits.max_warps_per_sm()),
        registers_for_next_block,
        shared_for_next_block,
    }
}

fn blocks_by_registers(limits: &ArchLimits, registers: u32, warps_per_block: u32) -> u32 {
    if registers == 0 {
        return limits.max_blocks_per_sm;
    }
    if registers > limits.max_registers_per_thread {
        return 0;
    }
    let per_warp = (registers * 32).div_ceil(limits.register_unit) * limits.register_unit;
    if u64::from(per_warp) * u64::from(warps_per_block) > u64::from(limits.max_registers_per_block)
    {
        return 0;
    }
    let warps_per_partition = (limits.registers_per_sm / limits.sub_partitions) / per_warp;
    (warps_per_partition * limits.sub_partitions) / warps_per_block
}

fn blocks_by_shared(limits: &ArchLimits, shared: u64) -> u32 {
    if shared > limits.max_shared_per_block {
        return 0;
    }
    let per_block = shared
        .saturating_add(limits.shared_reserved_per_block)
        .div_ceil(limits.shared_unit)
        * limits.shared_unit;
    u32::try_from(limits.shared_per_sm / per_block.max(1)).unwrap_or(u32::MAX)
}
