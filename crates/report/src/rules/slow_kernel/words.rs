//! A cause's words: what ncu's rule means at the line that holds the cost, and which fragment call a WMMA intrinsic line belongs to.

use super::*;

/// The title, mechanism and fix of a cause, in words from ncu's numbers.
pub(super) fn describe(
    ctx: &Ctx,
    d: &mut Draft,
    class: Class,
    (finding, rule): (&FindingRef, &ProfilerRule),
    hot: Option<&SourceLine>,
    lines: &[&SourceLine],
    scope: Scope,
) {
    let config = scope.config;
    // The first figure ncu's rules state for this kernel in this profiling run, the lead
    // rule's first (a class's rules each state some of its figures).
    let kernel = finding.kernel.as_ref();
    let rules = || {
        std::iter::once(rule).chain(
            ctx.joined
                .findings
                .iter()
                .filter(|f| scope.log.is_none_or(|l| f.source == l))
                .filter(|f| f.kernel.as_ref() == kernel)
                .filter_map(profiler_rule),
        )
    };
    // " The cost sits at `file:line` (`text`)<extra>.", or nothing without a source page.
    let at = |extra: String| {
        hot.map(|l| {
            let at = ctx.tool_place(&l.file, l.line, config);
            format!(
                " The cost sits at {} ({}){extra}.",
                md_code(&format!("{}:{}", at.file, at.line.unwrap_or(l.line))),
                md_code(&l.text)
            )
        })
        .unwrap_or_default()
    };
    let share = |part: u64, all: u64| {
        if all == 0 {
            0.0
        } else {
            part as f64 * 100.0 / all as f64
        }
    };
    match class {
        Class::BankConflicts => {
            let way = rules().find_map(|r| r.bank_conflict_ways);
            d.title = match way {
                Some(w) => format!("Shared-memory bank conflicts: {w:.0}-way on average").into(),
                None => "Shared-memory bank conflicts".to_string().into(),
            };
            let excessive: u64 = lines.iter().map(|l| l.shared_excessive).sum();
            let total: u64 = lines.iter().map(|l| l.shared_wavefronts).sum();
            d.explanation = format!(
                "The lanes of a warp read shared-memory addresses in the same bank{}, so each \
                 access is replayed once per conflicting lane.{}",
                way.map(|w| format!(" ({w:.1} lanes per bank on average)"))
                    .unwrap_or_default(),
                at(hot
                    .map(|l| format!(
                        ": {:.0}% of the kernel's excessive shared wavefronts ({} of the {} \
                         shared wavefronts there, {} in the kernel)",
                        share(l.shared_excessive, excessive),
                        l.shared_excessive,
                        l.shared_wavefronts,
                        total
                    ))
                    .unwrap_or_default())
            ).into();
            d.fix = "Make a warp's 32 lanes hit 32 banks: pad each row of the shared tile by one \
                     element (`tile[32][33]`), or swizzle the column index (XOR with the row); a \
                     column read of a 32-wide float tile is 32-way otherwise."
                .to_string().into();
            if let Some((what, calls)) = hot.and_then(|l| wmma_fragment(ctx, l, lines)) {
                d.explanation.push_str(&format!(
                    " That line is the toolkit's WMMA {what}, inlined into the kernel from its \
                     `wmma::{}` calls{}: a fragment moves 16 rows of the shared tile at once, and \
                     with a leading dimension (`ldm`) that is a multiple of 128 bytes every row \
                     starts in the same bank.",
                    if what.starts_with("store") {
                        "store_matrix_sync"
                    } else {
                        "load_matrix_sync"
                    },
                    if calls.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", crate::text::join_words(&calls))
                    }
                ));
                d.fix = "Pad the shared tile's rows by 16 bytes (8 halves, 4 floats): \
                         `__half tile[ROWS][COLS + 8]`, passed as `ldm = COLS + 8`, so the rows \
                         of a fragment start in different banks."
                    .to_string().into();
            }
        }
        Class::Uncoalesced => {
            // The class's own rules' figures: a local-memory pattern's bytes per sector are
            // another cause's.
            let own = || rules().filter(|r| Class::of(r) == Some(Class::Uncoalesced));
            let used = own().find_map(|r| r.sector_bytes_used);
            let excessive = own().find_map(|r| r.excessive.map(|e| e.percent));
            d.title = match used {
                Some(u) => format!("Uncoalesced global access: {u:.1} of 32 bytes used per sector").into(),
                None => "Uncoalesced global access".to_string().into(),
            };
            d.explanation = format!(
                "The lanes of a warp touch addresses far apart, so each memory request moves \
                 many 32-byte sectors of which it uses little{}{}.{}",
                used.map(|u| format!(" ({u:.1} bytes of each 32)"))
                    .unwrap_or_default(),
                excessive
                    .map(|p| format!("; {p}% of the sectors moved are excessive"))
                    .unwrap_or_default(),
                at(hot
                    .map(|l| format!(
                        ": {} excessive sectors of its {}",
                        l.global_excessive, l.global_sectors
                    ))
                    .unwrap_or_default())
            ).into();
            d.fix = "Make consecutive lanes touch consecutive addresses: index with \
                     `threadIdx.x` in the fastest-moving dimension, stage a transposed tile \
                     through shared memory, or change the data layout."
                .to_string().into();
        }
        Class::FewBlocks => {
            let blocks = rule.grid_blocks;
            let sms = ctx
                .joined
                .run
                .and_then(|r| r.environment.gpus.first())
                .and_then(|g| g.sm_count);
            d.title = match (blocks, sms) {
                (Some(b), Some(s)) => format!("Too few blocks: {b} for {s} SMs").into(),
                (Some(b), None) => format!("Too few blocks: {b}").into(),
                _ => "Too few blocks to fill the GPU".to_string().into(),
            };
            d.explanation = format!(
                "The grid has fewer blocks than the GPU has multiprocessors, so most of them sit \
                 idle for the whole launch.{}",
                at(String::new())
            ).into();
            d.fix = "Launch at least one block per SM, better several (a grid-stride loop over \
                     a grid of 2-8x the SM count), or split the work of one block across many."
                .to_string().into();
        }
        Class::LocalMemory => {
            let bytes = kernel_stack(ctx, config, d.kernel.as_deref()).unwrap_or(0);
            d.title = format!("Local memory: a {bytes}-byte stack frame per thread").into();
            d.explanation = format!(
                "ptxas gives the kernel a {bytes}-byte stack frame without spilling registers: an \
                 array indexed at run time lives in local memory, which is device memory behind \
                 the L1 cache, and warps stall on its loads and stores (ncu: {}).{}",
                md_code(&format!("{}: {}", rule.name, rule.headline)),
                at(String::new())
            ).into();
            d.fix = "Keep the array in registers: index it only with compile-time constants \
                     (unroll the loops over it), or move a table every thread shares to shared \
                     memory; the stack frame in ptxas's output should go to 0."
                .to_string().into();
        }
        Class::Occupancy => {
            let warps = rule.theoretical_warps_per_scheduler;
            let limits = [
                (OccupancyLimiter::SharedMemory, "shared memory"),
                (OccupancyLimiter::Registers, "registers"),
                (OccupancyLimiter::WarpsPerBlock, "the block size"),
                (OccupancyLimiter::BlocksPerSm, "the blocks an SM can hold"),
            ];
            // ncu names the limiters ("limited by the number of blocks that can fit on the SM,
            // and the required amount of shared memory"): those it names that allow the fewest
            // blocks (its Block Limit metrics) bind, else the smallest block limit of all. With
            // small blocks the SM's block count binds, and the shared memory each block
            // reserves ties with it: larger blocks lift both, so the block count alone is named.
            let value = |l: OccupancyLimiter| {
                metric(ctx, scope, finding.kernel.as_ref(), l.block_limit_metric())
            };
            let what = |l: OccupancyLimiter| limits.iter().find(|(m, _)| *m == l).map(|(_, w)| *w);
            let candidates: Vec<(f64, &str)> = if rule.occupancy_limiters.is_empty() {
                limits
                    .iter()
                    .filter_map(|(l, w)| Some((value(*l)?, *w)))
                    .collect()
            } else {
                rule.occupancy_limiters
                    .iter()
                    .filter_map(|l| Some((value(*l)?, what(*l)?)))
                    .collect()
            };
            let fewest = candidates.iter().map(|c| c.0).min_by(f64::total_cmp);
            let mut binding: Vec<&str> = candidates
                .iter()
                .filter(|c| Some(c.0) == fewest)
                .map(|c| c.1)
                .collect();
            if binding.contains(&"the blocks an SM can hold") {
                binding = vec!["the blocks an SM can hold"];
            }
            let names =
                crate::text::join_words(&binding.iter().map(|w| w.to_string()).collect::<Vec<_>>());
            d.title = match fewest {
                Some(blocks) => format!(
                    "Occupancy limited by {names}: {} per SM",
                    crate::text::plural(blocks as u64, "block", "blocks")
                ).into(),
                None => "Low theoretical occupancy".to_string().into(),
            };
            d.explanation = format!(
                "Too few warps can be resident to hide latency{}{}.{}",
                warps
                    .map(|w| format!(": {w:.1} warps per scheduler of 16"))
                    .unwrap_or_default(),
                fewest
                    .map(|b| format!(
                        ", because {names} {} only {} per SM",
                        if binding.len() > 1 || names == "registers" {
                            "allow"
                        } else {
                            "allows"
                        },
                        crate::text::plural(b as u64, "block", "blocks")
                    ))
                    .unwrap_or_default(),
                at(String::new())
            ).into();
            let fixes: Vec<&str> = binding
                .iter()
                .map(|w| match *w {
                    "shared memory" => {
                        "Use less shared memory per block (a smaller tile, or \
                                        fewer stages), so more blocks fit on an SM."
                    }
                    "registers" => {
                        "Cap registers (`__launch_bounds__`, `-maxrregcount`) or \
                                    restructure to keep fewer values live."
                    }
                    "the blocks an SM can hold" => {
                        "Launch larger blocks: an SM holds at most \
                                                    32 blocks, so small blocks leave most of its \
                                                    warp slots empty; 128 to 256 threads per \
                                                    block lift the limit."
                    }
                    _ => "Launch larger blocks or more of them per SM.",
                })
                .collect();
            d.fix = fixes.join(" ").into();
            // More resident warps is a prediction, not a measurement: one more run at another
            // register budget, block size or tile tests it.
            let test = if binding.contains(&"registers") {
                Some(ExperimentKind::Registers)
            } else if binding.contains(&"shared memory") {
                Some(ExperimentKind::Tile)
            } else if binding
                .iter()
                .any(|w| matches!(*w, "the block size" | "the blocks an SM can hold"))
            {
                Some(ExperimentKind::BlockSize)
            } else {
                None
            };
            d.hypothesis = test.map(|kind| Hypothesis::new(kind, None));
        }
    }
}

