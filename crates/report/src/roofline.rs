//! Where a profiled kernel stands against what the GPU can do: its achieved floating-point rate
//! per precision (from the source page's instruction mix and the profiled duration) against the
//! peak of the device the run recorded, and the roofline at its intensity.
//!
//! Nsight Compute's "DRAM Throughput" is already a fraction of the peak bandwidth, so the
//! attainable rate at the kernel's intensity needs no bandwidth figure: with `f` the fraction
//! of the compute peak achieved and `d` the fraction of the DRAM bandwidth, the intensity is
//! `f * peak / (d * bandwidth)`, and `min(peak, intensity * bandwidth) / peak = min(1, f / d)`.
//! The L2 cache is a roof of its own in the same way (the hierarchical roofline): global
//! traffic that hits in the L2, or moves sectors it does not use, can fill the L2's bandwidth
//! with the DRAM half idle. The memory roof that binds is the one the kernel is nearer, `max(d,
//! l2)`. The L1 is not one of them: Nsight Compute's L1/TEX figure counts shared-memory
//! wavefronts and bank-conflict replays with the cache's, and the stall rules speak for it.
//! A kernel with no floating-point work to speak of is measured against its memory roof alone.

use serde::Serialize;

use crate::join::Joined;
use crate::kernel_id::KernelId;

/// What a kernel is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Single-precision FMAs (FFMA) against the FP32 peak.
    Fp32,
    /// Paired half-precision FMAs (HFMA2) against the FP16 (non-tensor) peak.
    Fp16,
    /// Double-precision FMAs (DFMA) against the FP64 peak.
    Fp64,
    /// Tensor-core products (HMMA, HGMMA) against the dense FP16 tensor peak.
    Tensor,
    /// Tensor-core products on single-precision inputs (`HMMA.1688.F32.TF32`) against the
    /// dense TF32 tensor peak, half the FP16 one.
    Tf32Tensor,
    /// No floating-point work to speak of, or below the ridge point: DRAM bandwidth.
    Dram,
    /// The L2 cache's bandwidth, where the kernel is nearer it than the DRAM's.
    L2,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Fp32 => "FP32",
            Limit::Fp16 => "FP16",
            Limit::Fp64 => "FP64",
            Limit::Tensor => "FP16 tensor",
            Limit::Tf32Tensor => "TF32 tensor",
            Limit::Dram => "DRAM",
            Limit::L2 => "L2",
        }
    }

    /// Whether this is a memory roof (DRAM or L2 bandwidth) rather than a compute peak.
    pub fn is_memory(self) -> bool {
        matches!(self, Limit::Dram | Limit::L2)
    }
}

/// A kernel's place against its limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Position {
    pub limit: Limit,
    /// Achieved GFLOP/s in the limit's precision (`None` for a memory limit).
    pub gflops: Option<f64>,
    /// The limit's peak in GFLOP/s on the recorded device (`None` for a memory limit).
    pub peak_gflops: Option<f64>,
    /// The fraction of the peak achieved (of the bandwidth, for a memory limit).
    pub of_peak: f64,
    /// The fraction of the peak attainable at the kernel's intensity: `min(1, of_peak /
    /// memory)`, with `memory` the fraction of the nearer memory roof's bandwidth.
    pub attainable: f64,
    /// The fraction of the DRAM bandwidth, where Nsight Compute gave it: said beside an L2
    /// roof, so that a reader sees both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram: Option<f64>,
    /// The dense FP16 tensor peak of the same device at the same clock, where known: the
    /// ceiling of half-precision products moved to the tensor cores.
    pub tensor_peak_gflops: Option<f64>,
    /// The dense TF32 tensor peak of the same device at the same clock: the ceiling of
    /// single-precision products moved to the tensor cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tf32_peak_gflops: Option<f64>,
    /// The roof that binds at the kernel's intensity: the nearer memory roof (DRAM or L2)
    /// below the ridge point (the compute peak is out of reach however well it runs), else
    /// `limit`'s peak.
    pub roof: Limit,
    /// The fraction of the binding roof achieved.
    pub of_roof: f64,
    /// The kernel's arithmetic intensity over the ridge point of its precision (`of_peak` over
    /// the fraction of DRAM bandwidth): below 1 the DRAM's roof binds. `None` without a DRAM
    /// figure, or for a kernel measured against DRAM alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ridge_ratio: Option<f64>,
}

