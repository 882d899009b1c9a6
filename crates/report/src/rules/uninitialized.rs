//! `uninitialized-read`: initcheck's read of global memory that nothing wrote.

use parsers::FindingKind;

use super::{Ctx, Proposes, Role, Rule, RuleId, at_location};
use crate::diagnosis::Draft;
use crate::message::{Message, code, msg};
use crate::text::plural;

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::UninitializedRead,
    role: Role::SitedFault {
        rank: 7,
        unplaced: false,
    },
    name: "Uninitialised read",
    description: "initcheck's read of global memory nothing wrote.",
    module: "crates/report/src/rules/uninitialized.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

/// One draft per distinct uninitialised-read site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = Vec::new();
    for (index, f) in ctx.joined.findings.iter().enumerate() {
        let finding = f.finding;
        if finding.kind != FindingKind::UninitializedRead || ctx.explained(index) {
            continue;
        }
        let mut d = ctx.site_draft(RuleId::UninitializedRead, Message::new(), index, f);
        let partly = first_uninitialised_thread(&finding.threads).map(|first| {
            // The first block's lower threads run the same code without a record: the buffer
            // was written, but only its first part. With records left unprinted that is likely,
            // not shown.
            let unprinted = ctx
                .joined
                .source(f.source)
                .map_or(0, |s| s.log.unprinted_errors);
            d.figures
                .insert("first_uninitialised_thread".into(), first.into());
            Partly { first, unprinted }
        });
        match finding.facts.host_call.as_deref() {
            Some(call) => word_host_read(&mut d, call, finding.size),
            None => word_uninitialised(&mut d, finding.size, finding.count, partly.as_ref()),
        }
        out.push(d);
    }
    out
}

/// A buffer written only in its first part: the first thread of block (0,0,0) with a record,
/// and how many records the tool left unprinted.
struct Partly {
    first: u64,
    unprinted: u64,
}

/// The words of an uninitialised read of `size` bytes, `count` records; `partly` where the
/// buffer was written only in its first part.
fn word_uninitialised(d: &mut Draft, size: Option<u32>, count: u64, partly: Option<&Partly>) {
    let at = at_location(d.location.as_ref());
    let size = size
        .map(|s| msg!(" of {} bytes", s.to_string()))
        .unwrap_or_default();
    d.title = msg!("Read of uninitialised global memory");
    d.explanation = msg!(
        "initcheck caught {} of global memory{}{} that no kernel or copy had written since it \
         was allocated: the value read is whatever the allocator left there, so the result \
         depends on the previous user of that memory.",
        plural(count, "read", "reads"),
        size,
        at
    );
    d.fix = msg!(
        "Initialise before reading: keep accumulators in registers or shared memory and zero \
         them in the kernel instead of reading them back from an output buffer, or write \
         (memset) the buffer before the launch."
    );
    let Some(&Partly { first, unprinted }) = partly else {
        return;
    };
    d.title = msg!("Read of partly initialised global memory");
    d.explanation.append(if unprinted == 0 {
        msg!(
            " In the first block, threads 0 to {} read without a record and thread {} is the \
             first that does: the buffer was written, but only its first part.",
            (first - 1).to_string(),
            first.to_string()
        )
    } else {
        msg!(
            " The lowest thread of the first block among the printed records is {} ({} more \
             records were not printed): the lower threads likely read initialised data, so the \
             buffer was written only in part.",
            first.to_string(),
            unprinted.to_string()
        )
    });
    d.fix = msg!(
        "Check the size of the memset or copy that fills this buffer: `cudaMemset(p, 0, n)` \
         and `cudaMemcpy(d, h, n, ...)` take bytes, not elements (`n * sizeof(float)`), and a \
         copy of the wrong count leaves the tail unwritten."
    );
}

