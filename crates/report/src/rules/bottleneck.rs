//! `bottleneck`: a profiled kernel far below the FP32 peak for which no Nsight Compute rule names
//! a cause. The kernel's achieved FMA rate (from its source page's instruction mix and its
//! profiled duration) against the peak of the GPU the run recorded says how far it is; the
//! stall reason that dominates the line holding the most warp-stall samples, with the Speed Of
//! Light throughputs, says why:
//! - warps waiting on global loads while L1/TEX is busy and DRAM is not: every operation loads
//!   its operands through L1 again, with no reuse (tile through shared memory or registers);
//! - warps waiting on the MIO queue or shared-memory loads: shared loads per FMA (compute
//!   several outputs per thread from registers, vector loads);
//! - warps waiting at barriers (fewer or cheaper barriers), or, with most of their samples
//!   there and the SMs not busy, waiting on a few threads' work (`idle.rs`: idle warps);
//! - warps waiting on the math pipe (tensor cores, or a cheaper instruction).
//!
//! It never fires where a slow-kernel cause names the kernel already, on a kernel that uses the
//! tensor cores, computes in half or double precision, or whose FMAs are under a tenth of what
//! it executes (the FP32 peak is not its limit), on a kernel at or above half the peak, nor where the hottest line's stall is none of
//! these.

mod idle;
mod words;

use words::{Fp32Bound, Lanes, MemoryBound, word_fp32, word_memory};

use super::profile::{Scope, duration_us, metric, most, place, rounded, share, source_lines};
use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level, SourceLocation};
use crate::kernel_id::KernelId;
use crate::message::{Message, figure, msg, path};
use crate::roofline::Limit;
use crate::text::relative_path;
use serde_json::json;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::Bottleneck,
    Role::Performance,
    "Bottleneck below the limit",
    "A profiled kernel that no Nsight Compute rule explains, measured against \
        its limit: under half the FP32 peak of the GPU the run recorded (its FMAs \
        from the source page's instruction mix over its duration), or, with no \
        floating-point work or a global atomic from every thread, under half the \
        DRAM bandwidth, or under 80% of it with most of its warps' stall samples \
        away from its global accesses. The stall samples by reason and the Speed \
        Of Light name the unit that holds it back (L1 traffic with no reuse, \
        shared-memory loads, barriers, the math pipe, instruction issue, bytes in \
        flight, atomics queued in L2) and the fix. Whatever its \
        limit, a kernel with at least half its warps' stall samples at barriers and \
        its SMs under 60% of their issue rate waits on a few threads' work: idle \
        warps, placed at that work (a loop one lane runs, or a few warps' lines), \
        with the lanes it runs on.",
    "crates/report/src/rules/bottleneck.rs",
    run,
)
.slowing(true);

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

/// One warning per profiled kernel far below its limit that no ncu rule explains.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    for source in &j.sources {
        let config = source.config;
        for mix in &source.log.instruction_mix {
            // The source page's function: a tool string the join does not index.
            let kernel = KernelId::of(&mix.function);
            if !j.is_own(config, &kernel) {
                continue;
            }
            // Most of its warps waiting at a barrier on a few threads' work, whatever its limit.
            if let Some(d) = idle::idle_at_barrier(ctx, config, &kernel, mix) {
                out.push(d);
                continue;
            }
            // One draft per kernel and config.
            let done = out.iter().any(|d| {
                d.config.as_deref() == config && d.kernel.as_deref() == Some(kernel.as_str())
            });
            if done {
                continue;
            }
            // No floating-point work to speak of, or a global atomic from every thread: memory
            // is the limit it could reach.
            let memory = mix.fma.saturating_mul(10) < mix.executed
                || atomics_waited_on(ctx, config, &kernel, mix).is_some();
            out.extend(if mix.mma == 0 && memory {
                memory_bound(ctx, config, &kernel, mix)
            } else {
                fp32_bound(ctx, config, &kernel, mix)
            });
        }
    }
    out
}

