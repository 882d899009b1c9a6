//! A bottleneck's words: one wording function for a kernel far below the FP32 peak, one for a
//! kernel far below the DRAM bandwidth.

use super::*;
use crate::diagnosis::Figure;
use crate::message::{Message, code, figure, msg, path, quote};
use crate::rules::profile::own_words;

/// A kernel far below the FP32 peak: what [`word_fp32`] words.
pub(super) struct Fp32Bound<'k> {
    pub(super) kernel: &'k KernelId,
    pub(super) class: Bottleneck,
    /// Its FMA rate and the FP32 peak (GFLOP/s), and the one's share of the other.
    pub(super) achieved: f64,
    pub(super) peak: f64,
    pub(super) fraction: f64,
    /// The peak's terms: SMs, FP32 lanes per SM, the SM clock (GHz).
    pub(super) sms: u32,
    pub(super) lanes: f64,
    pub(super) ghz: f64,
    /// The share of the FP32 peak attainable at its intensity, where the roofline knows it.
    pub(super) attainable: Option<f64>,
    /// The hottest line's text and place, its top stall reason and its share of the samples.
    pub(super) line: &'k str,
    pub(super) at: &'k SourceLocation,
    pub(super) stall: &'k str,
    pub(super) share: f64,
    /// L1/TEX and DRAM throughput (percent of peak).
    pub(super) l1: f64,
    pub(super) dram: f64,
}

/// Records the percent of its binding peak that a title states (`percent`, shown to one
/// decimal): the same number, as the title shows it.
fn percent_of_peak(d: &mut Draft, percent: f64) {
    let shown: f64 = format!("{percent:.1}").parse().unwrap_or(percent);
    Figure::PercentOfPeak.set(&mut d.figures, serde_json::json!(shown));
}

/// The title, explanation and fix of a kernel far below the FP32 peak; returns its evidence's
/// summary.
pub(super) fn word_fp32(d: &mut Draft, f: &Fp32Bound) -> Message {
    let name = || code(f.kernel.as_str());
    let pct = figure(format!("{:.1}", f.fraction * 100.0));
    let whole = |x: f64| figure(format!("{x:.0}"));
    let attainable = f
        .attainable
        .map(|a| msg!(" (attainable at its intensity: {}%)", whole(a * 100.0)))
        .unwrap_or_default();
    let scale = msg!(
        "{} runs {} GFLOP/s of FMAs, {}% of the FP32 peak of this GPU ({} GFLOP/s: {} SMs x {} \
         lanes x 2 at {} GHz){}, and no Nsight Compute rule names a cause. {}% of its \
         warp-stall samples are on {} ({}), most of them {}; L1/TEX runs at {}% of its peak, \
         DRAM at {}%.",
        name(),
        whole(f.achieved),
        pct.clone(),
        whole(f.peak),
        f.sms.to_string(),
        f.lanes.to_string(),
        figure(format!("{:.2}", f.ghz)),
        attainable,
        whole(f.share),
        code(f.line),
        path(f.at),
        code(f.stall),
        whole(f.l1),
        whole(f.dram)
    );
    let (title, why, fix) = match f.class {
        Bottleneck::L1NoReuse => (
            "Bound by L1 traffic with no data reuse",
            "Warps wait on global loads that L1 serves over and over: every multiply-add loads \
             its operands again, so the load path saturates long before the FMA units do.",
            "Reuse what is loaded: stage tiles of the operands in shared memory (or registers) \
             once per block and compute from there.",
        ),
        Bottleneck::SharedLoads => (
            "Bound by shared-memory loads (MIO queue)",
            "Warps queue on the memory-input/output pipe: each FMA needs its operands from \
             shared memory, so the shared-memory loads, not the arithmetic, set the pace.",
            "Compute several outputs per thread (a column or a 2D tile of results held in \
             registers), so each value loaded from shared memory feeds several FMAs; load with \
             vector (`float4`) accesses.",
        ),
        Bottleneck::Barrier => (
            "Stalled at barriers",
            "Warps wait at `__syncthreads()` for the slowest warp of their block.",
            "Use fewer or cheaper barriers: more work between them, double-buffered tiles so one \
             barrier serves two stages, or warp-level synchronisation where only a warp shares \
             the data.",
        ),
        Bottleneck::MathPipe => (
            "Bound by the math pipe",
            "Warps wait for the arithmetic pipe to accept another instruction.",
            "Move the product to the tensor cores (WMMA, `mma.sync`, wgmma) or use a cheaper \
             instruction form.",
        ),
    };
    percent_of_peak(d, f.fraction * 100.0);
    d.title = msg!(
        "{}: {} at {}% of the FP32 peak",
        own_words(title),
        name(),
        pct.clone()
    );
    d.explanation = msg!("{} {}", scale, own_words(why));
    d.fix = own_words(fix);
    msg!(
        "{}: {} GFLOP/s ({}% of {}), L1/TEX {}%, DRAM {}%, hottest line {}: {}",
        name(),
        whole(f.achieved),
        pct,
        whole(f.peak),
        whole(f.l1),
        whole(f.dram),
        path(f.at),
        code(f.stall)
    )
}

