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
use crate::message::{Message, figure, msg, quote};
use crate::text::sig3;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::WrongOutput,
    Role::Symptom { rank: 2 },
    "Wrong or NaN output",
    "check: NaN, unwritten or wrong elements against the CPU reference, with the \
        pattern of failing shapes (masked rows, tail tiles).",
    "crates/report/src/rules/wrong_output.rs",
    run,
)
.proposing(Proposes::Sizes);

/// The kind of wrongness a failed check shows, most telling first.
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
    for ((config, kernel), all) in groups {
        let category = |r: &ResultRef| -> Option<Category> {
            let c = r.result.check.as_ref().filter(|c| !c.passed)?;
            Some(if c.unwritten > 0 {
                Category::Unwritten
            } else if c.nan_count > 0 {
                Category::Nan
            } else {
                Category::Wrong
            })
        };
        let of = |cat| -> Vec<&ResultRef> {
            all.iter().copied().filter(|r| category(r) == cat).collect()
        };
        let passing = of(None);
        for cat in [Category::Unwritten, Category::Nan, Category::Wrong] {
            let failing = of(Some(cat));
            if !failing.is_empty() {
                out.push(draft(ctx, config.as_deref(), &kernel, cat, &failing, &passing, &all));
            }
        }
    }
    out
}

/// The draft for one config, kernel and kind of wrongness.
fn draft(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: &KernelId,
    cat: Category,
    failing: &[&ResultRef],
    passing: &[&ResultRef],
    all: &[&ResultRef],
) -> Draft {
    let mut d = Draft::new(RuleId::WrongOutput, Level::Error, Message::new());
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    d.location = ctx.kernel_file(config);
    for r in failing {
        d.explains.extend(ctx.in_log(r.source, is_harness_kind));
    }
    d.evidence
        .extend(failing.iter().take(3).map(|r| ctx.result_evidence(r, describe(r))));
    if failing.len() > 3 {
        d.evidence.push(ctx.result_evidence(
            failing[3],
            msg!(
                "… and {} more failing shapes",
                (failing.len() - 3).to_string()
            ),
        ));
    }
    let checks = || failing.iter().filter_map(|r| r.result.check.as_ref());
    let max_err = checks()
        .map(|c| c.max_abs_err)
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    d.figures.insert("failing".into(), json!(failing.len()));
    d.figures.insert("checked".into(), json!(all.len()));
    d.figures
        .insert("max_abs_err".into(), crate::text::round_json(max_err));

    let causal_only =
        failing.iter().all(|r| r.result.causal) && passing.iter().any(|r| !r.result.causal);
    let tile = tail_tile(ctx, config, failing, passing);
    d.confidence = Confidence::from_signals(
        1 + usize::from(causal_only || tile.is_some()) + usize::from(failing.len() > 1),
    );
    // Wrong output is the symptom of a root cause a tool located, when there is one.
    d.symptom_of = Some(Scope::Kernel {
        kernel: kernel.clone(),
        single_launch: false,
    });
    let seen = Seen {
        failing: failing.len(),
        checked: all.len(),
        causal_only,
        tile,
        max_err,
        tol: checks().map(|c| c.tolerance).fold(0.0f64, f64::max),
        blind: super::blind_sanitizers(ctx, config, "the CPU-reference check"),
    };
    match cat {
        Category::Unwritten => {
            let unwritten: u64 = checks().map(|c| c.unwritten).fold(0, u64::saturating_add);
            d.figures.insert("unwritten".into(), json!(unwritten));
            d.key = "unwritten".into();
            word_unwritten(&mut d, &seen, unwritten);
        }
        Category::Nan => {
            let nans: u64 = checks().map(|c| c.nan_count).fold(0, u64::saturating_add);
            d.figures.insert("nan".into(), json!(nans));
            d.key = "nan".into();
            word_nan(&mut d, &seen, nans);
        }
        Category::Wrong => {
            let within_tolerance = failing
                .iter()
                .all(|r| within_tolerance_failure(r.result).is_some());
            let gate = within_tolerance.then(|| Gate {
                second_launch: failing
                    .iter()
                    .all(|r| second_launch_differs(r.result).is_some()),
                rel_l2: checks()
                    .map(|c| c.rel_l2_err)
                    .filter(|x| x.is_finite())
                    .fold(0.0f64, f64::max),
            });
            // The error passes; something else the check gates on does not.
            d.key = if gate.is_some() {
                "within-tolerance"
            } else {
                "wrong"
            }
            .into();
            word_wrong(&mut d, &seen, gate.as_ref());
        }
    }
    if let Some(blind) = &seen.blind {
        d.explanation.append(msg!(" {}", blind));
    }
    d
}

