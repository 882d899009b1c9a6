//! `exhibit explain` on the raw logs of the committed faults run (real tool output from the GPU
//! machine, some gzip-compressed by `exhibit pack`) names each planted root cause, and calls the
//! clean kernel's logs clean.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The committed run of faults.yaml.
fn faults_run() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../artifacts/reference");
    std::fs::read_dir(&dir)
        .expect("artifacts/reference exists")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::read_to_string(p.join("manifest.json"))
                .is_ok_and(|m| m.contains("\"pipeline\": \"faults.yaml\""))
        })
        .expect("a reference run of faults.yaml")
}

fn explain(logs: &[&str]) -> Output {
    let run = faults_run();
    Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("explain")
        .args(logs.iter().map(|l| run.join(l)))
        .output()
        .expect("run the runner")
}

/// Exit code and the first root cause's heading.
fn first_cause(logs: &[&str]) -> (Option<i32>, String) {
    let out = explain(logs);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let heading = text
        .lines()
        .find(|l| l.starts_with("## 1. "))
        .unwrap_or_default()
        .to_string();
    (out.status.code(), heading)
}

#[test]
fn each_planted_fault_is_named_from_its_raw_logs() {
    for (logs, expected) in [
        (
            &[
                "compile/wmma_local_q/sm_90/ptxas.log",
                "memcheck/wmma_local_q/sm_90/seed-f16/memcheck.log",
                "sass/wmma_local_q/sm_90/sass.log.gz",
            ][..],
            "Tensor-core fragment loaded from thread-local memory",
        ),
        (
            &["racecheck/missing_kv_barrier/sm_90/seed-f16/racecheck.log"][..],
            // Both read sites of the one missing barrier (lines 136 and 142) are one root cause.
            "Shared-memory race: missing barrier between the write at `attention.cu:120` and 2 sites that read it",
        ),
        (
            &["initcheck/uninit_row_sum/sm_90/seed-f16/initcheck.log"][..],
            "Read of uninitialised global memory",
        ),
        (
            &["stress/launch_counter_ring/sm_90/seed-f16/harness.json"][..],
            "Fails only after repeated launches (first failure at launch 6 of 20)",
        ),
        (
            &["check/nan_masked_rows/sm_90/tail-f16-causal/harness.json"][..],
            "NaN outputs",
        ),
        (
            &[
                "check/tail_off_by_one/sm_90/tail-f16/harness.json",
                "check/tail_off_by_one/sm_90/seed-f16/harness.json",
            ][..],
            "NaN outputs when S is not a multiple of",
        ),
    ] {
        let (code, heading) = first_cause(logs);
        assert_eq!(code, Some(1), "{logs:?}");
        assert!(
            heading.contains(expected),
            "{logs:?}: expected {expected:?}, got {heading:?}"
        );
    }
}

