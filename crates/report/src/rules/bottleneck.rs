//! `bottleneck`: a profiled kernel far below the FP32 peak for which no Nsight Compute rule names
//! a cause. The kernel's achieved FMA rate (from its source page's instruction mix and its
//! profiled duration) against the peak of the GPU the run recorded says how far it is; the
//! stall reason that dominates the line holding the most warp-stall samples, with the Speed Of
//! Light throughputs, says why:
//! - warps waiting on global loads while L1/TEX is busy and DRAM is not: every operation loads
//!   its operands through L1 again, with no reuse (tile through shared memory or registers);
//! - warps waiting on the MIO queue or shared-memory loads: shared loads per FMA (compute
//!   several outputs per thread from registers, vector loads);
//! - warps waiting at barriers (fewer or cheaper barriers);
//! - warps waiting on the math pipe (tensor cores, or a cheaper instruction).
//!
//! It never fires where a slow-kernel cause names the kernel already, on a kernel that uses the
//! tensor cores, computes in half or double precision, or whose FMAs are under a tenth of what
//! it executes (the FP32 peak is not its limit), on a kernel at or above half the peak, nor where the hottest line's stall is none of
//! these.

use super::slow_kernel::{Scope, duration_us, metric, source_lines};
use super::{Ctx, RuleId};
use crate::KernelId;
use crate::diagnosis::{Confidence, Draft, Level, SourceLocation};
use crate::text::{md_code, relative_path};
use serde_json::json;

/// Under this share of the FP32 peak a kernel is far from what the GPU can do.
const FAR_BELOW: f64 = 0.5;

/// What holds a kernel back, from its hottest line's stall and the Speed Of Light.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bottleneck {
    L1NoReuse,
    SharedLoads,
    Barrier,
    MathPipe,
}

/// FP32 lanes per SM, by compute capability (`sm_90`: 128).
fn fp32_lanes(arch: &str) -> Option<f64> {
    let cc: u32 = arch
        .trim_start_matches("sm_")
        .trim_end_matches('a')
        .parse()
        .ok()?;
    Some(match cc {
        60 | 70 | 72 | 75 | 80 => 64.0,
        61 | 62 | 86 | 87 | 89 | 90 | 100 | 103 | 120 => 128.0,
        _ => return None,
    })
}

/// The FP32 peak in GFLOP/s of `sm_count` SMs of `arch` at `ghz`: lanes x 2 FLOP per FMA.
pub fn fp32_peak_gflops(arch: &str, sm_count: u32, ghz: f64) -> Option<f64> {
    Some(fp32_lanes(arch)? * 2.0 * f64::from(sm_count) * ghz)
}

fn classify(stall: &str, l1_pct: f64, dram_pct: f64) -> Option<Bottleneck> {
    let reason = stall.trim_start_matches("stall_");
    match reason {
        "lg" | "lg_throttle" | "long_sb" | "long_scoreboard"
            if l1_pct >= 50.0 && dram_pct < 40.0 =>
        {
            Some(Bottleneck::L1NoReuse)
        }
        "mio" | "mio_throttle" | "short_sb" | "short_scoreboard" => Some(Bottleneck::SharedLoads),
        "barrier" | "membar" => Some(Bottleneck::Barrier),
        "math" | "math_pipe_throttle" | "wait" | "dispatch" => Some(Bottleneck::MathPipe),
        _ => None,
    }
}