/// What the failing checks of one kind show: the draft's words come from this.
struct Seen {
    /// How many shapes failed, of how many checked.
    failing: usize,
    checked: usize,
    /// Every failing shape is causal, and some non-causal shape passes.
    causal_only: bool,
    /// The tile size that separates failing from passing sequence lengths ([`tail_tile`]).
    tile: Option<Tile>,
    /// The largest finite max abs error, and the largest tolerance, of the failing shapes.
    max_err: f64,
    tol: f64,
    /// What the sanitizers did not see, where every one that ran was clean.
    blind: Option<Message>,
}

impl Seen {
    /// "2 of 5 checked shapes".
    fn n_fail(&self) -> Message {
        msg!(
            "{} of {} checked {}",
            self.failing.to_string(),
            self.checked.to_string(),
            if self.checked == 1 { "shape" } else { "shapes" }
        )
    }

    /// "(max abs error 0.5 against a tolerance of 0.01".
    fn error(&self) -> Message {
        msg!(
            "max abs error {} against a tolerance of {}",
            figure(sig3(self.max_err)),
            figure(sig3(self.tol))
        )
    }
}

/// Failing checks whose error is within tolerance: what else the check gated on.
struct Gate {
    /// A second launch on the same inputs did not reproduce the first output.
    second_launch: bool,
    /// The largest finite relative L2 error of the failing shapes.
    rel_l2: f64,
}

/// A tile size that separates failing from passing sequence lengths: the config's parameter
/// (`BLOCK_N`, `BLOCK_M`) where the compile command names it.
#[derive(Debug, Clone, Copy)]
struct Tile {
    param: Option<&'static str>,
    size: u64,
}

impl Tile {
    /// "BLOCK_N=64", or "64" without a parameter.
    fn label(&self) -> Message {
        match self.param {
            Some(p) => msg!("{}={}", p, self.size.to_string()),
            None => msg!("{}", self.size.to_string()),
        }
    }

    /// "BLOCK_N", or "the tile" without a parameter.
    fn name(&self) -> &'static str {
        self.param.unwrap_or("the tile")
    }
}

/// Output elements never written: at the tail tile, or anywhere.
fn word_unwritten(d: &mut Draft, s: &Seen, unwritten: u64) {
    if let Some(tile) = s.tile {
        d.title = msg!(
            "Output rows of the last partial tile are never written (S not a multiple of {})",
            tile.label()
        );
        d.explanation = msg!(
            "{} left {} output elements holding the NaN poison, and every failing shape has a \
             sequence length that is not a multiple of {} while lengths that are pass: the \
             blocks that own the last, partial tile do not store it (a grid of S/{} rounded \
             down, or a store guard that drops the whole tile).",
            s.n_fail(),
            unwritten.to_string(),
            tile.label(),
            tile.name()
        );
        d.fix = msg!(
            "Launch ceil(S/{}) tiles and guard each row's store with `row < seq_len` instead of \
             skipping the partial tile.",
            tile.name()
        );
    } else {
        d.title = msg!("Output elements never written");
        d.explanation = msg!(
            "{} left {} output elements holding the NaN poison the harness writes before each \
             launch: no block stores them.",
            s.n_fail(),
            unwritten.to_string()
        );
        d.fix = msg!(
            "Check that the grid covers every (batch, head, row-tile) and that no early return \
             skips the final store."
        );
    }
}