#[test]
fn the_clean_kernels_logs_are_clean() {
    let out = explain(&[
        "memcheck/clean/sm_90/seed-f16/memcheck.log",
        "racecheck/clean/sm_90/seed-f16/racecheck.log",
        "check/clean/sm_90/seed-f16/harness.json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `explain --as FORMAT` on a file that holds nothing of that format is inconclusive (exit 1),
/// never clean. (The file's two lines are hand-written.)
#[test]
fn a_foreign_file_read_as_any_format_is_never_clean() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello\nthis is not a tool's log (hand-written)\n").expect("write");
    for format in [
        "compute-sanitizer",
        "ptxas",
        "sass",
        "ncu-csv",
        "harness",
        "pytest-benchmark",
        "google-benchmark",
        "program-results",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .args(["explain", "--as", format])
            .arg(&file)
            .output()
            .expect("run the runner");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{format}: {text}");
        assert!(text.contains("Inconclusive"), "{format}: {text}");
    }
}

/// pytest's JUnit XML of a run whose tests all passed: its four passing cases of
/// `crates/parsers/fixtures/junit/pytest.xml`, in the same shape.
const PYTEST_ALL_PASSED: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="4" time="0.031" timestamp="2026-11-24T19:15:19.155500+00:00" hostname="vm"><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[1]" time="0.000" /><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[7]" time="0.000" /><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[64]" time="0.000" /><testcase classname="tests.test_softmax" name="test_tail_tile[64]" time="0.000" /></testsuite></testsuites>
"#;

/// The committed pytest-triton run's memcheck stage: pytest's JUnit XML, one test per file.
fn pytest_triton_memcheck(file: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/pytest-triton/reference/artifacts");
    std::fs::read_dir(&dir)
        .expect("examples/pytest-triton/reference/artifacts exists")
        .flatten()
        .map(|e| e.path().join("memcheck/default/sm_90").join(file))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{file} in a reference run under {}", dir.display()))
}

fn explain_file(file: &Path, format: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["explain", "--format", format])
        .arg(file)
        .output()
        .expect("run the runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// pytest's rewritten `assert got == expected` (`programs/test_assert_rewrite.py`, on an H200):
/// the report names the first element that differs, its zero against the expected value, and
/// the fix for an element no thread wrote.
#[test]
fn a_rewritten_assert_names_the_first_wrong_element() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures/junit/pytest_rewrite.xml");
    let (code, text) = explain_file(&file, "md");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("The first element that differs is at index `37`: 0 against 18.5"),
        "{text}"
    );
    assert!(text.contains("an element no thread wrote"), "{text}");
}

/// A JUnit file whose tests all passed explains as clean, with the count (exit 0); one whose
/// every test was skipped ran nothing, and is not clean.
#[test]
fn a_junit_file_whose_tests_all_passed_is_clean_with_the_count() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("pytest.xml");
    std::fs::write(&file, PYTEST_ALL_PASSED).expect("write");
    let (code, text) = explain_file(&file, "md");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("**Verdict:** ✅ Clean: 4 tests passed;"),
        "{text}"
    );
    assert!(text.contains("| check | passed | 4/4 passed |"), "{text}");
    let (code, text) = explain_file(&file, "json");
    assert_eq!(code, Some(0), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["clean"], true, "{json:#}");
    assert!(
        json["verdict"]["line"]
            .as_str()
            .is_some_and(|l| l.starts_with("Clean: 4 tests passed;")),
        "{json:#}"
    );

    // pytest's own file of one passed test, as the reference run kept it.
    let (code, text) = explain_file(&pytest_triton_memcheck("results-0.json"), "md");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Clean: 1 test passed;"), "{text}");

    // Its one test skipped (`needs sm_100`): nothing ran.
    let (code, text) = explain_file(&pytest_triton_memcheck("results-4.json"), "md");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("**Verdict:** ❔ Inconclusive"), "{text}");
    assert!(
        text.contains("| check | inconclusive | every test skipped |"),
        "{text}"
    );
}

