//! compute-sanitizer text and XML: folding, fingerprints, summaries, completeness.

use std::io::BufReader;

use parsers::facts::{AccessError, HazardType, MemoryFacts, RaceFacts};
use parsers::{Access, FindingKind, Format, MemorySpace, ParsedLog, Severity, SyncScope, Tool};

use crate::{fixture, parse_fixture};

fn only(log: &ParsedLog, kind: FindingKind) -> &parsers::Finding {
    let found: Vec<_> = log.findings.iter().filter(|f| f.kind == kind).collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind:?} finding expected in {:#?}",
        log.findings
    );
    found[0]
}

fn memory(f: &parsers::Finding) -> &MemoryFacts {
    f.facts.memory.as_deref().expect("memory facts")
}

fn race(f: &parsers::Finding) -> &RaceFacts {
    f.facts.race.as_deref().expect("race facts")
}

fn fingerprints(log: &ParsedLog) -> Vec<(FindingKind, String, u64)> {
    log.findings
        .iter()
        .map(|f| (f.kind, f.fingerprint.clone(), f.count))
        .collect()
}

#[test]
fn identical_out_of_bounds_reads_fold_into_one_finding() {
    let log = parse_fixture("compute-sanitizer/memcheck_oob_read.log");
    assert_eq!(log.tool, Some(Tool::Memcheck));
    assert!(log.complete);
    assert_eq!(log.reported_errors, Some(11));
    let f = only(&log, FindingKind::InvalidAccess);
    assert_eq!(f.count, 8);
    assert_eq!(
        f.kernel.as_deref(),
        Some("read_past_end(const float *, float *, int, int)")
    );
    assert_eq!((f.file.as_deref(), f.line), (Some("oob.cu"), Some(11)));
    assert_eq!(
        (f.space, f.access, f.size),
        (Some(MemorySpace::Global), Some(Access::Read), Some(4))
    );
    assert_eq!(f.examples.len(), 4);
    assert_eq!(f.examples[0], "thread (104,0,0) in block (7,0,0)");
    assert_eq!(
        f.excerpt[0],
        "========= Invalid __global__ read of size 4 bytes"
    );
    assert!(f.excerpt.iter().any(|l| l.contains("Host Frame:")));
    assert_eq!(memory(f).bytes_after, Some(1));
    assert_eq!(memory(f).allocation_size, Some(4000));
    assert_eq!(f.fingerprint.len(), 16);
    // 8 device records and 3 host errors: every counted error is accounted for.
    let total: u64 = log.findings.iter().map(|f| f.count).sum();
    assert_eq!(total, 11);
}

#[test]
fn fingerprints_are_equal_across_two_captures_of_the_same_fault() {
    let a = parse_fixture("compute-sanitizer/memcheck_oob_read.log");
    let b = parse_fixture("compute-sanitizer/memcheck_oob_read_again.log");
    assert_eq!(fingerprints(&a), fingerprints(&b));
    // The trap signature is the same site whether 1 or 64 blocks trapped.
    let small = parse_fixture("compute-sanitizer/memcheck_wmma_local_small.log");
    let big = parse_fixture("compute-sanitizer/memcheck_wmma_local.log");
    assert_eq!(
        only(&small, FindingKind::Trap).fingerprint,
        only(&big, FindingKind::Trap).fingerprint
    );
    // A single bad write and eight bad writes at the same line are the same site.
    let one = parse_fixture("compute-sanitizer/memcheck_oob_write1.log");
    let eight = parse_fixture("compute-sanitizer/memcheck_oob_write.log");
    assert_eq!(
        only(&one, FindingKind::InvalidAccess).fingerprint,
        only(&eight, FindingKind::InvalidAccess).fingerprint
    );
    // Different sites differ.
    assert_ne!(
        only(&a, FindingKind::InvalidAccess).fingerprint,
        only(&eight, FindingKind::InvalidAccess).fingerprint
    );
}

#[test]
fn text_and_xml_reports_of_one_fault_share_fingerprints() {
    let pairs = [
        (
            "memcheck_oob_read.log",
            "memcheck_oob.xml",
            FindingKind::InvalidAccess,
        ),
        (
            "racecheck_race.log",
            "racecheck_race.xml",
            FindingKind::Race,
        ),
        (
            "synccheck_syncdiv_warp.log",
            "synccheck_syncdiv.xml",
            FindingKind::BarrierError,
        ),
        (
            "initcheck_uninit.log",
            "initcheck_uninit.xml",
            FindingKind::UninitializedRead,
        ),
        (
            "memcheck_wmma_local.log",
            "memcheck_wmma_local.xml",
            FindingKind::Trap,
        ),
    ];
    for (text, xml, kind) in pairs {
        let t = parse_fixture(&format!("compute-sanitizer/{text}"));
        let x = parse_fixture(&format!("compute-sanitizer-xml/{xml}"));
        assert_eq!(t.tool, x.tool, "{text} vs {xml}");
        assert_eq!(
            only(&t, kind).fingerprint,
            only(&x, kind).fingerprint,
            "{text} vs {xml}"
        );
    }
}

