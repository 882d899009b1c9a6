//! `misaligned-access`: memcheck's access at an address not aligned to its size.

use parsers::{FindingKind, MemorySpace};

use super::{Ctx, Role, Rule, RuleId, access_word, at_location};
use crate::diagnosis::Draft;
use crate::message::msg;
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::MisalignedAccess,
    Role::sited(5),
    "Misaligned access",
    "memcheck's misaligned address for the access size.",
    "crates/report/src/rules/misaligned.rs",
    run,
);

/// One draft per distinct misaligned-access site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.unexplained(FindingKind::MisalignedAccess) {
        let finding = f.finding;
        let fact = Misaligned {
            space: match finding.space {
                Some(MemorySpace::Shared) => "shared-memory ",
                Some(MemorySpace::Global) => "global ",
                Some(MemorySpace::Local) => "local ",
                _ => "",
            },
            access: access_word(finding.access),
            size: finding.size,
            count: finding.count,
        };
        let mut d = ctx.site_draft(RuleId::MisalignedAccess, index, f);
        d.explains
            .extend(ctx.in_log(f.source, |k| k == FindingKind::HostApiError));
        word_misaligned(&mut d, &fact);
        out.push(d);
    }
    out
}

/// What memcheck saw of one misaligned access: its space ("global ", with its space, or
/// nothing), its kind ("read", "write", "access"), its size in bytes and its records.
struct Misaligned {
    space: &'static str,
    access: &'static str,
    size: Option<u32>,
    count: u64,
}

/// The words of a misaligned access: title, explanation and fix.
fn word_misaligned(d: &mut Draft, fact: &Misaligned) {
    d.title = msg!("Misaligned {}{}", fact.space, fact.access);
    let size_words = fact.size.map(|s| msg!("{}-byte ", s.to_string())).unwrap_or_default();
    d.explanation = msg!(
        "memcheck caught {} of a {}{}{}{} whose address is not a multiple of its size. Vector \
         loads (float4, uint4), ldmatrix and cp.async need their natural alignment (up to 16 \
         bytes).",
        plural(fact.count, "record", "records"),
        size_words,
        fact.space,
        fact.access,
        at_location(d.location.as_ref())
    );
    d.fix = msg!(
        "Align the buffer and the offsets to the access size: `__align__(16)` on shared \
         arrays, row strides and tile offsets in multiples of {} bytes, or narrower accesses \
         where alignment cannot be guaranteed.",
        fact.size.unwrap_or(16).to_string()
    );
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    /// memcheck on `misaligned.cu global` (`compute-sanitizer/memcheck_misaligned_global.log`):
    /// 4-byte reads at `base + 2`, misaligned, at line 9.
    #[test]
    fn fires_on_a_four_byte_global_read_at_an_odd_address() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_misaligned_global.log")
            .only(RuleId::MisalignedAccess);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.title, "Misaligned global read");
        assert_eq!(d.kernel.as_deref(), Some("misaligned_global"));
        assert_eq!(place(&d).as_deref(), Some("misaligned.cu:9"));
        says(&d.fix, "multiples of 4 bytes");
    }

    /// memcheck on `oob.cu` (`compute-sanitizer/memcheck_oob_write.log`): a write past the end
    /// of a buffer, aligned: another rule's finding.
    #[test]
    fn stays_silent_on_an_aligned_out_of_bounds_write() {
        fixture_case!(Memcheck, "compute-sanitizer/memcheck_oob_write.log")
            .silent(RuleId::MisalignedAccess);
    }
}
