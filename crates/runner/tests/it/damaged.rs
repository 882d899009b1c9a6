//! `exhibit report` and `exhibit diff` on a damaged run directory: a log the manifest lists that is missing, a
//! directory, a FIFO, a symbolic link or a path outside the run directory is reported as
//! evidence missing (never rendered as clean, never blocking, never read from outside), and the
//! exit code says infrastructure (3).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A copy of the committed clean reference run (`pipeline.yaml` on 4 configs).
pub fn clean_run_copy() -> (tempfile::TempDir, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reference = repo.join("artifacts/reference");
    let run = std::fs::read_dir(&reference)
        .expect("artifacts/reference")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::read(p.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|m| m["pipeline"] == "pipeline.yaml")
        })
        .expect("the clean reference run");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let to = dir.path().join(run.file_name().expect("a name"));
    for entry in walk(&run) {
        let target = to.join(entry.strip_prefix(&run).expect("inside"));
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        std::fs::copy(&entry, &target).expect("copy");
    }
    (dir, to)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn report(run: &Path) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--format", "json"])
        .arg(run)
        .output()
        .expect("run the runner");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, json)
}

/// The first memcheck log the manifest lists, relative to the run directory.
fn a_memcheck_log(run: &Path) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["kind"] == "memcheck" && s["status"] == "passed")
        .flat_map(|s| s["logs"].as_array().cloned().unwrap_or_default())
        .find_map(|l| {
            (l["format"] == "compute-sanitizer")
                .then(|| l["path"].as_str().map(str::to_string))
                .flatten()
        })
        .expect("a memcheck log")
}

fn assert_missing(out: &Output, json: &Value, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(json["verdict"]["kind"], "clean", "{:#}", json["verdict"]);
    let unconcluded = json["verdict"]["unconcluded"].to_string();
    assert!(
        unconcluded.contains("evidence missing") && unconcluded.contains(what),
        "{unconcluded}"
    );
}

#[test]
fn the_untouched_copy_renders_clean() {
    let (_dir, run) = clean_run_copy();
    let (out, json) = report(&run);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json["verdict"]["kind"], "clean");
}

#[test]
fn a_deleted_log_is_evidence_missing() {
    let (_dir, run) = clean_run_copy();
    let log = a_memcheck_log(&run);
    std::fs::remove_file(run.join(&log)).expect("delete the log");
    let (out, json) = report(&run);
    assert_missing(&out, &json, &format!("{log}: missing"));
}

#[test]
fn a_log_that_is_a_directory_a_fifo_or_a_link_is_evidence_missing() {
    for (damage, why) in [
        ("directory", "a directory"),
        ("fifo", "not a regular file"),
        ("symlink", "a symbolic link"),
    ] {
        let (_dir, run) = clean_run_copy();
        let log = a_memcheck_log(&run);
        let path = run.join(&log);
        std::fs::remove_file(&path).expect("delete the log");
        match damage {
            "directory" => std::fs::create_dir(&path).expect("mkdir"),
            "fifo" => {
                let made = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
                assert!(made.success());
            }
            _ => std::os::unix::fs::symlink("/etc/hostname", &path).expect("symlink"),
        }
        // A FIFO must not block: the report answers at once.
        let (out, json) = report(&run);
        assert_missing(&out, &json, why);
    }
}

#[test]
fn a_manifest_path_outside_the_run_directory_is_never_read() {
    let (_dir, run) = clean_run_copy();
    let log = a_memcheck_log(&run);
    let manifest = std::fs::read_to_string(run.join("manifest.json")).expect("manifest");
    let hostile = manifest.replace(&format!("\"{log}\""), "\"../../../etc/passwd\"");
    assert_ne!(hostile, manifest);
    std::fs::write(run.join("manifest.json"), hostile).expect("write");
    let (out, json) = report(&run);
    assert_missing(
        &out,
        &json,
        "../../../etc/passwd: outside the run directory",
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("root:"));
}

#[test]
fn diff_against_a_damaged_run_is_incomplete() {
    let (_a_dir, a) = clean_run_copy();
    let (_b_dir, b) = clean_run_copy();
    let log = a_memcheck_log(&b);
    std::fs::remove_file(b.join(&log)).expect("delete the log");
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("diff")
        .args([&a, &b])
        .output()
        .expect("run the runner");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("**Verdict:** ⚠️ Incomplete: 1 log missing or unreadable"),
        "{md}"
    );
    assert!(md.contains(&format!("- B: {log}: missing")), "{md}");
    // The undamaged run against itself: one run, so its timings are not compared.
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("diff")
        .args([&a, &a])
        .output()
        .expect("run the runner");
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("**Verdict:** ✅ No regression: no change in root causes, timings not compared (A and B are one run"),
        "{md}"
    );
}

/// A profile stage stopped at its timeout (`fixtures/runs/profile-timed-out`, an H200): ncu's
/// "Failed to profile" that the stop left is a note saying so, never a root cause, and the
/// verdict is the stop's (Inconclusive), not Failing.
#[test]
fn a_tools_error_from_a_stopped_stage_is_the_stops_not_a_fault() {
    let run =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/runs/profile-timed-out/run");
    let out = std::process::Command::new(crate::util::BIN)
        .args(["report", "--format", "json"])
        .arg(&run)
        .output()
        .expect("exhibit report");
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        json["verdict"]["kind"], "inconclusive",
        "{:#}",
        json["verdict"]
    );
    let diagnoses = json["diagnoses"].as_array().expect("diagnoses");
    assert!(
        diagnoses.iter().all(|d| d["level"] == "note"),
        "{diagnoses:#?}"
    );
    assert!(
        diagnoses
            .iter()
            .any(|d| d["title"].to_string().contains("ncu was stopped")),
        "{diagnoses:#?}"
    );
}