#[test]
fn trap_records_are_one_finding_and_the_unprinted_rest_is_counted() {
    let log = parse_fixture("compute-sanitizer/memcheck_wmma_local.log");
    let trap = only(&log, FindingKind::Trap);
    assert_eq!(trap.count, 100);
    assert_eq!(
        trap.file, None,
        "no -lineinfo location for a trap in inlined WMMA code"
    );
    assert_eq!(
        trap.kernel.as_deref(),
        Some("wmma_from_local(const __half *, const __half *, float *)")
    );
    assert_eq!(log.reported_errors, Some(8196));
    assert_eq!(log.unprinted_errors, 8096);
}

#[test]
fn trap_records_printed_in_full_fold_to_one_finding() {
    // Captured with --print-limit 100000: every trapping thread is printed.
    let log = parse_fixture("compute-sanitizer/memcheck_wmma_local_full.log");
    let trap = only(&log, FindingKind::Trap);
    assert_eq!(trap.count, 8192);
    assert_eq!(log.unprinted_errors, 0);
    assert_eq!(trap.examples.len(), 4);
}

#[test]
fn singular_summaries() {
    let leak = parse_fixture("compute-sanitizer/memcheck_leak.log");
    assert_eq!(leak.reported_errors, Some(1));
    assert!(leak.complete);
    let f = only(&leak, FindingKind::MemoryLeak);
    assert_eq!(memory(f).leaked_bytes, Some(1024));
    assert_eq!(f.message, "Leaked 1,024 bytes at 0x…");

    let race = parse_fixture("compute-sanitizer/racecheck_race.log");
    assert_eq!(race.reported_errors, Some(1));
    assert_eq!(race.reported_warnings, Some(0));
    assert!(race.complete);

    let host = parse_fixture("compute-sanitizer/memcheck_doublefree_host.log");
    assert_eq!(host.reported_errors, Some(1));
}

#[test]
fn racecheck_default_form_keeps_every_side_of_the_race() {
    let log = parse_fixture("compute-sanitizer/racecheck_race.log");
    assert_eq!(log.tool, Some(Tool::Racecheck));
    let f = only(&log, FindingKind::Race);
    assert_eq!(
        (f.file.as_deref(), f.line, f.access),
        (Some("race.cu"), Some(12), Some(Access::Read))
    );
    assert_eq!(f.space, Some(MemorySpace::Shared));
    assert_eq!(race(f).hazards, Some(1024));
    let related: Vec<_> = f.related.iter().map(|l| l.line).collect();
    assert_eq!(related, [Some(10), Some(14)]);
    assert_eq!(f.excerpt.len(), 3);
}

#[test]
fn racecheck_hazard_form() {
    let log = parse_fixture("compute-sanitizer/racecheck_race_hazard.log");
    let f = only(&log, FindingKind::Race);
    assert_eq!(f.count, 100);
    assert_eq!(race(f).hazard_type, Some(HazardType::Raw));
    assert_eq!(
        (f.file.as_deref(), f.line, f.access),
        (Some("race.cu"), Some(10), Some(Access::Write))
    );
    assert_eq!(f.related[0].line, Some(12));
    assert_eq!(
        f.examples[0],
        "block (0,0,0): Write Thread (31,0,0), Read Thread (32,0,0)"
    );
    assert_eq!(log.reported_errors, Some(1024));
    assert_eq!(log.unprinted_errors, 924);
}

#[test]
fn host_api_errors_carry_the_cuda_error_and_call() {
    let log = parse_fixture("compute-sanitizer/memcheck_doublefree_host.log");
    let f = only(&log, FindingKind::HostApiError);
    let api = f.facts.api_error.as_deref().expect("the call's error");
    assert_eq!(api.name, "cudaErrorInvalidValue");
    assert_eq!(api.code, Some(1));
    assert_eq!(api.message.as_deref(), Some("invalid argument"));
    assert_eq!(api.call.as_deref(), Some("cudaFree"));

    let log = parse_fixture("compute-sanitizer/memcheck_oob_write.log");
    let calls: Vec<_> = log
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::HostApiError)
        .map(|f| {
            let call = f.facts.api_error.as_deref().and_then(|a| a.call.clone());
            (call.expect("a call"), f.count)
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("cudaDeviceSynchronize".to_string(), 1),
            ("cudaFree".to_string(), 2)
        ]
    );
}

