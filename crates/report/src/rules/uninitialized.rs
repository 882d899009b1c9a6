//! `uninitialized-read`: initcheck's read of global memory that nothing wrote.

use parsers::FindingKind;

use super::{Ctx, Role, Rule, RuleId, at_location};
use crate::diagnosis::{Confidence, Draft, Level};
use crate::message::{Message, code, msg, quote};
use crate::run::SanitizedLaunches;
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::UninitializedRead,
    Role::sited(7),
    "Uninitialised read",
    "initcheck's read of global memory nothing wrote. A record a launch initcheck did not \
        instrument may explain (a host copy after `--launch-count`'s launches) is a note.",
    "crates/report/src/rules/uninitialized.rs",
    run,
);

/// One draft per distinct uninitialised-read site.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = accumulators(ctx);
    for (index, f) in ctx.unexplained(FindingKind::UninitializedRead) {
        let finding = f.finding;
        if out.iter().any(|d| d.explains.contains(&index)) {
            continue;
        }
        let mut d = ctx.site_draft(RuleId::UninitializedRead, index, f);
        let unprinted = ctx
            .joined
            .source(f.source)
            .map_or(0, |s| s.log.unprinted_errors);
        // The first block's lower threads run the same code without a record: the buffer was
        // written, but only its first part. With records left unprinted that is likely, not shown.
        let first = first_uninitialised_thread(&finding.threads);
        if let Some(first) = first {
            d.figures
                .insert("first_uninitialised_thread".into(), first.into());
        }
        // Every uninitialised read its log holds, at any site.
        let in_log: u64 = ctx
            .in_log(f.source, |k| k == FindingKind::UninitializedRead)
            .map(|i| ctx.joined.findings[i].finding.count)
            .sum();
        match (finding.facts.host_call.as_deref(), finding.threads.as_slice()) {
            (Some(call), _) => word_host_read(&mut d, call, finding.size),
            // One read in the whole log, by one thread: one element was never written.
            (None, [reader]) if in_log == 1 && unprinted == 0 => {
                word_one_element(&mut d, finding.size, reader)
            }
            _ => word_uninitialised(&mut d, finding.size, finding.count, first, unprinted),
        }
        if let Some(chosen) = unseen_writes(ctx, f.source, finding.facts.host_call.is_some()) {
            word_unseen_writes(&mut d, chosen);
        }
        out.push(d);
    }
    // Follow the data across a library boundary: a library's kernel that read memory nothing
    // wrote, called from the program's own line, read the program's buffer.
    for f in &ctx.joined.library_findings {
        let Some(at) = program_data_read(ctx, f) else {
            continue;
        };
        let key = format!("library-read|{at}");
        if let Some(d) = out.iter_mut().find(|d| d.config == f.config && d.key == key) {
            d.evidence.push(ctx.finding_evidence(f));
            continue;
        }
        let mut d = Draft::new(RuleId::UninitializedRead, Level::Error, Message::new());
        d.config = f.config.clone();
        d.key = key;
        d.location = Some(at.clone());
        d.call_site = Some(at.clone());
        d.confidence = Confidence::High;
        d.evidence.push(ctx.finding_evidence(f));
        let j = ctx.joined;
        let kernel = f.kernel.as_ref();
        let lib = kernel
            .and_then(|k| j.model.library(k))
            .map_or("a library", |l| l.name());
        let reader = kernel
            .map(|k| j.model.kernel(k).map_or(k.as_str(), |m| m.name.as_str()))
            .unwrap_or("a library kernel");
        word_library_read(&mut d, lib, reader, &at, f.finding.count);
        out.push(d);
    }
    out
}