/// When a hot line is the toolkit's WMMA fragment load or store (`__hmma_m16n16k16_ld_b` in
/// `crt/mma.hpp`, inlined): what it moves, and the kernel's own lines that call it, as
/// `file:line` (at most six).
fn wmma_fragment(
    ctx: &Ctx,
    hot: &SourceLine,
    lines: &[&SourceLine],
) -> Option<(&'static str, Vec<String>)> {
    let repo = &ctx.joined.repo_files;
    if repo.contains(&relative_path(&hot.file, repo)) {
        return None;
    }
    let text = &hot.text;
    let what = if !text.contains("__hmma_") {
        return None;
    } else if text.contains("_ld_a") {
        "load of a `matrix_a` fragment"
    } else if text.contains("_ld_b") {
        "load of a `matrix_b` fragment"
    } else if text.contains("_ld_c") {
        "load of an accumulator fragment"
    } else if text.contains("_st_c") {
        "store of an accumulator fragment"
    } else {
        return None;
    };
    let call = if what.starts_with("store") {
        "store_matrix_sync"
    } else {
        "load_matrix_sync"
    };
    let mut calls: Vec<String> = lines
        .iter()
        .filter(|l| l.function == hot.function && l.text.contains(call))
        .map(|l| (relative_path(&l.file, repo), l.line))
        .filter(|(file, _)| repo.contains(file))
        .map(|(file, line)| md_code(&format!("{file}:{line}")))
        .collect();
    calls.sort();
    calls.dedup();
    calls.truncate(6);
    Some((what, calls))
}
