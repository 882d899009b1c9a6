//! `wrong-output`: the check stage's comparison with the CPU reference failed. The pattern of
//! failing shapes names the likely cause: NaN only under the causal mask points at fully masked
//! rows; failures only where the sequence length is not a multiple of the tile point at the tail
//! tile; elements never written point at rows no block stores.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId, is_harness_kind};
use crate::check_failure::{second_launch_differs, within_tolerance_failure};
use crate::diagnosis::{Confidence, Draft, Level, Scope};
use crate::join::ResultRef;
use crate::kernel_id::KernelId;
use crate::text::{md_text, sig3};

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::WrongOutput,
    role: Role::Symptom { rank: 2 },
    name: "Wrong or NaN output",
    description: "check: NaN, unwritten or wrong elements against the CPU reference, with the \
                  pattern of failing shapes (masked rows, tail tiles).",
    module: "crates/report/src/rules/wrong_output.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    Unwritten,
    Nan,
    Wrong,
}

/// One draft per config, kernel and kind of wrongness.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut groups: BTreeMap<(Option<String>, KernelId), Vec<&ResultRef>> = BTreeMap::new();
    for r in &j.results {
        let checked = r.result.mode == parsers::harness::Mode::Check && r.result.check.is_some();
        if checked && r.result.error.is_none() {
            groups
                .entry((r.config.clone(), r.kernel.clone()))
                .or_default()
                .push(r);
        }
    }
    let mut out = Vec::new();
    for ((config, kernel), results) in groups {
        let category = |r: &ResultRef| -> Option<Category> {
            let c = r.result.check.as_ref()?;
            if c.passed {
                None
            } else if c.unwritten > 0 {
                Some(Category::Unwritten)
            } else if c.nan_count > 0 {
                Some(Category::Nan)
            } else {
                Some(Category::Wrong)
            }
        };
        let passing: Vec<&ResultRef> = results
            .iter()
            .copied()
            .filter(|r| category(r).is_none())
            .collect();
        for cat in [Category::Unwritten, Category::Nan, Category::Wrong] {
            let failing: Vec<&ResultRef> = results
                .iter()
                .copied()
                .filter(|r| category(r) == Some(cat))
                .collect();
            if failing.is_empty() {
                continue;
            }
            out.push(draft(
                ctx,
                config.as_deref(),
                &kernel,
                cat,
                &failing,
                &passing,
                &results,
            ));
        }
    }
    out
}