/// A kernel whose work is single-precision FMAs measured against the FP32 peak: far below it,
/// the unit that holds it back, at its hottest line.
fn fp32_bound(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    mix: &parsers::InstructionMix,
) -> Option<Draft> {
    // Measured against the FP32 peak only where single-precision FMAs are the work: a kernel
    // on the tensor cores, one computing mostly in half or double precision (HFMA2 and DFMA
    // have other peaks; a few HFMA2 are the compiler's register moves), or one whose FMAs are
    // a small part of what it executes, is not.
    let fma_work = mix.ffma > 0
        && mix.mma == 0
        && mix.ffma.saturating_mul(10) >= mix.fma.saturating_mul(9)
        && mix.ffma.saturating_mul(10) >= mix.executed;
    if !fma_work {
        return None;
    }
    let j = ctx.joined;
    let scope = Scope { config, log: None };
    let metric_of = |name: &str| metric(ctx, scope, Some(kernel), name);
    let arch = crate::roofline::arch_of(j, config, kernel)?;
    let sms = j.run?.environment.gpus.first()?.sm_count?;
    let ghz = metric_of("SM Frequency")?;
    let us = duration_us(ctx, scope, Some(kernel))?;
    // FLOP per clock per SM: 2 per FMA on each FP32 lane.
    let per_sm = crate::roofline::flops_per_clock(&arch, Limit::Fp32)?;
    let peak = per_sm * f64::from(sms) * ghz;
    // Warp-level FMAs: 32 lanes, 2 FLOP each.
    let achieved = mix.ffma as f64 * 32.0 * 2.0 / (us * 1e3);
    let fraction = achieved / peak;
    if !(fraction > 0.0 && fraction < FAR_BELOW) {
        return None;
    }
    let (hot, stall, share, at) = hottest(ctx, &source_lines(ctx, scope, Some(kernel)))?;
    let l1 = metric_of("L1/TEX Cache Throughput").unwrap_or(0.0);
    let dram = metric_of("DRAM Throughput").unwrap_or(0.0);
    let class = classify(stall, l1, dram)?;
    let mut d = draft(config, kernel, &at, format!("{class:?}"));
    let attainable = crate::roofline::of_kernel(j, config, kernel)
        .filter(|p| p.limit == Limit::Fp32)
        .map(|p| p.attainable);
    let figures = &mut d.figures;
    figures.insert("fp32_gflops".into(), json!(achieved.round()));
    figures.insert("fp32_peak_gflops".into(), json!(peak.round()));
    figures.insert("peak_fraction".into(), rounded(fraction, 1000.0));
    figures.insert("stall".into(), json!(stall));
    figures.insert("l1_tex_pct".into(), json!(l1));
    figures.insert("dram_pct".into(), json!(dram));
    if let Some(a) = attainable {
        figures.insert("attainable".into(), rounded(a, 1000.0));
    }
    let fact = Fp32Bound {
        kernel,
        class,
        achieved,
        peak,
        fraction,
        sms,
        lanes: per_sm / 2.0,
        ghz,
        attainable,
        line: &hot.text,
        at: &at,
        stall,
        share,
        l1,
        dram,
    };
    let summary = word_fp32(&mut d, &fact);
    d.evidence.push(ctx.metric_evidence(config, summary));
    Some(d)
}

/// A bottleneck's draft for a kernel in a config, at its hottest line, before its words.
fn draft(config: Option<&str>, kernel: &KernelId, at: &SourceLocation, key: String) -> Draft {
    let mut d = Draft::new(RuleId::Bottleneck, Level::Warning, Message::new());
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    // A slow-kernel cause of the same kernel already says where its time goes.
    d.gives_way
        .push(GiveWay::TimeAccounted(Some(kernel.clone())));
    d.location = Some(at.clone());
    d.key = key;
    d.confidence = Confidence::Medium;
    d
}

/// The line of a kernel holding the most warp-stall samples, the stall reason with most samples
/// there, its share (percent) of the kernel's samples, and its place.
fn hottest<'j>(
    ctx: &Ctx<'j, '_>,
    lines: &[&'j parsers::SourceLine],
) -> Option<(&'j parsers::SourceLine, &'j str, f64, SourceLocation)> {
    let lines = users_lines(ctx, lines);
    let total: u64 = lines.iter().map(|l| l.stall_samples).sum();
    let line = most(&lines, |l| l.stall_samples)?;
    let stall = line.top_stall.as_deref()?;
    Some((line, stall, share(line.stall_samples, total), place(ctx, line)))
}