/// Where a memory-bound kernel's lanes sit idle.
pub(super) enum Lanes<'l> {
    /// A busy line (its text and place) runs with this many of 32 lanes active.
    Line(&'l str, SourceLocation, f64),
    /// The kernel's instructions run with this many of 32 lanes active on average.
    Kernel(f64),
}

/// A kernel far below the DRAM bandwidth: what [`word_memory`] words.
pub(super) struct MemoryBound<'k> {
    pub(super) kernel: &'k KernelId,
    pub(super) class: MemoryBottleneck,
    /// A Triton kernel: its fix is said in Triton's terms (programs, `BLOCK_SIZE`,
    /// `num_warps`), which write no shuffles, barriers or grid-stride loops of their own.
    pub(super) triton: bool,
    /// DRAM, SM and the busiest memory unit's throughput (percent of peak); its duration (µs).
    pub(super) dram: f64,
    /// The L2's throughput, where it is above DRAM's: then the L2 is the level that binds.
    pub(super) l2: Option<f64>,
    pub(super) sm: f64,
    pub(super) memory: f64,
    pub(super) us: f64,
    /// The line that holds it back: its text and place, its top stall reason, and its share of
    /// the samples.
    pub(super) line: &'k str,
    pub(super) at: &'k SourceLocation,
    pub(super) stall: &'k str,
    pub(super) share: f64,
    /// Its warps' stall samples by wait, in words, where they are split by reason.
    pub(super) split: Option<Message>,
    /// The share of its samples away from its global accesses, where that (and not a launch
    /// far below the bandwidth) is why it is named.
    pub(super) own: Option<f64>,
    /// Lanes idle in divergent warps.
    pub(super) lanes: Option<Lanes<'k>>,
    /// Bytes each thread reads and the share of samples away from those loads.
    pub(super) per_thread: Option<(f64, f64)>,
    /// Global atomics per thread and the share of the samples waiting on them, where they
    /// hold the warps back.
    pub(super) atomics: Option<(f64, f64)>,
    /// A second wait of its own work and its share (percent).
    pub(super) also: Option<(Wait, f64)>,
}

