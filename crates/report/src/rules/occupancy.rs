//! `occupancy-limit`: resident blocks per SM limited by registers or shared memory, computed
//! from ptxas's figures against the arch's limits (see [`crate::occupancy`]). A block that cannot
//! be resident at all is an error; otherwise a note that names the limit and how far the next
//! block is.

use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level};
use crate::hypothesis::{ExperimentKind, Hypothesis};
use crate::message::{Message, code, msg};
use crate::occupancy::{Limiter, Occupancy};
use crate::resources::{KernelResources, resources_of};
use crate::text::{bytes, fixed};

pub(crate) const RULE: Rule = Rule::new(
    RuleId::OccupancyLimit,
    Role::Performance,
    "Occupancy limited by registers or shared memory",
    "Blocks per SM computed from ptxas's registers and shared memory against the \
        arch's limits (sm_90: 65536 registers, 228 KiB shared memory per SM).",
    "crates/report/src/rules/occupancy.rs",
    run,
);

/// One draft per launched kernel whose occupancy is set by registers or shared memory, merged
/// across configs with the same limiter.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for view in j.target_kernels() {
        let res = resources_of(j, view);
        let Some(occ) = res.occupancy else { continue };
        // Every warp slot of the SM filled: whatever binds first leaves nothing to gain.
        if !matches!(occ.limiter, Limiter::Registers | Limiter::SharedMemory)
            || (occ.blocks_per_sm > 0 && occ.fraction >= 1.0)
        {
            continue;
        }
        let config = view.config.as_deref();
        let fits = occ.blocks_per_sm > 0;
        let level = if fits { Level::Note } else { Level::Error };
        let mut d = Draft::new(RuleId::OccupancyLimit, level, Message::new());
        d.stands_on = vec![crate::measure::Measure::WarpsPerSm];
        d.config = view.config.clone();
        d.kernel = Some(view.name.to_string());
        d.arch = view.arch.clone();
        d.location = ctx.kernel_file(config);
        d.key = occ.limiter.as_str().to_string();
        d.confidence = if res.threads_from == Some("ncu") || res.occupancy_caveat.is_none() {
            Confidence::High
        } else {
            Confidence::Medium
        };
        let fact = Limit {
            kernel: &view.name,
            arch: view.arch.as_deref(),
            occ: &occ,
            res: &res,
            registers: res.registers.unwrap_or(0),
            threads: res.threads_per_block.unwrap_or(0),
            shared: res
                .static_shared_bytes
                .unwrap_or(0)
                .saturating_add(res.dynamic_shared_bytes.unwrap_or(0)),
        };
        d.evidence.push(ctx.source_evidence(
            view.resources_source,
            config,
            word_evidence(&fact),
        ));
        if let Some(n) = crate::resources::ncu_summary(j, config, &view.name) {
            let mut said = Vec::new();
            if let Some(t) = n.theoretical_occupancy_pct {
                said.push(msg!("theoretical occupancy {}%", fixed(t, 1)));
            }
            if let Some(a) = n.achieved_occupancy_pct {
                said.push(msg!("achieved {}%", fixed(a, 1)));
            }
            if let (Some(r), Some(s)) = (n.block_limit_registers, n.block_limit_shared) {
                said.push(msg!(
                    "block limits: registers {}, shared memory {}",
                    r.to_string(),
                    s.to_string()
                ));
                // Nsight Compute computed the same limits: the figures are confirmed.
                if r == occ.by_registers && s == occ.by_shared {
                    d.confidence = Confidence::High;
                }
            }
            if !said.is_empty() {
                d.evidence
                    .push(ctx.metric_evidence(config, msg!("ncu: {}", Message::join(said, ", "))));
            }
        }
        let figures = &mut d.figures;
        figures.insert("blocks_per_sm".into(), json!(occ.blocks_per_sm));
        let percent = crate::text::round_json(occ.fraction * 100.0);
        figures.insert("occupancy_pct".into(), percent);
        figures.insert("limiter".into(), json!(occ.limiter.as_str()));
        Figure::Registers.set(figures, json!(fact.registers));
        if let Some(r) = occ.registers_for_next_block {
            figures.insert("registers_for_next_block".into(), json!(r));
        }
        if fits {
            // One more block per SM hides latency only if the kernel is short of warps: a
            // suggestion a run at the smaller budget tests.
            let (kind, budget) = match occ.limiter {
                Limiter::Registers => (ExperimentKind::Registers, occ.registers_for_next_block),
                _ => (ExperimentKind::Tile, None),
            };
            d.hypothesis = Some(Hypothesis::new(kind, budget.map(u64::from)));
            word_limited(&mut d, &fact);
        } else {
            word_no_fit(&mut d, &fact);
        }
        out.push(d);
    }
    out
}

/// A kernel's occupancy limit and the figures behind it: what the wording functions word.
struct Limit<'k> {
    kernel: &'k str,
    arch: Option<&'k str>,
    occ: &'k Occupancy,
    res: &'k KernelResources,
    /// Registers per thread, threads per block and shared memory per block (bytes).
    registers: u32,
    threads: u32,
    shared: u64,
}

/// "128 registers x 256 threads, 48 KiB shared memory per block".
fn word_figures(f: &Limit) -> Message {
    let shared = match f.res.dynamic_shared_bytes {
        Some(_) => msg!("{} shared memory", bytes(f.shared)),
        None => msg!("{} static shared memory (dynamic unknown)", bytes(f.shared)),
    };
    msg!(
        "{} registers x {} threads{}, {} per block",
        f.registers.to_string(),
        f.threads.to_string(),
        f.res
            .threads_from
            .map(|s| msg!(" (threads from {})", s))
            .unwrap_or_default(),
        shared
    )
}