/// The lines of a kernel in the run's own files, where it has any with samples: a header's
/// line inlined into the kernel is listed with the samples of every call that inlined it, and
/// again under the user's line of each call.
fn users_lines<'j>(
    ctx: &Ctx<'j, '_>,
    lines: &[&'j parsers::SourceLine],
) -> Vec<&'j parsers::SourceLine> {
    let repo = &ctx.joined.repo_files;
    let own: Vec<_> = lines
        .iter()
        .copied()
        .filter(|l| l.stall_samples > 0)
        .filter(|l| crate::text::is_users_file(&relative_path(&l.file, repo), repo))
        .collect();
    if own.is_empty() { lines.to_vec() } else { own }
}

/// Lanes doing work per warp instruction on a line, where it executed any.
fn lanes(l: &parsers::SourceLine) -> Option<f64> {
    (l.instructions > 0 && l.active_lanes > 0).then(|| l.active_lanes as f64 / l.instructions as f64)
}

/// A line's warp-stall samples of the waits `keep` keeps.
fn samples(l: &parsers::SourceLine, keep: impl Fn(Wait) -> bool) -> u64 {
    l.stalls
        .iter()
        .filter(|(r, _)| keep(Wait::of(r)))
        .map(|(_, n)| n)
        .sum()
}

/// A launch shorter than this (µs) is too short to judge by its DRAM throughput alone: its
/// ramp-up and tail weigh on the average.
const MIN_DURATION_US: f64 = 50.0;
/// Nor is any launch shorter than this, whatever its stall samples say.
const MIN_SAMPLED_US: f64 = 10.0;
/// At or above this throughput (percent of peak) a unit is busy: the SMs, or the busiest memory
/// unit.
const BUSY: f64 = 60.0;
/// At or above this share of the DRAM bandwidth a memory-bound kernel is at its limit.
const AT_LIMIT: f64 = 0.8;
/// A kernel with at least this share of its warps' stall samples away from its global accesses
/// spends most of its time on its own work, by a clear margin. Streaming kernels on an H100
/// spend 6-35% there (examples/slow-kernels, `fast` reference run: `axpb` 14%, `reduce` 6%,
/// `staged_scale` 35%, `transpose` 30%).
const OWN_WORK: f64 = 0.6;
/// A kernel whose threads each read at most this many bytes of global memory (two 16-byte
/// vector loads) pays its per-thread work (index arithmetic, a block's tree, its barriers and
/// stores) for every few bytes it moves.
const FEW_BYTES_PER_THREAD: f64 = 32.0;
/// With at least this share of its warps' stall samples away from its global loads, that
/// per-thread work is what keeps such a kernel below the bandwidth. Streaming kernels whose
/// threads do little besides loading spend 2-23% there (examples/slow-kernels `axpb` 14%,
/// examples/slow-reduction `many16` 17% and `fast` 2%, the cuda-samples grid-stride `reduce6`
/// 14%); two elements a thread and then a block's combining steps, 38-48% (`shuffle2` 38% on
/// an H100 and 40% on an H200, cuda-samples `reduce4` and `reduce5` 48%).
const PER_THREAD_WORK: f64 = 1.0 / 3.0;

/// Where a kernel's warps wait, from its warp-stall samples by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// On global (or local) memory: `long_sb`, `lg_throttle`, `drain`, `tex`.
    Global,
    /// At barriers: `barrier`, `membar`.
    Barrier,
    /// On shared memory and the other MIO results (shuffles, special functions): `short_sb`,
    /// `mio_throttle`.
    Shared,
    /// Issuing, or on fixed-latency dependencies and the math pipes: everything else.
    Issue,
}

impl Wait {
    const ALL: [Wait; 4] = [Wait::Global, Wait::Barrier, Wait::Shared, Wait::Issue];

