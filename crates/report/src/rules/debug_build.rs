//! `debug-build`: a config built with `-G` (device debug). Its compiler says so ("'--device-debug
//! (-G)' overrides '--generate-line-info (-lineinfo)'"), or its build command carries `-G`. A
//! debug build keeps every local variable in local memory and inlines nothing, so its stack
//! frames, local memory and register counts describe the debug build, not the release one: one
//! note says so, the compiler's -G warnings are its evidence, and the resource rules stay quiet
//! for the config ([`super::Ctx::debug_build`]).

use parsers::FindingKind;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level};
use crate::message::{Message, msg};

pub(crate) const RULE: Rule = Rule::new(
    RuleId::DebugBuild,
    Role::Context,
    "Debug build",
    "A config built with -G (device debug): one note that its registers, stack \
        frames and local memory are the debug build's; the compiler's -G warnings \
        are its evidence, and stack frames and local memory are no findings there.",
    "crates/report/src/rules/debug_build.rs",
    run,
);

/// One note per debug-built config.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for config in j.config_names() {
        let c = config.as_deref();
        if !ctx.debug_build(c) {
            continue;
        }
        let mut warnings = j
            .findings_in(c)
            .filter(|(_, f)| is_debug_warning(f.finding));
        let mut d = Draft::new(RuleId::DebugBuild, Level::Note, Message::new());
        d.config = config.clone();
        d.key = "-G".into();
        d.confidence = Confidence::High;
        if let Some((i, f)) = warnings.next() {
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(i);
        }
        d.explains.extend(warnings.map(|(i, _)| i));
        word_debug_build(&mut d);
        out.push(d);
    }
    out
}

/// The note's words: the config is a `-G` build, so its resource figures are the debug build's.
fn word_debug_build(d: &mut Draft) {
    d.title = msg!("A `-G` build: resource figures do not describe the release build");
    d.explanation = msg!(
        "This config was built with `-G` (device debug): nothing is inlined and every local \
         variable lives in local memory, so its registers, stack frames and local-memory \
         traffic are the debug build's, and its timings say nothing about the release build. \
         Stack frames and local memory are not reported as findings here."
    );
    d.fix = msg!(
        "Judge resources and speed on a release build (`-O3 -lineinfo`, no `-G`); keep `-G` \
         for stepping through the kernel in a debugger."
    );
}

/// The compiler's own words for a `-G` build, as the parser typed them.
pub fn is_debug_warning(f: &parsers::Finding) -> bool {
    f.kind == FindingKind::DebugBuild
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::fixture_case;

    /// nvcc 13.0 with `-G -lineinfo` on `wmma_local.cu` (`ptxas/device_wmma_local_debug.log`):
    /// "'--device-debug (-G)' overrides '--generate-line-info (-lineinfo)'".
    #[test]
    fn fires_on_a_config_the_compiler_says_was_built_with_dash_g() {
        let d =
            fixture_case!(Compile, "ptxas/device_wmma_local_debug.log").only(RuleId::DebugBuild);
        assert_eq!(d.level, Level::Note);
        assert_eq!(d.config.as_deref(), Some("release"));
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        assert_eq!(d.key, "-G");
        // The compiler's warning is its evidence, and what it explains.
        assert_eq!(d.explains.len(), 1, "{:?}", d.explains);
        assert_eq!(d.evidence.len(), 1);
    }

    /// The same kernel built without `-G` (`ptxas/device_wmma_local.log`): a stack frame, and
    /// no word of a debug build.
    #[test]
    fn stays_silent_on_a_release_build_of_the_same_kernel() {
        fixture_case!(Compile, "ptxas/device_wmma_local.log").silent(RuleId::DebugBuild);
    }
}
