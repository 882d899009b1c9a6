//! Per-kernel figures the report tables and the resource rules share: ptxas resources, SASS
//! counts, launch dimensions, occupancy, and the Nsight Compute summary.

use serde::Serialize;

use crate::join::{Joined, KernelView};
use crate::kernel_id::KernelId;
use crate::occupancy::{self, Occupancy, OccupancyInput};

/// One kernel of one config and arch, as the per-config table shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelResources {
    pub config: Option<String>,
    pub arch: Option<String>,
    pub kernel: String,
    pub registers: Option<u32>,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    pub static_shared_bytes: Option<u64>,
    pub stack_frame_bytes: Option<u64>,
    pub hmma: Option<u64>,
    pub hgmma: Option<u64>,
    pub ldl: Option<u64>,
    pub stl: Option<u64>,
    pub bpt_trap: Option<u64>,
    pub threads_per_block: Option<u32>,
    /// Where the thread count comes from: `ncu`, `harness launch info` or `WARPS define`.
    pub threads_from: Option<&'static str>,
    pub dynamic_shared_bytes: Option<u64>,
    /// Where the dynamic shared memory comes from: `ncu` or `harness launch info`.
    pub dynamic_shared_from: Option<&'static str>,
    pub occupancy: Option<Occupancy>,
    /// What the occupancy figure could not account for, e.g. unknown dynamic shared memory.
    pub occupancy_caveat: Option<String>,
}

/// The resources of every launched kernel (all kernels when no stage names which), in the
/// joined order.
pub fn kernel_resources(joined: &Joined) -> Vec<KernelResources> {
    joined
        .target_kernels()
        .map(|k| resources_of(joined, k))
        .collect()
}

/// The resources of one kernel view.
pub fn resources_of(joined: &Joined, view: &KernelView) -> KernelResources {
    let k = view.resources;
    let ncu = ncu_summary(joined, view.config.as_deref(), &view.name);
    let launch = harness_launch(joined, view);
    let (threads, threads_from) = match (ncu.as_ref().and_then(|n| n.block_size), launch) {
        (Some(t), _) => (Some(t), Some("ncu")),
        (None, Some(l)) => (Some(l.threads), Some(HARNESS)),
        (None, None) => match view
            .config
            .as_ref()
            .and_then(|c| joined.configs.get(c))
            .and_then(|p| p.threads())
            .and_then(|t| u32::try_from(t).ok())
        {
            Some(t) => (Some(t), Some("WARPS define")),
            None => (None, None),
        },
    };
    let (dynamic, dynamic_from) = match (ncu.as_ref().and_then(|n| n.dynamic_shared_bytes), launch)
    {
        (Some(d), _) => (Some(d), Some("ncu")),
        (None, Some(l)) => (Some(l.dynamic_smem_bytes), Some(HARNESS)),
        (None, None) => (None, None),
    };
    let static_shared = k.and_then(|k| k.shared_bytes);
    let limits = view.arch.as_deref().and_then(occupancy::limits);
    let (occupancy, caveat) = match (limits, k.and_then(|k| k.registers), threads) {
        (Some(limits), Some(registers), Some(threads)) => {
            let input = OccupancyInput {
                registers,
                threads_per_block: threads,
                shared_bytes: static_shared
                    .unwrap_or(0)
                    .saturating_add(dynamic.unwrap_or(0)),
            };
            let mut caveats = Vec::new();
            if dynamic.is_none() {
                caveats.push(
                    "dynamic shared memory unknown (no ncu launch statistics, no harness launch \
                     info): static only",
                );
            }
            if threads_from == Some("WARPS define") && joined.targets.is_empty() {
                caveats.push(
                    "threads from the WARPS define, assumed for every kernel: no stage names the \
                     kernel it launches",
                );
            }
            let caveat = (!caveats.is_empty()).then(|| caveats.join("; "));
            (Some(occupancy::compute(&limits, input)), caveat)
        }
        (None, Some(_), Some(_)) => (
            None,
            view.arch
                .as_ref()
                .map(|a| format!("no occupancy limits known for {a}")),
        ),
        _ => (None, None),
    };
    KernelResources {
        config: view.config.clone(),
        arch: view.arch.clone(),
        kernel: view.name.to_string(),
        registers: k.and_then(|k| k.registers),
        spill_store_bytes: k.and_then(|k| k.spill_store_bytes),
        spill_load_bytes: k.and_then(|k| k.spill_load_bytes),
        static_shared_bytes: static_shared,
        stack_frame_bytes: k.and_then(|k| k.stack_frame_bytes),
        hmma: view.sass.map(|s| s.hmma),
        hgmma: view.sass.map(|s| s.hgmma),
        ldl: view.sass.map(|s| s.ldl),
        stl: view.sass.map(|s| s.stl),
        bpt_trap: view.sass.map(|s| s.bpt_trap),
        threads_per_block: threads,
        threads_from,
        dynamic_shared_bytes: dynamic,
        dynamic_shared_from: dynamic_from,
        occupancy,
        occupancy_caveat: caveat,
    }
}