/// The words of a host API call (`cudaMemcpy source`) that read device memory nothing wrote:
/// the buffer went back to the host with part of it never written by the kernel that fills it.
fn word_host_read(d: &mut Draft, call: &str, size: Option<u32>) {
    let size = size
        .map(|s| msg!("{} bytes of ", s.to_string()))
        .unwrap_or_default();
    d.title = msg!("Device memory copied back before anything wrote it");
    d.explanation = msg!(
        "initcheck caught the host's {} reading {}device memory that no kernel or copy had \
         written: the kernel that fills this buffer left part of it unwritten, so the host \
         receives whatever the allocator left there.",
        code(call),
        size
    );
    d.fix = msg!(
        "Make the kernel that fills the buffer write every element it is copied back with: \
         check its guard (`i < n`, not `i < n - 1`) and that its grid covers all `n`; or copy \
         back only the part it writes."
    );
}

/// The lowest thread of block (0,0,0) among a finding's examples, when it is not thread 0:
/// evidence that the threads before it read initialised data.
fn first_uninitialised_thread(threads: &[parsers::ThreadIndex]) -> Option<u64> {
    let first = threads
        .iter()
        .filter(|t| t.block == [0, 0, 0] && t.thread[1] == 0 && t.thread[2] == 0)
        .map(|t| u64::from(t.thread[0]))
        .min()?;
    (first > 0).then_some(first)
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture, place};
    use crate::{diagnosis::Level, run::StageKind};

    /// initcheck on `issue12/initcheck_partial.cu` (`compute-sanitizer/initcheck_partial.log`):
    /// a buffer filled only in its first 96 floats, read whole at line 17.
    #[test]
    fn fires_on_a_read_of_a_partly_filled_buffer_and_names_its_first_unwritten_thread() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Initcheck,
                    "release",
                    "sm_90",
                    parsers_fixture!("compute-sanitizer/initcheck_partial.log"),
                )
                .drafts(RuleId::UninitializedRead),
        );
        assert_eq!(d.rule, RuleId::UninitializedRead);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.title, "Read of partly initialised global memory");
        assert_eq!(d.kernel.as_deref(), Some("scale"));
        assert_eq!(place(&d).as_deref(), Some("initcheck_partial.cu:17"));
        assert_eq!(d.figures["first_uninitialised_thread"], 96);
    }

    /// initcheck on `records.cu hostread` (`compute-sanitizer/initcheck_host_read.log`): a
    /// kernel fills 31 of 32 floats and `cudaMemcpy` copies all 32 back. The record is a
    /// fault of its own, named by the call that read the memory, with a fix about the writes.
    #[test]
    fn names_a_host_copy_of_memory_the_kernel_left_unwritten() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Initcheck,
                    "release",
                    "sm_90",
                    parsers_fixture!("compute-sanitizer/initcheck_host_read.log"),
                )
                .drafts(RuleId::UninitializedRead),
        );
        assert_eq!(d.level, Level::Error);
        assert_eq!(
            d.title,
            "Device memory copied back before anything wrote it"
        );
        assert!(
            d.explanation.markdown().contains("`cudaMemcpy source`"),
            "{:?}",
            d.explanation
        );
        assert!(d.fix.markdown().contains("write every element"), "{:?}", d.fix);
        // The whole report: a root cause that fails the run, not records left unread.
        let case = Case::new().log(
            StageKind::Initcheck,
            "release",
            "sm_90",
            parsers_fixture!("compute-sanitizer/initcheck_host_read.log"),
        );
        let evidence = case.evidence();
        let analysis = crate::analysis::analyze(&evidence);
        let causes: Vec<_> = analysis
            .diagnoses
            .iter()
            .filter(|d| d.level == Level::Error)
            .map(|d| d.rule)
            .collect();
        assert_eq!(causes, vec![RuleId::UninitializedRead], "{:#?}", analysis.diagnoses);
    }

    /// initcheck on `clean.cu` (`compute-sanitizer/initcheck_clean.log`): 0 errors.
    #[test]
    fn stays_silent_on_a_clean_initcheck_log() {
        let drafts = Case::new()
            .log(
                StageKind::Initcheck,
                "release",
                "sm_90",
                parsers_fixture!("compute-sanitizer/initcheck_clean.log"),
            )
            .drafts(RuleId::UninitializedRead);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
