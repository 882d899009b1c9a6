//! `sanitizer-error`: every error or warning a tool reported that no rule above explains. No
//! finding is dropped silently: what no rule understands is still a diagnosis, with its raw
//! lines, at low confidence.

use parsers::{FindingKind, Severity};

use crate::run::StageStatus;
use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Draft, GiveWay, Level, Scope, SourceLocation, Span};
use crate::join::kind_name;
use crate::message::{Message, code, msg, quote};
use crate::text::scrub;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::SanitizerError,
    Role::CatchAll,
    "Unexplained tool error",
    "Any error or warning a tool reported that no rule above explains: never \
        dropped silently.",
    "crates/report/src/rules/catch_all.rs",
    run,
);

/// Whether one of this rule's own drafts is an error an echo gives way to: not the variant of
/// an exit record that stands only as a fault's symptom (the registry weighs that one against
/// the faults themselves).
fn own_error(d: &Draft) -> bool {
    d.level == Level::Error && !d.gives_way.contains(&GiveWay::NoFault)
}

/// One draft per unexplained finding at error or warning severity; one compiler warning said at
/// several lines of a config is one draft, its further lines as secondary spans.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    // Each compiler warning's draft in `out`, by config and message, with the lines it was
    // said at.
    let mut warned: Vec<(usize, Option<String>, String, Vec<SourceLocation>)> = Vec::new();
    // Device-side findings first: a host API error after a device fault in the same log is
    // that fault's echo, whichever order the log's records were read in.
    let mut order: Vec<usize> = (0..j.findings.len()).collect();
    order.sort_by_key(|i| j.findings[*i].finding.kind == FindingKind::HostApiError);
    for index in order {
        let f = &j.findings[index];
        let finding = f.finding;
        if ctx.explained(index) || finding.severity == Severity::Info {
            continue;
        }
        let source = j.source(f.source);
        // A draft of this finding alone: its config, its raw lines, and it explains it.
        let draft = |level| ctx.finding_draft(RuleId::SanitizerError, level, index, f);
        // What makes this finding an echo of a fault another draft names: the registry
        // decides it for earlier rules' drafts, and this rule for its own.
        let mut gives_way = Vec::new();
        // A harness symptom in a config whose fault another draft names is that fault's echo.
        if super::is_harness_kind(finding.kind) {
            if out.iter().any(|d| own_error(d) && d.config == f.config) {
                continue;
            }
            gives_way.push(GiveWay::Error(None));
        }
        // A host API error after a device fault another draft names is that fault's echo.
        if finding.kind == FindingKind::HostApiError
            && let Some(log) = source.map(|s| s.path)
        {
            if out.iter().any(|d| {
                own_error(d) && d.config == f.config && d.evidence.iter().any(|e| e.log == log)
            }) {
                continue;
            }
            gives_way.push(GiveWay::ErrorOnLog(log.to_string()));
        }
        // The target process's exit status ("Error: process didn't terminate successfully") is
        // a symptom of the fault that ended it, never a root cause of its own.
        if finding.is_exit_status() {
            // The symptom of a fault located in its config; with none, a finding of its own.
            let mut d = draft(Level::Error);
            d.title = msg!("The program exited with an error");
            d.symptom_of = Some(Scope::Config);
            d.bare = true;
            d.gives_way = gives_way.clone();
            d.gives_way.push(GiveWay::NoFault);
            out.push(d);
            gives_way.push(GiveWay::Fault);
        }
        let tool = source.map(|s| kind_name(s.kind)).unwrap_or("tool");
        let message = scrub(&finding.message, &j.repo_files);
        // A tool's own error in a stage that was stopped (its timeout, an interrupt): what the
        // stop left in its log ("Failed to profile ..."), not a fault of the program. The
        // stage's status already says it could not conclude; this changes no verdict.
        let stopped = source
            .and_then(|s| s.stage)
            .map(|s| s.status)
            .filter(|s| matches!(s, StageStatus::Interrupted | StageStatus::TimedOut))
            .filter(|_| finding.kind == FindingKind::ToolError);
        let level = match finding.kind {
            _ if stopped.is_some() => Level::Note,
            // An Nsight Compute rule result no performance rule takes: the profiler's advice, or
            // a remark on its own collection (no samples collected), never a fault of the
            // program.
            FindingKind::CompilerWarning
            | FindingKind::UnusedMemory
            | FindingKind::ProfilerRule => Level::Note,
            FindingKind::MemoryLeak => Level::Warning,
            _ if finding.severity == Severity::Error => Level::Error,
            _ => Level::Warning,
        };
        let location = ctx.place(f);
        // A compiler warning's place, where it may be one said at several lines.
        let warned_at = location
            .clone()
            .filter(|_| finding.kind == FindingKind::CompilerWarning);
        if let Some(location) = &warned_at
            && let Some((at, _, _, lines)) = warned
                .iter_mut()
                .find(|(_, config, said, _)| *config == f.config && *said == message)
        {
            let d = &mut out[*at];
            if !lines.contains(location) {
                lines.push(location.clone());
                d.spans
                    .push(Span::secondary(location.clone(), msg!("the same warning")));
                word_repeated_warning(d, &message, lines);
            }
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(index);
            continue;
        }
        let mut d = draft(level);
        d.gives_way = gives_way;
        (d.kernel, d.helpers) = ctx.kernel_site(f);
        d.location = location;
        if let Some(location) = warned_at {
            warned.push((out.len(), f.config.clone(), message.clone(), vec![location]));
        }
        d.key = finding.fingerprint.clone();
        // A function that calls itself in the record's device frames: a recursion.
        let names: Vec<&str> = (finding.device_frames.iter())
            .filter_map(|a| a.function.as_deref())
            .collect();
        let recursive = (names.iter())
            .find(|&&a| names.iter().filter(|&&b| b == a).count() >= 2)
            .map(|a| bare_function(a));
        let unexplained = Unexplained {
            kind: finding.kind,
            tool,
            message: &message,
            count: finding.count,
            recursive,
        };
        word_unexplained(&mut d, &unexplained);
        if let Some(status) = stopped {
            // The tool a wrapping stage runs the program under (ncu, compute-sanitizer).
            let program = source
                .map(|s| s.kind.row())
                .filter(|row| row.wraps)
                .and_then(|row| row.tools.first().copied())
                .unwrap_or(tool);
            d.title = msg!("{} was stopped: {}", program, quote(&message));
            d.explanation = msg!(
                "The {} stage was {} while {} ran, and {} wrote this as it stopped: the stop's \
                 doing, not a fault of the program. The stage could not conclude.",
                tool,
                if status == StageStatus::Interrupted {
                    "interrupted"
                } else {
                    "stopped at its timeout"
                },
                program,
                program
            );
            d.fix = msg!(
                "Give the stage the time it needs (`timeout:`), or fewer launches to measure \
                 (for a profile, `args: [--launch-count, 1]` with a kernel filter), and run it \
                 again."
            );
        }
        out.push(d);
    }
    out
}