/// The provenance of a figure read from the harness document's `harness.launch_info` (what
/// `attention_launch_info` reported and the harness launched with).
pub const HARNESS: &str = "harness launch info";

/// The launch geometry the harness recorded for a kernel of a config: from a harness document
/// of that config (and arch, when both say) whose results launched that kernel.
pub fn harness_launch<'a>(
    joined: &Joined<'a>,
    view: &KernelView,
) -> Option<&'a parsers::harness::LaunchInfo> {
    // The first source, in order, with launch info and a result of this kernel and config.
    joined
        .launch_sources(&view.name, view.config.as_deref())
        .iter()
        .filter_map(|&i| joined.source(i))
        .find_map(|source| {
            let launch = source.log.launch.as_ref()?;
            let arch_matches = match (source.arch, view.arch.as_deref()) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            arch_matches.then_some(launch)
        })
}

/// The Nsight Compute figures of one kernel in one config (its first profiled launch).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NcuSummary {
    pub config: Option<String>,
    pub kernel: String,
    pub launch: Option<u64>,
    pub duration_us: Option<f64>,
    pub sm_throughput_pct: Option<f64>,
    pub memory_throughput_pct: Option<f64>,
    pub dram_throughput_pct: Option<f64>,
    pub tensor_pipe_pct: Option<f64>,
    pub achieved_occupancy_pct: Option<f64>,
    pub theoretical_occupancy_pct: Option<f64>,
    pub registers: Option<u32>,
    pub block_size: Option<u32>,
    /// Blocks in the grid of the profiled launch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_size: Option<u64>,
    /// The SMs of the device it ran on, as ncu counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u32>,
    pub dynamic_shared_bytes: Option<u64>,
    /// Nsight Compute's own block limits, to check the computed occupancy against.
    pub block_limit_registers: Option<u32>,
    pub block_limit_shared: Option<u32>,
    pub block_limit_warps: Option<u32>,
    pub metrics: usize,
    /// Where the kernel stands against the GPU's peaks (`roofline`), when its instruction mix
    /// was exported.
    pub limit: Option<crate::roofline::Position>,
}

/// The Nsight Compute summary of every profiled kernel the harness launches (all profiled
/// kernels when no stage names one), by config and kernel.
pub fn ncu_summaries(joined: &Joined) -> Vec<NcuSummary> {
    let mut keys: Vec<(Option<String>, KernelId)> = joined
        .metrics
        .iter()
        .filter(|m| joined.is_target(&m.kernel))
        .map(|m| (m.config.clone(), m.kernel.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|(config, kernel)| ncu_summary(joined, config.as_deref(), &kernel))
        .collect()
}

/// The Nsight Compute summary of one kernel in one config, when it was profiled.
pub fn ncu_summary(joined: &Joined, config: Option<&str>, kernel: &KernelId) -> Option<NcuSummary> {
    let of_kernel: Vec<&parsers::Metric> = joined
        .metrics_of_kernel(config, kernel)
        .map(|m| m.metric)
        .collect();
    let launch = of_kernel.iter().filter_map(|m| m.launch).min();
    let metrics: Vec<&parsers::Metric> = of_kernel
        .into_iter()
        .filter(|m| launch.is_none() || m.launch == launch)
        .collect();
    if metrics.is_empty() {
        return None;
    }
    let find = |names: &[&str]| -> Option<&parsers::Metric> {
        names.iter().find_map(|n| {
            metrics
                .iter()
                .find(|m| m.name.eq_ignore_ascii_case(n))
                .copied()
        })
    };
    let pct = |names: &[&str]| find(names).map(|m| m.value);
    let duration_us = find(&["gpu__time_duration.sum", "Duration"])
        .map(|m| crate::roofline::to_us(m.value, m.unit.as_deref()));
    let tensor_pipe_pct = metrics
        .iter()
        .filter(|m| {
            let n = m.name.to_lowercase();
            n.contains("pipe_tensor") && (n.contains("pct") || m.unit.as_deref() == Some("%"))
        })
        .map(|m| m.value)
        .fold(None, |acc: Option<f64>, v| {
            Some(acc.map_or(v, |a| a.max(v)))
        });
    Some(NcuSummary {
        config: config.map(str::to_string),
        kernel: kernel.to_string(),
        launch,
        duration_us,
        sm_throughput_pct: pct(&[
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "Compute (SM) Throughput",
            "SM Throughput",
        ]),
        memory_throughput_pct: pct(&[
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "Memory Throughput",
        ]),
        dram_throughput_pct: pct(&[
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "DRAM Throughput",
        ]),
        tensor_pipe_pct,
        achieved_occupancy_pct: pct(&[
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "Achieved Occupancy",
        ]),
        theoretical_occupancy_pct: pct(&[
            "sm__maximum_warps_per_active_cycle_pct",
            "Theoretical Occupancy",
        ]),
        registers: find(&["launch__registers_per_thread", "Registers Per Thread"])
            .map(|m| m.value.round() as u32),
        block_size: find(&["launch__block_size", "Block Size"]).map(|m| m.value.round() as u32),
        grid_size: find(&["launch__grid_size", "Grid Size"]).map(|m| m.value.round() as u64),
        sm_count: find(&["device__attribute_multiprocessor_count", "# SMs"])
            .map(|m| m.value.round() as u32),
        dynamic_shared_bytes: find(&[
            "launch__shared_mem_per_block_dynamic",
            "Dynamic Shared Memory Per Block",
        ])
        .map(|m| to_bytes(m.value, m.unit.as_deref())),
        block_limit_registers: find(&[
            "launch__occupancy_limit_registers",
            "Block Limit Registers",
        ])
        .map(|m| m.value.round() as u32),
        block_limit_shared: find(&[
            "launch__occupancy_limit_shared_mem",
            "Block Limit Shared Mem",
        ])
        .map(|m| m.value.round() as u32),
        block_limit_warps: find(&["launch__occupancy_limit_warps", "Block Limit Warps"])
            .map(|m| m.value.round() as u32),
        metrics: metrics.len(),
        limit: crate::roofline::of_kernel(joined, config, kernel),
    })
}

/// A byte quantity in ncu's units (`byte`, `Kbyte`, `KB`, `Mbyte`, `KiB`, `.../block`).
pub fn to_bytes(value: f64, unit: Option<&str>) -> u64 {
    let unit = unit
        .unwrap_or("byte")
        .split('/')
        .next()
        .unwrap_or("")
        .trim()
        .to_lowercase();
    let factor = match unit.as_str() {
        "kbyte" | "kb" => 1e3,
        "mbyte" | "mb" => 1e6,
        "gbyte" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        _ => 1.0,
    };
    (value * factor).round().max(0.0) as u64
}

/// A profiled kernel as the side-by-side with the baseline shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelFigures {
    pub summary: NcuSummary,
    /// Tensor-core instructions it executed (HMMA, HGMMA, IMMA), from its source page's
    /// instruction mix; `None` when no source page was exported.
    pub tensor_instructions: Option<u64>,
    /// Floating-point operations per byte its threads asked of global memory, from the same
    /// instruction mix: how much it does with what it loads before loading it again.
    pub flops_per_load_byte: Option<f64>,
    /// ncu's waves of blocks per SM, warps active per SM (achieved) and L2 throughput (percent
    /// of peak), and the kernel's instruction mix: what `contrast` sets beside the baseline's.
    #[serde(skip)]
    pub waves_per_sm: Option<f64>,
    #[serde(skip)]
    pub active_warps_per_sm: Option<f64>,
    #[serde(skip)]
    pub l2_throughput_pct: Option<f64>,
    #[serde(skip)]
    pub mix: Option<parsers::InstructionMix>,
}