#[test]
fn device_frames_name_the_kernel_of_an_inlined_function() {
    let log = parse_fixture("compute-sanitizer/memcheck_oob_write.log");
    let f = only(&log, FindingKind::InvalidAccess);
    assert_eq!(
        f.kernel.as_deref(),
        Some("write_past_end(float *, int, int)")
    );
    assert_eq!(
        f.facts.function.as_deref(),
        Some("store_one(float *, int, float)")
    );
    assert_eq!(f.line, Some(17));

    let log = parse_fixture("compute-sanitizer/memcheck_templ.log");
    let f = only(&log, FindingKind::InvalidAccess);
    assert_eq!(
        f.kernel.as_deref(),
        Some("void exhibit::faults::scale_tail<float, (int)4>(T1 *, int, T1)")
    );
    assert_eq!((f.file.as_deref(), f.line), (Some("templ.cu"), Some(11)));
}

#[test]
fn misaligned_and_allocation_errors() {
    for (name, space) in [
        ("memcheck_misaligned_global.log", MemorySpace::Global),
        ("memcheck_misaligned_shared.log", MemorySpace::Shared),
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        let f = only(&log, FindingKind::MisalignedAccess);
        assert_eq!(
            (f.count, f.space, f.size),
            (32, Some(space), Some(4)),
            "{name}"
        );
        assert_eq!(memory(f).access_error, Some(AccessError::Misaligned));
    }
    let log = parse_fixture("compute-sanitizer/memcheck_doublefree_device.log");
    let f = only(&log, FindingKind::AllocationError);
    assert_eq!(
        (f.file.as_deref(), f.line),
        (Some("doublefree.cu"), Some(13))
    );
    assert_eq!(
        f.message,
        "Malloc/Free Error encountered : Device-side double free"
    );
}

#[test]
fn initcheck_and_synccheck() {
    let log = parse_fixture("compute-sanitizer/initcheck_uninit.log");
    assert_eq!(log.tool, Some(Tool::Initcheck));
    let f = only(&log, FindingKind::UninitializedRead);
    assert_eq!(
        (f.count, f.space, f.size),
        (100, Some(MemorySpace::Global), Some(4))
    );
    assert_eq!(
        (log.reported_errors, log.unprinted_errors),
        (Some(256), 156)
    );

    let log = parse_fixture("compute-sanitizer/synccheck_syncdiv_warp.log");
    assert_eq!(log.tool, Some(Tool::Synccheck));
    let f = only(&log, FindingKind::BarrierError);
    assert_eq!((f.count, f.line), (16, Some(12)));
    assert_eq!(f.severity, Severity::Error);

    // A whole warp skipping the barrier is not reported by synccheck on sm_90.
    let log = parse_fixture("compute-sanitizer/synccheck_syncdiv_block.log");
    assert!(log.complete && log.findings.is_empty());
    assert_eq!(log.reported_errors, Some(0));
}

#[test]
fn a_log_cut_before_its_summary_is_incomplete() {
    let text = fixture("compute-sanitizer/memcheck_oob_read.log");
    let cut = text.find("========= ERROR SUMMARY").unwrap();
    let log = parsers::parse(Format::ComputeSanitizer, &text[..cut]);
    assert!(!log.complete);
    assert_eq!(log.reported_errors, None);
    assert_eq!(only(&log, FindingKind::InvalidAccess).count, 8);
    // Cut in the middle of a record: the records read in full are kept; the one cut off is
    // left unparsed, never a site of its own.
    let mid = text.find("by thread (106").unwrap() + 5;
    let log = parsers::parse(Format::ComputeSanitizer, &text[..mid]);
    assert!(!log.complete);
    assert_eq!(only(&log, FindingKind::InvalidAccess).count, 2);
    assert!(
        log.unparsed_examples
            .iter()
            .any(|l| l.contains("Invalid __global__ read")),
        "{:?}",
        log.unparsed_examples
    );
}

#[test]
fn crlf_line_endings_give_the_same_result() {
    for name in [
        "memcheck_oob_write.log",
        "racecheck_race_hazard.log",
        "memcheck_leak.log",
    ] {
        let text = fixture(&format!("compute-sanitizer/{name}"));
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(
            parsers::parse(Format::ComputeSanitizer, &text),
            parsers::parse(Format::ComputeSanitizer, &crlf),
            "{name}"
        );
    }
}