/// The title, explanation and fix of a kernel far below the DRAM bandwidth; returns its
/// evidence's summary.
pub(super) fn word_memory(d: &mut Draft, f: &MemoryBound) -> Message {
    let name = || code(f.kernel.as_str());
    let fig = |x: f64, decimals: usize| figure(format!("{x:.decimals$}"));
    let own = f
        .own
        .map(|o| {
            msg!(
                " {}% of its warps' stall samples are away from its global accesses: its own \
                 work between them, not memory, holds it back, most of it on {} ({}).",
                fig(o * 100.0, 0),
                code(f.line),
                path(f.at)
            )
        })
        .unwrap_or_default();
    let hottest = match &f.split {
        Some(split) => msg!(" {}", split),
        None => msg!(
            " {}% of its warp-stall samples are on {} ({}), most of them {}.",
            fig(f.share, 0),
            code(f.line),
            path(f.at),
            code(f.stall)
        ),
    };
    // How it ran, and the same against its limit for the title.
    let (ran, against) = match f.l2 {
        Some(l2) => (
            msg!(
                "the memory bandwidth is what it could reach; its busiest level, the L2, ran at \
                 {}% of its peak (DRAM {}%)",
                fig(l2, 1),
                fig(f.dram, 1)
            ),
            msg!("{}% of L2 bandwidth (DRAM {}%)", fig(l2, 1), fig(f.dram, 1)),
        ),
        None => (
            msg!(
                "the DRAM bandwidth is what it could reach (attainable at its intensity: 100% \
                 of DRAM bandwidth); it ran at {}% of it",
                fig(f.dram, 1)
            ),
            msg!("{}% of DRAM bandwidth", fig(f.dram, 1)),
        ),
    };
    let scale = msg!(
        "{} {}, so {} in {} µs, with the SMs at {}% of their peak issue rate and the busiest \
         memory unit at {}%, and no Nsight Compute rule names a cause.{}{}",
        name(),
        if f.class == MemoryBottleneck::Atomics {
            "updates memory by atomics from every thread"
        } else {
            "does no floating-point work to speak of"
        },
        ran,
        fig(f.us, 1),
        fig(f.sm, 0),
        fig(f.memory, 0),
        hottest,
        own
    );
    let lanes = match &f.lanes {
        Some(Lanes::Line(text, at, lanes)) => msg!(
            " Divergent warps: {} ({}) runs with {} of 32 lanes active on average, the rest \
             masked off by the branch around it, and a warp stays on such a line until its last \
             active lane is done.",
            code(*text),
            path(at),
            fig(*lanes, 1)
        ),
        Some(Lanes::Kernel(l)) => msg!(
            " Its instructions run with {} of 32 lanes active on average: the rest are masked \
             off by divergent branches or predicated off, and still cost an issue slot.",
            fig(*l, 1)
        ),
        None => Message::new(),
    };
    let (title, why, fix) = memory_class_words(f, lanes);
    let also = match f.also {
        Some((Wait::Barrier, share)) if f.class == MemoryBottleneck::Atomics => msg!(
            " {}% of its warps' stall samples are at memory fences: a sequentially consistent \
             or system-scope atomic (`cuda::atomic_ref<T>`'s default) fences each update.",
            fig(share, 0)
        ),
        Some((wait, share)) if f.triton => msg!(
            " {} also hold {}% of its warps' stall samples: a reduction across the warps of a \
             program (`tl.sum`, `tl.max`) goes through shared memory and a barrier; with fewer \
             warps per program (`num_warps`), or a row held by one warp, it stays in shuffles.",
            if wait == Wait::Barrier {
                "Its barriers"
            } else {
                "Shared-memory results"
            },
            fig(share, 0)
        ),
        Some((Wait::Barrier, share)) => msg!(
            " Its barriers also hold {}% of its warps' stall samples: finish the last 32 values \
             of a block-wide step in one warp with `__shfl_down_sync`, without \
             `__syncthreads()`, and do more work between the barriers that remain.",
            fig(share, 0)
        ),
        Some((_, share)) => msg!(
            " Shared-memory results also hold {}% of its warps' stall samples: keep partial \
             values in registers and exchange them within a warp by shuffles.",
            fig(share, 0)
        ),
        None => Message::new(),
    };
    percent_of_peak(d, f.l2.unwrap_or(f.dram));
    d.title = msg!("{} at {}", title, against);
    d.explanation = msg!("{} {}", scale, why);
    d.fix = fix.then(also);
    msg!(
        "{}: DRAM {}%, SM {}%, memory {}%, {} µs, hottest line {}: {}",
        name(),
        fig(f.dram, 1),
        fig(f.sm, 0),
        fig(f.memory, 0),
        fig(f.us, 1),
        path(f.at),
        quote(f.stall)
    )
}

/// The fix of a memory-bound Triton kernel's class, in the terms a Triton program is written
/// in: its block of elements, its loop over blocks, its warps and stages.
fn triton_fix(class: MemoryBottleneck) -> &'static str {
    match class {
        MemoryBottleneck::Instructions => {
            "Spend fewer instructions per element: offsets from `tl.arange` over contiguous \
             elements (no integer division or modulo), masks computed once per block, and more \
             elements per program (`BLOCK_SIZE`) combined before any reduction."
        }
        MemoryBottleneck::OnChip | MemoryBottleneck::Barrier => {
            "Fewer steps across the program's warps per element: more elements per program \
             before each reduction, and fewer warps per program (`num_warps`), so that a \
             reduction stays within a warp, in shuffles, with no shared memory or barrier."
        }
        MemoryBottleneck::PerThread => {
            "Give each program more of the input: a larger `BLOCK_SIZE`, or a loop over blocks \
             inside the program (`for off in tl.range(0, n, BLOCK_SIZE)`) with fewer programs, \
             so the work paid once per program (offsets, masks, reductions, the store) is paid \
             once per many elements."
        }
        MemoryBottleneck::Latency => {
            "Put more bytes in flight: a larger `BLOCK_SIZE` per program, more pipeline stages \
             (`num_stages`) so loads are issued ahead, and enough programs for several per SM."
        }
        MemoryBottleneck::Atomics => {
            "Combine within the program first (`tl.histogram`, `tl.sum` over its block) and \
             issue one `tl.atomic_add` per program and address, with `sem=\"relaxed\"` where it \
             only counts."
        }
    }
}

