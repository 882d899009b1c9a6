//! A block that waits at its barrier on the work of a few of its threads: most of its warps'
//! stall samples at barriers, and the lines they wait for run by one lane of a warp (a loop
//! given to `threadIdx.x == 0`) or by a few warps of the block (one row per thread over fewer
//! rows than threads). What it costs is the time the other warps spend at the barrier.

use super::*;
use crate::diagnosis::Figure;
use crate::message::code;

/// At least this share of a kernel's warp-stall samples at barriers: most of its warp time is
/// spent waiting there. Reductions and tiled products that synchronise between steps spend
/// 11-18% there (corpus `optgpu-reduce-v2-idle-threads` 15%, `mma-matmul-k30-barrier` 18%,
/// both H200); a block whose thread 0 runs a loop alone, 84-86% (examples/baseline-contrast
/// `serial thread`, corpus `yencal-scan-lookback-single`, both H200).
const MOSTLY_WAITING: f64 = 0.5;
/// A line run with at most this many lanes per warp instruction is one thread's (or a few
/// threads') work.
const FEW_LANES: f64 = 4.0;
/// ... where the line issues at least this share of the kernel's warp instructions (a loop, not
/// a one-off store of a result).
const SERIAL_WORK: f64 = 0.01;

/// The work a block's waiting warps wait for.
struct Work<'j> {
    line: &'j parsers::SourceLine,
    /// Lanes per warp instruction on it.
    lanes: f64,
    /// The other few-lane lines, by their samples (at most three).
    others: Vec<&'j parsers::SourceLine>,
}

/// Samples on a line other than those at barriers.
fn working(l: &parsers::SourceLine) -> u64 {
    samples(l, |w| w != Wait::Barrier)
}

/// Whether a line touches global memory (loads, stores or atomics).
fn touches_global(l: &parsers::SourceLine) -> bool {
    l.global_sectors > 0 || l.atomics > 0
}

/// The few-lane lines that issue a real part of the kernel's instructions, by their samples
/// away from barriers. A line whose samples wait on global memory but which touches none is
/// where a load's result is used: the line that issued the load (the few-lane line touching
/// global memory with the most instructions) holds the work.
fn serial_work<'j>(lines: &[&'j parsers::SourceLine]) -> Option<Work<'j>> {
    let issued: u64 = lines.iter().map(|l| l.instructions).sum();
    let mut thin: Vec<&parsers::SourceLine> = lines
        .iter()
        .copied()
        .filter(|l| lanes(l).is_some_and(|x| x <= FEW_LANES))
        .filter(|l| l.instructions as f64 >= SERIAL_WORK * issued as f64)
        .filter(|l| working(l) > 0)
        .collect();
    thin.sort_by_key(|l| std::cmp::Reverse(working(l)));
    let top = *thin.first()?;
    let waits_on_load = top
        .top_stall
        .as_deref()
        .is_some_and(|r| Wait::of(r) == Wait::Global);
    let line = if waits_on_load && !touches_global(top) {
        thin.iter()
            .copied()
            .filter(|l| touches_global(l))
            .max_by_key(|l| l.instructions)
            .unwrap_or(top)
    } else {
        top
    };
    let mut others: Vec<_> = thin.into_iter().filter(|l| !std::ptr::eq(*l, line)).collect();
    others.truncate(3);
    others.sort_by_key(|l| l.line);
    Some(Work {
        line,
        lanes: lanes(line).unwrap_or(0.0),
        others,
    })
}

