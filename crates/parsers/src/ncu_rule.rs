//! Nsight Compute's rule results, typed: a rule's name, type and estimated speedup from the
//! details page's columns, and the figures its advice (`Rule Description`) states in words, read
//! once here so that nothing downstream reads ncu's wording.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::memory_space::MemorySpace;

/// One Nsight Compute rule result (a [`crate::FindingKind::ProfilerRule`] finding's payload).
/// The figures are those the rule's message states; each is absent (or false) where the message
/// does not state it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilerRule {
    /// The rule's name (`Rule Name`): `SharedMemoryConflicts`, `TheoreticalOccupancy`, ...
    pub name: String,
    /// Its type (`Rule Type`) as ncu prints it: `OPT`, `WRN`, `INF`, `ERR`.
    pub rule_type: String,
    /// The section it belongs to (`Section Name`), where the page gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// `Estimated Speedup`, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_speedup: Option<f64>,
    /// What the estimate is a share of (`Estimated Speedup Type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_type: Option<SpeedupType>,
    /// The message's first sentence (up to its first ". ").
    #[serde(default)]
    pub headline: String,
    /// "causes on average a 32.2 - way bank conflict": the lanes per bank of a shared access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_conflict_ways: Option<f64>,
    /// "only 4.0 of the 32 bytes transmitted per sector are utilized": the bytes used of each
    /// 32-byte sector moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_bytes_used: Option<f64>,
    /// "The memory access pattern for local loads from L1TEX": the memory space an access-pattern
    /// rule speaks of (global, local, shared), where its message names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_space: Option<MemorySpace>,
    /// "a total of 14680064 excessive sectors (78% of the total 18874368 sectors)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excessive: Option<Excessive>,
    /// "configured to execute only 4 blocks": the blocks of the grid, where ncu finds them too
    /// few (it words a single block "1 block", which is not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_blocks: Option<u64>,
    /// "... blocks, which is less than the GPU's 132 multiprocessors": the grid has fewer
    /// blocks than the GPU has SMs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fewer_blocks_than_sms: bool,
    /// "This kernel grid is too small to fill the available resources on this device".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub grid_too_small: bool,
    /// Warps stall on the L1 instruction queue for local and global (LG) memory operations
    /// (ncu's LG Throttle stall).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lg_throttle: bool,
    /// "The 12.00 theoretical warps per scheduler this kernel can issue": of the hardware's 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical_warps_per_scheduler: Option<f64>,
    /// What the message says limits the theoretical occupancy ("is limited by the number of
    /// blocks that can fit on the SM, and the required amount of shared memory"), in the order
    /// it names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occupancy_limiters: Vec<OccupancyLimiter>,
}

/// What an estimated speedup is a share of (`Estimated Speedup Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeedupType {
    /// The kernel's whole duration.
    Global,
    /// Only the rule's own section (a unit's or a stall's share).
    Local,
}

/// Excessive sectors or wavefronts: the accesses an uncoalesced pattern moves beyond what an
/// ideal one would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excessive {
    pub count: u64,
    pub unit: ExcessiveUnit,
    /// Their share of all sectors or wavefronts, in whole percent.
    pub percent: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExcessiveUnit {
    /// 32-byte sectors of global memory.
    Sectors,
    /// Shared-memory wavefronts.
    Wavefronts,
}

/// A limiter of theoretical occupancy, as ncu's `TheoreticalOccupancy` rule names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OccupancyLimiter {
    /// "the number of blocks that can fit on the SM".
    BlocksPerSm,
    /// "the number of required registers".
    Registers,
    /// "the required amount of shared memory".
    SharedMemory,
    /// "the number of warps within each block".
    WarpsPerBlock,
}

impl OccupancyLimiter {
    /// ncu's metric (Occupancy section) for the blocks per SM this limiter allows.
    pub fn block_limit_metric(self) -> &'static str {
        match self {
            OccupancyLimiter::BlocksPerSm => "Block Limit SM",
            OccupancyLimiter::Registers => "Block Limit Registers",
            OccupancyLimiter::SharedMemory => "Block Limit Shared Mem",
            OccupancyLimiter::WarpsPerBlock => "Block Limit Warps",
        }
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("static regex: {e}"))
}

static WAYS: LazyLock<Regex> = LazyLock::new(|| regex(r"([\d.]+)\s*-\s*way bank conflict"));
static BYTES_USED: LazyLock<Regex> =
    LazyLock::new(|| regex(r"only ([\d.]+) of the 32 bytes transmitted per sector"));
static EXCESSIVE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"([\d,]+) excessive (sectors|wavefronts) \((\d+)% of the total"));
static ACCESS_SPACE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"access pattern for (global|local|shared) (?:loads|stores|accesses)"));
static ONLY_BLOCKS: LazyLock<Regex> = LazyLock::new(|| regex(r"execute only (\d+) blocks?\b"));
static WARPS_PER_SCHEDULER: LazyLock<Regex> =
    LazyLock::new(|| regex(r"The ([\d.]+) theoretical warps per scheduler"));

/// The limiters' wording in `TheoreticalOccupancy`'s message.
const LIMITERS: &[(&str, OccupancyLimiter)] = &[
    (
        "number of blocks that can fit on the SM",
        OccupancyLimiter::BlocksPerSm,
    ),
    ("number of required registers", OccupancyLimiter::Registers),
    (
        "required amount of shared memory",
        OccupancyLimiter::SharedMemory,
    ),
    (
        "number of warps within each block",
        OccupancyLimiter::WarpsPerBlock,
    ),
];