/// The title, mechanism (with its idle lanes, `lanes`) and fix of a memory-bound kernel's
/// class.
fn memory_class_words(f: &MemoryBound, lanes: Message) -> (Message, Message, Message) {
    let fig = |x: f64, decimals: usize| Message::from(figure(format!("{x:.decimals$}")));
    let (bytes, away) = f.per_thread.unwrap_or_default();
    let (title, why, fix, args) = match f.class {
        MemoryBottleneck::Instructions => (
            "Instruction-bound",
            "The SMs are busy issuing instructions, not waiting on memory: index arithmetic, \
             tests and branches around each load cost more than moving its bytes.{}",
            "Spend fewer instructions per element: no division or modulo in index tests, \
             contiguous thread indices so a warp's lanes take one path and whole warps finish \
             together, and several elements per thread combined in registers before any tree \
             or loop over shared memory.",
            vec![lanes],
        ),
        MemoryBottleneck::OnChip => (
            "Bound by on-chip memory traffic",
            "Shared memory or L1 is the busy unit ({}%) while DRAM is not: each element makes \
             several round trips through shared memory.{}",
            "Keep values in registers: combine several elements per thread before writing \
             shared memory, and reduce within a warp with shuffles (`__shfl_down_sync`) instead \
             of shared-memory steps.",
            vec![fig(f.memory, 0), lanes],
        ),
        MemoryBottleneck::Barrier => (
            "Stalled at barriers",
            "Warps wait at barriers for the slowest warp of their block, while fewer and fewer \
             warps of it have work.",
            "Use fewer barriers per element: more elements per thread before the block \
             synchronises, and warp shuffles for the last 32 values instead of \
             `__syncthreads()` steps.",
            vec![],
        ),
        MemoryBottleneck::PerThread => (
            "Too little work per thread",
            "Each thread reads {} bytes of global memory, and {}% of its warps' stall samples \
             are away from those loads: the work each thread does besides loading (index \
             arithmetic, the block's steps through shared memory and barriers, its store) is \
             paid for every {} bytes moved, and a warp doing it has no load in flight.",
            "Give each thread many elements: loop over the input (a grid-stride loop, or several \
             rows per block or program) combining them in registers, with several independent \
             loads in flight and vector loads where aligned, and a grid of a few blocks per SM, \
             so the work paid once per block is paid once per many elements.",
            vec![fig(bytes, 0), fig(away * 100.0, 0), fig(bytes, 0)],
        ),
        MemoryBottleneck::Atomics => (
            "Serialised global atomics",
            "Each thread issues {} global atomics, and {}% of its warps' stall samples wait on \
             them, at the kernel's exit until they drain or at fences, while nothing is busy: \
             L2 applies atomics to one address one after another, so many threads updating few \
             addresses (a histogram's bins, one counter) queue there.",
            "Combine within the block first (warp shuffles, or shared-memory atomics on a \
             private copy of the bins) and issue one global atomic per block and address; where \
             it only counts, use `atomicAdd` or `cuda::atomic_ref<T, \
             cuda::thread_scope_device>` with `memory_order_relaxed`.",
            {
                let (per_thread, waiting) = f.atomics.unwrap_or_default();
                vec![fig(per_thread, 1), fig(waiting * 100.0, 0)]
            },
        ),
        MemoryBottleneck::Latency => (
            "Latency-bound: too few bytes in flight",
            "Neither the SMs nor the memory system is busy: warps wait on global loads, and too \
             few loads are in flight to cover DRAM's latency.",
            "Put more bytes in flight: more independent loads per thread (unrolled, vector \
             loads), and enough resident warps (a grid of several blocks per SM).",
            vec![],
        ),
    };
    let fix = own_words(if f.triton { triton_fix(f.class) } else { fix });
    (own_words(title), Message::template(why, args), fix)
}