/// One warning per profiled kernel far below the FP32 peak that no ncu rule explains.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    let gpu = j.run.and_then(|r| r.environment.gpus.first());
    let sm_count = gpu.and_then(|g| g.sm_count);
    for source in &j.sources {
        let config = source.config;
        for mix in &source.log.instruction_mix {
            // The source page's function: a tool string the join does not index.
            let kernel = KernelId::of(&mix.function);
            // Measured against the FP32 peak only where single-precision FMAs are the work: a
            // kernel on the tensor cores, one computing mostly in half or double precision
            // (HFMA2 and DFMA have other peaks; a few HFMA2 are the compiler's register moves),
            // or one whose FMAs are a small part of what it executes, is not.
            let fma_work = mix.ffma > 0
                && mix.mma == 0
                && mix.ffma.saturating_mul(10) >= mix.fma.saturating_mul(9)
                && mix.ffma.saturating_mul(10) >= mix.executed;
            if !j.is_own(config, &kernel) {
                continue;
            }
            // No floating-point work to speak of: DRAM bandwidth is the limit it could reach.
            let no_fp_work = mix.mma == 0 && mix.fma.saturating_mul(10) < mix.executed;
            if no_fp_work {
                if let Some(d) = memory_bound(ctx, config, &kernel, &out) {
                    out.push(d);
                }
                continue;
            }
            if !fma_work {
                continue;
            }
            let named = ctx.prior.iter().any(|d| {
                d.rule == RuleId::SlowKernel
                    && d.level == Level::Warning
                    && d.config.as_deref() == config
                    && d.kernel.as_deref() == Some(kernel.as_str())
            });
            let done = out.iter().any(|d| {
                d.config.as_deref() == config && d.kernel.as_deref() == Some(kernel.as_str())
            });
            if named || done {
                continue;
            }
            let scope = Scope { config, log: None };
            let arch: Option<String> = j
                .kernel(config, &kernel)
                .and_then(|k| k.arch.as_deref().map(str::to_string))
                .or_else(|| {
                    gpu.and_then(|g| g.compute_capability.as_ref())
                        .map(|cc| format!("sm_{}", cc.replace('.', "")))
                });
            let (Some(arch), Some(sms), Some(ghz), Some(us)) = (
                arch,
                sm_count,
                metric(ctx, scope, Some(&kernel), "SM Frequency"),
                duration_us(ctx, scope, Some(&kernel)),
            ) else {
                continue;
            };
            let Some(peak) = fp32_peak_gflops(&arch, sms, ghz) else {
                continue;
            };
            // Warp-level FMAs: 32 lanes, 2 FLOP each.
            let achieved = mix.ffma as f64 * 32.0 * 2.0 / (us * 1e3);
            let fraction = achieved / peak;
            if !(fraction > 0.0 && fraction < FAR_BELOW) {
                continue;
            }
            let lines = source_lines(ctx, scope, Some(&kernel));
            let Some(Hottest {
                line: hot,
                stall,
                share,
                at,
            }) = hottest(ctx, &lines)
            else {
                continue;
            };
            let l1 = metric(ctx, scope, Some(&kernel), "L1/TEX Cache Throughput").unwrap_or(0.0);
            let dram = metric(ctx, scope, Some(&kernel), "DRAM Throughput").unwrap_or(0.0);
            let Some(class) = classify(stall, l1, dram) else {
                continue;
            };
            let pct = fraction * 100.0;
            let name = md_code(&kernel);
            let line = md_code(&hot.text);
            let reason = md_code(stall);
            let mut d = draft(config, &kernel, &at, format!("{class:?}"));
            d.figures
                .insert("fp32_gflops".into(), json!(achieved.round()));
            d.figures
                .insert("fp32_peak_gflops".into(), json!(peak.round()));
            d.figures.insert(
                "peak_fraction".into(),
                json!((fraction * 1000.0).round() / 1000.0),
            );
            d.figures.insert("stall".into(), json!(stall));
            d.figures.insert("l1_tex_pct".into(), json!(l1));
            d.figures.insert("dram_pct".into(), json!(dram));
            let attainable = crate::roofline::of_kernel(j, config, &kernel)
                .filter(|p| p.limit == crate::roofline::Limit::Fp32)
                .map(|p| {
                    d.figures.insert(
                        "attainable".into(),
                        json!((p.attainable * 1000.0).round() / 1000.0),
                    );
                    format!(
                        " (attainable at its intensity: {:.0}%)",
                        p.attainable * 100.0
                    )
                })
                .unwrap_or_default();
            let scale = format!(
                "{name} runs {:.0} GFLOP/s of FMAs, {pct:.1}% of the FP32 peak of this GPU \
                 ({:.0} GFLOP/s: {sms} SMs x {} lanes x 2 at {ghz:.2} GHz){attainable}, and no \
                 Nsight Compute rule names a cause. {:.0}% of its warp-stall samples are on {line} \
                 (`{at}`), most of them {reason}; L1/TEX runs at {l1:.0}% of its peak, DRAM at \
                 {dram:.0}%.",
                achieved,
                peak,
                fp32_lanes(&arch).unwrap_or(0.0),
                share,
            );
            let (title, why, fix) = match class {
                Bottleneck::L1NoReuse => (
                    "Bound by L1 traffic with no data reuse",
                    "Warps wait on global loads that L1 serves over and over: every \
                     multiply-add loads its operands again, so the load path saturates long \
                     before the FMA units do.",
                    "Reuse what is loaded: stage tiles of the operands in shared memory (or \
                     registers) once per block and compute from there.",
                ),
                Bottleneck::SharedLoads => (
                    "Bound by shared-memory loads (MIO queue)",
                    "Warps queue on the memory-input/output pipe: each FMA needs its operands \
                     from shared memory, so the shared-memory loads, not the arithmetic, set \
                     the pace.",
                    "Compute several outputs per thread (a column or a 2D tile of results held \
                     in registers), so each value loaded from shared memory feeds several \
                     FMAs; load with vector (`float4`) accesses.",
                ),
                Bottleneck::Barrier => (
                    "Stalled at barriers",
                    "Warps wait at `__syncthreads()` for the slowest warp of their block.",
                    "Use fewer or cheaper barriers: more work between them, double-buffered \
                     tiles so one barrier serves two stages, or warp-level synchronisation \
                     where only a warp shares the data.",
                ),
                Bottleneck::MathPipe => (
                    "Bound by the math pipe",
                    "Warps wait for the arithmetic pipe to accept another instruction.",
                    "Move the product to the tensor cores (WMMA, `mma.sync`, wgmma) or use a \
                     cheaper instruction form.",
                ),
            };
            d.title = format!("{title}: {name} at {pct:.1}% of the FP32 peak");
            d.explanation = format!("{scale} {why}");
            d.fix = fix.to_string();
            d.evidence.push(ctx.metric_evidence(
                config,
                format!(
                    "{name}: {:.0} GFLOP/s ({pct:.1}% of {:.0}), L1/TEX {l1:.0}%, DRAM {dram:.0}%, \
                     hottest line `{at}`: {reason}",
                    achieved, peak
                ),
            ));
            out.push(d);
        }
    }
    out
}