/// A device frame's function without its clone prefix and arguments: `[clone k(int)] deep(int,
/// int)` is `deep`.
fn bare_function(name: &str) -> String {
    let name = name
        .strip_prefix("[clone ")
        .and_then(|rest| rest.split_once("] ").map(|(_, f)| f))
        .unwrap_or(name);
    name.split('(').next().unwrap_or(name).trim().to_string()
}

/// A finding no rule explains, as its draft words it.
struct Unexplained<'a> {
    kind: FindingKind,
    /// The tool that reported it, by its stage's kind.
    tool: &'a str,
    /// The finding's message, scrubbed.
    message: &'a str,
    /// How many records it stands for.
    count: u64,
    /// The function its first record's device frames show calling itself, if any.
    recursive: Option<String>,
}

/// The draft's title, explanation and fix for a finding no rule explains (its location is
/// already set).
fn word_unexplained(d: &mut Draft, u: &Unexplained) {
    let message = || quote(u.message);
    let at = super::at_location(d.location.as_ref());
    // "memcheck reported 3 records at io.cu:12: "said"."
    let reported = |said: &str| {
        msg!(
            "{} reported {}{}: {}.",
            u.tool,
            crate::text::plural(u.count, "record", "records"),
            at.clone(),
            quote(said)
        )
    };
    d.title = match u.kind {
        FindingKind::Trap => msg!("Device-side trap"),
        FindingKind::DeviceException => msg!("Device exception: {}", message()),
        FindingKind::HostApiError => msg!("CUDA API error: {}", message()),
        FindingKind::MemoryLeak => msg!("Device memory leak"),
        FindingKind::AllocationError => msg!("Allocation error: {}", message()),
        _ => msg!("{}: {}", u.tool, message()),
    };
    (d.explanation, d.fix) = match u.kind {
        FindingKind::Trap => (
            msg!(
                "A device-side trap{}: an `assert` that failed, an explicit `__trap()`, or a trap \
                 the compiler planted for an operation it cannot perform (its warnings for this \
                 config say which).",
                at
            ),
            msg!(
                "Read the compile stage's warnings for this config, and the assert or trap at the \
                 named line."
            ),
        ),
        FindingKind::DeviceException if u.message.starts_with("Stack overflow") => (
            msg!(
                "The thread's stack overflowed{}{}: each nested call takes a frame (its local \
                 arrays and spills), and the calls went deeper than the stack a thread has \
                 (`cudaLimitStackSize`, 1 KiB by default).",
                at,
                u.recursive
                    .as_deref()
                    .map(|f| msg!(", in {} calling itself (its device frames)", code(f)))
                    .unwrap_or_default()
            ),
            msg!(
                "Bound the recursion or turn it into a loop, shrink the frame of the function \
                 that recurses (a local array in registers or shared memory), or raise \
                 `cudaDeviceSetLimit(cudaLimitStackSize, bytes)` to the depth times the frame."
            ),
        ),
        FindingKind::DeviceException => (
            msg!(
                "The kernel raised a device exception{} ({}).",
                at,
                message()
            ),
            if d.location.is_some() {
                msg!("Look at the instruction at the named line: the exception is raised there.")
            } else {
                msg!("Run memcheck with -lineinfo on this config to locate the faulting instruction.")
            },
        ),
        FindingKind::AllocationError if u.message.contains("device-side free") => (
            msg!(
                "A kernel called `free()`{} on a pointer that device `malloc()` did not return: \
                 a `cudaMalloc` buffer, an offset into an allocation, or one freed already.",
                at
            ),
            msg!(
                "Free in a kernel only what a kernel's `malloc()` returned, once; free \
                 `cudaMalloc` memory with `cudaFree` on the host."
            ),
        ),
        FindingKind::AllocationError => (
            msg!("A device-side allocation failed or was misused{} ({}).", at, message()),
            msg!(
                "Check each device-side `malloc` for a null return (the heap is \
                 `cudaLimitMallocHeapSize`, 8 MiB by default) and that each `free` matches one."
            ),
        ),
        FindingKind::HostApiError => (
            msg!(
                "A CUDA API call failed ({}) and no device-side finding explains it: the launch \
                 configuration or an earlier asynchronous error.",
                message()
            ),
            msg!(
                "Check the launch dimensions and shared-memory attribute, and whether an earlier \
                 stage's fault left the context broken."
            ),
        ),
        FindingKind::MemoryLeak => (
            msg!("Device memory allocated and never freed ({}).", message()),
            msg!("Free every allocation (or let the owning wrapper drop) before the context ends."),
        ),
        FindingKind::CompilerWarning => (
            msg!("The compiler warned{}: {}.", at, message()),
            msg!(
                "Read the warning at the named line; most point at code that does not do what it \
                 says."
            ),
        ),
        FindingKind::ProfilerRule => (
            msg!(
                "{} No performance rule takes this Nsight Compute rule result: it is the \
                 profiler's advice, or a remark on its own measurement, not a fault of the \
                 program.",
                reported(u.message.trim_end_matches('.'))
            ),
            msg!(
                "Where it says the profiler could not collect something (no samples, a missing \
                 metric), the profile's other figures still stand; profile a longer launch for \
                 that figure."
            ),
        ),
        _ => (
            reported(u.message),
            msg!("Read the quoted record; no rule recognises this kind of finding yet."),
        ),
    };
}