#[test]
fn program_output_between_records_is_counted_not_lost() {
    // The program prints three lines after the sanitizer's records.
    let log = parse_fixture("compute-sanitizer/memcheck_oob_read.log");
    assert_eq!(log.unparsed_lines, 3);
    assert_eq!(log.unparsed_examples[0], "oob: mode read, n 1000, extra 8");
    // The same real program line moved into the middle of a record (as an unbuffered program
    // can print it) changes neither the findings nor the summary.
    let text = fixture("compute-sanitizer/memcheck_oob_read.log");
    let moved: String = text
        .lines()
        .flat_map(|l| {
            if l.contains("by thread (106") {
                vec![l, "oob: mode read, n 1000, extra 8"]
            } else {
                vec![l]
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let again = parsers::parse(Format::ComputeSanitizer, &moved);
    assert_eq!(fingerprints(&again), fingerprints(&log));
    assert_eq!(again.unparsed_lines, 4);
}

#[test]
fn streaming_matches_parsing_in_memory() {
    for entry in std::fs::read_dir(crate::fixtures().join("compute-sanitizer")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let whole = parsers::parse(Format::ComputeSanitizer, &text);
        for capacity in [7, 4096] {
            let reader = BufReader::with_capacity(capacity, text.as_bytes());
            let streamed = parsers::parse_reader(Format::ComputeSanitizer, reader).unwrap();
            assert_eq!(streamed, whole, "{}", path.display());
        }
    }
}

#[test]
fn a_clean_run_is_complete_with_no_findings() {
    for name in [
        "memcheck_clean.log",
        "racecheck_clean.log",
        "initcheck_clean.log",
        "synccheck_clean.log",
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        assert!(log.complete, "{name}");
        assert!(log.findings.is_empty(), "{name}");
        assert_eq!(log.reported_errors, Some(0), "{name}");
    }
    let xml = parse_fixture("compute-sanitizer-xml/memcheck_clean.xml");
    assert!(xml.complete && xml.findings.is_empty());
}

#[test]
fn the_harness_under_memcheck_driver_api_and_rust_frames() {
    let log = parse_fixture("compute-sanitizer/memcheck_harness_wmma_local_q.log");
    let trap = only(&log, FindingKind::Trap);
    assert_eq!(trap.kernel.as_deref(), Some("attention_fwd_f16"));
    assert_eq!(
        (trap.file.as_deref(), trap.line),
        (Some("wmma_local_q.cu"), Some(88))
    );
    assert_eq!(
        trap.facts.function.as_deref(),
        Some(
            "void fw_attention<__half>(const T1 *, const T1 *, const T1 *, T1 *, int, float, int)"
        )
    );
    assert_eq!(
        (log.reported_errors, log.unprinted_errors),
        (Some(16391), 16291)
    );
    // The harness's own verdict line is program output.
    assert!(
        log.unparsed_examples
            .iter()
            .any(|l| l.starts_with("once attention_fwd_f16"))
    );
}

/// Never a false clean: every captured sanitizer log whose own summary counts errors or
/// hazards yields at least one error or warning finding.
#[test]
fn no_fixture_with_a_nonzero_summary_reads_clean() {
    let mut checked = 0;
    for entry in std::fs::read_dir(crate::fixtures().join("compute-sanitizer")).expect("fixtures") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let log = parsers::parse(parsers::Format::ComputeSanitizer, &text);
        let reported = log.reported_errors.unwrap_or(0) + log.reported_warnings.unwrap_or(0);
        if reported == 0 {
            continue;
        }
        checked += 1;
        assert!(
            log.findings.iter().any(|f| matches!(
                f.severity,
                parsers::Severity::Error | parsers::Severity::Warning
            )),
            "{}: the summary reports {reported} but no finding was read",
            path.display()
        );
    }
    assert!(
        checked >= 5,
        "only {checked} fixtures with errors were checked"
    );
}

/// A summary that counts errors whose records are in a form the parser does not know: the
/// errors are reported as unread, quoting the lines, never as clean. (Hand-written lines.)
#[test]
fn errors_the_summary_counts_but_no_record_shows_are_unread_not_clean() {
    let log = "========= COMPUTE-SANITIZER\n\
               ========= Some future record form nobody has seen (hand-written)\n\
               =========\n\
               ========= ERROR SUMMARY: 3 errors\n";
    let parsed = parsers::parse(parsers::Format::ComputeSanitizer, log);
    assert!(parsed.complete);
    let unread: Vec<_> = parsed
        .findings
        .iter()
        .filter(|f| f.kind == parsers::FindingKind::UnreadErrors)
        .collect();
    assert_eq!(unread.len(), 1, "{:#?}", parsed.findings);
    assert_eq!(unread[0].severity, parsers::Severity::Error);
    assert_eq!(unread[0].count, 3);
    assert!(
        unread[0]
            .message
            .contains("reports 3 errors that could not be read")
    );
    assert!(
        unread[0]
            .excerpt
            .iter()
            .any(|l| l.contains("future record form")),
        "{:?}",
        unread[0].excerpt
    );
}

/// A race finding's (file, line) and each other side's (access, line).
type Sides<'a> = ((Option<&'a str>, Option<u32>), Vec<(String, Option<u32>)>);