/// A bottleneck's draft for a kernel in a config, at its hottest line, before its words.
fn draft(config: Option<&str>, kernel: &KernelId, at: &SourceLocation, key: String) -> Draft {
    let mut d = Draft::new(RuleId::Bottleneck, Level::Warning, String::new());
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    d.location = Some(at.clone());
    d.key = key;
    d.confidence = Confidence::Medium;
    d
}

/// The line of a kernel holding the most warp-stall samples: its place, the stall reason with
/// most samples there, and its share (percent) of the kernel's samples.
struct Hottest<'j> {
    line: &'j parsers::SourceLine,
    stall: &'j str,
    share: f64,
    at: SourceLocation,
}

fn hottest<'j>(ctx: &Ctx<'j, '_>, lines: &[&'j parsers::SourceLine]) -> Option<Hottest<'j>> {
    let total: u64 = lines.iter().map(|l| l.stall_samples).sum();
    let line = lines.iter().copied().max_by_key(|l| l.stall_samples)?;
    let stall = line.top_stall.as_deref()?;
    let share = if total > 0 {
        line.stall_samples as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    Some(Hottest {
        line,
        stall,
        share,
        at: SourceLocation {
            file: relative_path(&line.file, &ctx.joined.repo_files),
            line: Some(line.line),
        },
    })
}

/// Under this share of the DRAM bandwidth a kernel with no floating-point work to speak of is
/// far from what it could reach; shorter launches (µs) are too small to judge.
const MIN_DURATION_US: f64 = 50.0;

/// What holds back a kernel whose limit is DRAM bandwidth, from the Speed Of Light and its
/// hottest line's stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryBottleneck {
    /// The SMs are busy issuing instructions: more instructions per byte than bandwidth allows.
    Instructions,
    /// Shared memory (or L1) is the busy unit, not DRAM.
    OnChip,
    Barrier,
    /// Neither unit is busy and warps wait on global loads: too few bytes in flight.
    Latency,
}

