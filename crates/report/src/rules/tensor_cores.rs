//! `tensor-cores-idle`: a kernel meant to use tensor cores that does not. Meant to: another
//! config or arch of the same kernel has HMMA/HGMMA, or the kernel loads fragments with ldmatrix.
//! Does not: no HMMA/HGMMA/IMMA in its SASS, or ncu's tensor pipe utilisation near 0.

use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level};
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
        let siblings: Vec<String> = j
            .kernels
            .iter()
            .filter(|k| k.name == view.name && k.tensor_instructions().unwrap_or(0) > 0)
            .filter(|k| k.config != view.config || k.arch != view.arch)
            .map(|k| {
                format!(
                    "{}{}",
                    k.config.as_deref().unwrap_or("-"),
                    k.arch
                        .as_deref()
                        .map(|a| format!(" ({a})"))
                        .unwrap_or_default()
                )
            })
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
        let mut d = Draft::new(RuleId::TensorCoresIdle, Level::Warning, "");
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
                format!(
                    "SASS of `{}`: {} HMMA, {} HGMMA, {} IMMA, {} LDSM of {} instructions",
                    view.name, sass.hmma, sass.hgmma, sass.imma, sass.ldsm, sass.total
                ),
            ));
        }
        if let Some(p) = pipe {
            d.figures
                .insert("tensor_pipe_pct".into(), crate::text::round_json(p));
            d.evidence.push(
                ctx.metric_evidence(config, format!("ncu: tensor pipe {}% of peak", fixed(p, 2))),
            );
        }
        d.figures
            .insert("tensor_instructions".into(), json!(tensor));
        if no_mma {
            signals += 1;
            d.key = "no-mma".into();
            d.title = format!("No tensor-core instructions in `{}`", view.name).into();
            let mut why = Vec::new();
            if !siblings.is_empty() {
                signals += 1;
                why.push(format!(
                    "the same kernel in {} does use them",
                    siblings.join(", ")
                ));
            }
            if ldsm > 0 {
                signals += 1;
                why.push(format!(
                    "it loads {ldsm} ldmatrix fragments (LDSM) that only MMA consumes"
                ));
            }
            if pipe_idle {
                signals += 1;
            }
            d.explanation = format!(
                "The SASS of `{}` holds no HMMA, HGMMA or IMMA, yet {}: the matrix products run on \
                 the FMA pipes at a fraction of the tensor-core rate. A template or #if path that \
                 falls back to scalar code for this config's tile sizes or head dim does this.",
                view.name,
                crate::text::join_words(&why)
            ).into();
            d.fix = "Check which code path this config's defines select (tile sizes that are not \
                     multiples of the MMA shape, a disabled USE_* flag) and make it issue \
                     mma.sync/wgmma; confirm with the sass stage's HMMA/HGMMA count."
                .to_string().into();
        } else {
            signals += 2;
            d.key = "pipe-idle".into();
            d.title = format!("Tensor pipe idle in the profiled launch of `{}`", view.name).into();
            d.explanation = format!(
                "The SASS of `{}` holds {} tensor-core instructions, but ncu measured the tensor \
                 pipe at {}% of peak in the profiled launch: the MMA path exists but did not run \
                 for this shape (a runtime branch chose the scalar path) or it is starved.",
                view.name,
                tensor.unwrap_or(0),
                fixed(pipe.unwrap_or(0.0), 2)
            ).into();
            d.fix =
                "Check the runtime condition that selects the MMA path for the profiled shape, \
                     then the memory-bound signs in the ncu summary (DRAM throughput, stalls)."
                    .to_string().into();
        }
        d.confidence = Confidence::from_signals(signals);
        out.push(d);
    }
    out
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