/// NaN outputs: under the causal mask, at the tail tile, or anywhere.
fn word_nan(d: &mut Draft, s: &Seen, nans: u64) {
    let nans = nans.to_string();
    if s.causal_only {
        d.title = msg!("NaN outputs under the causal mask (fully masked rows)");
        d.explanation = msg!(
            "{} produced {} NaN elements, all with the causal mask, while non-causal shapes \
             pass. A row (or row tile) whose scores are all masked keeps its running maximum at \
             -inf, and the online softmax then computes exp(-inf - (-inf)) = NaN and divides by \
             a zero row sum.",
            s.n_fail(),
            nans
        );
        d.fix = msg!(
            "Guard the masked case: when the running max is -inf use 0 in its place (so exp(s - \
             m) is 0, not NaN), and write 0 instead of dividing when the row sum is 0."
        );
    } else if let Some(tile) = s.tile {
        d.title = msg!(
            "NaN outputs when S is not a multiple of {} (tail tile)",
            tile.label()
        );
        d.explanation = msg!(
            "{} produced {} NaN elements, only where the sequence length is not a multiple of \
             {}: the last, partial tile reads keys past seq_len (poison or garbage) or masks a \
             whole row to -inf.",
            s.n_fail(),
            nans,
            tile.label()
        );
        d.fix = msg!(
            "Mask keys with index >= seq_len in the last tile to -inf before the max, load zeros \
             for rows past seq_len, and guard the row max as for fully masked rows ({}).",
            tile.label()
        );
    } else {
        d.title = msg!("NaN outputs");
        d.explanation = msg!(
            "{} produced {} NaN elements (NaN never passes): an overflow in the softmax (a \
             missing max subtraction), a division by a zero row sum, or uninitialised inputs to \
             the accumulation.",
            s.n_fail(),
            nans
        );
        d.fix = msg!(
            "Subtract the running row max before exp, guard divisions by the row sum, and run \
             initcheck to rule out uninitialised reads."
        );
    }
}

/// Wrong values: within tolerance (`gate`), at the tail tile, under the causal mask, or
/// anywhere.
fn word_wrong(d: &mut Draft, s: &Seen, gate: Option<&Gate>) {
    if let Some(g) = gate {
        d.title = if g.second_launch {
            msg!("Output differs between two launches on the same inputs")
        } else {
            msg!("Checks fail although the error is within tolerance")
        };
        d.explanation = msg!(
            "{} failed although the error is within tolerance (relative L2 error {} against a \
             tolerance of {}; max abs error {}): the check gates on more than the error, and \
             each shape's evidence says what it failed on.{}",
            s.n_fail(),
            figure(sig3(g.rel_l2)),
            figure(sig3(s.tol)),
            figure(sig3(s.max_err)),
            if g.second_launch {
                " A second launch on the same inputs did not reproduce the first output: what \
                 the kernel computes depends on more than its inputs (memory it reads before \
                 writing, state a launch leaves behind, or a race)."
            } else {
                ""
            }
        );
        d.fix = if g.second_launch {
            msg!(
                "Run initcheck and racecheck on this config: a read of uninitialised or stale \
                 memory, or a missing barrier, is what makes two launches differ."
            )
        } else {
            msg!(
                "Read the failing shapes' figures in the harness JSON (`details`) and fix what \
                 they name."
            )
        };
    } else if let Some(tile) = s.tile {
        d.title = msg!(
            "Wrong results when S is not a multiple of {} (tail tile off-by-one)",
            tile.label()
        );
        d.explanation = msg!(
            "{} differ from the CPU reference ({}), and every failing shape has a sequence \
             length that is not a multiple of {} while lengths that are pass: the last, partial \
             tile is mishandled, typically a bound off by one (`<=` for `<`) or a mask that uses \
             the tile size instead of seq_len.",
            s.n_fail(),
            s.error(),
            tile.label()
        );
        d.fix = msg!(
            "In the last tile, mask key columns >= seq_len (not >= {}) and guard rows >= seq_len \
             on load and store; check every bound against seq_len with `<`.",
            tile.name()
        );
    } else if s.causal_only {
        d.title = msg!("Wrong results under the causal mask");
        d.explanation = msg!(
            "{} differ from the CPU reference ({}), all with the causal mask, while non-causal \
             shapes pass: the mask condition or the tile-skipping bound is off.",
            s.n_fail(),
            s.error()
        );
        d.fix = msg!(
            "Check the causal condition (key index <= query index, in absolute positions) and the \
             last key tile each query tile visits."
        );
    } else {
        d.title = msg!("Wrong results against the CPU reference");
        d.explanation = msg!(
            "{} differ from the CPU reference ({}).",
            s.n_fail(),
            s.error()
        );
        d.fix = msg!(
            "Compare intermediate values (scores, row max, row sum) for the smallest failing \
             shape against the reference."
        );
    }
}