/// A kernel with no floating-point work to speak of (a reduction, a copy, a scan) measured
/// against the DRAM bandwidth, its attainable at that intensity: far below it, the unit that
/// holds it back, at its hottest line.
fn memory_bound(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    done: &[Draft],
) -> Option<Draft> {
    let j = ctx.joined;
    let named = ctx.prior.iter().chain(done).any(|d| {
        matches!(d.rule, RuleId::SlowKernel | RuleId::Bottleneck)
            && d.level == Level::Warning
            && d.config.as_deref() == config
            && d.kernel.as_deref() == Some(kernel.as_str())
    });
    if named {
        return None;
    }
    let scope = Scope { config, log: None };
    let us = duration_us(ctx, scope, Some(kernel))?;
    let dram = metric(ctx, scope, Some(kernel), "DRAM Throughput")?;
    let sm = metric(ctx, scope, Some(kernel), "Compute (SM) Throughput")?;
    let memory = metric(ctx, scope, Some(kernel), "Memory Throughput").unwrap_or(dram);
    if us < MIN_DURATION_US || dram >= FAR_BELOW * 100.0 {
        return None;
    }
    let lines = source_lines(ctx, scope, Some(kernel));
    let Hottest {
        line: hot,
        stall,
        share,
        at,
    } = hottest(ctx, &lines)?;
    let reason = stall.trim_start_matches("stall_");
    const BUSY: f64 = 60.0;
    let class = if sm >= BUSY && sm >= memory {
        MemoryBottleneck::Instructions
    } else if memory >= BUSY && memory - dram >= 20.0 {
        MemoryBottleneck::OnChip
    } else if matches!(reason, "barrier" | "membar") {
        MemoryBottleneck::Barrier
    } else if matches!(reason, "long_sb" | "long_scoreboard" | "lg" | "lg_throttle") {
        MemoryBottleneck::Latency
    } else {
        return None;
    };
    // Lanes doing work per warp instruction, over the kernel's lines.
    let (issued, lanes) = lines.iter().fold((0u64, 0u64), |(i, a), l| {
        (i + l.instructions, a + l.active_lanes)
    });
    let lanes_per_instruction = (issued > 0 && lanes > 0).then(|| lanes as f64 / issued as f64);
    let name = md_code(kernel);
    let line = md_code(&hot.text);
    let mut d = draft(config, kernel, &at, format!("{class:?}"));
    d.figures.insert("dram_pct".into(), json!(dram));
    d.figures.insert("sm_pct".into(), json!(sm));
    d.figures.insert("memory_pct".into(), json!(memory));
    d.figures.insert("stall".into(), json!(stall));
    if let Some(l) = lanes_per_instruction {
        d.figures.insert(
            "lanes_per_instruction".into(),
            json!((l * 10.0).round() / 10.0),
        );
    }
    let scale = format!(
        "{name} does no floating-point work to speak of, so the DRAM bandwidth is what it could \
         reach (attainable at its intensity: 100% of DRAM bandwidth); it ran at {dram:.1}% of it \
         in {us:.1} µs, with the SMs at {sm:.0}% of their peak issue rate and the busiest memory \
         unit at {memory:.0}%, and no Nsight Compute rule names a cause. {share:.0}% of its \
         warp-stall samples are on {line} (`{at}`), most of them `{stall}`."
    );
    // The busy line (at least a twentieth of the instructions) with the fewest lanes at work.
    let thinnest = lines
        .iter()
        .filter(|l| l.instructions > 0 && l.active_lanes > 0)
        .filter(|l| l.instructions.saturating_mul(20) >= issued)
        .map(|l| (*l, l.active_lanes as f64 / l.instructions as f64))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let lanes_text = match (lanes_per_instruction, thinnest) {
        (_, Some((l, lanes))) if lanes < 24.0 => {
            d.figures
                .insert("fewest_lanes".into(), json!((lanes * 10.0).round() / 10.0));
            format!(
                " Divergent warps: {} (`{}:{}`) runs with {lanes:.1} of 32 lanes active on \
                 average, the rest masked off by the branch around it, and a warp stays on \
                 such a line until its last active lane is done.",
                md_code(&l.text),
                relative_path(&l.file, &j.repo_files),
                l.line
            )
        }
        (Some(l), _) if l < 24.0 => format!(
            " Its instructions run with {l:.1} of 32 lanes active on average: the rest are \
             masked off by divergent branches or predicated off, and still cost an issue slot."
        ),
        _ => String::new(),
    };
    let (title, why, fix) = match class {
        MemoryBottleneck::Instructions => (
            "Instruction-bound",
            format!(
                "The SMs are busy issuing instructions, not waiting on memory: index arithmetic, \
                 tests and branches around each load cost more than moving its bytes.{lanes_text}"
            ),
            "Spend fewer instructions per element: no division or modulo in index tests, \
             contiguous thread indices so a warp's lanes take one path and whole warps finish \
             together, and several elements per thread combined in registers before any \
             tree or loop over shared memory.",
        ),
        MemoryBottleneck::OnChip => (
            "Bound by on-chip memory traffic",
            format!(
                "Shared memory or L1 is the busy unit ({memory:.0}%) while DRAM is not: each \
                 element makes several round trips through shared memory.{lanes_text}"
            ),
            "Keep values in registers: combine several elements per thread before writing \
             shared memory, and reduce within a warp with shuffles (`__shfl_down_sync`) \
             instead of shared-memory steps.",
        ),
        MemoryBottleneck::Barrier => (
            "Stalled at barriers",
            "Warps wait at barriers for the slowest warp of their block, while fewer and fewer \
             warps of it have work."
                .to_string(),
            "Use fewer barriers per element: more elements per thread before the block \
             synchronises, and warp shuffles for the last 32 values instead of \
             `__syncthreads()` steps.",
        ),
        MemoryBottleneck::Latency => (
            "Latency-bound: too few bytes in flight",
            "Neither the SMs nor the memory system is busy: warps wait on global loads, and \
             too few loads are in flight to cover DRAM's latency."
                .to_string(),
            "Put more bytes in flight: more independent loads per thread (unrolled, vector \
             loads), and enough resident warps (a grid of several blocks per SM).",
        ),
    };
    d.title = format!("{title} at {dram:.1}% of DRAM bandwidth");
    d.explanation = format!("{scale} {why}");
    d.fix = fix.to_string();
    d.evidence.push(ctx.metric_evidence(
        config,
        format!(
            "{name}: DRAM {dram:.1}%, SM {sm:.0}%, memory {memory:.0}%, {us:.1} µs, hottest \
             line `{at}`: {stall}"
        ),
    ));
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fp32_peak_comes_from_the_arch_and_the_device() {
        // An H100 SXM at its profiled clock: 132 SMs x 128 lanes x 2 x 1.98 GHz.
        let h100 = fp32_peak_gflops("sm_90", 132, 1.98).expect("sm_90");
        assert!((h100 - 66_908.16).abs() < 0.01, "{h100}");
        // An A100: 108 SMs x 64 lanes x 2 x 1.41 GHz.
        let a100 = fp32_peak_gflops("sm_80", 108, 1.41).expect("sm_80");
        assert!((a100 - 19_491.84).abs() < 0.01, "{a100}");
        assert_eq!(fp32_peak_gflops("sm_42", 1, 1.0), None);
    }

    #[test]
    fn the_stall_and_the_throughputs_name_the_bottleneck() {
        assert_eq!(
            classify("stall_lg", 75.0, 11.0),
            Some(Bottleneck::L1NoReuse)
        );
        // Waiting on global loads with DRAM busy is a bandwidth limit, not a reuse problem.
        assert_eq!(classify("stall_long_sb", 40.0, 85.0), None);
        assert_eq!(
            classify("stall_mio", 89.0, 16.0),
            Some(Bottleneck::SharedLoads)
        );
        assert_eq!(
            classify("stall_barrier", 10.0, 5.0),
            Some(Bottleneck::Barrier)
        );
        assert_eq!(
            classify("stall_math_pipe_throttle", 5.0, 1.0),
            Some(Bottleneck::MathPipe)
        );
        assert_eq!(classify("stall_not_selected", 50.0, 10.0), None);
    }
}
