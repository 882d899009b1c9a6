//! `tensor-cores-idle`: a kernel meant to use tensor cores that does not. Meant to: another
//! config or arch of the same kernel has HMMA/HGMMA, or the kernel loads fragments with ldmatrix.
//! Does not: no HMMA/HGMMA/IMMA in its SASS, or ncu's tensor pipe utilisation near 0.

use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level};
use crate::message::{Message, code, msg};
use crate::resources::ncu_summary;
use crate::text::fixed;

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::TensorCoresIdle,
    role: Role::Performance,
    name: "Tensor cores idle",
    description: "No HMMA/HGMMA in a kernel that is meant to use them (another config of it \
                  does, or it loads fragments with ldmatrix), or ncu's tensor pipe near 0.",
    module: "crates/report/src/rules/tensor_cores.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

/// Tensor pipe utilisation (percent of peak) at or below which the pipe counts as idle.
pub const IDLE_PCT: f64 = 1.0;

/// One draft per launched kernel and config.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for view in j.target_kernels() {
        let config = view.config.as_deref();
        let tensor = view.tensor_instructions();
        // (config, arch) of each.
        let siblings: Vec<(Option<&str>, Option<&str>)> = j
            .kernels
            .iter()
            .filter(|k| k.name == view.name && k.tensor_instructions().unwrap_or(0) > 0)
            .filter(|k| k.config != view.config || k.arch != view.arch)
            .map(|k| (k.config.as_deref(), k.arch.as_deref()))
            .collect();
        let ldsm = view.sass.map(|s| s.ldsm).unwrap_or(0);
        let pipe = ncu_summary(j, config, &view.name).and_then(|n| n.tensor_pipe_pct);

        let no_mma = tensor == Some(0);
        // ldmatrix loads matrix fragments for MMA in hand-written kernels; Triton issues it for
        // layout conversions too, so there it says nothing of intent on its own.
        let triton = j.model.kernel(&view.name).is_some_and(|k| k.triton);
        let intended = !siblings.is_empty() || (ldsm > 0 && !triton);
        let pipe_idle = pipe.is_some_and(|p| p <= IDLE_PCT);
        let idle_with_mma = pipe_idle && tensor.unwrap_or(0) > 0;
        if !(no_mma && intended || idle_with_mma) {
            continue;
        }
        let mut d = Draft::new(RuleId::TensorCoresIdle, Level::Warning, Message::new());
        if no_mma {
            d.stands_on = vec![crate::measure::Measure::TensorInstructions];
        }
        d.config = view.config.clone();
        d.kernel = Some(view.name.to_string());
        // Fragments on local memory already say why its tensor cores are idle.
        d.gives_way
            .push(GiveWay::Drafted(RuleId::WmmaLocalMemory, view.name.clone()));
        d.arch = view.arch.clone();
        d.location = ctx.kernel_file(config);
        let mut signals = 0;
        if let Some(sass) = view.sass {
            d.evidence.push(ctx.source_evidence(
                view.sass_source,
                config,
                msg!(
                    "SASS of {}: {} HMMA, {} HGMMA, {} IMMA, {} LDSM of {} instructions",
                    code(view.name.as_str()),
                    sass.hmma.to_string(),
                    sass.hgmma.to_string(),
                    sass.imma.to_string(),
                    sass.ldsm.to_string(),
                    sass.total.to_string()
                ),
            ));
        }
        if let Some(p) = pipe {
            d.figures
                .insert("tensor_pipe_pct".into(), crate::text::round_json(p));
            d.evidence.push(
                ctx.metric_evidence(config, msg!("ncu: tensor pipe {}% of peak", fixed(p, 2))),
            );
        }
        d.figures
            .insert("tensor_instructions".into(), json!(tensor));
        if no_mma {
            signals += 1;
            d.key = "no-mma".into();
            let mut why = Vec::new();
            if !siblings.is_empty() {
                signals += 1;
                why.push(Why::Siblings(&siblings));
            }
            if ldsm > 0 {
                signals += 1;
                why.push(Why::Ldmatrix(ldsm));
            }
            if pipe_idle {
                signals += 1;
            }
            word_no_mma(&mut d, &view.name, &why);
        } else {
            signals += 2;
            d.key = "pipe-idle".into();
            word_pipe_idle(&mut d, &view.name, tensor.unwrap_or(0), pipe.unwrap_or(0.0));
        }
        d.confidence = Confidence::from_signals(signals);
        out.push(d);
    }
    out
}