impl Position {
    /// "at 42.0% of the FP32 peak, its binding roof", "at 85.0% of DRAM bandwidth, its binding
    /// roof at its intensity (2.3% of the FP32 peak)", "at 94.4% of L2 bandwidth (DRAM 49.7%)"
    /// or "at 12.8% of DRAM bandwidth".
    pub fn phrase(&self) -> String {
        let beside = self.dram_beside();
        match (self.limit, self.roof) {
            (limit, _) if limit.is_memory() => format!(
                "at {:.1}% of {} bandwidth{}",
                self.of_peak * 100.0,
                limit.name(),
                beside.map(|d| format!(" ({d})")).unwrap_or_default()
            ),
            (limit, roof) if roof.is_memory() => {
                let mut within: Vec<String> = beside.into_iter().collect();
                if self.of_peak >= 0.0005 {
                    within.push(format!(
                        "{:.1}% of the {} peak",
                        self.of_peak * 100.0,
                        limit.name()
                    ));
                }
                format!(
                    "at {:.1}% of {} bandwidth, its binding roof at its intensity{}",
                    self.of_roof * 100.0,
                    roof.name(),
                    if within.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", within.join("; "))
                    }
                )
            }
            (limit, _) => format!(
                "at {:.1}% of the {} peak, its binding roof",
                self.of_peak * 100.0,
                limit.name()
            ),
        }
    }

    /// The short form for a table cell, the binding roof first: "FP32 42.0%", "DRAM 85.0% (FP32
    /// 2.3%)", "L2 94.4% (FP64 4.5%)", "DRAM 12.8%". The table's own DRAM column stands beside
    /// an L2 roof.
    pub fn cell(&self) -> String {
        match (self.limit, self.roof) {
            (limit, _) if limit.is_memory() => {
                format!("{} {:.1}%", limit.name(), self.of_peak * 100.0)
            }
            (limit, roof) if roof.is_memory() => format!(
                "{} {:.1}% ({} {:.1}%)",
                roof.name(),
                self.of_roof * 100.0,
                limit.name(),
                self.of_peak * 100.0
            ),
            (limit, _) => format!("{} {:.1}%", limit.name(), self.of_peak * 100.0),
        }
    }

    /// "DRAM 49.7%" where the L2's roof binds and the DRAM's figure is known.
    fn dram_beside(&self) -> Option<String> {
        (self.roof == Limit::L2)
            .then_some(self.dram?)
            .map(|d| format!("DRAM {:.1}%", d * 100.0))
    }
}

/// The memory roof the kernel is nearer, with the fraction of it achieved: the L2's where it is
/// busier than the DRAM by more than a point of the peak, else the DRAM's (a kernel streaming
/// through the L2 moves about as much through both, and the DRAM is the roof a reader expects).
pub(crate) fn memory_roof(dram: Option<f64>, l2: Option<f64>) -> Option<(Limit, f64)> {
    const TIE: f64 = 0.01;
    match (dram, l2) {
        (Some(d), Some(l)) if l > d + TIE => Some((Limit::L2, l)),
        (Some(d), _) => Some((Limit::Dram, d)),
        (None, Some(l)) => Some((Limit::L2, l)),
        (None, None) => None,
    }
}