/// `exhibit explain` on real captures of programs written for each failure class (see
/// `crates/parsers/fixtures/programs/issue12/`): the root cause, where it points, and advice
/// that fits the class.
#[test]
fn each_failure_class_of_the_captured_programs_is_named() {
    struct Case {
        log: &'static str,
        rule: &'static str,
        location: Option<&'static str>,
        title: &'static str,
        fix: &'static str,
        /// Words the diagnosis must not use.
        never: &'static [&'static str],
    }
    let cases = [
        Case {
            log: "memcheck_sticky.log",
            rule: "out-of-bounds",
            location: Some("sticky.cu:23"),
            title: "through a wild or null pointer",
            fix: "Trace the pointer",
            never: &["launch dimensions"],
        },
        // `programs/records.cu dsmem` on an H200: block 0 of a cluster of 2 writes the shared
        // memory of rank 2.
        Case {
            log: "memcheck_remote_shared.log",
            rule: "out-of-bounds",
            location: Some("records.cu:156"),
            title: "shared memory of block 2 of the cluster",
            fix: "cluster.num_blocks()",
            never: &["outside any allocation", "global"],
        },
        // `programs/records.cu atomicoob` on an H200: an atomicAdd one slot past the end, placed
        // at the user's call, not the toolkit's atomicAdd.
        Case {
            log: "memcheck_atomic_oob.log",
            rule: "out-of-bounds",
            location: Some("records.cu:126"),
            title: "Off-by-one",
            fix: "`<`, not `<=`",
            never: &["device_atomic_functions"],
        },
        // The corpus entry `nemo-specaug-large-batch` on an H200: cuda-python's
        // `cuGetProcAddress_v2` lookups fill memcheck's print limit of 20; 15,668 errors it
        // counted are not printed. Not read as clean, nor as the program's API error.
        Case {
            log: "memcheck_entry_point_probes.log",
            rule: "host-api-error",
            location: None,
            title: "memcheck counted 15,668 errors it did not print",
            fix: "larger print limit",
            never: &["rejected its arguments", "Check the arguments"],
        },
        Case {
            log: "memcheck_malloc_fail_huge.log",
            rule: "host-api-error",
            location: None,
            title: "Device memory allocation failed: `cudaMalloc` returned cudaErrorMemoryAllocation",
            fix: "cudaMemGetInfo",
            never: &["launch dimensions", "shared-memory attribute"],
        },
        Case {
            log: "memcheck_malloc_fail_probe.log",
            rule: "host-api-error",
            location: None,
            title: "Device memory allocation failed",
            fix: "suppressions",
            never: &["launch dimensions"],
        },
        Case {
            log: "memcheck_triton_oob.log",
            rule: "out-of-bounds",
            location: Some("triton_oob.py:38"),
            title: "just past the end",
            fix: "`mask=`",
            never: &["seq_len", "tile", "BLOCK_N"],
        },
        Case {
            log: "memcheck_invalid_config.log",
            rule: "launch-rejected",
            location: None,
            title: "was rejected: invalid argument",
            fix: "Launch at most 1024 threads per block",
            never: &["Every CUDA call after the fault"],
        },
        Case {
            log: "memcheck_invalid_value.log",
            rule: "host-api-error",
            location: None,
            title: "`cudaMemcpy` rejected its arguments",
            fix: "the byte count against both buffers",
            never: &["launch configuration"],
        },
        Case {
            log: "initcheck_partial.log",
            rule: "uninitialized-read",
            location: Some("initcheck_partial.cu:17"),
            title: "partly initialised",
            fix: "take bytes, not elements",
            never: &["accumulators"],
        },
        Case {
            log: "memcheck_oob_after.log",
            rule: "out-of-bounds",
            location: Some("oob_after.cu:23"),
            title: "past the end of the nearest allocation",
            fix: "which buffer",
            never: &["off-by-one", "seq_len"],
        },
    ];
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures/compute-sanitizer");
    for case in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .args(["explain", "--format", "json"])
            .arg(fixtures.join(case.log))
            .output()
            .expect("run the runner");
        assert_eq!(out.status.code(), Some(1), "{}", case.log);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let first = &json["diagnoses"][0];
        assert_eq!(first["rule"], case.rule, "{}: {first:#}", case.log);
        let location = first["location"]
            .as_object()
            .map(|l| format!("{}:{}", l["file"].as_str().unwrap_or(""), l["line"]));
        assert_eq!(location.as_deref(), case.location, "{}", case.log);
        let title = first["title"].as_str().unwrap_or_default();
        let fix = crate::util::prose(first, "help");
        assert!(title.contains(case.title), "{}: {title}", case.log);
        assert!(fix.contains(case.fix), "{}: {fix}", case.log);
        let text = format!("{title} {} {fix}", crate::util::prose(first, "notes"));
        for word in case.never {
            assert!(!text.contains(word), "{}: `{word}` in {text}", case.log);
        }
    }
    // A Triton kernel's launch is traced to the user's line past Triton's own frames
    // (driver.py, jit.py).
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["explain", "--format", "json"])
        .arg(fixtures.join("memcheck_triton_oob.log"))
        .output()
        .expect("run the runner");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        json["diagnoses"][0]["call_site"],
        serde_json::json!({"file": "triton_oob.py", "line": 54})
    );
    // The sticky cascade is said, as a consequence of the fault.
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["explain"])
        .arg(fixtures.join("memcheck_sticky.log"))
        .output()
        .expect("run the runner");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "Every CUDA call after the fault fails with cudaErrorLaunchFailure: `cudaMemcpy`"
        ),
        "{text}"
    );
}

