//! A cause's words: what ncu's rule means at the line that holds the cost (one wording function
//! per class of cause), how the cause weighs, and which fragment call a WMMA intrinsic line
//! belongs to.

use super::*;
use crate::message::{Message, code, figure, msg, path};
use crate::rules::profile::share;
use parsers::WmmaFragment;

/// The title, mechanism and fix of a cause, in words from ncu's numbers and ptxas's `stack`
/// frame for its kernel.
pub(super) fn describe(
    ctx: &Ctx,
    d: &mut Draft,
    class: Class,
    (finding, rule): (&FindingRef, &ProfilerRule),
    hot: Option<&SourceLine>,
    lines: &[&SourceLine],
    stack: Option<u64>,
) {
    let scope = scope_of(finding);
    // ncu's rules for this kernel in this profiling run, the lead rule first: the first figure
    // they state is the cause's (a class's rules each state some of its figures).
    let kernel = finding.kernel.as_ref();
    let same = (ctx.joined.findings.iter())
        .filter(|f| scope.log.is_none_or(|l| f.source == l) && f.kernel.as_ref() == kernel);
    let rules: Vec<&ProfilerRule> = std::iter::once(rule)
        .chain(same.filter_map(profiler_rule))
        .collect();
    let at = |extra: Message| word_at(ctx, hot, scope.config, extra);
    match class {
        Class::BankConflicts => bank_conflicts(ctx, d, &rules, hot, lines, at),
        Class::Uncoalesced => uncoalesced(d, &rules, hot, at),
        Class::FewBlocks => {
            let of_launch = |name: &str| metric(ctx, scope, kernel, name);
            let grid = Grid {
                blocks: rule.grid_blocks,
                sms: ctx.joined.run.and_then(|r| r.environment.gpus.first()?.sm_count),
                waves: of_launch("Waves Per SM"),
                warps: of_launch("Achieved Active Warps Per SM"),
            };
            few_blocks(d, &grid, at(Message::new()));
        }
        Class::LocalMemory => local_memory(d, stack.unwrap_or(0), rule, at(Message::new())),
        Class::Occupancy => {
            let (binding, fewest) = binding_limiters(ctx, scope, finding, rule);
            // More resident warps is a prediction, not a measurement: one more run at another
            // register budget, block size or tile tests it.
            d.hypothesis = [
                (OccupancyLimiter::Registers, ExperimentKind::Registers),
                (OccupancyLimiter::SharedMemory, ExperimentKind::Tile),
                (OccupancyLimiter::WarpsPerBlock, ExperimentKind::BlockSize),
                (OccupancyLimiter::BlocksPerSm, ExperimentKind::BlockSize),
            ]
            .into_iter()
            .find(|(limiter, _)| binding.contains(limiter))
            .map(|(_, kind)| Hypothesis::new(kind, None));
            let warps = rule.theoretical_warps_per_scheduler;
            occupancy(d, &binding, fewest, warps, at(Message::new()));
        }
    }
}

/// " The cost sits at `file:line` (`text`)<extra>.", or nothing without a source page; the
/// text only where ncu could read the file.
fn word_at(ctx: &Ctx, hot: Option<&SourceLine>, config: Option<&str>, extra: Message) -> Message {
    hot.map(|l| {
        let at = ctx.tool_place(&l.file, l.line, config);
        let text = (!l.text.is_empty()).then(|| msg!(" ({})", code(&l.text)));
        msg!(
            " The cost sits at {}{}{}.",
            path(format!("{}:{}", at.file, at.line.unwrap_or(l.line))),
            text.unwrap_or_default(),
            extra
        )
    })
    .unwrap_or_default()
}