/// ptxas's evidence's summary: the figures and the blocks each allows.
fn word_evidence(f: &Limit) -> Message {
    let occ = f.occ;
    msg!(
        "{} {}: {} -> {} blocks/SM (registers {}, shared memory {}, threads {}), {}% occupancy",
        code(f.kernel),
        f.arch.unwrap_or(""),
        word_figures(f),
        occ.blocks_per_sm.to_string(),
        occ.by_registers.to_string(),
        occ.by_shared.to_string(),
        occ.by_threads.to_string(),
        fixed(occ.fraction * 100.0, 1)
    )
}

/// " Caveat: dynamic shared memory unknown ...", or nothing.
fn word_caveat(f: &Limit) -> Message {
    f.res
        .occupancy_caveat
        .as_ref()
        .map(|c| msg!(" Caveat: {}.", c))
        .unwrap_or_default()
}

/// The title, explanation and fix of a block that cannot be resident at all.
fn word_no_fit(d: &mut Draft, f: &Limit) {
    d.title = msg!("Block does not fit on an SM ({})", f.occ.limiter.as_str());
    d.explanation = msg!(
        "{} exceeds what one {} SM can hold, so the launch fails with \"too many resources \
         requested\".{}",
        word_figures(f),
        f.arch.unwrap_or("this arch"),
        word_caveat(f)
    );
    d.fix = match f.occ.limiter {
        Limiter::Registers => msg!("Lower registers per thread or threads per block."),
        _ => msg!("Lower the shared memory per block (fewer pipeline stages or smaller tiles)."),
    };
}

/// The title, explanation and fix of occupancy limited by registers or shared memory.
fn word_limited(d: &mut Draft, f: &Limit) {
    let occ = f.occ;
    let arch = f.arch.unwrap_or("this arch");
    let blocks = crate::text::plural(u64::from(occ.blocks_per_sm), "block", "blocks");
    d.title = msg!("Occupancy limited by {}", occ.limiter.as_str());
    let binds = if occ.by_registers == occ.by_shared {
        msg!("the register file and shared memory bind together")
    } else {
        msg!("{} binds first", occ.limiter.phrase())
    };
    d.explanation = msg!(
        "With {}, {} of {} fit on an {} SM ({} of {} warps); {} (registers allow {} blocks, \
         shared memory {}, threads {}).{}",
        word_figures(f),
        blocks.as_str(),
        code(f.kernel),
        arch,
        occ.warps_per_sm.to_string(),
        crate::occupancy::limits(arch)
            .map_or(64, |l| l.max_warps_per_sm())
            .to_string(),
        binds,
        occ.by_registers.to_string(),
        occ.by_shared.to_string(),
        occ.by_threads.to_string(),
        word_caveat(f)
    );
    let launch_bounds = code(format!("__launch_bounds__({}, {})", f.threads, occ.blocks_per_sm + 1));
    let registers = |r: u32| {
        msg!(
            "{} registers per thread (from {}; {})",
            r.to_string(),
            f.registers.to_string(),
            launch_bounds.clone()
        )
    };
    let shared = |s: u64| {
        msg!("{} of shared memory per block (from {})", bytes(s), bytes(f.shared))
    };
    let pays = " Check with the bench stage whether it pays: fewer registers can mean spills.";
    let budget = match (occ.registers_for_next_block, occ.shared_for_next_block) {
        (Some(r), Some(s)) => msg!(
            "registers and shared memory both stop at {}, so one more block needs both \
             lowered: at most {} and {}.{}",
            blocks.as_str(),
            registers(r),
            shared(s),
            pays
        ),
        (Some(r), None) => msg!("at {} one more block fits.{}", registers(r), pays),
        (None, Some(s)) => msg!(
            "at {} one more block fits (fewer pipeline stages or a smaller tile). Check with \
             the bench stage.",
            shared(s)
        ),
        (None, None) => {
            d.fix = msg!("No smaller register or shared-memory budget fits another block.");
            return;
        }
    };
    d.fix = msg!("If latency hiding is short: {}", &budget);
    d.next_block = Some(budget);
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, repo_file};
    use crate::{diagnosis::Level, run::StageKind};

    /// `poly` in config `$config` of the slow-kernels reference run
    /// (`examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a`): ptxas's log
    /// (`build/<config>/sm_90/stderr.log`) and ncu's (`profile/<config>/sm_90/ncu.csv`), which
    /// measured its launch's block size.
    macro_rules! poly {
        ($config:literal) => {
            Case::new()
                .log(
                    StageKind::Compile,
                    $config,
                    "sm_90",
                    repo_file!(
                        "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/build/",
                        $config,
                        "/sm_90/stderr.log"
                    ),
                )
                .log(
                    StageKind::Profile,
                    $config,
                    "sm_90",
                    repo_file!(
                        "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/profile/",
                        $config,
                        "/sm_90/ncu.csv"
                    ),
                )
                .kernel("poly")
        };
    }

    /// The `regs` config of the slow-kernels reference run: ptxas gives `poly` 255 registers.
    #[test]
    fn fires_on_a_kernel_whose_registers_bind_its_blocks_per_sm() {
        let d = poly!("regs").only(RuleId::OccupancyLimit);
        assert_eq!(d.level, Level::Note);
        assert_eq!(d.key, "registers");
        assert_eq!(d.kernel.as_deref(), Some("poly"));
        assert_eq!(d.location, None);
        assert_eq!(d.figures["registers"], 255);
        assert_eq!(d.figures["limiter"], "registers");
    }

    /// The `fast` config of the same run: `poly` at 32 registers fills the SM.
    #[test]
    fn stays_silent_on_the_same_kernel_at_32_registers() {
        poly!("fast").silent(RuleId::OccupancyLimit);
    }
}
