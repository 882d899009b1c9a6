//! `divergent-barrier`: synccheck's barrier that only part of a block or warp reaches, and its
//! relative, a `__syncwarp(mask)` whose mask does not name exactly the lanes that call it
//! (synccheck's "Invalid arguments").

use parsers::{Finding, FindingKind};

use super::{Ctx, Role, Rule, RuleId, at_location};
use crate::diagnosis::Draft;
use crate::message::msg;
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::DivergentBarrier,
    Role::sited(6),
    "Divergent barrier",
    "synccheck's barrier reached by only part of a block or warp.",
    "crates/report/src/rules/barrier.rs",
    run,
);

/// One draft per distinct barrier-error site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.unexplained(FindingKind::BarrierError) {
        let finding = f.finding;
        let mut d = ctx.site_draft(RuleId::DivergentBarrier, index, f);
        if !finding.invalid_arguments {
            // A barrier that only some threads of a block or warp reach.
            let scope = match finding.sync_scope {
                Some(parsers::SyncScope::Warp) => "warp",
                _ => "block",
            };
            d.key = scope.to_string();
            word_divergent(&mut d, scope, finding.count);
        } else if at_syncwarp(finding) {
            d.key = "syncwarp-mask".to_string();
            d.figures
                .insert("barrier".into(), serde_json::json!("__syncwarp"));
            word_syncwarp_mask(&mut d, finding.count);
        } else {
            d.key = "invalid-arguments".to_string();
            word_invalid_arguments(&mut d, finding.count);
        }
        out.push(d);
    }
    out
}

/// The words of a divergent barrier in a `scope` ("block", "warp"), `count` records.
fn word_divergent(d: &mut Draft, scope: &str, count: u64) {
    d.title = msg!(
        "Divergent barrier: not every thread of the {} reaches it",
        scope
    );
    d.explanation = msg!(
        "synccheck reports {} of a barrier{} reached by only some threads of a {}: a \
         `__syncthreads()` inside a branch whose condition differs between threads, or after \
         an early `return` some threads take. The behaviour is undefined: a hang, or threads \
         passing the barrier before shared memory is ready.",
        plural(count, "error", "errors"),
        at_location(d.location.as_ref()),
        scope
    );
    d.fix = msg!(
        "Make every thread of the block reach the barrier: hoist it out of the \
         thread-dependent branch, and replace early returns with a predicate that skips \
         the work but not the barrier."
    );
}

/// The words of synccheck's "Invalid arguments" at `__syncwarp(mask)`, `count` records: the
/// mask leaves out lanes that call it, or names lanes that never do.
fn word_syncwarp_mask(d: &mut Draft, count: u64) {
    d.title =
        msg!("Invalid `__syncwarp(mask)`: the mask does not name exactly the lanes that call it");
    d.explanation = msg!(
        "synccheck reports {} (\"Invalid arguments\") at the `__syncwarp(mask)`{}: every \
         thread that calls `__syncwarp(mask)` must have its own bit set in the mask, and every \
         lane the mask names must reach a `__syncwarp` with the same mask. Here the mask leaves \
         out lanes that call it, or names lanes that never arrive. The behaviour is undefined: \
         the warp may pass the barrier unsynchronised, hang, or (under the tool) stop the \
         kernel.",
        plural(count, "error", "errors"),
        at_location(d.location.as_ref())
    );
    d.fix = msg!(
        "Pass a mask naming exactly the lanes that reach this `__syncwarp`: `0xffffffff` \
         (or plain `__syncwarp()`) when the whole warp calls it; `__activemask()` only where \
         every lane it names is known to arrive (it returns the lanes converged at that \
         moment, not the ones that will call); for a lane-dependent branch, the ballot of \
         its condition taken before the branch (`__ballot_sync(0xffffffff, cond)`)."
    );
}

/// The words of synccheck's "Invalid arguments" at another barrier (a named barrier's id or
/// thread count), `count` records.
fn word_invalid_arguments(d: &mut Draft, count: u64) {
    d.title = msg!("Barrier called with invalid arguments");
    d.explanation = msg!(
        "synccheck reports {} (\"Invalid arguments\") at a barrier{}: the arguments it was \
         called with (a warp mask, a named barrier's id or thread count) do not match the \
         threads that arrive at it. The behaviour is undefined.",
        plural(count, "error", "errors"),
        at_location(d.location.as_ref())
    );
    d.fix = msg!(
        "Pass arguments that name exactly the threads that arrive: a warp mask with the bit \
         of every calling lane and no other, or a named barrier's thread count that is a \
         multiple of 32 and counts every thread that arrives."
    );
}

/// Whether the record is at `__syncwarp`: the function the tool located it in, or a frame of
/// its call stack.
fn at_syncwarp(finding: &Finding) -> bool {
    let named = |s: &str| s.contains("__syncwarp");
    finding.facts.function.as_deref().is_some_and(named)
        || finding.kernel.as_deref().is_some_and(named)
        || finding
            .device_frames
            .iter()
            .any(|f| f.function.as_deref().is_some_and(named))
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place};

    /// synccheck on `syncdiv.cu warp` (`compute-sanitizer/synccheck_syncdiv_warp.log`): a
    /// `__syncthreads()` at line 12 that only part of a warp reaches.
    #[test]
    fn fires_on_a_barrier_only_part_of_a_warp_reaches() {
        let d = fixture_case!(Synccheck, "compute-sanitizer/synccheck_syncdiv_warp.log")
            .only(RuleId::DivergentBarrier);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.key, "warp");
        assert_eq!(d.kernel.as_deref(), Some("divergent_barrier"));
        assert_eq!(place(&d).as_deref(), Some("syncdiv.cu:12"));
        assert!(d.figures["records"].as_u64().is_some_and(|n| n > 1));
    }

    /// synccheck on `issue12/syncwarp_mask.cu` (`compute-sanitizer/synccheck_syncwarp_mask.log`):
    /// "Invalid arguments" at `__syncwarp`, called by `half_sync` at line 18.
    #[test]
    fn fires_on_a_syncwarp_mask_that_leaves_out_lanes_that_call_it() {
        let d = fixture_case!(Synccheck, "compute-sanitizer/synccheck_syncwarp_mask.log")
            .only(RuleId::DivergentBarrier);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.key, "syncwarp-mask");
        assert_eq!(d.figures["barrier"], "__syncwarp");
        assert_eq!(d.kernel.as_deref(), Some("half_sync"));
        assert_eq!(place(&d).as_deref(), Some("syncwarp_mask.cu:18"));
    }

    /// synccheck on `syncwarp_mask.cu` with a full mask
    /// (`compute-sanitizer/synccheck_syncwarp_clean.log`): 0 errors.
    #[test]
    fn stays_silent_on_a_clean_synccheck_log() {
        fixture_case!(Synccheck, "compute-sanitizer/synccheck_syncwarp_clean.log")
            .silent(RuleId::DivergentBarrier);
    }
}