fn draft(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    cat: Category,
    failing: &[&ResultRef],
    passing: &[&ResultRef],
    all: &[&ResultRef],
) -> Draft {
    let j = ctx.joined;
    let mut d = Draft::new(RuleId::WrongOutput, Level::Error, "");
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    d.location = ctx.kernel_file(config);
    for r in failing {
        for (i, f) in j.findings.iter().enumerate() {
            if f.source == r.source && is_harness_kind(f.finding.kind) {
                d.explains.push(i);
            }
        }
    }
    for r in failing.iter().take(3) {
        d.evidence.push(ctx.result_evidence(r, describe(r)));
    }
    if failing.len() > 3 {
        d.evidence.push(ctx.result_evidence(
            failing[3],
            format!("… and {} more failing shapes", failing.len() - 3),
        ));
    }
    let max_err = failing
        .iter()
        .filter_map(|r| r.result.check.as_ref().map(|c| c.max_abs_err))
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    d.figures.insert("failing".into(), json!(failing.len()));
    d.figures.insert("checked".into(), json!(all.len()));
    d.figures
        .insert("max_abs_err".into(), crate::text::round_json(max_err));

    let n_fail = format!(
        "{} of {} checked {}",
        failing.len(),
        all.len(),
        if all.len() == 1 { "shape" } else { "shapes" }
    );
    let causal_only = failing.iter().all(|r| r.result.causal)
        && passing.iter().any(|r| !r.result.causal)
        && !passing.is_empty();
    let tile = tail_tile(ctx, config, failing, passing);
    let mut signals = 1;
    if causal_only || tile.is_some() {
        signals += 1;
    }
    if failing.len() > 1 {
        signals += 1;
    }
    d.confidence = Confidence::from_signals(signals);
    // Wrong output is the symptom of a root cause a tool located, when there is one.
    d.symptom_of = Some(Scope::Kernel {
        kernel: kernel.clone(),
        single_launch: false,
    });

    match cat {
        Category::Unwritten => {
            let unwritten: u64 = failing
                .iter()
                .filter_map(|r| r.result.check.as_ref())
                .map(|c| c.unwritten)
                .fold(0, u64::saturating_add);
            d.figures.insert("unwritten".into(), json!(unwritten));
            d.key = "unwritten".into();
            if let Some((label, name)) = tile.clone() {
                d.title = format!(
                    "Output rows of the last partial tile are never written (S not a multiple of {label})"
                ).into();
                d.explanation = format!(
                    "{n_fail} left {unwritten} output elements holding the NaN \
                     poison, and every failing shape has a sequence length that is not a multiple \
                     of {label} while lengths that are pass: the blocks that own the last, \
                     partial tile do not store it (a grid of S/{name} rounded down, or a store \
                     guard that drops the whole tile)."
                ).into();
                d.fix = format!(
                    "Launch ceil(S/{name}) tiles and guard each row's store with `row < seq_len` \
                     instead of skipping the partial tile."
                ).into();
            } else {
                d.title = "Output elements never written".to_string().into();
                d.explanation = format!(
                    "{n_fail} left {unwritten} output elements holding the NaN \
                     poison the harness writes before each launch: no block stores them."
                ).into();
                d.fix = "Check that the grid covers every (batch, head, row-tile) and that no \
                         early return skips the final store."
                    .to_string().into();
            }
        }
        Category::Nan => {
            let nans: u64 = failing
                .iter()
                .filter_map(|r| r.result.check.as_ref())
                .map(|c| c.nan_count)
                .fold(0, u64::saturating_add);
            d.figures.insert("nan".into(), json!(nans));
            d.key = "nan".into();
            if causal_only {
                d.title = "NaN outputs under the causal mask (fully masked rows)".to_string().into();
                d.explanation = format!(
                    "{n_fail} produced {nans} NaN elements, all with the \
                     causal mask, while non-causal shapes pass. A row (or row tile) whose scores \
                     are all masked keeps its running maximum at -inf, and the online softmax then \
                     computes exp(-inf - (-inf)) = NaN and divides by a zero row sum."
                ).into();
                d.fix = "Guard the masked case: when the running max is -inf use 0 in its place \
                         (so exp(s - m) is 0, not NaN), and write 0 instead of dividing when the \
                         row sum is 0."
                    .to_string().into();
            } else if let Some((label, _)) = tile.clone() {
                d.title = format!("NaN outputs when S is not a multiple of {label} (tail tile)").into();
                d.explanation = format!(
                    "{n_fail} produced {nans} NaN elements, only where the \
                     sequence length is not a multiple of {label}: the last, partial tile \
                     reads keys past seq_len (poison or garbage) or masks a whole row to -inf."
                ).into();
                d.fix = format!(
                    "Mask keys with index >= seq_len in the last tile to -inf before the max, load \
                     zeros for rows past seq_len, and guard the row max as for fully masked rows \
                     ({label})."
                ).into();
            } else {
                d.title = "NaN outputs".to_string().into();
                d.explanation = format!(
                    "{n_fail} produced {nans} NaN elements (NaN never passes): \
                     an overflow in the softmax (a missing max subtraction), a division by a zero \
                     row sum, or uninitialised inputs to the accumulation."
                ).into();
                d.fix = "Subtract the running row max before exp, guard divisions by the row sum, \
                         and run initcheck to rule out uninitialised reads."
                    .to_string().into();
            }
        }
        Category::Wrong => {
            d.key = "wrong".into();
            let tol = failing
                .iter()
                .filter_map(|r| r.result.check.as_ref().map(|c| c.tolerance))
                .fold(0.0f64, f64::max);
            let within_tolerance = failing
                .iter()
                .all(|r| within_tolerance_failure(r.result).is_some());
            let second_launch = failing
                .iter()
                .all(|r| second_launch_differs(r.result).is_some());
            if within_tolerance {
                // The error passes; something else the check gates on does not.
                d.key = "within-tolerance".into();
                d.title = if second_launch {
                    "Output differs between two launches on the same inputs".to_string().into()
                } else {
                    "Checks fail although the error is within tolerance".to_string().into()
                };
                let rel_l2 = failing
                    .iter()
                    .filter_map(|r| r.result.check.as_ref().map(|c| c.rel_l2_err))
                    .filter(|x| x.is_finite())
                    .fold(0.0f64, f64::max);
                d.explanation = format!(
                    "{n_fail} failed although the error is within tolerance (relative L2 error \
                     {} against a tolerance of {}; max abs error {}): the check gates on more \
                     than the error, and each shape's evidence says what it failed on.{}",
                    sig3(rel_l2),
                    sig3(tol),
                    sig3(max_err),
                    if second_launch {
                        " A second launch on the same inputs did not reproduce the first output: \
                         what the kernel computes depends on more than its inputs (memory it \
                         reads before writing, state a launch leaves behind, or a race)."
                    } else {
                        ""
                    }
                ).into();
                d.fix = if second_launch {
                    "Run initcheck and racecheck on this config: a read of uninitialised or \
                     stale memory, or a missing barrier, is what makes two launches differ."
                        .to_string().into()
                } else {
                    "Read the failing shapes' figures in the harness JSON (`details`) and fix \
                     what they name."
                        .to_string().into()
                };
            } else if let Some((label, name)) = tile.clone() {
                d.title = format!(
                    "Wrong results when S is not a multiple of {label} (tail tile off-by-one)"
                ).into();
                d.explanation = format!(
                    "{n_fail} differ from the CPU reference (max abs error {} \
                     against a tolerance of {}), and every failing shape has a sequence length \
                     that is not a multiple of {label} while lengths that are pass: the last, \
                     partial tile is mishandled, typically a bound off by one (`<=` for `<`) or a \
                     mask that uses the tile size instead of seq_len.",
                    sig3(max_err),
                    sig3(tol)
                ).into();
                d.fix = format!(
                    "In the last tile, mask key columns >= seq_len (not >= {name}) and guard rows \
                     >= seq_len on load and store; check every bound against seq_len with `<`."
                ).into();
            } else if causal_only {
                d.title = "Wrong results under the causal mask".to_string().into();
                d.explanation = format!(
                    "{n_fail} differ from the CPU reference (max abs error {} \
                     against a tolerance of {}), all with the causal mask, while non-causal shapes \
                     pass: the mask condition or the tile-skipping bound is off.",
                    sig3(max_err),
                    sig3(tol)
                ).into();
                d.fix = "Check the causal condition (key index <= query index, in absolute \
                         positions) and the last key tile each query tile visits."
                    .to_string().into();
            } else {
                d.title = "Wrong results against the CPU reference".to_string().into();
                d.explanation = format!(
                    "{n_fail} differ from the CPU reference (max abs error {} \
                     against a tolerance of {}).",
                    sig3(max_err),
                    sig3(tol)
                ).into();
                d.fix = "Compare intermediate values (scores, row max, row sum) for the smallest \
                         failing shape against the reference."
                    .to_string().into();
            }
        }
    }
    if let Some(blind) = super::blind_sanitizers(ctx, config, "the CPU-reference check") {
        d.explanation.push_str(" ");
        d.explanation.append(blind);
    }
    d
}

