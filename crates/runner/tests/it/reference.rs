//! The reference runs committed under `artifacts/reference/` (made on a GPU machine by
//! `runner pipeline.yaml` and `runner faults.yaml`) render with `runner report` on a machine with
//! no GPU and no CUDA tools, and their diagnoses are the ones the kernel and its planted faults
//! call for.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository root (this crate lives in `crates/runner`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed run whose manifest names `pipeline`.
fn reference_run(pipeline: &str) -> PathBuf {
    let dir = repo().join("artifacts/reference");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("artifacts/reference exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read(p.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|m| m["pipeline"] == pipeline)
        })
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no reference run of {pipeline}"))
}

fn report(run: &Path, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["report", "--format", format])
        .arg(run)
        .current_dir(repo())
        .output()
        .expect("run the runner");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the report is UTF-8")
}

/// Rule -> configs it was diagnosed on, for root causes (errors).
fn root_causes(json: &Value) -> Vec<(String, Vec<String>)> {
    json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .map(|d| {
            let configs = d["configs"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (d["rule"].as_str().unwrap_or_default().to_string(), configs)
        })
        .collect()
}

#[test]
fn the_reference_run_of_the_kernel_is_clean_with_every_stage_run() {
    let run = reference_run("pipeline.yaml");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    assert!(root_causes(&json).is_empty());
    // Every stage ran on the GPU: nothing skipped, failed or inconclusive.
    for unit in json["coverage"].as_array().unwrap() {
        assert_eq!(unit["status"], "passed", "{unit}");
    }
    for kind in [
        "compile",
        "sass",
        "memcheck",
        "racecheck",
        "initcheck",
        "synccheck",
        "check",
        "stress",
        "bench",
        "baseline",
        "profile",
    ] {
        assert!(
            json["coverage"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u["kind"] == kind),
            "no {kind} stage in the reference run"
        );
    }
    insta::assert_snapshot!("reference_pipeline", report(&run, "md"));
}

#[test]
fn the_reference_run_of_the_faults_names_each_planted_root_cause() {
    let run = reference_run("faults.yaml");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "failing", "{}", json["verdict"]);
    let causes = root_causes(&json);
    let diagnosed = |config: &str, rule: &str| {
        causes
            .iter()
            .any(|(r, configs)| r == rule && configs.iter().any(|c| c == config))
    };
    for (config, rule) in [
        ("wmma_local_q", "wmma-local-memory"),
        ("missing_kv_barrier", "shared-memory-race"),
        ("launch_counter_ring", "repeated-launch-failure"),
        ("uninit_row_sum", "uninitialized-read"),
        ("nan_masked_rows", "wrong-output"),
        ("tail_off_by_one", "wrong-output"),
    ] {
        assert!(diagnosed(config, rule), "{config}: no {rule} in {causes:?}");
    }
    assert!(
        !causes
            .iter()
            .any(|(_, configs)| configs.iter().any(|c| c == "clean")),
        "a root cause on the clean kernel: {causes:?}"
    );
    insta::assert_snapshot!("reference_faults", report(&run, "md"));
}