/// Nsight Compute's exports of one slow kernel per class (`examples/slow-kernels`, captured on
/// an H100): the details page and the source page name the cause at the line that holds the
/// cost, top-ranked, and the verdict says slow; the fast version of the same kernels is clean.
#[test]
fn each_slow_kernel_is_named_by_its_cause_at_its_line() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures");
    let explain = |class: &str| -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .args(["explain", "--format", "json"])
            .arg(fixtures.join(format!("ncu-csv/slow_{class}_details.log")))
            .arg(fixtures.join(format!("ncu-source/slow_{class}_source.log")))
            .output()
            .expect("run the runner");
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    for (class, title, line) in [
        (
            "bank",
            "Shared-memory bank conflicts: 32-way on average",
            Some(45u64),
        ),
        (
            "uncoalesced",
            "Uncoalesced global access: 4.0 of 32 bytes used per sector",
            Some(38),
        ),
        (
            "local",
            "Uncoalesced global access: 4.0 of 32 bytes used per sector",
            Some(56),
        ),
        ("few_blocks", "Too few blocks: 4", Some(67)),
        (
            "smem_occ",
            "Occupancy limited by shared memory: 2 blocks per SM",
            Some(90),
        ),
        // A chain of dependent loads with 160 accumulators live: latency-bound at one block.
        (
            "regs",
            "Occupancy limited by registers: 1 block per SM",
            Some(114),
        ),
        (
            "small_blocks",
            "Occupancy limited by the blocks an SM can hold: 32 blocks per SM",
            Some(154),
        ),
        // No ncu rule names it: the instruction mix on the source page does, at the loop, and
        // the loop's uncoalesced loads are part of it.
        (
            "no_tensor",
            "No tensor cores: half-precision products on scalar FMA units",
            Some(131),
        ),
    ] {
        let json = explain(class);
        assert_eq!(
            json["verdict"]["kind"], "slow",
            "{class}: {}",
            json["verdict"]
        );
        let top = &json["diagnoses"][0];
        assert_eq!(top["rule"], "slow-kernel", "{class}: {top:#}");
        assert_eq!(top["title"], title, "{class}");
        assert_eq!(top["location"]["line"].as_u64(), line, "{class}: {top:#}");
    }
    // ncu's generic suggestions stay, collapsed, under one note with their estimates.
    let json = explain("bank");
    let minor = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .find(|d| d["title"] == "Other suggestions from Nsight Compute for `transpose`")
        .unwrap_or_else(|| panic!("no collapsed list: {json:#}"));
    assert_eq!(minor["level"], "note");
    assert!(
        Some(crate::util::prose(minor, "notes"))
            .as_deref()
            .is_some_and(|e| e.contains("`HighPipeUtilization` (98% of its section)")),
        "{minor:#}"
    );
    let no_tensor = explain("no_tensor");
    let cause = &no_tensor["diagnoses"][0];
    // ncu's cache-pattern rule says "12.0 of 32 bytes", but the source page counts no excess
    // sector on any line: no second cause from it.
    assert!(
        Some(crate::util::prose(cause, "notes"))
            .as_deref()
            .is_some_and(|e| !e.contains("uncoalesced global access")),
        "{cause:#}"
    );
    assert_eq!(
        no_tensor["verdict"]["line"]
            .as_str()
            .map(|l| l.contains("1 cause")),
        Some(true)
    );
    // The fast version of the matrix product: nothing to say.
    let json = explain("none");
    assert_eq!(
        json["verdict"]["kind"], "clean",
        "none: {}",
        json["verdict"]
    );
    // `poly` with 4 accumulators: no ncu rule names a cause, but its loads form dependent
    // chains (the next address waits on the loaded value), 4 per thread: warps wait on global
    // loads with DRAM at 37.5% (the L2 at 39.9%, the roof that binds) and the SMs at 12%. Far
    // below the bandwidth it could reach.
    let poly = explain("none_poly");
    assert_eq!(poly["verdict"]["kind"], "slow", "{}", poly["verdict"]);
    assert_eq!(
        poly["diagnoses"][0]["title"],
        "Latency-bound: too few bytes in flight at 39.9% of L2 bandwidth (DRAM 37.5%)"
    );
    // 168 registers held the compute-bound `poly` of an earlier slow.cu to one block per SM,
    // but ncu measured it at 94% of the SM's throughput: its occupancy costs nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["explain", "--format", "json"])
        .arg(fixtures.join("ncu-csv/slow_regs_compute_bound_details.log"))
        .output()
        .expect("run the runner");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    let occupancy = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .find(|d| d["kernel"] == "poly" && d["rule"] == "slow-kernel");
    assert!(
        occupancy.is_none_or(|d| d["level"] == "note"),
        "{occupancy:#?}"
    );
}