/// Accumulators never zeroed: an atomic read-modify-write (`atomicAdd(count + i, 1)`) on memory
/// nothing wrote adds to whatever the allocator left there. One root cause per array (named by
/// the atomic's first argument on the user's line), at the atomic; the other uninitialised reads
/// of the same log, on lines that name the same array, are that array read later and follow
/// from it (a name alone, in another run of the tool, could be another buffer).
fn accumulators(ctx: &Ctx) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    let line_of = |f: &crate::join::FindingRef| ctx.place(f).and_then(|at| ctx.site_line(&at));
    for (index, f) in ctx.unexplained(FindingKind::UninitializedRead) {
        let Some(array) = line_of(f).and_then(crate::source_line::atomic_target) else {
            continue;
        };
        if let Some(d) = out.iter_mut().find(|d| {
            d.config == f.config && d.figures.get("array").and_then(|v| v.as_str()) == Some(&array)
        }) {
            d.explains.push(index);
            d.evidence.push(ctx.finding_evidence(f));
            continue;
        }
        let mut d = ctx.site_draft(RuleId::UninitializedRead, index, f);
        d.key = format!("accumulator|{array}");
        d.figures.insert("array".into(), array.clone().into());
        // The same array read elsewhere in this log, on a line that names it.
        let mut readers: Vec<Message> = Vec::new();
        for (i, g) in ctx.unexplained(FindingKind::UninitializedRead) {
            if i == index || g.source != f.source {
                continue;
            }
            let Some(line) = line_of(g) else { continue };
            if !crate::source_line::names(line, &array)
                || crate::source_line::atomic_target(line).as_deref() == Some(array.as_str())
            {
                continue;
            }
            d.explains.push(i);
            d.evidence.push(ctx.finding_evidence(g));
            if let Some(at) = ctx.place(g) {
                let kernel = g
                    .kernel
                    .as_ref()
                    .map(|k| msg!(" in {}", code(k.as_str())))
                    .unwrap_or_default();
                readers.push(msg!("{}{}", quote(at.to_string()), kernel));
            }
        }
        word_accumulator(&mut d, &array, f.finding.count, readers);
        out.push(d);
    }
    out
}

/// The words of an accumulator never zeroed: `array`, its atomic's `count` records, and the
/// places that read it later (`file:line in kernel`).
fn word_accumulator(d: &mut Draft, array: &str, count: u64, readers: Vec<Message>) {
    let at = at_location(d.location.as_ref());
    d.title = msg!(
        "Accumulator never zeroed: an atomic adds to {}, which nothing wrote",
        code(array)
    );
    let later = if readers.is_empty() {
        Message::new()
    } else {
        msg!(
            " The reads of {} at {} see the same memory: they follow from it.",
            code(array),
            Message::words(readers)
        )
    };
    d.explanation = msg!(
        "initcheck caught {} of {}{}, each an atomic read-modify-write on global memory that no \
         kernel or copy had written: the atomic adds to whatever the allocator left there, so \
         every count or sum built in it starts from garbage. Memory from `cudaMalloc` (or \
         `torch.empty`) is not zero.{}",
        plural(count, "read", "reads"),
        code(array),
        at,
        later
    );
    d.fix = msg!(
        "Zero {} before the kernel that accumulates into it: {} after its `cudaMalloc` \
         (`torch.zeros` rather than `torch.empty`).",
        code(array),
        code(format!("cudaMemset({array}, 0, bytes)"))
    );
}

/// Where the program handed a library the memory a library kernel read uninitialised: the
/// program's own line in the read's host frames (a Python line of one of the run's files),
/// when the read is initcheck's. A library's kernel reading the program's valid data wrongly
/// (an out-of-bounds access) is the library's, and stays in `library-kernel`'s note.
pub(crate) fn program_data_read(
    ctx: &Ctx,
    f: &crate::join::FindingRef,
) -> Option<crate::diagnosis::SourceLocation> {
    if f.finding.kind != FindingKind::UninitializedRead {
        return None;
    }
    let at = super::python_call_site(f.finding, &ctx.joined.repo_files)?;
    ctx.joined.repo_files.contains(&at.file).then_some(at)
}

/// The words of the program's buffer read uninitialised by a library kernel it called.
fn word_library_read(
    d: &mut Draft,
    lib: &str,
    reader: &str,
    at: &crate::diagnosis::SourceLocation,
    count: u64,
) {
    d.title = msg!(
        "Memory the program never wrote, read by {}'s kernel, from {}",
        lib,
        crate::message::path(at)
    );
    d.explanation = msg!(
        "initcheck caught {} of uninitialised global memory inside {}'s {}, launched from the \
         program's line {}. The library is the detector, not the culprit: the memory is the \
         buffer the program passed it there, and part of it was never written before the call \
         (an allocation with `torch.empty` or `cudaMalloc` that the program's own kernel fills \
         only in part: an early return, a masked store, a grid that does not cover it).",
        plural(count, "read", "reads"),
        lib,
        code(reader),
        crate::message::path(at)
    );
    d.fix = msg!(
        "Make the kernel that fills this buffer write every element the call at {} reads, or \
         allocate it zeroed (`torch.zeros`) where the unwritten part is meant to be zero.",
        crate::message::path(at)
    );
}

