//! `debug-build`: a config built with `-G` (device debug). Its compiler says so ("'--device-debug
//! (-G)' overrides '--generate-line-info (-lineinfo)'"), or its build command carries `-G`. A
//! debug build keeps every local variable in local memory and inlines nothing, so its stack
//! frames, local memory and register counts describe the debug build, not the release one: one
//! note says so, the compiler's -G warnings are its evidence, and the resource rules stay quiet
//! for the config ([`super::Ctx::debug_build`]).

use parsers::FindingKind;

use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Level};

/// One note per debug-built config.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for config in j.config_names() {
        let c = config.as_deref();
        if !ctx.debug_build(c) {
            continue;
        }
        let warnings: Vec<usize> = j
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| f.config.as_deref() == c && is_debug_warning(f.finding))
            .map(|(i, _)| i)
            .collect();
        let mut d = Draft::new(
            RuleId::DebugBuild,
            Level::Note,
            "A `-G` build: resource figures do not describe the release build",
        );
        d.config = config.clone();
        d.key = "-G".into();
        d.confidence = Confidence::High;
        if let Some(f) = warnings.first().and_then(|&i| j.findings.get(i)) {
            d.evidence.push(ctx.finding_evidence(f));
        }
        d.explains = warnings;
        d.explanation = "This config was built with `-G` (device debug): nothing is inlined and \
                         every local variable lives in local memory, so its registers, stack \
                         frames and local-memory traffic are the debug build's, and its timings \
                         say nothing about the release build. Stack frames and local memory are \
                         not reported as findings here."
            .into();
        d.fix = "Judge resources and speed on a release build (`-O3 -lineinfo`, no `-G`); keep \
                 `-G` for stepping through the kernel in a debugger."
            .into();
        out.push(d);
    }
    out
}

/// The compiler's own words for a `-G` build, as the parser typed them.
pub fn is_debug_warning(f: &parsers::Finding) -> bool {
    f.kind == FindingKind::DebugBuild
}