/// Shared-memory bank conflicts: the ways ncu measured, the hot line's share of the excessive
/// wavefronts, and a WMMA fragment's padding where the line is one.
fn bank_conflicts(
    ctx: &Ctx,
    d: &mut Draft,
    rules: &[&ProfilerRule],
    hot: Option<&SourceLine>,
    lines: &[&SourceLine],
    at: impl Fn(Message) -> Message,
) {
    let way = rules.iter().find_map(|r| r.bank_conflict_ways);
    let ways = way.map(|w| msg!(": {}-way on average", figure(format!("{w:.0}"))));
    d.title = msg!("Shared-memory bank conflicts{}", ways.unwrap_or_default());
    let excessive: u64 = lines.iter().map(|l| l.shared_excessive).sum();
    let total: u64 = lines.iter().map(|l| l.shared_wavefronts).sum();
    let there = hot
        .map(|l| {
            msg!(
                ": {}% of the kernel's excessive shared wavefronts ({} of the {} shared \
                 wavefronts there, {} in the kernel)",
                figure(format!("{:.0}", share(l.shared_excessive, excessive))),
                l.shared_excessive.to_string(),
                l.shared_wavefronts.to_string(),
                total.to_string()
            )
        })
        .unwrap_or_default();
    d.explanation = msg!(
        "The lanes of a warp read shared-memory addresses in the same bank{}, so each access is \
         replayed once per conflicting lane.{}",
        way.map(|w| msg!(" ({} lanes per bank on average)", figure(format!("{w:.1}"))))
            .unwrap_or_default(),
        at(there)
    );
    d.fix = msg!(
        "Make a warp's 32 lanes hit 32 banks: pad each row of the shared tile by one element \
         (`tile[32][33]`), or swizzle the column index (XOR with the row); a column read of a \
         32-wide float tile is 32-way otherwise."
    );
    if let Some((what, calls)) = hot.and_then(|l| wmma_fragment(ctx, l, lines)) {
        let listed = Message::words(calls.iter().map(|c| path(c).into()).collect());
        let calls = (!calls.is_empty()).then(|| msg!(" ({})", listed));
        d.explanation.append(msg!(
            " That line is the toolkit's WMMA {}, inlined into the kernel from its {} calls{}: a \
             fragment moves 16 rows of the shared tile at once, and with a leading dimension \
             (`ldm`) that is a multiple of 128 bytes every row starts in the same bank.",
            fragment_words(what),
            code(format!("wmma::{}", what.call())),
            calls.unwrap_or_default()
        ));
        d.fix = msg!(
            "Pad the shared tile's rows by 16 bytes (8 halves, 4 floats): `__half \
             tile[ROWS][COLS + 8]`, passed as `ldm = COLS + 8`, so the rows of a fragment start \
             in different banks."
        );
    }
}

/// Uncoalesced global access: the bytes used of each sector and the excessive sectors, from
/// the class's own rules (a local-memory pattern's bytes per sector are another cause's).
fn uncoalesced(
    d: &mut Draft,
    rules: &[&ProfilerRule],
    hot: Option<&SourceLine>,
    at: impl Fn(Message) -> Message,
) {
    let own = || {
        rules
            .iter()
            .filter(|r| Class::of(r) == Some(Class::Uncoalesced))
    };
    let used = own().find_map(|r| r.sector_bytes_used);
    let excessive = own().find_map(|r| r.excessive.map(|e| e.percent));
    let of_each = used.map(|u| msg!(": {} of 32 bytes used per sector", figure(format!("{u:.1}"))));
    d.title = msg!("Uncoalesced global access{}", of_each.unwrap_or_default());
    let there = hot
        .map(|l| {
            msg!(
                ": {} excessive sectors of its {}",
                l.global_excessive.to_string(),
                l.global_sectors.to_string()
            )
        })
        .unwrap_or_default();
    d.explanation = msg!(
        "Neighbouring lanes of a warp touch addresses a stride apart (a row each where a column \
         each was meant, an array of structures, a transposed index), so each memory request \
         moves many 32-byte sectors of which it uses little{}{}.{}",
        used.map(|u| msg!(" ({} bytes of each 32)", figure(format!("{u:.1}"))))
            .unwrap_or_default(),
        excessive
            .map(|p| msg!("; {}% of the sectors moved are excessive", figure(p.to_string())))
            .unwrap_or_default(),
        at(there)
    );
    d.fix = msg!(
        "Make consecutive lanes touch consecutive addresses: index with `threadIdx.x` in the \
         fastest-moving dimension, stage a transposed tile through shared memory, or change the \
         data layout."
    );
}

