//! `divergent-barrier`: synccheck's barrier that only part of a block or warp reaches.

use parsers::FindingKind;

use super::{Ctx, at_location};
use crate::diagnosis::Draft;
use crate::text::plural;

/// One draft per distinct barrier-error site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.joined.findings.iter().enumerate() {
        let finding = f.finding;
        if finding.kind != FindingKind::BarrierError || ctx.explained(index) {
            continue;
        }
        let scope = if finding.message.to_lowercase().contains("warp") {
            "warp"
        } else {
            "block"
        };
        let mut d = ctx.site_draft(
            "divergent-barrier",
            format!("Divergent barrier: not every thread of the {scope} reaches it"),
            index,
            f,
        );
        d.key = scope.to_string();
        let at = at_location(d.location.as_ref());
        d.explanation = format!(
            "synccheck reports {} of a barrier{at} reached by only some threads of a {scope}: a \
             `__syncthreads()` inside a branch whose condition differs between threads, or after \
             an early `return` some threads take. The behaviour is undefined: a hang, or threads \
             passing the barrier before shared memory is ready.",
            plural(finding.count, "error", "errors")
        );
        d.fix = "Make every thread of the block reach the barrier: hoist it out of the \
                 thread-dependent branch, and replace early returns with a predicate that skips \
                 the work but not the barrier."
            .to_string();
        out.push(d);
    }
    out
}