/// memcheck's device-side errors that no richer rule reads (a stack overflow, a trap, a free of
/// a pointer device `malloc` did not return; `records.cu` on an H200) are each the one root
/// cause of their log: the sticky `cudaErrorLaunchFailure` every later call returns follows
/// from them, whichever order the log's records are read in.
#[test]
fn a_device_side_error_is_the_one_root_cause_and_the_sticky_error_follows() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures/compute-sanitizer");
    for (log, title) in [
        (
            "memcheck_stack_overflow.log",
            "## 1. Device exception: Stack overflow",
        ),
        ("memcheck_trap.log", "## 1. Device-side trap"),
        (
            "memcheck_bad_free.log",
            "## 1. Allocation error: Malloc/Free Error encountered : Invalid pointer to device-side free",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .arg("explain")
            .arg(fixtures.join(log))
            .output()
            .expect("run the runner");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{log}: {text}");
        assert!(text.contains("1 root cause (1 error)"), "{log}: {text}");
        assert!(text.contains(title), "{log}: {text}");
        assert!(!text.contains("## 2. "), "{log}: {text}");
    }
}

/// memcheck's "N bytes after" counts the first byte past the end as 1, checked on an H200
/// against reads at a known overshoot (`programs/past_end.cu`, a 16-float buffer): element 16
/// reads as "1 bytes after", element 17 as "5 bytes after". The report says the bytes past the
/// end counting that first byte as 0, everywhere: element 17 is 4 B past the end, never 5.
#[test]
fn bytes_past_the_end_count_the_first_byte_past_it_as_zero() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures/compute-sanitizer");
    let text = |log: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .arg("explain")
            .arg(fixtures.join(log))
            .output()
            .expect("run the runner");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = text("memcheck_past_end_index_16.log");
    assert!(first.contains("\"1 bytes after\""), "{first}");
    assert!(
        first.contains("element 16 of a 16-element buffer: one past the last"),
        "{first}"
    );
    let second = text("memcheck_past_end_index_17.log");
    assert!(second.contains("\"5 bytes after\""), "{second}");
    assert!(
        second.contains("## 1. Out-of-bounds global read 4 B past the end"),
        "{second}"
    );
    assert!(
        second.contains("element 17 of a 16-element buffer"),
        "{second}"
    );
    assert!(!second.contains("5 B past the end"), "{second}");
}

/// A CMake build gives nvcc absolute paths, and compute-sanitizer's XML names the source by
/// one (`programs/past_end.cu` built as `$(pwd)/src/past.cu` on an H200). Run where the user's
/// `src/past.cu` is, `explain` names it as the user does, in Markdown and in SARIF's location,
/// never as `<abs>/past.cu` with no location.
#[test]
fn a_source_named_by_an_absolute_path_is_the_users_file() {
    let project = crate::util::Project::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures");
    project.write(
        "src/past.cu",
        &std::fs::read_to_string(fixtures.join("programs/past_end.cu")).expect("the program"),
    );
    std::fs::copy(
        fixtures.join("compute-sanitizer-xml/memcheck_absolute_path.xml"),
        project.root.join("memcheck.xml"),
    )
    .expect("copy the log");
    let explain = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .args(["explain", "--format", format, "memcheck.xml"])
            .current_dir(&project.root)
            .output()
            .expect("run the runner");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let md = explain("md");
    assert!(md.contains("`src/past.cu:4`"), "{md}");
    assert!(!md.contains("<abs>"), "{md}");
    let sarif: serde_json::Value = serde_json::from_str(&explain("sarif")).expect("SARIF");
    let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"];
    assert_eq!(uri, "src/past.cu", "{sarif:#}");
}