/// A rule result from the details page's cells: its name, type, message, speedup type and
/// estimated speedup.
pub(crate) fn read(
    name: &str,
    rule_type: &str,
    text: &str,
    speedup_type: &str,
    speedup: Option<f64>,
) -> ProfilerRule {
    let group = |re: &Regex, i: usize| re.captures(text).and_then(|c| Some(c.get(i)?.as_str()));
    let excessive = EXCESSIVE.captures(text).and_then(|c| {
        let count: String = c.get(1)?.as_str().chars().filter(|&c| c != ',').collect();
        Some(Excessive {
            count: count.parse().ok()?,
            unit: match c.get(2)?.as_str() {
                "sectors" => ExcessiveUnit::Sectors,
                _ => ExcessiveUnit::Wavefronts,
            },
            percent: c.get(3)?.as_str().parse().ok()?,
        })
    });
    // The limiters named after the first "is limited by", in the order named.
    let tail = text.split("is limited by").nth(1).unwrap_or("");
    let mut limiters: Vec<(usize, OccupancyLimiter)> = LIMITERS
        .iter()
        .filter_map(|(words, l)| tail.find(words).map(|at| (at, *l)))
        .collect();
    limiters.sort_by_key(|(at, _)| *at);
    ProfilerRule {
        name: name.to_string(),
        rule_type: rule_type.to_string(),
        section: None,
        estimated_speedup: speedup,
        speedup_type: match speedup_type {
            "global" => Some(SpeedupType::Global),
            "local" => Some(SpeedupType::Local),
            _ => None,
        },
        headline: text.split(". ").next().unwrap_or(text).to_string(),
        bank_conflict_ways: group(&WAYS, 1).and_then(|w| w.parse().ok()),
        sector_bytes_used: group(&BYTES_USED, 1).and_then(|u| u.parse().ok()),
        excessive,
        grid_blocks: group(&ONLY_BLOCKS, 1).and_then(|b| b.parse().ok()),
        access_space: group(&ACCESS_SPACE, 1).and_then(|w| match w {
            "global" => Some(MemorySpace::Global),
            "local" => Some(MemorySpace::Local),
            "shared" => Some(MemorySpace::Shared),
            _ => None,
        }),
        // "only 4 blocks, which is less than", and for a grid of one, "only 1 block, which ...".
        fewer_blocks_than_sms: text.contains("blocks, which is less than")
            || text.contains("block, which is less than"),
        grid_too_small: text.contains("grid is too small"),
        lg_throttle: text.contains("local and global (LG)"),
        theoretical_warps_per_scheduler: group(&WARPS_PER_SCHEDULER, 1)
            .and_then(|w| w.parse().ok()),
        occupancy_limiters: limiters.into_iter().map(|(_, l)| l).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_without_figures_has_only_its_columns() {
        let r = read(
            "CPIStall",
            "INF",
            "Check the table. See the guide.",
            "",
            None,
        );
        assert_eq!(r.name, "CPIStall");
        assert_eq!(r.rule_type, "INF");
        assert_eq!(r.headline, "Check the table");
        assert_eq!(r.speedup_type, None);
        assert_eq!(
            r,
            ProfilerRule {
                name: r.name.clone(),
                rule_type: r.rule_type.clone(),
                headline: r.headline.clone(),
                ..ProfilerRule::default()
            }
        );
    }

    #[test]
    fn limiters_in_the_order_named_after_the_first_is_limited_by() {
        let r = read(
            "TheoreticalOccupancy",
            "OPT",
            "x is limited by the required amount of shared memory and the number of warps \
             within each block, and the number of required registers.",
            "global",
            Some(12.5),
        );
        assert_eq!(
            r.occupancy_limiters,
            [
                OccupancyLimiter::SharedMemory,
                OccupancyLimiter::WarpsPerBlock,
                OccupancyLimiter::Registers
            ]
        );
        assert_eq!(r.speedup_type, Some(SpeedupType::Global));
        assert_eq!(r.estimated_speedup, Some(12.5));
    }

    /// A grid of one block reads "only 1 block, which is less than" (Nsight Compute 2025.3.1
    /// on an H100, Maharshi-Pandya/cudacodes' naive softmax, field corpus `maharshi-softmax-k0`);
    /// of four, "only 4 blocks, which is less than".
    #[test]
    fn a_grid_of_one_block_is_fewer_blocks_than_sms() {
        for (text, blocks) in [
            (
                "The grid for this launch is configured to execute only 1 block, which is less \
                 than the GPU's 132 multiprocessors.",
                1,
            ),
            (
                "The grid for this launch is configured to execute only 4 blocks, which is less \
                 than the GPU's 132 multiprocessors.",
                4,
            ),
        ] {
            let r = read("LaunchConfiguration", "OPT", text, "global", Some(99.2));
            assert!(r.fewer_blocks_than_sms, "{text}");
            assert_eq!(r.grid_blocks, Some(blocks), "{text}");
        }
    }

    /// ncu's cache-pattern rule speaks of one memory space per message: local loads from L1TEX
    /// (Nsight Compute 2025.3.1 on an H100, the field corpus's `seed-633969b-scalar`) are not
    /// global ones.
    #[test]
    fn an_access_pattern_rule_names_its_memory_space() {
        let r = read(
            "MemoryCacheAccessPattern",
            "OPT",
            "The memory access pattern for local loads from L1TEX might not be optimal. On \
             average, only 1.0 of the 32 bytes transmitted per sector are utilized by each thread.",
            "global",
            Some(28.4),
        );
        assert_eq!(r.access_space, Some(MemorySpace::Local));
        assert_eq!(r.sector_bytes_used, Some(1.0));
        let r = read(
            "MemoryCacheAccessPattern",
            "OPT",
            "The memory access pattern for global stores to L1TEX might not be optimal.",
            "global",
            Some(5.0),
        );
        assert_eq!(r.access_space, Some(MemorySpace::Global));
    }
}