/// A tile size that separates the shapes: every failing shape's sequence length is not a
/// multiple of it, and some passing shape's is. The config's BLOCK_N (or BLOCK_M) when the
/// compile command names it, else the smallest power of two from 16 to 256 that does.
fn tail_tile(
    ctx: &Ctx,
    config: Option<&str>,
    failing: &[&ResultRef],
    passing: &[&ResultRef],
) -> Option<(String, &'static str)> {
    if passing.is_empty() {
        return None;
    }
    // Every failing length is off the tile, and some length on the tile passes. Passing
    // lengths off the tile are allowed: a mask can hide the tail (causal rows never see it).
    let separates = |t: u64| {
        t > 1
            && failing
                .iter()
                .all(|r| u64::from(r.result.shape.seq_len) % t != 0)
            && passing
                .iter()
                .any(|r| u64::from(r.result.shape.seq_len) % t == 0)
    };
    if let Some(params) = config.and_then(|c| ctx.joined.configs.get(c)) {
        for name in ["BLOCK_N", "BLOCK_M"] {
            if let Some(t) = params.number(name)
                && separates(t)
            {
                return Some((
                    format!("{name}={t}"),
                    if name == "BLOCK_N" {
                        "BLOCK_N"
                    } else {
                        "BLOCK_M"
                    },
                ));
            }
        }
    }
    // Without the config's tile, the smallest power of two that separates is the claim the
    // evidence supports: tiles are multiples of it.
    [16, 32, 64, 128, 256]
        .into_iter()
        .find(|t| separates(*t))
        .map(|t| (t.to_string(), "the tile"))
}