fn race_sides(f: &parsers::Finding) -> Sides<'_> {
    (
        (f.file.as_deref(), f.line),
        f.related
            .iter()
            .map(|r| {
                let access = r
                    .function
                    .as_deref()
                    .and_then(|s| s.split_whitespace().next())
                    .unwrap_or("")
                    .to_string();
                (access, r.line)
            })
            .collect(),
    )
}

/// `--racecheck-report hazard`, `all` and hazard mode at detect level info, on a race between
/// lanes of one warp (H100, compute-sanitizer 2025.3.1): every record reads "Warning: (Warp
/// Level Programming) Potential RAW hazard ...", folded into one warp-scoped warning finding
/// per site, and the summary's warnings are never reported as unread.
#[test]
fn warp_level_hazard_records_are_read_as_warp_scoped_race_warnings() {
    for (name, warnings, unprinted) in [
        ("racecheck_warp_race_hazard.log", 248, 228),
        ("racecheck_warp_race_all.log", 253, 233),
        ("racecheck_warp_race_info.log", 248, 228),
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        assert_eq!(log.tool, Some(Tool::Racecheck), "{name}");
        assert!(log.complete, "{name}");
        assert_eq!(
            (
                log.reported_errors,
                log.reported_warnings,
                log.unprinted_errors
            ),
            (Some(0), Some(warnings), unprinted),
            "{name}"
        );
        assert!(
            log.findings
                .iter()
                .all(|f| f.kind != FindingKind::UnreadErrors),
            "{name}: {:#?}",
            log.findings
        );
        // Only the program's two result lines are not the tool's.
        assert_eq!(log.unparsed_lines, 2, "{name}: {:?}", log.unparsed_examples);
        let f = only(&log, FindingKind::Race);
        assert_eq!(f.severity, Severity::Warning, "{name}");
        assert_eq!(f.count, 20, "{name}: 20 records printed");
        assert_eq!(race(f).hazards, Some(20), "{name}");
        assert_eq!(race(f).hazard_type, Some(HazardType::Raw), "{name}");
        assert_eq!(f.sync_scope, Some(SyncScope::Warp), "{name}");
        assert_eq!(
            race(f).category.as_deref(),
            Some("Warp Level Programming"),
            "{name}"
        );
        assert_eq!(
            f.kernel.as_deref(),
            Some("warp_sum(const float *, float *)")
        );
        assert_eq!(
            (f.space, f.access),
            (Some(MemorySpace::Shared), Some(Access::Write))
        );
        let (at, others) = race_sides(f);
        assert_eq!(at, (Some("warp_race.cu"), Some(26)), "{name}");
        assert_eq!(others, vec![("read".to_string(), Some(29))], "{name}");
        assert!(
            f.examples
                .iter()
                .all(|e| e.contains("Write Thread (") && e.contains("Read Thread (")),
            "{name}: {:?}",
            f.examples
        );
        assert!(!f.message.contains("0x4"), "{name}: {}", f.message);
    }
}

/// The block-level race in hazard and all mode: "Error: Potential RAW hazard ...", no
/// category, block-scoped errors.
#[test]
fn block_level_hazard_records_are_read_as_block_scoped_race_errors() {
    for (name, errors, unprinted) in [
        ("racecheck_block_race_hazard.log", 256, 236),
        ("racecheck_block_race_all.log", 257, 237),
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        assert_eq!(log.tool, Some(Tool::Racecheck), "{name}");
        assert!(log.complete, "{name}");
        assert_eq!(
            (
                log.reported_errors,
                log.reported_warnings,
                log.unprinted_errors
            ),
            (Some(errors), Some(0), unprinted),
            "{name}"
        );
        assert!(
            log.findings
                .iter()
                .all(|f| f.kind != FindingKind::UnreadErrors),
            "{name}"
        );
        assert_eq!(log.unparsed_lines, 2, "{name}: {:?}", log.unparsed_examples);
        let f = only(&log, FindingKind::Race);
        assert_eq!(f.severity, Severity::Error, "{name}");
        assert_eq!(f.count, 20, "{name}");
        assert_eq!(race(f).hazard_type, Some(HazardType::Raw), "{name}");
        assert_eq!(f.sync_scope, Some(SyncScope::Block), "{name}");
        assert_eq!(race(f).category, None, "{name}");
        let (at, others) = race_sides(f);
        assert_eq!(at, (Some("block_race.cu"), Some(20)), "{name}");
        assert_eq!(others, vec![("read".to_string(), Some(23))], "{name}");
    }
}