/// A launch's grid as ncu counted it: blocks, SMs, waves of blocks per SM and warps active per
/// SM (achieved).
struct Grid {
    blocks: Option<u64>,
    sms: Option<u32>,
    waves: Option<f64>,
    warps: Option<f64>,
}

/// Too few blocks for the GPU's multiprocessors (`grid.sms`, where the run knows them).
fn few_blocks(d: &mut Draft, grid: &Grid, at: Message) {
    d.title = match (grid.blocks, grid.sms) {
        (Some(b), Some(s)) => msg!("Too few blocks: {} for {} SMs", b.to_string(), s.to_string()),
        (Some(b), None) => msg!("Too few blocks: {}", b.to_string()),
        _ => msg!("Too few blocks to fill the GPU"),
    };
    // The grid counted the way the GPU runs it: a fraction of one wave of blocks, and the
    // warps each SM has at work.
    let warps = grid.warps.map(|w| {
        msg!(", with {} warps active per SM", figure(crate::text::sig3(w)))
    });
    let counted = grid.waves.map(|w| {
        let waves = figure(crate::text::waves(w));
        msg!(" The launch is {} waves of blocks per SM{}.", waves, warps.unwrap_or_default())
    });
    d.explanation = msg!(
        "The grid has fewer blocks than the GPU has multiprocessors, so most of them sit idle \
         for the whole launch.{}{}",
        counted.unwrap_or_default(),
        at
    );
    d.fix = msg!(
        "Launch at least one block per SM, better several (a grid-stride loop over a grid of \
         2-8x the SM count), or split the work of one block across many."
    );
}

/// Warps stalled on a stack frame of `bytes` per thread (ncu's `rule` says so).
fn local_memory(d: &mut Draft, bytes: u64, rule: &ProfilerRule, at: Message) {
    d.title = msg!(
        "Local memory: a {}-byte stack frame per thread",
        bytes.to_string()
    );
    d.explanation = msg!(
        "ptxas gives the kernel a {}-byte stack frame without spilling registers: an array \
         indexed at run time lives in local memory, which is device memory behind the L1 cache, \
         and warps stall on its loads and stores (ncu: {}).{}",
        bytes.to_string(),
        code(format!("{}: {}", rule.name, rule.headline)),
        at
    );
    d.fix = msg!(
        "Keep the array in registers: index it only with compile-time constants (unroll the \
         loops over it), or move a table every thread shares to shared memory; the stack frame \
         in ptxas's output should go to 0."
    );
}

/// The limiters of theoretical occupancy that bind, and the blocks per SM they allow.
///
/// ncu names the limiters ("limited by the number of blocks that can fit on the SM, and the
/// required amount of shared memory"): those it names that allow the fewest blocks (its Block
/// Limit metrics) bind, else the smallest block limit of all. With small blocks the SM's block
/// count binds, and the shared memory each block reserves ties with it: larger blocks lift
/// both, so the block count alone is named.
fn binding_limiters(
    ctx: &Ctx,
    scope: Scope,
    finding: &FindingRef,
    rule: &ProfilerRule,
) -> (Vec<OccupancyLimiter>, Option<f64>) {
    const ALL: [OccupancyLimiter; 4] = [
        OccupancyLimiter::SharedMemory,
        OccupancyLimiter::Registers,
        OccupancyLimiter::WarpsPerBlock,
        OccupancyLimiter::BlocksPerSm,
    ];
    let value =
        |l: OccupancyLimiter| metric(ctx, scope, finding.kernel.as_ref(), l.block_limit_metric());
    let named: &[OccupancyLimiter] = if rule.occupancy_limiters.is_empty() {
        &ALL
    } else {
        &rule.occupancy_limiters
    };
    let candidates: Vec<(f64, OccupancyLimiter)> = named
        .iter()
        .filter_map(|l| Some((value(*l)?, *l)))
        .collect();
    let fewest = candidates.iter().map(|c| c.0).min_by(f64::total_cmp);
    let mut binding: Vec<OccupancyLimiter> = candidates
        .iter()
        .filter(|c| Some(c.0) == fewest)
        .map(|c| c.1)
        .collect();
    if binding.contains(&OccupancyLimiter::BlocksPerSm) {
        binding = vec![OccupancyLimiter::BlocksPerSm];
    }
    (binding, fewest)
}