    fn of(reason: &str) -> Wait {
        match reason.trim_start_matches("stall_") {
            "long_sb" | "long_scoreboard" | "lg" | "lg_throttle" | "drain" | "tex"
            | "tex_throttle" => Wait::Global,
            "barrier" | "membar" => Wait::Barrier,
            "short_sb" | "short_scoreboard" | "mio" | "mio_throttle" => Wait::Shared,
            _ => Wait::Issue,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Wait::Global => "waiting on global memory",
            Wait::Barrier => "at barriers",
            Wait::Shared => "on shared memory and other MIO results",
            Wait::Issue => "issuing or on fixed-latency dependencies",
        }
    }
}

/// A kernel's warp-stall samples split by [`Wait`], each instruction counted once.
struct Waits {
    samples: [u64; 4],
}

impl Waits {
    fn of(mix: &parsers::InstructionMix) -> Option<Waits> {
        let mut samples = [0u64; 4];
        for (reason, n) in &mix.stalls {
            samples[Wait::of(reason) as usize] += n;
        }
        (samples.iter().sum::<u64>() > 0).then_some(Waits { samples })
    }

    fn share(&self, wait: Wait) -> f64 {
        let total: u64 = self.samples.iter().sum();
        self.samples[wait as usize] as f64 / total.max(1) as f64
    }

    /// The wait with the most samples of those in `among`.
    fn top(&self, among: &[Wait]) -> Option<Wait> {
        among
            .iter()
            .copied()
            .max_by(|a, b| self.share(*a).total_cmp(&self.share(*b)))
    }

    /// "36% waiting on global memory (`reduction_kernel.cu:215`), 15% at barriers (...)": every
    /// wait of at least a twentieth, largest first, each at the line that holds most of it.
    fn sentence(&self, ctx: &Ctx, lines: &[&parsers::SourceLine]) -> Message {
        let lines = users_lines(ctx, lines);
        let mut waits: Vec<Wait> = Wait::ALL
            .into_iter()
            .filter(|w| self.share(*w) >= 0.05)
            .collect();
        waits.sort_by(|a, b| self.share(*b).total_cmp(&self.share(*a)));
        let parts: Vec<Message> = waits
            .iter()
            .map(|w| {
                let at = most(&lines, |l| samples(l, |x| x == *w))
                    .map(|l| msg!(" (most at {})", path(place(ctx, l))))
                    .unwrap_or_default();
                msg!(
                    "{}% {}{}",
                    figure(format!("{:.0}", self.share(*w) * 100.0)),
                    w.words(),
                    at
                )
            })
            .collect();
        msg!("Its warps' stall samples: {}.", Message::words(parts))
    }
}

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
    /// Each thread reads a few bytes and then spends a large part of its time on the rest of
    /// its work, with no load in flight.
    PerThread,
    /// Every thread updates global memory by atomics, and its warps wait on them.
    Atomics,
}

/// Global atomics (lanes) per thread launched and the share of its warps' stall samples that
/// wait on them (at the kernel's exit until they drain, or at the fences a sequentially
/// consistent atomic adds), where every other thread issues one or more and a fifth of the
/// samples wait: atomics to distinct addresses complete without holding the warps back.
fn atomics_waited_on(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    mix: &parsers::InstructionMix,
) -> Option<(f64, f64)> {
    let threads = metric(ctx, Scope { config, log: None }, Some(kernel), "Threads")?;
    let per_thread = mix.memory.global_atomic_lanes as f64 / threads;
    let of = |reason: &str| mix.stalls.get(&format!("stall_{reason}")).copied().unwrap_or(0);
    let waiting = share(of("drain") + of("membar"), mix.stalls.values().sum()) / 100.0;
    (per_thread >= 0.5 && waiting >= 0.2).then_some((per_thread, waiting))
}