/// The default (analysis) report has no category: racecheck prints this program's warp-level
/// races as warnings and the block-level one as an error. An error is a race between warps; a
/// warning says no scope (racecheck gave the same warning to a block total read across the
/// warps of a 64-thread block: `examples/program-model`, `block_reduce_race`, on an H100), so
/// none is recorded. The hazard form and the analysis form of one race name the same sides and
/// scope.
#[test]
fn analysis_records_take_a_scope_only_from_an_error() {
    for name in [
        "racecheck_warp_race.log",
        "racecheck_warp_race_analysis.log",
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        assert_eq!(
            (log.reported_errors, log.reported_warnings),
            (Some(0), Some(5))
        );
        let races: Vec<_> = log
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::Race)
            .collect();
        // Line 26 against 29 (one record), line 30 against 29 (four records, four PCs).
        assert_eq!(races.len(), 2, "{name}: {races:#?}");
        let lines: Vec<_> = races.iter().map(|f| (f.line, f.count)).collect();
        assert_eq!(lines, vec![(Some(26), 1), (Some(30), 4)], "{name}");
        for f in &races {
            assert_eq!(f.severity, Severity::Warning, "{name}");
            assert_eq!(f.sync_scope, None, "{name}");
            assert_eq!(race_sides(f).1, vec![("read".to_string(), Some(29))]);
        }
        assert_eq!(race(races[0]).hazards, Some(128));
        assert_eq!(race(races[1]).hazards, Some(64 + 32 + 16 + 8));
    }
    for name in [
        "racecheck_block_race.log",
        "racecheck_block_race_analysis.log",
        "racecheck_race.log",
    ] {
        let log = parse_fixture(&format!("compute-sanitizer/{name}"));
        let f = only(&log, FindingKind::Race);
        assert_eq!(f.severity, Severity::Error, "{name}");
        assert_eq!(f.sync_scope, Some(SyncScope::Block), "{name}");
    }
    let hazard = parse_fixture("compute-sanitizer/racecheck_block_race_hazard.log");
    let analysis = parse_fixture("compute-sanitizer/racecheck_block_race.log");
    let (h, a) = (
        only(&hazard, FindingKind::Race),
        only(&analysis, FindingKind::Race),
    );
    assert_eq!(race_sides(h), race_sides(a));
    assert_eq!(h.sync_scope, a.sync_scope);
    assert_eq!(race(a).hazards, Some(256));
}

/// The fixed warp reduction (`__syncwarp()` after each step) is clean.
#[test]
fn the_synced_warp_reduction_is_clean() {
    let log = parse_fixture("compute-sanitizer/racecheck_warp_race_fixed.log");
    assert!(log.complete);
    assert!(log.findings.is_empty(), "{:#?}", log.findings);
    assert_eq!(
        (log.reported_errors, log.reported_warnings),
        (Some(0), Some(0))
    );
}

/// synccheck's "Invalid arguments" at `__syncwarp(mask)`: a barrier error located in the
/// toolkit header, with the user's frame (syncwarp_mask.cu:18) below it.
#[test]
fn an_invalid_syncwarp_mask_is_a_barrier_error_with_the_user_frame() {
    let log = parse_fixture("compute-sanitizer/synccheck_syncwarp_mask.log");
    assert_eq!(log.tool, Some(Tool::Synccheck));
    assert_eq!((log.reported_errors, log.unprinted_errors), (Some(32), 12));
    let f = only(&log, FindingKind::BarrierError);
    assert_eq!(f.count, 20);
    assert!(f.message.contains("Invalid arguments"), "{}", f.message);
    assert_eq!(f.kernel.as_deref(), Some("half_sync(int *, unsigned int)"));
    assert_eq!(
        f.facts.function.as_deref(),
        Some("__syncwarp(unsigned int)")
    );
    assert!(
        f.excerpt
            .iter()
            .any(|l| l.contains("Device Frame:") && l.ends_with("syncwarp_mask.cu:18")),
        "{:?}",
        f.excerpt
    );
    assert!(
        log.findings
            .iter()
            .all(|f| f.kind != FindingKind::UnreadErrors)
    );
}

/// A truncated log never holds a finding the whole log does not have: a record cut off at the
/// end is kept as unparsed lines, not read as a site of its own. Checked for every captured
/// sanitizer log, cut after every line of its first 160.
#[test]
fn a_truncated_log_holds_no_finding_the_whole_log_lacks() {
    for entry in std::fs::read_dir(crate::fixtures().join("compute-sanitizer")).expect("fixtures") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let whole = parsers::parse(parsers::Format::ComputeSanitizer, &text);
        let known: std::collections::BTreeSet<&str> = whole
            .findings
            .iter()
            .map(|f| f.fingerprint.as_str())
            .collect();
        let lines: Vec<&str> = text.lines().collect();
        for cut in 1..lines.len().min(160) {
            let head = lines[..cut].join("\n");
            let part = parsers::parse(parsers::Format::ComputeSanitizer, &head);
            for f in &part.findings {
                assert!(
                    known.contains(f.fingerprint.as_str()),
                    "{} cut after {cut} lines: {:?} at {:?}:{:?} is not in the whole log",
                    path.display(),
                    f.kind,
                    f.file,
                    f.line
                );
            }
        }
    }
}

