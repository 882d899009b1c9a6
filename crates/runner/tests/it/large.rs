//! A run of many units: `exhibit report` stays linear in stage records.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::run_limited;

/// 20,000 stage records made from the committed clean reference run: its stages (but SASS and
/// profile, whose logs are large) again and again, each record under a config name of its own
/// and with its own logs (hard links to the originals). The report answers, clean. The bound
/// only catches a hang; `benches/report_scaling.rs` measures the growth (a rule that scanned
/// every finding for each config made it quadratic in a matrix this wide); the time it took is
/// printed (`--nocapture`).
#[test]
fn a_report_of_twenty_thousand_stage_records_answers() {
    let (_dir, run) = crate::damaged::clean_run_copy();
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    let stages: Vec<Value> = manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["kind"] != "sass" && s["kind"] != "profile")
        .cloned()
        .collect();
    std::fs::create_dir_all(run.join("many")).expect("mkdir");
    let mut records: Vec<Value> = Vec::with_capacity(20_000);
    'fill: loop {
        for stage in &stages {
            if records.len() == 20_000 {
                break 'fill;
            }
            let mut record = stage.clone();
            if let Some(config) = record["config"].as_str() {
                record["config"] = Value::from(format!("{config}_{}", records.len()));
            }
            for log in record["logs"].as_array_mut().expect("logs") {
                let Some(path) = log["path"].as_str().map(str::to_string) else {
                    continue;
                };
                if log["format"].is_null() || !run.join(&path).is_file() {
                    continue;
                }
                let name = path.rsplit('/').next().expect("a name");
                let linked = format!("many/{}-{name}", records.len());
                std::fs::hard_link(run.join(&path), run.join(&linked)).expect("link");
                log["path"] = Value::from(linked);
            }
            records.push(record);
        }
    }
    manifest["stages"] = Value::from(records);
    std::fs::write(
        run.join("manifest.json"),
        serde_json::to_vec(&manifest).expect("JSON"),
    )
    .expect("write");

    let started = Instant::now();
    let out = run_limited(
        std::process::Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .args(["report", "--format", "json"])
            .arg(&run),
        Duration::from_secs(60),
    )
    .expect("the report answers within a minute");
    let elapsed = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["verdict"]["kind"], "clean", "{:#}", json["verdict"]);
    eprintln!("exhibit report of 20,000 stage records: {elapsed:?}");
}
