//! `divergent-barrier`: synccheck's barrier that only part of a block or warp reaches.

use parsers::FindingKind;
use serde_json::json;

use super::Ctx;
use crate::diagnosis::{Confidence, Draft, Level};
use crate::text::{kernel_base, plural};

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
        let mut d = Draft::new(
            "divergent-barrier",
            Level::Error,
            format!("Divergent barrier: not every thread of the {scope} reaches it"),
        );
        d.config = f.config.clone();
        d.kernel = finding.kernel.as_deref().map(kernel_base);
        d.location = ctx.place(f);
        d.confidence = if d.location.is_some() {
            Confidence::High
        } else {
            Confidence::Medium
        };
        d.evidence.push(ctx.finding_evidence(f));
        d.explains.push(index);
        d.key = scope.to_string();
        d.figures.insert("records".into(), json!(finding.count));
        let at = d
            .location
            .as_ref()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
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