/// Floating-point operations per clock per SM, by compute capability: FP32 (FFMA), FP16
/// (HFMA2), FP64 (DFMA) and dense FP16 tensor. From NVIDIA's A100 and H100 whitepapers:
/// A100 (108 SMs at 1.41 GHz) 19.5 TFLOP/s FP32, 78 FP16, 9.7 FP64, 312 FP16 tensor; H100 SXM5
/// (132 SMs at 1.98 GHz, tensor at 1.83 GHz) 66.9 FP32, 133.8 FP16, 33.5 FP64, 989.4 FP16
/// tensor; dense TF32 tensor at half the FP16 rate (A100 156, H100 494.7).
pub(crate) fn flops_per_clock(arch: &str, limit: Limit) -> Option<f64> {
    let cc: u32 = arch
        .trim_start_matches("sm_")
        .trim_end_matches('a')
        .parse()
        .ok()?;
    let per_sm = match (cc, limit) {
        (80, Limit::Fp32) => 128.0,
        (80, Limit::Fp16) => 512.0,
        (80, Limit::Fp64) => 64.0,
        (80, Limit::Tensor) => 2048.0,
        (80, Limit::Tf32Tensor) => 1024.0,
        (90, Limit::Fp32) => 256.0,
        (90, Limit::Fp16) => 512.0,
        (90, Limit::Fp64) => 128.0,
        (90, Limit::Tensor) => 4096.0,
        (90, Limit::Tf32Tensor) => 2048.0,
        // FP32 lanes of the other architectures (x 2 FLOP per FMA).
        (60 | 70 | 72 | 75, Limit::Fp32) => 128.0,
        (61 | 62 | 86 | 87 | 89 | 100 | 103 | 120, Limit::Fp32) => 256.0,
        _ => return None,
    };
    Some(per_sm)
}

/// The peak in GFLOP/s of `sm_count` SMs of `arch` at `ghz` for `limit`.
pub fn peak_gflops(arch: &str, limit: Limit, sm_count: u32, ghz: f64) -> Option<f64> {
    Some(flops_per_clock(arch, limit)? * f64::from(sm_count) * ghz)
}

/// What a kernel executed, as the source page's instruction mix counts it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Work {
    pub executed: u64,
    pub ffma: u64,
    pub hfma2: u64,
    pub dfma: u64,
    pub tensor_flops: u64,
    /// Of them, products on TF32 inputs.
    pub tf32_flops: u64,
    /// Every tensor-core instruction, shapes known or not.
    pub mma: u64,
}

/// Nsight Compute's throughputs of the memory roofs, in percent of their peaks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// "DRAM Throughput".
    pub dram_pct: Option<f64>,
    /// "L2 Cache Throughput".
    pub l2_pct: Option<f64>,
}