/// Where a memory-bound kernel's lanes sit idle: the busy line (at least a twentieth of the
/// `issued` instructions) with the fewest lanes at work, else the kernel's lanes per
/// instruction, where under 24 of 32.
fn idle_lanes<'j>(
    ctx: &Ctx<'j, '_>,
    d: &mut Draft,
    lines: &[&'j parsers::SourceLine],
    issued: u64,
    lanes_per_instruction: Option<f64>,
) -> Option<Lanes<'j>> {
    let thinnest = lines
        .iter()
        .filter(|l| l.instructions.saturating_mul(20) >= issued)
        .filter_map(|l| Some((*l, lanes(l)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match (lanes_per_instruction, thinnest) {
        (_, Some((l, lanes))) if lanes < 24.0 => {
            d.figures
                .insert("fewest_lanes".into(), rounded(lanes, 10.0));
            Some(Lanes::Line(&l.text, place(ctx, l), lanes))
        }
        (Some(l), _) if l < 24.0 => Some(Lanes::Kernel(l)),
        _ => None,
    }
}

/// A second wait of a memory-bound kernel's own work, large enough to matter (a tenth of its
/// samples), that gets its own advice: the wait and its share (percent).
fn second_wait(w: &Waits, class: MemoryBottleneck) -> Option<(Wait, f64)> {
    // Of the barriers and shared memory, those the class does not already speak for.
    let rest: &[Wait] = match class {
        MemoryBottleneck::Barrier => &[Wait::Shared],
        MemoryBottleneck::OnChip => &[Wait::Barrier],
        // Its fences: the atomics' own.
        MemoryBottleneck::Atomics => &[Wait::Barrier],
        _ => &[Wait::Barrier, Wait::Shared],
    };
    w.top(rest)
        .filter(|x| w.share(*x) >= 0.1)
        .map(|x| (x, w.share(x) * 100.0))
}

/// A kernel with no floating-point work to speak of (a reduction, a copy, a scan) measured
/// against the DRAM bandwidth, its attainable at that intensity: far below it, the unit that
/// holds it back, at its hottest line.
fn memory_bound(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    mix: &parsers::InstructionMix,
) -> Option<Draft> {
    let scope = Scope { config, log: None };
    let metric_of = |name: &str| metric(ctx, scope, Some(kernel), name);
    let us = duration_us(ctx, scope, Some(kernel))?;
    let dram = metric_of("DRAM Throughput")?;
    let sm = metric_of("Compute (SM) Throughput")?;
    let memory = metric_of("Memory Throughput").unwrap_or(dram);
    // The level of the memory hierarchy that binds it, as the roofline says it (the L2 where
    // it moves more of its peak than DRAM does, else DRAM): far below or near is judged there.
    let l2 = metric_of("L2 Cache Throughput").filter(|l2| {
        crate::roofline::memory_roof(Some(dram / 100.0), Some(l2 / 100.0))
            .is_some_and(|(roof, _)| roof == crate::roofline::Limit::L2)
    });
    let binding = l2.unwrap_or(dram);
    let waits = Waits::of(mix);
    // The share of its warps' stall samples away from its global accesses.
    let away = waits.as_ref().map(|w| 1.0 - w.share(Wait::Global));
    // Most of its warps' time, by a clear margin, away from its global accesses: its own work
    // holds it back.
    let own_work = away.filter(|away| *away >= OWN_WORK);
    // Far below the bandwidth on a launch long enough to judge by it, or below the limit with
    // the samples to say its own work is why.
    // Or a large part of it there, with a few bytes read per thread: work paid per thread.
    let atomics = atomics_waited_on(ctx, config, kernel, mix);
    let per_thread = metric_of("Threads")
        .filter(|t| *t > 0.0)
        .map(|t| mix.global_load_bytes as f64 / t)
        .filter(|b| *b > 0.0 && *b <= FEW_BYTES_PER_THREAD)
        .zip(away)
        .filter(|(_, away)| *away >= PER_THREAD_WORK);
    let far = binding < FAR_BELOW * 100.0 && us >= MIN_DURATION_US;
    let below = binding < AT_LIMIT * 100.0
        && us >= MIN_SAMPLED_US
        && (own_work.is_some() || per_thread.is_some());
    if !(far || below) {
        return None;
    }
    let lines = source_lines(ctx, scope, Some(kernel));
    let (hot, stall, share, at) = hottest(ctx, &lines)?;
    // Where neither the SMs nor on-chip memory is busy, where the warps wait says why: over
    // the whole kernel where its samples are split by reason, else at its hottest line. Waits
    // to issue say the SMs are the limit only where they are busy (the first case below), so
    // the largest other wait speaks, when it holds a fifth of the samples.
    let waited = match &waits {
        Some(w) => {
            let pool: &[Wait] = if own_work.is_some() {
                &[Wait::Barrier, Wait::Shared]
            } else {
                &[Wait::Global, Wait::Barrier, Wait::Shared]
            };
            w.top(pool).filter(|x| w.share(*x) >= 0.2)
        }
        None => Some(Wait::of(stall)),
    };
    let class = if sm >= BUSY && sm >= memory {
        MemoryBottleneck::Instructions
    } else if memory >= BUSY && memory - dram >= 20.0 {
        MemoryBottleneck::OnChip
    } else if per_thread.is_some() && own_work.is_none() {
        MemoryBottleneck::PerThread
    } else {
        match waited? {
            // Waits on memory or at fences, with a global atomic from every thread: the
            // atomics queue in L2, each address updated after the other.
            Wait::Barrier | Wait::Global if atomics.is_some() => MemoryBottleneck::Atomics,
            Wait::Barrier => MemoryBottleneck::Barrier,
            Wait::Global => MemoryBottleneck::Latency,
            Wait::Shared => MemoryBottleneck::OnChip,
            // The hottest line's wait to issue, with the SMs not busy: nothing says on what.
            Wait::Issue => return None,
        }
    };
    // Held back by its own work: placed at the line that holds most of it; atomics, at theirs.
    let (hot, at) = match class {
        MemoryBottleneck::Latency => (hot, at),
        // A toolkit header's atomic, at the user's call that inlined it.
        MemoryBottleneck::Atomics => most(&lines, |l| l.atomics)
            .map(|l| (l, ctx.user_place(config, l)))
            .unwrap_or((hot, at)),
        _ => most(&users_lines(ctx, &lines), |l| samples(l, |w| w != Wait::Global))
            .map(|l| (l, place(ctx, l)))
            .unwrap_or((hot, at)),
    };
    // Lanes doing work per warp instruction, over the kernel's lines.
    let (issued, lanes) = lines.iter().fold((0u64, 0u64), |(i, a), l| {
        (i + l.instructions, a + l.active_lanes)
    });
    let lanes_per_instruction = (issued > 0 && lanes > 0).then(|| lanes as f64 / issued as f64);
    let mut d = draft(config, kernel, &at, format!("{class:?}"));
    let figures = &mut d.figures;
    figures.insert("dram_pct".into(), json!(dram));
    figures.insert("sm_pct".into(), json!(sm));
    figures.insert("memory_pct".into(), json!(memory));
    figures.insert("stall".into(), json!(stall));
    if let Some(l) = lanes_per_instruction {
        figures.insert("lanes_per_instruction".into(), rounded(l, 10.0));
    }
    for (wait, w) in waits.iter().flat_map(|w| Wait::ALL.map(|x| (x, w))) {
        figures.insert(format!("wait_{wait:?}").to_lowercase(), rounded(w.share(wait), 1000.0));
    }
    if let Some((a, waiting)) = atomics.filter(|_| class == MemoryBottleneck::Atomics) {
        figures.insert("atomics_per_thread".into(), rounded(a, 10.0));
        figures.insert("atomic_wait_share".into(), rounded(waiting, 1000.0));
    }
    if let Some((bytes, _)) = per_thread.filter(|_| class == MemoryBottleneck::PerThread) {
        figures.insert("bytes_per_thread".into(), rounded(bytes, 10.0));
    }
    let lanes = idle_lanes(ctx, &mut d, &lines, issued, lanes_per_instruction);
    let fact = MemoryBound {
        kernel,
        class,
        triton: ctx.joined.model.kernel(kernel).is_some_and(|k| k.triton),
        dram,
        l2,
        sm,
        memory,
        us,
        line: &hot.text,
        at: &at,
        stall,
        share,
        split: waits.as_ref().map(|w| w.sentence(ctx, &lines)),
        own: own_work.filter(|_| !far),
        lanes,
        per_thread,
        atomics,
        also: waits.as_ref().and_then(|w| second_wait(w, class)),
    };
    let summary = word_memory(&mut d, &fact);
    d.evidence.push(ctx.metric_evidence(config, summary));
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stall_and_the_throughputs_name_the_bottleneck() {
        for (stall, l1, dram, class) in [
            ("stall_lg", 75.0, 11.0, Some(Bottleneck::L1NoReuse)),
            // Waiting on global loads with DRAM busy is a bandwidth limit, not a reuse problem.
            ("stall_long_sb", 40.0, 85.0, None),
            ("stall_mio", 89.0, 16.0, Some(Bottleneck::SharedLoads)),
            ("stall_barrier", 10.0, 5.0, Some(Bottleneck::Barrier)),
            ("stall_math_pipe_throttle", 5.0, 1.0, Some(Bottleneck::MathPipe)),
            ("stall_not_selected", 50.0, 10.0, None),
        ] {
            assert_eq!(classify(stall, l1, dram), class, "{stall}");
        }
    }
}

#[cfg(test)]
mod rule_tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, parsers_fixture, place, says, slow_reduction};
    use crate::run::StageKind;
    use parsers::Format;

    /// The slow-reduction example's `shuffle2` config on an H100, from its reference run
    /// (`examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/shuffle2/sm_90/`):
    /// `block_sum` at 70.8% of DRAM bandwidth, a few bytes read per thread, and no ncu rule
    /// naming a cause.
    #[test]
    fn fires_on_a_reduction_below_the_dram_bandwidth_with_too_little_work_per_thread() {
        let d = slow_reduction!("shuffle2").only(RuleId::Bottleneck);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.kernel.as_deref(), Some("block_sum"));
        assert_eq!(place(&d).as_deref(), Some("src/sum.cu:63"));
        // The L2 (71.9%) is busier than the DRAM (70.8%) by more than a point, so it is the
        // roof that binds, as the kernel table's "Against the limit" says.
        says(&d.title, "71.9% of L2 bandwidth (DRAM 70.8%)");
        // The percent the title states, as a figure the verdict reads.
        assert_eq!(
            crate::diagnosis::Figure::PercentOfPeak.of(&d.figures),
            Some(&serde_json::json!(71.9))
        );
    }

    /// A histogram of the project's own on an H200 (`programs/hist_atomics.cu`): 16M values
    /// into 16 bins, a global atomic from every thread, no ncu rule naming a cause, warps
    /// waiting on memory while the L2 moves 2% of its peak. Serialised atomics at the
    /// `atomicAdd` line, not too few bytes in flight; through `cuda::atomic_ref<int>` (system
    /// scope, sequentially consistent), at its `fetch_add`, with its fences said.
    #[test]
    fn a_histogram_of_global_atomics_is_serialised_atomics_not_latency() {
        // With the SASS line table, which leads the toolkit's atomic to the user's call of it.
        let lines = parsers_fixture!("sass/hist_atomics_nvdisasm_gi.log");
        let [global, system] = [
            (
                "global",
                "hist.cu:12",
                parsers_fixture!("ncu-csv/hist_atomics_global_details.log"),
                parsers_fixture!("ncu-source/hist_atomics_global_source.log"),
            ),
            (
                "system",
                "hist.cu:21",
                parsers_fixture!("ncu-csv/hist_atomics_system_details.log"),
                parsers_fixture!("ncu-source/hist_atomics_system_source.log"),
            ),
        ]
        .map(|(config, at, details, page)| {
            let d = Case::new()
                .profile(config, details, page)
                .log_as(StageKind::Sass, config, "sm_90", Format::SassLines, lines)
                .input("hist.cu")
                .only(RuleId::Bottleneck);
            says(&d.title, "Serialised global atomics at ");
            assert!(
                place(&d).is_some_and(|p| p.ends_with(at)),
                "{:?}",
                d.location
            );
            says(&d.explanation, "1.0 global atomics");
            says(&d.fix, "one global atomic per block and address");
            d
        });
        says(&system.fix, "at memory fences");
        assert!(!global.fix.to_string().contains("fences"), "{}", global.fix);
    }

    /// The same example's `fast` config (`profile/fast/sm_90/`): `block_sum` reading at the
    /// DRAM bandwidth, fast enough.
    #[test]
    fn stays_silent_on_the_reduction_that_runs_at_the_dram_bandwidth() {
        slow_reduction!("fast").silent(RuleId::Bottleneck);
    }
}
