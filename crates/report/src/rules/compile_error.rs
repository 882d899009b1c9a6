//! `compile-error`: the compiler refused the kernel.

use parsers::FindingKind;

use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Level};

/// One draft per distinct compile error, pointing at its file:line.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.joined.findings.iter().enumerate() {
        if f.finding.kind != FindingKind::CompileError {
            continue;
        }
        let mut draft = Draft::new(RuleId::CompileError, Level::Error, "Compile error");
        draft.confidence = Confidence::High;
        draft.config = f.config.clone();
        draft.kernel = f.finding.kernel.clone();
        draft.location = ctx.place(f);
        draft.key = f.finding.fingerprint.clone();
        let message = crate::text::md_text(&crate::text::scrub(
            &f.finding.message,
            &ctx.joined.repo_files,
        ));
        draft.title = format!("Compile error: {message}");
        draft.explanation = format!(
            "The compiler stopped with an error{}, so nothing downstream of this config's compile \
             stage ran on this source.",
            super::at_location(draft.location.as_ref())
        );
        draft.fix = "Fix the error at the named line and re-run the pipeline; the stages that \
                     depend on the cubin were skipped."
            .to_string();
        draft.evidence.push(ctx.finding_evidence(f));
        draft.explains.push(index);
        out.push(draft);
    }
    out
}