/// A limiter of occupancy in words: "shared memory", "the blocks an SM can hold".
fn limiter_words(l: OccupancyLimiter) -> &'static str {
    match l {
        OccupancyLimiter::SharedMemory => "shared memory",
        OccupancyLimiter::Registers => "registers",
        OccupancyLimiter::WarpsPerBlock => "the block size",
        OccupancyLimiter::BlocksPerSm => "the blocks an SM can hold",
    }
}

/// Low theoretical occupancy: the limiters that bind, the blocks per SM they allow (`fewest`)
/// and ncu's theoretical warps per scheduler.
fn occupancy(
    d: &mut Draft,
    binding: &[OccupancyLimiter],
    fewest: Option<f64>,
    warps: Option<f64>,
    at: Message,
) {
    let names = Message::words(
        binding
            .iter()
            .map(|l| msg!("{}", limiter_words(*l)))
            .collect(),
    );
    let blocks = |b: f64| crate::text::plural(b as u64, "block", "blocks");
    d.title = match fewest {
        Some(b) => msg!("Occupancy limited by {}: {} per SM", &names, blocks(b)),
        None => msg!("Low theoretical occupancy"),
    };
    let allow = if binding.len() > 1 || binding == [OccupancyLimiter::Registers] {
        "allow"
    } else {
        "allows"
    };
    d.explanation = msg!(
        "Too few warps can be resident to hide latency{}{}.{}",
        warps
            .map(|w| msg!(": {} warps per scheduler of 16", figure(format!("{w:.1}"))))
            .unwrap_or_default(),
        fewest
            .map(|b| msg!(", because {} {} only {} per SM", &names, allow, blocks(b)))
            .unwrap_or_default(),
        at
    );
    let fixes = binding.iter().map(|l| match l {
        OccupancyLimiter::SharedMemory => msg!(
            "Use less shared memory per block (a smaller tile, or fewer stages), so more blocks \
             fit on an SM."
        ),
        OccupancyLimiter::Registers => msg!(
            "Cap registers (`__launch_bounds__`, `-maxrregcount`) or restructure to keep fewer \
             values live."
        ),
        OccupancyLimiter::BlocksPerSm => msg!(
            "Launch larger blocks: an SM holds at most 32 blocks, so small blocks leave most of \
             its warp slots empty; 128 to 256 threads per block lift the limit."
        ),
        OccupancyLimiter::WarpsPerBlock => msg!("Launch larger blocks or more of them per SM."),
    });
    d.fix = Message::join(fixes, " ");
}

/// How a cause weighs: the figures its explanation tells after the mechanism.
pub(super) struct Weight<'k> {
    pub(super) kernel: Option<&'k KernelId>,
    /// The profiled launch's duration (µs), where it is too short to judge.
    pub(super) short_launch: Option<f64>,
    /// ncu's estimated speedup (percent of the kernel's time).
    pub(super) speedup: f64,
    /// Memory and compute throughput (percent of peak) of a latency-bound kernel whose cause is
    /// its occupancy.
    pub(super) latency: Option<(f64, f64)>,
    /// Memory, DRAM and compute throughput (percent of peak) of a kernel that is not
    /// latency-bound.
    pub(super) peaks: Option<(f64, f64, f64)>,
    /// The kernel's share of the profiled GPU time and the program's gain (percent), where it
    /// is not all of it.
    pub(super) share: Option<(f64, f64)>,
}