/// Why a kernel without tensor-core instructions was meant to have them.
enum Why<'s> {
    /// The (config, arch) of each other build of the same kernel that issues them.
    Siblings(&'s [(Option<&'s str>, Option<&'s str>)]),
    /// The ldmatrix fragments (LDSM) it loads.
    Ldmatrix(u64),
}

/// The title, explanation and fix of a kernel with no tensor-core instructions.
fn word_no_mma(d: &mut Draft, kernel: &str, why: &[Why]) {
    let why = why
        .iter()
        .map(|w| match w {
            Why::Siblings(s) => {
                // "default (sm_90), large": each config, with its arch where known.
                let builds = s.iter().map(|(config, arch)| {
                    msg!(
                        "{}{}",
                        config.unwrap_or("-"),
                        arch.map(|a| msg!(" ({})", a)).unwrap_or_default()
                    )
                });
                msg!(
                    "the same kernel in {} does use them",
                    Message::join(builds, ", ")
                )
            }
            Why::Ldmatrix(n) => msg!(
                "it loads {} ldmatrix fragments (LDSM) that only MMA consumes",
                n.to_string()
            ),
        })
        .collect();
    d.title = msg!("No tensor-core instructions in {}", code(kernel));
    d.explanation = msg!(
        "The SASS of {} holds no HMMA, HGMMA or IMMA, yet {}: the matrix products run on the FMA \
         pipes at a fraction of the tensor-core rate. A template or #if path that falls back to \
         scalar code for this config's tile sizes or head dim does this.",
        code(kernel),
        Message::words(why)
    );
    d.fix = msg!(
        "Check which code path this config's defines select (tile sizes that are not multiples \
         of the MMA shape, a disabled USE_* flag) and make it issue mma.sync/wgmma; confirm with \
         the sass stage's HMMA/HGMMA count."
    );
}

/// The title, explanation and fix of a kernel whose tensor-core instructions did not run in
/// its profiled launch (`pipe`: ncu's tensor pipe utilisation, percent of peak).
fn word_pipe_idle(d: &mut Draft, kernel: &str, tensor: u64, pipe: f64) {
    d.title = msg!("Tensor pipe idle in the profiled launch of {}", code(kernel));
    d.explanation = msg!(
        "The SASS of {} holds {} tensor-core instructions, but ncu measured the tensor pipe at \
         {}% of peak in the profiled launch: the MMA path exists but did not run for this shape \
         (a runtime branch chose the scalar path) or it is starved.",
        code(kernel),
        tensor.to_string(),
        fixed(pipe, 2)
    );
    d.fix = msg!(
        "Check the runtime condition that selects the MMA path for the profiled shape, then the \
         memory-bound signs in the ncu summary (DRAM throughput, stalls)."
    );
}

#[cfg(test)]
mod tests {
    use parsers::Format;

    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture};
    use crate::{diagnosis::Level, run::StageKind};

    /// `clean.cu` on the H200: cuobjdump's SASS of its `wmma_shared` holds HMMA
    /// (`sass/device_clean_cuobjdump.log`), and ncu's raw page of the same program measured its
    /// tensor pipe at 0.00% of peak (`ncu-csv/clean_raw.log`).
    #[test]
    fn fires_on_a_kernel_with_mma_whose_profiled_tensor_pipe_stayed_idle() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Sass,
                    "clean",
                    "sm_90",
                    parsers_fixture!("sass/device_clean_cuobjdump.log"),
                )
                .log_as(
                    StageKind::Profile,
                    "clean",
                    "sm_90",
                    Format::NcuCsv,
                    parsers_fixture!("ncu-csv/clean_raw.log"),
                )
                .drafts(RuleId::TensorCoresIdle),
        );
        assert_eq!(d.rule, RuleId::TensorCoresIdle);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.key, "pipe-idle");
        assert_eq!(d.kernel.as_deref(), Some("wmma_shared"));
        assert_eq!(d.location, None);
        assert!(
            d.figures["tensor_pipe_pct"]
                .as_f64()
                .is_some_and(|p| p <= super::IDLE_PCT),
            "{:?}",
            d.figures
        );
    }

    /// The same SASS alone (`sass/device_clean_cuobjdump.log`): `wmma_shared` has its HMMA and
    /// `tiled_axpy` neither tensor-core instructions nor ldmatrix, and no profile says a pipe
    /// was idle.
    #[test]
    fn stays_silent_on_the_same_sass_without_a_profile() {
        let drafts = Case::new()
            .log(
                StageKind::Sass,
                "clean",
                "sm_90",
                parsers_fixture!("sass/device_clean_cuobjdump.log"),
            )
            .drafts(RuleId::TensorCoresIdle);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