/// The words of an uninitialised read of `size` bytes, `count` records; where the buffer was
/// written only in its first part, `first`, the first thread of block (0,0,0) with a record, and
/// how many records the tool left `unprinted`.
fn word_uninitialised(
    d: &mut Draft,
    size: Option<u32>,
    count: u64,
    first: Option<u64>,
    unprinted: u64,
) {
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
    let Some(first) = first else {
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

/// The words of the one uninitialised read of a kernel, by `reader`: every other element its
/// threads read had been written, so one write is missing, not a fill that stopped short.
fn word_one_element(d: &mut Draft, size: Option<u32>, reader: &parsers::ThreadIndex) {
    let at = at_location(d.location.as_ref());
    let size_text = size
        .map(|s| msg!("{}-byte ", s.to_string()))
        .unwrap_or_default();
    let who = msg!(
        "thread ({}) of block ({})",
        reader.thread.map(|x| x.to_string()).join(","),
        reader.block.map(|x| x.to_string()).join(",")
    );
    d.figures.insert("uninitialised_reads".into(), 1.into());
    d.title = msg!("Read of the one element of a buffer nothing wrote");
    d.explanation = msg!(
        "initcheck caught exactly one read of global memory that no kernel or copy had \
         written{}, by {}, and no other: every other element the kernel's threads read had \
         been written. One {}element of the buffer was skipped by whatever fills it. A fill \
         that stopped short (a memset or copy of too few bytes, a grid too small) leaves a run \
         of elements unwritten, each read with a record of its own; one record is one missing \
         index.",
        at,
        who.clone(),
        size_text
    );
    d.fix = msg!(
        "Find the write that should cover the element {} reads: the kernel or copy that fills \
         this buffer skips one index (a guard such as `i != k` or `i < n - 1`, a loop bound one \
         short, a special case that returns before its store). Write that element there; \
         widening a memset would only hide it.",
        who
    );
}

/// The launches initcheck left uninstrumented before a record, where its stage chose which to
/// instrument: what they wrote, it did not see written. A host call may come after the first
/// `count` launches; after a skip or under a kernel filter, a kernel's read may too.
fn unseen_writes(ctx: &Ctx, source: usize, host: bool) -> Option<SanitizedLaunches> {
    let chosen = ctx.joined.source(source)?.stage?.unit.sanitized_launches?;
    (host || chosen == SanitizedLaunches::Selected).then_some(chosen)
}

/// A record that a launch initcheck did not instrument may explain: a note that says so and
/// how to confirm it, not a root cause.
fn word_unseen_writes(d: &mut Draft, chosen: SanitizedLaunches) {
    d.level = Level::Note;
    d.confidence = Confidence::Low;
    let checked = match chosen {
        SanitizedLaunches::First { count } => msg!(
            "only the program's first {} ({})",
            plural(count, "launch", "launches"),
            code(format!("--launch-count {count}"))
        ),
        SanitizedLaunches::Selected => msg!(
            "only the launches its stage's {} chose (a launch skip or a kernel filter)",
            code("args")
        ),
    };
    d.title = msg!("{}, as far as initcheck saw", d.title.clone());
    d.explanation.append(msg!(
        " But initcheck instrumented {}: the others ran uninstrumented, and what they wrote \
         reads to it as never written, so this record may be of memory such a launch wrote.",
        checked
    ));
    d.fix = msg!(
        "Confirm it with initcheck over every launch: drop the launch bound from the stage's \
         {} (with fewer timed iterations or a smaller problem if that takes too long). A record \
         that stays is the root cause; one that goes was the bound's.",
        code("args")
    );
}

/// The words of a host API call (`cudaMemcpy source`) that read device memory nothing wrote:
/// the buffer went back to the host with part of it never written by the kernel that fills it.
fn word_host_read(d: &mut Draft, call: &str, size: Option<u32>) {
    let size = size
        .map(|s| msg!("{} of ", plural(u64::from(s), "byte", "bytes")))
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
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    /// initcheck on `issue12/initcheck_partial.cu` (`compute-sanitizer/initcheck_partial.log`):
    /// a buffer filled only in its first 96 floats, read whole at line 17.
    #[test]
    fn fires_on_a_read_of_a_partly_filled_buffer_and_names_its_first_unwritten_thread() {
        let d = fixture_case!(Initcheck, "compute-sanitizer/initcheck_partial.log")
            .only(RuleId::UninitializedRead);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.title, "Read of partly initialised global memory");
        assert_eq!(d.kernel.as_deref(), Some("scale"));
        assert_eq!(place(&d).as_deref(), Some("initcheck_partial.cu:17"));
        assert_eq!(d.figures["first_uninitialised_thread"], 96);
    }

    /// initcheck on `records.cu accum` (`compute-sanitizer/initcheck_accumulator.log`): counts
    /// `cudaMalloc`ed and never zeroed, added to by `atomicAdd(counts + bins[i], 1)` at line 76
    /// (the record is in the toolkit's atomic, its device frame the user's line). The line, as
    /// the runner keeps it beside the stage, names the array: an accumulator never zeroed, with
    /// the `cudaMemset` fix, not a partly written buffer.
    #[test]
    fn an_atomic_on_memory_nothing_wrote_is_an_accumulator_never_zeroed() {
        let d = fixture_case!(Initcheck, "compute-sanitizer/initcheck_accumulator.log")
            .stage(|s| {
                s.site_lines.insert(
                    "records.cu:76".into(),
                    "if (i < n) atomicAdd(counts + bins[i], 1);".into(),
                );
            })
            .only(RuleId::UninitializedRead);
        assert_eq!(place(&d).as_deref(), Some("records.cu:76"));
        assert_eq!(d.figures["array"], "counts");
        assert!(d.title.to_string().starts_with("Accumulator never zeroed"), "{}", d.title);
        says(&d.fix, "cudaMemset(counts, 0, bytes)");
    }

    /// initcheck on `records.cu missing` (`compute-sanitizer/initcheck_missing_slot.log`): a
    /// kernel fills 256 floats but slot 100, the next reads them all: one record, by thread
    /// 100. A missing write, not a short memset.
    #[test]
    fn reads_a_single_uninitialised_element_as_a_missing_write() {
        let d = fixture_case!(Initcheck, "compute-sanitizer/initcheck_missing_slot.log")
            .only(RuleId::UninitializedRead);
        assert_eq!(place(&d).as_deref(), Some("records.cu:56"));
        assert_eq!(d.figures["uninitialised_reads"], 1);
        says(&d.explanation, "one missing index");
        let fix = d.fix.to_string();
        assert!(fix.contains("thread (100,0,0)"), "{fix}");
        assert!(!fix.contains("size of the memset"), "{fix}");
    }

    /// initcheck on `records.cu hostread` (`compute-sanitizer/initcheck_host_read.log`): a
    /// kernel fills 31 of 32 floats and `cudaMemcpy` copies all 32 back. The record is a
    /// fault of its own, named by the call that read the memory, with a fix about the writes.
    #[test]
    fn names_a_host_copy_of_memory_the_kernel_left_unwritten() {
        let case = fixture_case!(Initcheck, "compute-sanitizer/initcheck_host_read.log");
        let d = case.only(RuleId::UninitializedRead);
        assert_eq!(d.level, Level::Error);
        assert_eq!(
            d.title,
            "Device memory copied back before anything wrote it"
        );
        says(&d.explanation, "`cudaMemcpy source`");
        says(&d.fix, "write every element");
        // The whole report: a root cause that fails the run, not records left unread.
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

    /// initcheck on `programs/partials.py` (`compute-sanitizer/initcheck_torch_sum.log`, an
    /// H200): a `torch.empty` buffer the program fills in 48 of 64 rows, summed with
    /// `torch.sum`. Every record is in PyTorch's `reduce_kernel`; the read is the program's
    /// fault, at its own line, and no note calls the library's hazards "not the program's".
    #[test]
    fn follows_a_library_kernels_uninitialised_read_to_the_programs_line() {
        let case = fixture_case!(Initcheck, "compute-sanitizer/initcheck_torch_sum.log")
            .input("partials.py");
        let d = case.only(RuleId::UninitializedRead);
        assert_eq!(d.level, Level::Error);
        assert_eq!(place(&d).as_deref(), Some("partials.py:14"));
        says(&d.title, "PyTorch");
        says(&d.explanation, "not the culprit");
        case.silent(RuleId::LibraryKernel);
        let evidence = case.evidence();
        let analysis = crate::analysis::analyze(&evidence);
        assert_eq!(analysis.verdict.kind, crate::analysis::VerdictKind::Failing);
    }

    /// initcheck on `clean.cu` (`compute-sanitizer/initcheck_clean.log`): 0 errors.
    #[test]
    fn stays_silent_on_a_clean_initcheck_log() {
        fixture_case!(Initcheck, "compute-sanitizer/initcheck_clean.log")
            .silent(RuleId::UninitializedRead);
    }
}