/// What a cause's explanation says after its mechanism: a launch too short to judge, ncu's
/// estimate (with the latency-bound reading for occupancy), the throughput and the share.
pub(super) fn word_weight(d: &mut Draft, w: &Weight) {
    let named = || {
        w.kernel
            .map(|k| msg!("{}", code(k.as_str())))
            .unwrap_or_else(|| msg!("the kernel"))
    };
    let pct = |x: f64| figure(format!("{x:.0}"));
    if let Some(us) = w.short_launch {
        d.explanation.append(msg!(
            " The profiled launch of {} took {} µs: too short a launch to judge its speed, \
             whatever a rule estimates; profile a larger one.",
            named(),
            figure(format!("{us:.1}"))
        ));
    }
    d.explanation.append(match w.latency {
        Some((memory, compute)) => msg!(
            " {} is latency-bound: it ran at {}% of the GPU's peak memory throughput and {}% of \
             its compute throughput, both under ncu's 60% mark, so its warps wait rather than \
             any unit being busy, and its speed follows the warps resident. Nsight Compute \
             estimates up to {}% for the occupancy it lacks.",
            named(),
            pct(memory),
            pct(compute),
            pct(w.speedup)
        ),
        None => msg!(
            " Nsight Compute estimates {} could run up to {}% faster without it.",
            named(),
            pct(w.speedup)
        ),
    });
    if let Some((memory, dram, compute)) = w.peaks {
        d.explanation.append(msg!(
            " It ran at {}% of the GPU's peak memory throughput (DRAM {}%) and {}% of its \
             compute throughput.",
            pct(memory),
            pct(dram),
            pct(compute)
        ));
    }
    if let Some((share, gain)) = w.share {
        d.explanation.append(msg!(
            " {} takes {}% of the GPU time of the profiled launches, so the program could gain \
             up to {}%.",
            named(),
            pct(share * 100.0),
            pct(gain)
        ));
    }
}

/// What a WMMA fragment's load or store moves: "load of a `matrix_a` fragment".
fn fragment_words(fragment: WmmaFragment) -> Message {
    match fragment {
        WmmaFragment::LoadA => msg!("load of a `matrix_a` fragment"),
        WmmaFragment::LoadB => msg!("load of a `matrix_b` fragment"),
        WmmaFragment::LoadAccumulator => msg!("load of an accumulator fragment"),
        WmmaFragment::StoreAccumulator => msg!("store of an accumulator fragment"),
    }
}

/// When a hot line is the toolkit's WMMA fragment load or store (`__hmma_m16n16k16_ld_b` in
/// `crt/mma.hpp`, inlined): what it moves, and the kernel's own lines that call it, as
/// `file:line` (at most six).
fn wmma_fragment(
    ctx: &Ctx,
    hot: &SourceLine,
    lines: &[&SourceLine],
) -> Option<(WmmaFragment, Vec<String>)> {
    let repo = &ctx.joined.repo_files;
    if repo.contains(&relative_path(&hot.file, repo)) {
        return None;
    }
    let what = hot.wmma_intrinsic()?;
    // (file, line) of each call, sorted as the places they are.
    let mut calls: Vec<String> = lines
        .iter()
        .filter(|l| l.function == hot.function && l.calls_wmma(what))
        .map(|l| (relative_path(&l.file, repo), l.line))
        .filter(|(file, _)| repo.contains(file))
        .map(|(file, line)| format!("{file}:{line}"))
        .collect();
    calls.sort();
    calls.dedup();
    calls.truncate(6);
    Some((what, calls))
}
