//! `compile-error`: the compiler refused the kernel.

use parsers::FindingKind;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level};
use crate::message::{msg, quote};
use crate::text::scrub;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::CompileError,
    Role::sited(0),
    "Compile error",
    "nvcc or ptxas refused the kernel; the error's file:line is the place to look.",
    "crates/report/src/rules/compile_error.rs",
    run,
);

/// One draft per distinct compile error, pointing at its file:line.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    // The first rule: no finding is explained yet.
    ctx.unexplained(FindingKind::CompileError)
        .map(|(index, f)| {
            let mut d = ctx.finding_draft(RuleId::CompileError, Level::Error, index, f);
            d.confidence = Confidence::High;
            d.kernel = f.finding.kernel.clone();
            d.location = ctx.place(f);
            d.key = f.finding.fingerprint.clone();
            word_compile_error(&mut d, &scrub(&f.finding.message, &ctx.joined.repo_files));
            d
        })
        .collect()
}

/// The words of a compile error: the compiler's `message` (scrubbed), quoted.
fn word_compile_error(draft: &mut Draft, message: &str) {
    draft.title = msg!("Compile error: {}", quote(message));
    draft.explanation = msg!(
        "The compiler stopped with an error{}, so nothing downstream of this config's compile \
         stage ran on this source.",
        super::at_location(draft.location.as_ref())
    );
    draft.fix = msg!(
        "Fix the error at the named line and re-run the pipeline; the stages that depend on \
         the cubin were skipped."
    );
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    /// nvcc 13.0 on `compile_error.cu` (`crates/parsers/fixtures/ptxas/nvcc13.0_compile_error.log`):
    /// `identifier "undeclared_scale" is undefined` at line 3.
    #[test]
    fn fires_at_the_line_nvcc_names_for_an_undeclared_identifier() {
        let d = fixture_case!(Compile, "ptxas/nvcc13.0_compile_error.log")
            .input("crates/parsers/fixtures/programs/compile_error.cu")
            .only(RuleId::CompileError);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("release"));
        // nvcc's front end names no kernel for an error outside one's signature.
        assert_eq!(d.kernel, None);
        assert_eq!(
            place(&d).as_deref(),
            Some("crates/parsers/fixtures/programs/compile_error.cu:3")
        );
        says(&d.title, "undeclared_scale");
    }

    /// nvcc 13.0 on `clean.cu` (`ptxas/nvcc13.0_clean.log`): ptxas's resource lines and no
    /// error.
    #[test]
    fn stays_silent_on_a_build_that_succeeded() {
        fixture_case!(Compile, "ptxas/nvcc13.0_clean.log").silent(RuleId::CompileError);
    }
}