/// A tile size that separates the shapes: every failing shape's sequence length is not a
/// multiple of it, and some passing shape's is. The config's BLOCK_N (or BLOCK_M) when the
/// compile command names it, else the smallest power of two from 16 to 256 that does.
fn tail_tile(
    ctx: &Ctx,
    config: Option<&str>,
    failing: &[&ResultRef],
    passing: &[&ResultRef],
) -> Option<Tile> {
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
                return Some(Tile {
                    param: Some(name),
                    size: t,
                });
            }
        }
    }
    // Without the config's tile, the smallest power of two that separates is the claim the
    // evidence supports: tiles are multiples of it.
    [16, 32, 64, 128, 256]
        .into_iter()
        .find(|t| separates(*t))
        .map(|t| Tile {
            param: None,
            size: t,
        })
}

/// One line about a check result.
fn describe(r: &ResultRef) -> Message {
    let res = r.result;
    let shape = crate::tables::Case::of(res).label();
    let within = within_tolerance_failure(res)
        .map(|why| msg!(" although the error is within tolerance: {}", quote(why)))
        .unwrap_or_default();
    match &res.check {
        Some(c) => msg!(
            "check {}: {} (max abs err {}, rel L2 {}, tolerance {}, {} NaN, {} unwritten{}){}",
            shape,
            if c.passed { "passed" } else { "failed" },
            figure(sig3(c.max_abs_err)),
            figure(sig3(c.rel_l2_err)),
            figure(sig3(c.tolerance)),
            c.nan_count.to_string(),
            c.unwritten.to_string(),
            if c.canaries_corrupted.is_empty() {
                Message::new()
            } else {
                msg!(
                    ", canaries overwritten: {}",
                    quote(c.canaries_corrupted.join(", "))
                )
            },
            within
        ),
        None => msg!("{} {}", super::mode_name(res.mode), shape),
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, says};

    /// The harness's check of the `tail_off_by_one` attention build at S=500
    /// (`harness/check_tail_off_by_one.json`): 32,000 NaN elements, max abs error 0.138.
    #[test]
    fn fires_on_nan_output_against_the_reference() {
        let d =
            fixture_case!(Check, "harness/check_tail_off_by_one.json").only(RuleId::WrongOutput);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("release"));
        assert_eq!(d.kernel.as_deref(), Some("attention_fwd_f16"));
        assert_eq!(d.location, None);
        says(&d.title, "NaN");
    }

    /// The harness's check of the clean attention kernel at S=512
    /// (`harness/check_attention.json`): max abs error 1.6e-4 within the 1e-3 tolerance.
    #[test]
    fn stays_silent_on_output_within_tolerance() {
        fixture_case!(Check, "harness/check_attention.json").silent(RuleId::WrongOutput);
    }
}