/// A program that prints without a trailing newline puts the tool's next line after its own
/// text: the record that starts mid-line is read like any other, so the records read add up to
/// the tool's count, and the program's text stays the program's.
#[test]
fn a_record_glued_to_the_programs_output_is_still_read() {
    let log = parse_fixture("compute-sanitizer/memcheck_glued_tail_write.log");
    assert!(log.complete);
    assert_eq!(log.reported_errors, Some(32));
    let records: u64 = log.findings.iter().map(|f| f.count).sum();
    assert_eq!(records, 32, "{:#?}", log.findings);
    let write = log
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::InvalidAccess)
        .expect("the out-of-bounds write");
    assert_eq!(write.count, 31);
    assert_eq!(
        (write.file.as_deref(), write.line),
        (Some("tail_write.cu"), Some(15))
    );
    // The first record (thread 193, 1 byte after the end) is among them.
    assert!(
        write
            .threads
            .iter()
            .any(|t| t.thread == [193, 0, 0] && t.block == [4799, 0, 0]),
        "{:?}",
        write.threads
    );
    assert!(
        log.unparsed_examples
            .iter()
            .any(|l| l.starts_with("scaling 1228737 elements")),
        "{:?}",
        log.unparsed_examples
    );
}

/// The summary line glued to a program's last line without a newline still ends the log: clean,
/// complete, not inconclusive.
#[test]
fn a_summary_glued_to_the_programs_last_line_still_completes_the_log() {
    let log = parse_fixture("compute-sanitizer/memcheck_glued_clean.log");
    assert!(log.complete, "{log:#?}");
    assert_eq!(log.reported_errors, Some(0));
    assert!(log.findings.is_empty(), "{:#?}", log.findings);
}

/// The program's own failure line and the records keep their order: the FAIL line was printed
/// (flushed) before the later kernel's out-of-bounds write.
#[test]
fn the_programs_failure_line_is_placed_among_the_records() {
    let log = parse_fixture("compute-sanitizer/memcheck_after_failure.log");
    let failure = log
        .failure_output
        .as_ref()
        .expect("the program's FAIL line");
    assert!(
        failure.text.starts_with("FAIL scale: out[1] = 3.000000"),
        "{failure:?}"
    );
    assert_eq!(failure.index, 0);
    let write = only(&log, FindingKind::InvalidAccess);
    // One line of the program's (the FAIL line) came before the write's first record.
    assert_eq!(write.output_before, Some(1));
    // A log whose program printed nothing before its records: every record comes first.
    let log = parse_fixture("compute-sanitizer/memcheck_oob_write.log");
    assert!(
        log.findings
            .iter()
            .all(|f| f.output_before == Some(0) || f.kind == FindingKind::UnreadErrors),
        "{:#?}",
        log.findings
    );
}

/// initcheck's record of a host API call that read device memory no kernel wrote
/// (`records.cu hostread`: a kernel fills 31 of 32 floats, `cudaMemcpy` copies all 32 back):
/// one uninitialised global read of 128 bytes by the host, with its host frame; no error is
/// left unread.
#[test]
fn a_host_api_access_to_unwritten_memory_is_an_uninitialised_read() {
    let log = parse_fixture("compute-sanitizer/initcheck_host_read.log");
    assert_eq!(log.tool, Some(parsers::Tool::Initcheck));
    assert_eq!(log.reported_errors, Some(1));
    assert!(
        !log.findings
            .iter()
            .any(|f| f.kind == FindingKind::UnreadErrors),
        "{:#?}",
        log.findings
    );
    let [f] = log.findings.as_slice() else {
        panic!("{:#?}", log.findings);
    };
    assert_eq!(f.kind, FindingKind::UninitializedRead);
    assert_eq!(f.size, Some(128));
    assert_eq!(f.access, Some(parsers::Access::Read));
    assert!(
        f.message.starts_with("Host API memory access error"),
        "{f:#?}"
    );
    assert_eq!(
        f.host_frames.first().and_then(|h| h.function.as_deref()),
        Some("main")
    );
}