/// A kernel whose warps spend most of their stall samples at barriers while few threads work:
/// its draft, placed at the work they wait for.
pub(super) fn idle_at_barrier(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    mix: &parsers::InstructionMix,
) -> Option<Draft> {
    let waits = Waits::of(mix)?;
    let waiting = waits.share(Wait::Barrier);
    if waiting < MOSTLY_WAITING {
        return None;
    }
    let scope = Scope { config, log: None };
    let us = duration_us(ctx, scope, Some(kernel))?;
    if us < MIN_SAMPLED_US {
        return None;
    }
    // With the SMs busy, the warps that work (other blocks' among them) keep them so: the wait
    // costs no time (examples/baseline-contrast `rows one` over 1,056 blocks, 75% SM
    // throughput, ran no slower than every warp working).
    let sm = metric(ctx, scope, Some(kernel), "Compute (SM) Throughput")?;
    if sm >= BUSY {
        return None;
    }
    let lines = source_lines(ctx, scope, Some(kernel));
    let own = users_lines(ctx, &lines);
    // Where the waiting warps wait: the line with the most barrier samples.
    let barrier_samples = |l: &parsers::SourceLine| l.stall_samples.saturating_sub(working(l));
    let barrier = most(&own, barrier_samples)?;
    let serial = serial_work(&own);
    // Else the work of a few warps, each with its lanes: the line with the most samples away
    // from barriers.
    let work = match &serial {
        Some(w) => w.line,
        None => most(&own, working)?,
    };
    let at = place(ctx, work);
    let mut d = draft(config, kernel, &at, "IdleAtBarrier".into());
    d.confidence = Confidence::High;
    let pct = (waiting * 1000.0).round() / 10.0;
    d.figures.insert("wait_barrier".into(), json!(pct / 100.0));
    d.figures.insert("sm_pct".into(), json!(sm));
    Figure::EstimatedSpeedup.set(&mut d.figures, json!(pct));
    let name = code(kernel.as_str());
    let waiting_pct = figure(format!("{:.0}", waiting * 100.0));
    let barrier_at = path(place(ctx, barrier));
    let work_at = path(&at);
    // The samples of the work's lines, away from barriers, over all the kernel's.
    let others = serial.iter().flat_map(|w| &w.others);
    let work_samples: u64 = working(work) + others.map(|l| working(l)).sum::<u64>();
    let all_samples: u64 = waits.samples.iter().sum();
    let work_share = figure(format!("{:.0}", share(work_samples, all_samples)));
    // Where the warps wait, for how long, and how busy the SMs are: both explanations open so.
    let spent = msg!(
        "{}'s warps spent {}% of their stall samples at barriers (most at {}), in {} µs, with \
         the SMs at {}% of their peak issue rate",
        name.clone(),
        waiting_pct.clone(),
        barrier_at.clone(),
        figure(format!("{us:.1}")),
        figure(format!("{sm:.0}"))
    );
    let warps = metric(ctx, scope, Some(kernel), "Block Size")
        .filter(|b| *b >= 64.0)
        .map(|b| (b / 32.0).round() as u64);
    match &serial {
        Some(w) => {
            d.figures.insert("lanes".into(), rounded(w.lanes, 10.0));
            let who = if w.lanes <= 1.5 {
                msg!("one thread")
            } else {
                msg!("{} threads of a warp", figure(format!("{:.0}", w.lanes)))
            };
            d.title = msg!(
                "Idle warps: the block waits at its barrier while {} works",
                who.clone()
            );
            let others = if w.others.is_empty() {
                Message::new()
            } else {
                let list = w.others.iter().map(|l| path(place(ctx, l)).into());
                msg!(", as do {}", Message::words(list.collect()))
            };
            let rest = warps
                .map(|n| {
                    msg!(
                        ": while it runs, the block's other {} warps have nothing to do but wait",
                        n.saturating_sub(1).to_string()
                    )
                })
                .unwrap_or_default();
            d.explanation = msg!(
                "{}. What they wait for runs with {} of 32 lanes per warp instruction: {} \
                 ({}){}; these lines hold {}% of the samples. It is {}'s work, done alone{}. \
                 That wait, not the arithmetic, is the kernel's time.",
                spent,
                figure(format!("{:.1}", w.lanes)),
                code(&w.line.text),
                work_at.clone(),
                others,
                work_share,
                who,
                rest
            );
            d.fix = msg!(
                "Give that work to a whole warp: each lane takes every 32nd step of the loop \
                 (a predecessor, an element, a row), and the warp combines its lanes with \
                 `__shfl_down_sync` or finds the first that is done with `__ballot_sync`; the \
                 block then waits for a 32nd of the steps. Where the steps depend on each other, \
                 let the lanes look at 32 of them at once and step past all of them."
            );
        }
        None => {
            d.title = msg!(
                "Idle warps: {}% of the block's warp time waits at its barrier on the work of \
                 a few warps",
                waiting_pct.clone()
            );
            let busy_text = warps
                .map(|n| {
                    let busy = ((1.0 - waiting) * n as f64).max(1.0);
                    let work = if busy < 1.5 {
                        msg!("one works")
                    } else {
                        msg!("{} work", figure(format!("{busy:.0}")))
                    };
                    msg!(": of the block's {} warps, about {} at a time", n.to_string(), work)
                })
                .unwrap_or_default();
            d.explanation = msg!(
                "{}{}. The work they wait for is {} ({}, {}% of the samples), whose warps run \
                 with their lanes full: fewer warps work than the block has, and the others \
                 wait, as when a block gives one thread per row over fewer rows than it has \
                 threads (a `threadIdx.x < n` branch around the work).",
                spent,
                busy_text,
                code(&work.text),
                work_at.clone(),
                work_share
            );
            d.fix = msg!(
                "Spread that work over every warp of the block: give a row (or an item) to a \
                 group of lanes instead of one thread, each lane a strided part of it, and \
                 combine the group's parts with `__shfl_down_sync`; or launch blocks of only \
                 the threads that have work, so no warp waits at the barrier for another's."
            );
        }
    }
    d.evidence.push(ctx.metric_evidence(
        config,
        msg!(
            "{}: {}% of its warps' stall samples at barriers (most at {}); the work at {}",
            name,
            waiting_pct,
            barrier_at,
            work_at
        ),
    ));
    Some(d)
}