/// The program's kernels and the baseline's, each the longest launch first (the baseline's
/// two longest): what its own profile measured of each. `None` without a profile of both.
pub fn beside_baseline(joined: &Joined) -> Option<(Vec<KernelFigures>, Vec<KernelFigures>)> {
    let baseline = joined.baseline.as_deref()?;
    let figures = |j: &Joined, keep: usize| {
        let mut rows: Vec<KernelFigures> = ncu_summaries(j)
            .into_iter()
            .map(|summary| {
                let kernel = KernelId::of(&summary.kernel);
                let mix = j
                    .sources
                    .iter()
                    .filter(|s| summary.config.is_none() || s.config == summary.config.as_deref())
                    .flat_map(|s| &s.log.instruction_mix)
                    .find(|m| KernelId::of(&m.function) == kernel);
                // Warp-level instructions: 32 lanes, 2 FLOP per FMA, 2 FMAs per HFMA2 lane.
                let flops_per_load_byte = mix.filter(|m| m.global_load_bytes > 0).map(|m| {
                    let flops = (m.ffma + m.dfma) as f64 * 64.0
                        + m.hfma2 as f64 * 128.0
                        + m.tensor_flops as f64;
                    flops / m.global_load_bytes as f64
                });
                let value = |name: &str| {
                    j.metrics_of_kernel(summary.config.as_deref(), &kernel)
                        .map(|m| m.metric)
                        .filter(|m| summary.launch.is_none() || m.launch == summary.launch)
                        .find(|m| m.name == name)
                        .map(|m| m.value)
                };
                KernelFigures {
                    tensor_instructions: mix.map(|m| m.mma),
                    flops_per_load_byte,
                    waves_per_sm: value("Waves Per SM"),
                    active_warps_per_sm: value("Achieved Active Warps Per SM"),
                    l2_throughput_pct: value("L2 Cache Throughput"),
                    mix: mix.cloned(),
                    summary,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.summary
                .duration_us
                .unwrap_or(0.0)
                .total_cmp(&a.summary.duration_us.unwrap_or(0.0))
        });
        rows.truncate(keep);
        rows
    };
    let own = figures(joined, 1);
    let theirs = figures(baseline, 2);
    (!own.is_empty() && !theirs.is_empty()).then_some((own, theirs))
}
