//! `runner explain` on the raw logs of the committed faults run (real tool output from the GPU
//! machine, some gzip-compressed by `runner pack`) names each planted root cause, and calls the
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
    Command::new(env!("CARGO_BIN_EXE_runner"))
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
            "Shared-memory race: missing barrier between line 120 and line 136",
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
        let out = Command::new(env!("CARGO_BIN_EXE_runner"))
            .args(["explain", "--as", format])
            .arg(&file)
            .output()
            .expect("run the runner");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{format}: {text}");
        assert!(text.contains("Inconclusive"), "{format}: {text}");
    }
}
