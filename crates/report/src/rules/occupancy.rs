//! `occupancy-limit`: resident blocks per SM limited by registers or shared memory, computed
//! from ptxas's figures against the arch's limits (see [`crate::occupancy`]). A block that cannot
//! be resident at all is an error; otherwise a note that names the limit and how far the next
//! block is.

use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level};
use crate::hypothesis::{ExperimentKind, Hypothesis};
use crate::occupancy::Limiter;
use crate::resources::resources_of;
use crate::text::{bytes, fixed};

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::OccupancyLimit,
    role: Role::Performance,
    name: "Occupancy limited by registers or shared memory",
    description: "Blocks per SM computed from ptxas's registers and shared memory against the \
                  arch's limits (sm_90: 65536 registers, 228 KiB shared memory per SM).",
    module: "crates/report/src/rules/occupancy.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

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
        let registers = res.registers.unwrap_or(0);
        let threads = res.threads_per_block.unwrap_or(0);
        let shared = res
            .static_shared_bytes
            .unwrap_or(0)
            .saturating_add(res.dynamic_shared_bytes.unwrap_or(0));
        let config = view.config.as_deref();
        let level = if occ.blocks_per_sm == 0 {
            Level::Error
        } else {
            Level::Note
        };
        let mut d = Draft::new(RuleId::OccupancyLimit, level, "");
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
        let shared_text = match res.dynamic_shared_bytes {
            Some(_) => format!("{} shared memory", bytes(shared)),
            None => format!("{} static shared memory (dynamic unknown)", bytes(shared)),
        };
        let figures = format!(
            "{registers} registers x {threads} threads{}, {shared_text} per block",
            res.threads_from
                .map(|s| format!(" (threads from {s})"))
                .unwrap_or_default()
        );
        d.evidence.push(ctx.source_evidence(
            view.resources_source,
            config,
            format!(
                "`{}` {}: {figures} -> {} blocks/SM (registers {}, shared memory {}, threads {}), {}% occupancy",
                view.name,
                view.arch.as_deref().unwrap_or(""),
                occ.blocks_per_sm,
                occ.by_registers,
                occ.by_shared,
                occ.by_threads,
                fixed(occ.fraction * 100.0, 1)
            ),
        ));
        if let Some(n) = crate::resources::ncu_summary(j, config, &view.name) {
            let mut said = Vec::new();
            if let Some(t) = n.theoretical_occupancy_pct {
                said.push(format!("theoretical occupancy {}%", fixed(t, 1)));
            }
            if let Some(a) = n.achieved_occupancy_pct {
                said.push(format!("achieved {}%", fixed(a, 1)));
            }
            if let (Some(r), Some(s)) = (n.block_limit_registers, n.block_limit_shared) {
                said.push(format!("block limits: registers {r}, shared memory {s}"));
                // Nsight Compute computed the same limits: the figures are confirmed.
                if r == occ.by_registers && s == occ.by_shared {
                    d.confidence = Confidence::High;
                }
            }
            if !said.is_empty() {
                d.evidence
                    .push(ctx.metric_evidence(config, format!("ncu: {}", said.join(", "))));
            }
        }
        d.figures
            .insert("blocks_per_sm".into(), json!(occ.blocks_per_sm));
        d.figures.insert(
            "occupancy_pct".into(),
            crate::text::round_json(occ.fraction * 100.0),
        );
        d.figures
            .insert("limiter".into(), json!(occ.limiter.as_str()));
        Figure::Registers.set(&mut d.figures, json!(registers));
        if let Some(r) = occ.registers_for_next_block {
            d.figures
                .insert("registers_for_next_block".into(), json!(r));
        }
        // One more block per SM hides latency only if the kernel is short of warps: a
        // suggestion a run at the smaller budget tests.
        d.hypothesis = match occ.limiter {
            _ if occ.blocks_per_sm == 0 => None,
            Limiter::Registers => Some(Hypothesis::new(
                ExperimentKind::Registers,
                occ.registers_for_next_block.map(u64::from),
            )),
            _ => Some(Hypothesis::new(ExperimentKind::Tile, None)),
        };
        let caveat = res
            .occupancy_caveat
            .as_ref()
            .map(|c| format!(" Caveat: {c}."))
            .unwrap_or_default();
        let arch = view.arch.as_deref().unwrap_or("this arch");
        if occ.blocks_per_sm == 0 {
            d.title = format!("Block does not fit on an SM ({})", occ.limiter.as_str()).into();
            d.explanation = format!(
                "{figures} exceeds what one {arch} SM can hold, so the launch fails with \"too many \
                 resources requested\".{caveat}"
            ).into();
            d.fix = match occ.limiter {
                Limiter::Registers => {
                    "Lower registers per thread or threads per block.".to_string().into()
                }
                _ => "Lower the shared memory per block (fewer pipeline stages or smaller tiles)."
                    .to_string().into(),
            };
        } else {
            d.title = format!("Occupancy limited by {}", occ.limiter.as_str()).into();
            let binds = if occ.by_registers == occ.by_shared {
                "the register file and shared memory bind together".to_string()
            } else {
                format!("{} binds first", occ.limiter.phrase())
            };
            d.explanation = format!(
                "With {figures}, {} of `{}` fit on an {arch} SM ({} of {} warps); {binds} \
                 (registers allow {} blocks, shared memory {}, threads {}).{caveat}",
                crate::text::plural(u64::from(occ.blocks_per_sm), "block", "blocks"),
                view.name,
                occ.warps_per_sm,
                ctx_max_warps(arch),
                occ.by_registers,
                occ.by_shared,
                occ.by_threads
            ).into();
            d.fix = match (occ.registers_for_next_block, occ.shared_for_next_block) {
                (Some(r), Some(s)) => format!(
                    "If latency hiding is short: registers and shared memory both stop at {}, \
                     so one more block needs both lowered: at most {r} registers per \
                     thread (from {registers}; `__launch_bounds__({threads}, {})`) and {} of \
                     shared memory per block (from {}). Check with the bench stage whether it \
                     pays: fewer registers can mean spills.",
                    crate::text::plural(u64::from(occ.blocks_per_sm), "block", "blocks"),
                    occ.blocks_per_sm + 1,
                    bytes(s),
                    bytes(shared)
                ).into(),
                (Some(r), None) => format!(
                    "If latency hiding is short: at {r} registers per thread (from {registers}; \
                     `__launch_bounds__({threads}, {})`) one more block fits. Check with the bench \
                     stage whether it pays: fewer registers can mean spills.",
                    occ.blocks_per_sm + 1
                ).into(),
                (None, Some(s)) => format!(
                    "If latency hiding is short: at {} of shared memory per block (from {}) one \
                     more block fits (fewer pipeline stages or a smaller tile). Check with the bench stage.",
                    bytes(s),
                    bytes(shared)
                ).into(),
                (None, None) => {
                    "No smaller register or shared-memory budget fits another block.".to_string().into()
                }
            };
        }
        out.push(d);
    }
    out
}