/// One line about a check result.
pub fn describe(r: &ResultRef) -> String {
    let res = r.result;
    let s = &res.shape;
    let shape = format!(
        "B={} H={} S={} D={} {}{}",
        s.batch,
        s.heads,
        s.seq_len,
        s.head_dim,
        res.dtype,
        if res.causal { " causal" } else { "" }
    );
    let within = within_tolerance_failure(res)
        .map(|why| format!(" although the error is within tolerance: {}", md_text(&why)))
        .unwrap_or_default();
    match &res.check {
        Some(c) => format!(
            "check {shape}: {} (max abs err {}, rel L2 {}, tolerance {}, {} NaN, {} unwritten{}){within}",
            if c.passed { "passed" } else { "failed" },
            sig3(c.max_abs_err),
            sig3(c.rel_l2_err),
            sig3(c.tolerance),
            c.nan_count,
            c.unwritten,
            if c.canaries_corrupted.is_empty() {
                String::new()
            } else {
                format!(
                    ", canaries overwritten: {}",
                    c.canaries_corrupted.join(", ")
                )
            }
        ),
        None => format!("{} {shape}", super::mode_name(res.mode)),
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture};
    use crate::{diagnosis::Level, run::StageKind};

    /// The harness's check of the `tail_off_by_one` attention build at S=500
    /// (`harness/check_tail_off_by_one.json`): 32,000 NaN elements, max abs error 0.138.
    #[test]
    fn fires_on_nan_output_against_the_reference() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Check,
                    "tail_off_by_one",
                    "sm_90",
                    parsers_fixture!("harness/check_tail_off_by_one.json"),
                )
                .drafts(RuleId::WrongOutput),
        );
        assert_eq!(d.rule, RuleId::WrongOutput);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("tail_off_by_one"));
        assert_eq!(d.kernel.as_deref(), Some("attention_fwd_f16"));
        assert_eq!(d.location, None);
        assert!(d.title.markdown().contains("NaN"), "{:?}", d.title);
    }

    /// The harness's check of the clean attention kernel at S=512
    /// (`harness/check_attention.json`): max abs error 1.6e-4 within the 1e-3 tolerance.
    #[test]
    fn stays_silent_on_output_within_tolerance() {
        let drafts = Case::new()
            .log(
                StageKind::Check,
                "clean",
                "sm_90",
                parsers_fixture!("harness/check_attention.json"),
            )
            .drafts(RuleId::WrongOutput);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
