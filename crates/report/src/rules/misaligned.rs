//! `misaligned-access`: memcheck's access at an address not aligned to its size.

use parsers::{Access, FindingKind, MemorySpace};

use super::{Ctx, Proposes, Role, Rule, RuleId, at_location};
use crate::diagnosis::Draft;
use crate::text::plural;

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::MisalignedAccess,
    role: Role::SitedFault {
        rank: 5,
        unplaced: false,
    },
    name: "Misaligned access",
    description: "memcheck's misaligned address for the access size.",
    module: "crates/report/src/rules/misaligned.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

/// One draft per distinct misaligned-access site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.joined.findings.iter().enumerate() {
        let finding = f.finding;
        if finding.kind != FindingKind::MisalignedAccess || ctx.explained(index) {
            continue;
        }
        let space = match finding.space {
            Some(MemorySpace::Shared) => "shared-memory ",
            Some(MemorySpace::Global) => "global ",
            Some(MemorySpace::Local) => "local ",
            _ => "",
        };
        let access = match finding.access {
            Some(Access::Read) => "read",
            Some(Access::Write) => "write",
            None => "access",
        };
        let mut d = ctx.site_draft(
            RuleId::MisalignedAccess,
            format!("Misaligned {space}{access}"),
            index,
            f,
        );
        for (i, g) in ctx.joined.findings.iter().enumerate() {
            if g.source == f.source && g.finding.kind == FindingKind::HostApiError {
                d.explains.push(i);
            }
        }
        let size = finding
            .size
            .map(|s| format!("{s}-byte "))
            .unwrap_or_default();
        let at = at_location(d.location.as_ref());
        d.explanation = format!(
            "memcheck caught {} of a {size}{space}{access}{at} whose address is not a multiple \
             of its size. Vector loads (float4, uint4), ldmatrix and cp.async need their natural \
             alignment (up to 16 bytes).",
            plural(finding.count, "record", "records")
        ).into();
        d.fix = format!(
            "Align the buffer and the offsets to the access size: `__align__(16)` on shared \
             arrays, row strides and tile offsets in multiples of {} bytes, or narrower accesses \
             where alignment cannot be guaranteed.",
            finding.size.unwrap_or(16)
        ).into();
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture, place};
    use crate::{diagnosis::Level, run::StageKind};

    /// memcheck on `misaligned.cu global` (`compute-sanitizer/memcheck_misaligned_global.log`):
    /// 4-byte reads at `base + 2`, misaligned, at line 9.
    #[test]
    fn fires_on_a_four_byte_global_read_at_an_odd_address() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Memcheck,
                    "release",
                    "sm_90",
                    parsers_fixture!("compute-sanitizer/memcheck_misaligned_global.log"),
                )
                .drafts(RuleId::MisalignedAccess),
        );
        assert_eq!(d.rule, RuleId::MisalignedAccess);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.title, "Misaligned global read");
        assert_eq!(d.kernel.as_deref(), Some("misaligned_global"));
        assert_eq!(place(&d).as_deref(), Some("misaligned.cu:9"));
        assert!(d.fix.markdown().contains("multiples of 4 bytes"), "{:?}", d.fix);
    }

    /// memcheck on `oob.cu` (`compute-sanitizer/memcheck_oob_write.log`): a write past the end
    /// of a buffer, aligned: another rule's finding.
    #[test]
    fn stays_silent_on_an_aligned_out_of_bounds_write() {
        let drafts = Case::new()
            .log(
                StageKind::Memcheck,
                "release",
                "sm_90",
                parsers_fixture!("compute-sanitizer/memcheck_oob_write.log"),
            )
            .drafts(RuleId::MisalignedAccess);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