/// The explanation and fix of one compiler warning said at several lines.
fn word_repeated_warning(d: &mut Draft, message: &str, lines: &[SourceLocation]) {
    d.explanation = msg!(
        "The compiler warned at {} lines ({}): {}.",
        lines.len().to_string(),
        line_list(lines),
        quote(message)
    );
    d.fix = msg!(
        "Read the warning at each named line; most point at code that does not do what it says."
    );
}

/// "io.cu:447, 458, 459" for lines of one file, the file named again where it changes: each
/// place as escaped text, as [`super::at_location`] gives one.
fn line_list(lines: &[SourceLocation]) -> Message {
    let mut file: Option<&str> = None;
    let places = lines.iter().map(|l| {
        let place = match (file == Some(l.file.as_str()), l.line) {
            (true, Some(line)) => line.to_string(),
            _ => l.to_string(),
        };
        file = Some(&l.file);
        Message::from(quote(place))
    });
    Message::join(places.collect::<Vec<_>>(), ", ")
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::{Draft, Level};
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, place, says};

    /// The first of `drafts` whose title says `words`; fails when none does.
    fn titled<'d>(drafts: &'d [Draft], words: &str) -> &'d Draft {
        let found = drafts.iter().find(|d| d.title.markdown().contains(words));
        found.unwrap_or_else(|| panic!("no draft titled {words:?}: {drafts:?}"))
    }

    /// memcheck on `records.cu stack` (`compute-sanitizer/memcheck_stack_overflow.log`, H200):
    /// a recursive `deep()` with a 1 KiB frame overflows the stack. Worded as a stack overflow
    /// in the function that calls itself, with the fix, at its line.
    #[test]
    fn a_stack_overflow_names_the_recursion_and_the_stack_limit() {
        let drafts = fixture_case!(Memcheck, "compute-sanitizer/memcheck_stack_overflow.log")
            .drafts(RuleId::SanitizerError);
        let d = titled(&drafts, "Stack overflow");
        assert_eq!(place(d).as_deref(), Some("records.cu:94"));
        says(&d.explanation, "`deep` calling itself");
        says(&d.fix, "cudaLimitStackSize");
    }

    /// memcheck on `records.cu badfree` (`compute-sanitizer/memcheck_bad_free.log`, H200): a
    /// kernel frees a `cudaMalloc` buffer.
    #[test]
    fn a_free_of_a_pointer_malloc_did_not_return_says_so() {
        let drafts = fixture_case!(Memcheck, "compute-sanitizer/memcheck_bad_free.log")
            .drafts(RuleId::SanitizerError);
        let d = titled(&drafts, "device-side free");
        assert_eq!(place(d).as_deref(), Some("records.cu:110"));
        says(&d.fix, "cudaFree");
    }

    /// memcheck on `leak.cu` (`compute-sanitizer/memcheck_leak.log`): 1,024 bytes allocated and
    /// never freed, a finding no other rule takes.
    #[test]
    fn fires_on_a_leak_no_other_rule_explains() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_leak.log")
            .only(RuleId::SanitizerError);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.title, "Device memory leak");
        assert_eq!(d.config.as_deref(), Some("release"));
        // A leak is the process's, at no kernel or line.
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        says(&d.explanation, "1,024 bytes");
    }

    /// Nsight Compute's details page of `examples/cuda-cpp`'s `block_sum_kernel` on the H100
    /// (`ncu-csv/pc_sampling_no_samples_details.log`): PC sampling collected no samples, a
    /// remark on the profiler's own collection that is a note, never a root cause.
    #[test]
    fn a_profiler_remark_no_rule_takes_is_a_note() {
        let drafts = fixture_case!(Profile, "ncu-csv/pc_sampling_no_samples_details.log")
            .drafts(RuleId::SanitizerError);
        let d = titled(&drafts, "PCSamplingData");
        assert_eq!(d.level, Level::Note);
        assert!(drafts.iter().all(|d| d.level == Level::Note), "{drafts:?}");
    }

    /// memcheck on `clean.cu` (`compute-sanitizer/memcheck_clean.log`): the program's own lines
    /// and 0 errors.
    #[test]
    fn stays_silent_on_a_clean_memcheck_log() {
        fixture_case!(Memcheck, "compute-sanitizer/memcheck_clean.log")
            .silent(RuleId::SanitizerError);
    }
}