/// A failed device-side `assert` under memcheck (`records.cu assert`, 32 threads): the runtime
/// prints one assertion line per thread before the tool's `Warp assert` record, which names only
/// `__assertfail`. The record takes the assertion's place and kernel, and the thread lines are
/// its examples; the host's `cudaErrorAssert` is read too.
#[test]
fn a_device_assert_is_placed_at_the_assertion_the_program_printed() {
    let log = parse_fixture("compute-sanitizer/memcheck_device_assert.log");
    let assert = log
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::DeviceException)
        .unwrap_or_else(|| panic!("{:#?}", log.findings));
    assert_eq!(assert.file.as_deref(), Some("records.cu"));
    assert_eq!(assert.line, Some(30));
    assert_eq!(assert.count, 32);
    assert!(
        assert
            .kernel
            .as_deref()
            .is_some_and(|k| k.contains("checked")),
        "{assert:#?}"
    );
    assert!(
        log.findings
            .iter()
            .any(|f| f.kind == FindingKind::HostApiError && f.message.contains("cudaErrorAssert")),
        "{:#?}",
        log.findings
    );
}

/// racecheck's severity is not the racing threads' scope. One kernel's unsynchronised
/// reduction (`records.cu lanes N`, every step's read and write at line 23) races within warp
/// 0 at 32 threads (a Warning) and across warps at 128 (an Error): the Error says its scope
/// (block), the Warning none, since a warning was also seen across warps (`program-model`'s
/// `block_reduce_race` at 64 threads, a value one warp wrote read by the other).
#[test]
fn racecheck_severity_alone_does_not_give_a_warnings_scope() {
    let within = parse_fixture("compute-sanitizer/racecheck_lanes_32.log");
    let across = parse_fixture("compute-sanitizer/racecheck_lanes_128.log");
    let race = |log: &parsers::ParsedLog| {
        log.findings
            .iter()
            .find(|f| f.kind == FindingKind::Race)
            .cloned()
            .unwrap_or_else(|| panic!("{:#?}", log.findings))
    };
    let (w, e) = (race(&within), race(&across));
    assert_eq!((w.severity, w.line), (Severity::Warning, Some(23)));
    assert_eq!((e.severity, e.line), (Severity::Error, Some(23)));
    assert_eq!(w.sync_scope, None);
    assert_eq!(e.sync_scope, Some(parsers::SyncScope::Block));
}

/// Every record form in the captured compute-sanitizer fixtures (memcheck, racecheck,
/// initcheck and synccheck, text and XML: accesses, hardware exceptions, device-side asserts,
/// host API access errors, CUDA API errors, leaks on the heap and the device heap, malloc and
/// free errors, barrier errors, hazards in both report forms, summaries) is read as a record:
/// none is left as an error that could not be read.
#[test]
fn every_captured_record_form_is_read() {
    for dir in ["compute-sanitizer", "compute-sanitizer-xml"] {
        for entry in std::fs::read_dir(crate::fixtures().join(dir)).expect("fixtures") {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".meta.json") {
                continue;
            }
            let parsed = crate::parse_fixture(&format!("{dir}/{name}"));
            let unread: Vec<_> = parsed
                .findings
                .iter()
                .filter(|f| f.kind == parsers::FindingKind::UnreadErrors)
                .map(|f| f.message.clone())
                .collect();
            assert!(unread.is_empty(), "{dir}/{name}: {unread:?}");
        }
    }
}

/// A write to the shared memory of a block past the cluster (`programs/records.cu dsmem`, on an
/// H200), in text and XML: distributed shared memory, with the block it went to.
#[test]
fn a_distributed_shared_memory_access_names_the_clusters_block() {
    for name in [
        "compute-sanitizer/memcheck_remote_shared.log",
        "compute-sanitizer-xml/memcheck_remote_shared.xml",
    ] {
        let log = crate::parse_fixture(name);
        let f = log
            .findings
            .iter()
            .find(|f| f.kind == parsers::FindingKind::InvalidAccess)
            .unwrap_or_else(|| panic!("{name}: {:#?}", log.findings));
        assert_eq!(f.space, Some(MemorySpace::RemoteShared), "{name}");
        assert_eq!(f.line, Some(156), "{name}");
        let memory = f.facts.memory.as_deref().expect("memory facts");
        assert_eq!(memory.cta_rank, Some(2), "{name}");
    }
}

/// A program's printed values beside the values it expected, every one of them
/// (`programs/partial_warp.cu` on an H200: a block sum that counts its warps as
/// `blockDim.x / 32`).
#[test]
fn every_value_a_program_printed_beside_its_expectation_is_read() {
    let text = crate::fixture("program-output/partial_warp.stdout.log");
    let pairs = parsers::program::got_expected_pairs(&text);
    assert_eq!(
        pairs,
        [
            (96.0, 96.0),
            (96.0, 100.0),
            (192.0, 200.0),
            (224.0, 250.0),
            (256.0, 256.0)
        ]
    );
    // A line with two values and their expectations gives both.
    let two =
        parsers::program::got_expected_pairs("N=180: sum 160, expected 180; max 160, expected 180");
    assert_eq!(two, [(160.0, 180.0), (160.0, 180.0)]);
}
