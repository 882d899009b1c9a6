//! How `exhibit report` and `exhibit diff` grow with the number of stage records.
//!
//! Each size is a run directory made from the committed clean reference run: its stages (but
//! SASS and profile, whose logs are large) again and again under new config names, each record
//! with its own logs (hard links to the originals), as `tests/it/large.rs` makes its 20,000. For
//! each size the bench times `exhibit report --format json` on it and `exhibit diff` of it against
//! a copy of itself (the median of `EXHIBIT_BENCH_REPEAT` runs, default 3), and prints the time
//! per thousand records: a linear report keeps that figure flat from 1k to 20k.
//!
//! Run with `cargo bench -p runner --bench report_scaling`; `EXHIBIT_BENCH_RECORDS` takes other
//! sizes (`1000,5000,20000` by default). `EXHIBIT_BENCH_CONFIGS=each` gives every record a
//! config of its own (a matrix as wide as the run is long), where a rule that walks the configs
//! and scans every finding or stage for each would grow with the square of the records.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn main() {
    let sizes: Vec<usize> = std::env::var("EXHIBIT_BENCH_RECORDS")
        .unwrap_or_else(|_| "1000,5000,20000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("EXHIBIT_BENCH_RECORDS: numbers, comma-separated")
        })
        .collect();
    let repeat: usize = std::env::var("EXHIBIT_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let each = std::env::var("EXHIBIT_BENCH_CONFIGS").is_ok_and(|v| v == "each");
    let reference = clean_reference_run();
    println!("from {}", reference.display());
    println!(
        "{:>8}  {:>10}  {:>10}  {:>14}  {:>14}",
        "records", "report", "diff", "report per 1k", "diff per 1k"
    );
    for n in sizes {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        make_run(&reference, &a, n, each);
        make_run(&reference, &b, n, each);
        rename(&b);
        let report = median(repeat, || {
            time(
                Command::new(env!("CARGO_BIN_EXE_exhibit"))
                    .args(["report", "--format", "json"])
                    .arg(&a),
            )
        });
        let diff = median(repeat, || {
            time(
                Command::new(env!("CARGO_BIN_EXE_exhibit"))
                    .args(["diff", "--format", "json"])
                    .arg(&a)
                    .arg(&b),
            )
        });
        let per_k = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
        println!(
            "{n:>8}  {:>9.2}s  {:>9.2}s  {:>13.3}s  {:>13.3}s",
            report.as_secs_f64(),
            diff.as_secs_f64(),
            per_k(report),
            per_k(diff)
        );
    }
}

fn median(repeat: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..repeat).map(|_| f()).collect();
    times.sort();
    times[times.len() / 2]
}

fn time(command: &mut Command) -> Duration {
    let started = Instant::now();
    let out = command.output().expect("runner starts");
    let elapsed = started.elapsed();
    // 0: clean; 1: findings (a diff with nothing to compare may say so). Anything else is a
    // broken run directory, not a timing.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn clean_reference_run() -> PathBuf {
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../artifacts/reference");
    std::fs::read_dir(&reference)
        .expect("artifacts/reference")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::read(p.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|m| m["pipeline"] == "pipeline.yaml")
        })
        .expect("the clean reference run")
}

/// Writes a run directory at `to` whose manifest holds `n` stage records made from `from`'s,
/// under a new config name each round of them, or each record (`each`).
fn make_run(from: &Path, to: &Path, n: usize, each: bool) {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(from.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    let stages: Vec<Value> = manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["kind"] != "sass" && s["kind"] != "profile")
        .cloned()
        .collect();
    std::fs::create_dir_all(to.join("many")).expect("mkdir");
    let mut records: Vec<Value> = Vec::with_capacity(n);
    'fill: for round in 0.. {
        for stage in &stages {
            if records.len() == n {
                break 'fill;
            }
            let mut record = stage.clone();
            if let Some(config) = record["config"].as_str() {
                let new = if each { records.len() } else { round };
                record["config"] = Value::from(format!("{config}_{new}"));
            }
            for log in record["logs"].as_array_mut().expect("logs") {
                let Some(path) = log["path"].as_str().map(str::to_string) else {
                    continue;
                };
                if log["format"].is_null() || !from.join(&path).is_file() {
                    continue;
                }
                let name = path.rsplit('/').next().expect("a name");
                let linked = format!("many/{}-{name}", records.len());
                // A hard link where the file system allows it (the same device), else a copy.
                if std::fs::hard_link(from.join(&path), to.join(&linked)).is_err() {
                    std::fs::copy(from.join(&path), to.join(&linked)).expect("copy");
                }
                log["path"] = Value::from(linked);
            }
            records.push(record);
        }
    }
    let mut manifest = manifest;
    manifest["stages"] = Value::from(records);
    std::fs::write(
        to.join("manifest.json"),
        serde_json::to_vec(&manifest).expect("JSON"),
    )
    .expect("write");
}

/// Gives the run at `dir` an id of its own, so that `diff` compares its timings too (one run
/// against itself compares none).
fn rename(dir: &Path) {
    let path = dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("JSON");
    let id = format!("{}-b", manifest["id"].as_str().unwrap_or("run"));
    manifest["id"] = Value::from(id);
    std::fs::write(&path, serde_json::to_vec(&manifest).expect("JSON")).expect("write");
}