fn ctx_max_warps(arch: &str) -> u32 {
    crate::occupancy::limits(arch)
        .map(|l| l.max_warps_per_sm())
        .unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, repo_file};
    use crate::{diagnosis::Level, run::StageKind};

    /// The `regs` config of the slow-kernels reference run
    /// (`examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a`): ptxas gives
    /// `poly` 255 registers (`build/regs/sm_90/stderr.log`), and ncu measured its launch's block
    /// size (`profile/regs/sm_90/ncu.csv`).
    #[test]
    fn fires_on_a_kernel_whose_registers_bind_its_blocks_per_sm() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Compile,
                    "regs",
                    "sm_90",
                    repo_file!(
                        "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/build/regs/sm_90/stderr.log"
                    ),
                )
                .log(
                    StageKind::Profile,
                    "regs",
                    "sm_90",
                    repo_file!(
                        "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/profile/regs/sm_90/ncu.csv"
                    ),
                )
                .kernel("poly")
                .drafts(RuleId::OccupancyLimit),
        );
        assert_eq!(d.rule, RuleId::OccupancyLimit);
        assert_eq!(d.level, Level::Note);
        assert_eq!(d.key, "registers");
        assert_eq!(d.kernel.as_deref(), Some("poly"));
        assert_eq!(d.location, None);
        assert_eq!(d.figures["registers"], 255);
        assert_eq!(d.figures["limiter"], "registers");
    }

    /// The `fast` config of the same run (`build/fast/sm_90/stderr.log`,
    /// `profile/fast/sm_90/ncu.csv`): `poly` at 32 registers fills the SM.
    #[test]
    fn stays_silent_on_the_same_kernel_at_32_registers() {
        let drafts = Case::new()
            .log(
                StageKind::Compile,
                "fast",
                "sm_90",
                repo_file!(
                    "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/build/fast/sm_90/stderr.log"
                ),
            )
            .log(
                StageKind::Profile,
                "fast",
                "sm_90",
                repo_file!(
                    "examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a/profile/fast/sm_90/ncu.csv"
                ),
            )
            .kernel("poly")
            .drafts(RuleId::OccupancyLimit);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