/// The kernel's position: the precision that did the most floating-point work against its
/// peak, or its memory roof when floating-point work is under a tenth of what it executed (and
/// no tensor core ran).
pub fn position(
    arch: &str,
    sm_count: u32,
    ghz: f64,
    duration_us: f64,
    memory: Memory,
    work: Work,
) -> Option<Position> {
    let dram = memory.dram_pct.map(|d| d / 100.0);
    let nearer = memory_roof(dram, memory.l2_pct.map(|l| l / 100.0));
    let fp_instructions = work.ffma + work.hfma2 + work.dfma;
    if work.mma == 0 && fp_instructions.saturating_mul(10) < work.executed {
        let (roof, of_peak) = nearer?;
        return Some(Position {
            limit: roof,
            gflops: None,
            peak_gflops: None,
            of_peak,
            attainable: 1.0,
            dram,
            tensor_peak_gflops: None,
            tf32_peak_gflops: None,
            roof,
            of_roof: of_peak,
            ridge_ratio: None,
        });
    }
    // Warp-level instructions: 32 lanes, 2 FLOP per FMA, 2 FMAs per HFMA2 lane.
    let flops = [
        (Limit::Fp32, work.ffma as f64 * 64.0),
        (Limit::Fp16, work.hfma2 as f64 * 128.0),
        (Limit::Fp64, work.dfma as f64 * 64.0),
        (
            Limit::Tensor,
            work.tensor_flops.saturating_sub(work.tf32_flops) as f64,
        ),
        (Limit::Tf32Tensor, work.tf32_flops as f64),
    ];
    // Tensor-core work of a shape not counted: no position rather than a wrong one.
    if work.mma > 0 && work.tensor_flops == 0 {
        return None;
    }
    let (limit, done) = flops
        .into_iter()
        .filter(|(_, f)| *f > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if duration_us <= 0.0 {
        return None;
    }
    let gflops = done / (duration_us * 1e3);
    let peak = peak_gflops(arch, limit, sm_count, ghz)?;
    let of_peak = gflops / peak;
    let attainable = match nearer {
        Some((_, m)) if m > 0.0 => (of_peak / m).min(1.0),
        _ => 1.0,
    };
    // Below the ridge point the nearer memory roof binds: the fraction of it achieved is the
    // fraction of the compute peak over the fraction attainable.
    let (roof, of_roof) = match nearer {
        Some((memory, _)) if attainable < 1.0 && attainable > 0.0 => (memory, of_peak / attainable),
        _ => (limit, of_peak),
    };
    Some(Position {
        limit,
        gflops: Some(gflops),
        peak_gflops: Some(peak),
        of_peak,
        attainable,
        dram,
        tensor_peak_gflops: peak_gflops(arch, Limit::Tensor, sm_count, ghz),
        tf32_peak_gflops: peak_gflops(arch, Limit::Tf32Tensor, sm_count, ghz),
        roof,
        of_roof,
        ridge_ratio: dram.filter(|d| *d > 0.0).map(|d| of_peak / d),
    })
}

/// A profiled kernel's position in a config, from the joined evidence: its instruction mix,
/// duration, SM frequency and DRAM and L2 throughputs, and the arch and SM count of the recorded device.
pub fn of_kernel(joined: &Joined, config: Option<&str>, kernel: &KernelId) -> Option<Position> {
    let mix = joined
        .sources
        .iter()
        .filter(|s| config.is_none() || s.config == config)
        .flat_map(|s| &s.log.instruction_mix)
        .find(|m| KernelId::of(&m.function) == *kernel)?;
    let metric = |name: &str| {
        joined
            .metrics_of_kernel(config, kernel)
            .find(|m| m.metric.name == name)
            .map(|m| m.metric)
    };
    let duration = metric("Duration")?;
    let duration_us = to_us(duration.value, duration.unit.as_deref());
    let ghz = metric("SM Frequency")?.value;
    let gpu = joined.run.and_then(|r| r.environment.gpus.first());
    let sm_count = gpu.and_then(|g| g.sm_count)?;
    let arch = arch_of(joined, config, kernel)?;
    position(
        &arch,
        sm_count,
        ghz,
        duration_us,
        Memory {
            dram_pct: metric("DRAM Throughput").map(|m| m.value),
            l2_pct: metric("L2 Cache Throughput").map(|m| m.value),
        },
        Work {
            executed: mix.executed,
            ffma: mix.ffma,
            hfma2: mix.hfma2,
            dfma: mix.dfma,
            tensor_flops: mix.tensor_flops,
            tf32_flops: mix.tensor_tf32_flops,
            mma: mix.mma,
        },
    )
}

/// The arch a kernel was built for in a config (`sm_90`), else that of the recorded device.
pub(crate) fn arch_of(joined: &Joined, config: Option<&str>, kernel: &KernelId) -> Option<String> {
    joined
        .kernel(config, kernel)
        .and_then(|k| k.arch.clone())
        .or_else(|| {
            let gpu = joined.run.and_then(|r| r.environment.gpus.first());
            gpu.and_then(|g| g.compute_capability.as_ref())
                .map(|cc| format!("sm_{}", cc.replace('.', "")))
        })
}

/// A duration in ncu's units (`nsecond`, `usecond`, `msecond`, `ns`, `us`, `ms`), in µs.
pub fn to_us(value: f64, unit: Option<&str>) -> f64 {
    match unit.unwrap_or("").trim().to_lowercase().as_str() {
        "nsecond" | "ns" => value / 1e3,
        "msecond" | "ms" => value * 1e3,
        "second" | "s" => value * 1e6,
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nsight Compute's DRAM throughput alone.
    fn dram(pct: f64) -> Memory {
        Memory {
            dram_pct: Some(pct),
            l2_pct: None,
        }
    }

    /// TF32 tensor-core products are measured against the TF32 peak, half the FP16 one:
    /// 1,024 FLOP per clock per SM on an A100, 2,048 on an H100.
    #[test]
    fn tf32_products_meet_the_tf32_peak() {
        for (arch, per_sm) in [("sm_80", 1024.0), ("sm_90", 2048.0)] {
            let peak = peak_gflops(arch, Limit::Tf32Tensor, 100, 1.0).expect("a TF32 peak");
            assert!((peak - per_sm * 100.0).abs() < 1e-6, "{arch}: {peak}");
            let fp16 = peak_gflops(arch, Limit::Tensor, 100, 1.0).expect("an FP16 peak");
            assert!((fp16 - 2.0 * peak).abs() < 1e-6, "{arch}");
        }
        // 1,000 warp-level m16n8k8 TF32 products (2,048 FLOP each) in 1 µs on 1 SM at 1 GHz:
        // 2,048 GFLOP/s, the sm_90 TF32 peak of one SM.
        let work = Work {
            executed: 1_000,
            tensor_flops: 2_048_000,
            tf32_flops: 2_048_000,
            mma: 1_000,
            ..Work::default()
        };
        let p = position("sm_90", 1, 1.0, 1.0, Memory::default(), work).expect("a position");
        assert_eq!(p.limit, Limit::Tf32Tensor);
        assert!((p.of_peak - 1.0).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn peaks_come_from_the_arch_and_the_device() {
        // A100: 108 SMs at 1.41 GHz.
        let a100 = |limit| peak_gflops("sm_80", limit, 108, 1.41).expect("sm_80");
        assert!((a100(Limit::Fp32) - 19_491.84).abs() < 0.01);
        assert!((a100(Limit::Fp16) - 77_967.36).abs() < 0.01);
        assert!((a100(Limit::Fp64) - 9_745.92).abs() < 0.01);
        assert!((a100(Limit::Tensor) - 311_869.44).abs() < 0.01);
        // H100 SXM5: 132 SMs at 1.98 GHz (FP32, FP64), its tensor figure at 1.83 GHz.
        let h100 = |limit, ghz| peak_gflops("sm_90", limit, 132, ghz).expect("sm_90");
        assert!((h100(Limit::Fp32, 1.98) - 66_908.16).abs() < 0.01);
        assert!((h100(Limit::Fp64, 1.98) - 33_454.08).abs() < 0.01);
        assert!((h100(Limit::Tensor, 1.83) - 989_429.76).abs() < 0.01);
        assert_eq!(peak_gflops("sm_90a", Limit::Fp32, 1, 1.0), Some(256.0));
        assert_eq!(peak_gflops("sm_86", Limit::Tensor, 1, 1.0), None);
        assert_eq!(peak_gflops("sm_42", Limit::Fp32, 1, 1.0), None);
    }

    #[test]
    fn the_roofline_at_the_kernels_intensity() {
        // siboehm/SGEMM_CUDA kernel 2 on an H100 (corpus `sgemm-k2-coalesced`): 21.69 ms at
        // 1.98 GHz, DRAM at 11.2% of peak; 4096^3 FFMAs in warp instructions.
        let work = Work {
            executed: 3_000_000_000,
            ffma: 4096u64.pow(3) / 32,
            ..Work::default()
        };
        let p = position("sm_90", 132, 1.98, 21_690.0, dram(11.2), work).expect("a position");
        assert_eq!(p.limit, Limit::Fp32);
        assert!((p.of_peak - 0.0947).abs() < 0.001, "{p:?}");
        // 9.5% of the compute peak while DRAM is at 11.2%: the roofline at this intensity
        // allows 85% of the peak.
        assert!((p.attainable - 0.845).abs() < 0.01, "{p:?}");
        // Below the ridge point the binding roof is the DRAM's: 9.5% / 85% = 11.2% of it.
        assert_eq!(p.roof, Limit::Dram);
        assert_eq!(
            p.phrase(),
            "at 11.2% of DRAM bandwidth, its binding roof at its intensity (9.5% of the FP32 peak)"
        );
        assert_eq!(p.cell(), "DRAM 11.2% (FP32 9.5%)");
        // An integer reduction: no floating-point work, measured against DRAM.
        let reduce = Work {
            executed: 1_000_000,
            ..Work::default()
        };
        let p = position("sm_90", 132, 1.98, 163.0, dram(12.8), reduce).expect("a position");
        assert_eq!(p.limit, Limit::Dram);
        assert_eq!(p.phrase(), "at 12.8% of DRAM bandwidth");
        // Tensor-core work leads when it is most of the FLOPs.
        let tensor = Work {
            executed: 1000,
            ffma: 10,
            tensor_flops: 4096 * 500,
            mma: 500,
            ..Work::default()
        };
        let p = position("sm_80", 108, 1.41, 1.0, Memory::default(), tensor).expect("a position");
        assert_eq!(p.limit, Limit::Tensor);
        assert_eq!(p.attainable, 1.0);
        assert_eq!(p.roof, Limit::Tensor);
        // Tensor-core instructions of a shape not counted: no position, never a wrong one.
        let unknown = Work {
            executed: 1000,
            ffma: 200,
            mma: 500,
            ..Work::default()
        };
        assert_eq!(
            position("sm_90", 132, 1.98, 1.0, Memory::default(), unknown),
            None
        );
    }

    /// The L2 is a roof of its own: a kernel whose gathers fill the L2 with the DRAM half idle
    /// is at the L2's limit, and its DRAM figure is said beside it.
    #[test]
    fn the_l2_binds_where_the_kernel_is_nearer_it_than_the_dram() {
        // A scattered FP64 lookup on an H100 (corpus `hecbench-xsbench-registers`): 13.08 ms,
        // DRAM at 49.7% and L2 at 94.4% of their peaks, 4.4% of the FP64 peak.
        let lookup = Work {
            executed: 1_000_000_000,
            dfma: 300_000_000,
            ..Work::default()
        };
        let both = Memory {
            dram_pct: Some(49.7),
            l2_pct: Some(94.4),
        };
        let p = position("sm_90", 132, 1.98, 13_080.0, both, lookup).expect("a position");
        assert_eq!((p.limit, p.roof), (Limit::Fp64, Limit::L2));
        assert!((p.of_roof - 0.944).abs() < 1e-6, "{p:?}");
        assert_eq!(
            p.phrase(),
            "at 94.4% of L2 bandwidth, its binding roof at its intensity (DRAM 49.7%; 4.4% of \
             the FP64 peak)"
        );
        assert_eq!(p.cell(), "L2 94.4% (FP64 4.4%)");
        // A copy with no floating-point work whose matrix fits the L2 (corpus
        // `devblog-transpose-naive`): the L2 at 72.9%, the DRAM at 5.1%.
        let copy = Work {
            executed: 1_000_000,
            ..Work::default()
        };
        let small = Memory {
            dram_pct: Some(5.1),
            l2_pct: Some(72.9),
        };
        let p = position("sm_90", 132, 1.98, 18.4, small, copy).expect("a position");
        assert_eq!((p.limit, p.roof), (Limit::L2, Limit::L2));
        assert_eq!(p.phrase(), "at 72.9% of L2 bandwidth (DRAM 5.1%)");
        assert_eq!(p.cell(), "L2 72.9%");
        // A streaming kernel, its L2 a little under its DRAM, or over it by less than a point:
        // the DRAM's roof, alone.
        for (dram_pct, l2_pct) in [(72.5, 66.5), (0.3, 0.34)] {
            let stream = Memory {
                dram_pct: Some(dram_pct),
                l2_pct: Some(l2_pct),
            };
            let p = position("sm_90", 132, 1.98, 100.0, stream, copy).expect("a position");
            assert_eq!(p.roof, Limit::Dram, "{dram_pct} {l2_pct}");
            assert_eq!(p.phrase(), format!("at {dram_pct:.1}% of DRAM bandwidth"));
        }
    }
}
