//! Snapshots of the typed output for every fixture, one per file.

use std::path::Path;

use crate::{fixtures, parse_fixture};

fn snapshot(path: &Path) {
    let root = fixtures();
    let rel = path.strip_prefix(&root).unwrap_or(path);
    let name = rel.to_string_lossy().replace('\\', "/");
    let parsed = parse_fixture(&name);
    insta::with_settings!({ snapshot_suffix => name.replace('/', "__"), prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!("fixture", parsed);
    });
}

#[test]
fn compute_sanitizer_text() {
    insta::glob!("../../fixtures", "compute-sanitizer/*.log", snapshot);
}

#[test]
fn compute_sanitizer_xml() {
    insta::glob!("../../fixtures", "compute-sanitizer-xml/*.xml", |p| {
        snapshot(p)
    });
}

#[test]
fn ncu_csv() {
    insta::glob!("../../fixtures", "ncu-csv/*.log", snapshot);
}

#[test]
fn ncu_source() {
    insta::glob!("../../fixtures", "ncu-source/*.log", snapshot);
}

#[test]
fn ptxas() {
    insta::glob!("../../fixtures", "ptxas/*.log", snapshot);
}

#[test]
fn sass() {
    insta::glob!("../../fixtures", "sass/*.log", snapshot);
}

#[test]
fn harness_json() {
    insta::glob!("../../fixtures", "harness/*.json", |p| {
        if !p.to_string_lossy().ends_with(".meta.json") {
            snapshot(p)
        }
    });
}

#[test]
fn every_fixture_has_a_sidecar() {
    for dir in [
        "compute-sanitizer",
        "compute-sanitizer-xml",
        "ncu-csv",
        "ncu-source",
        "ptxas",
        "sass",
        "harness",
        "program-output",
    ] {
        let Ok(entries) = std::fs::read_dir(fixtures().join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".meta.json") {
                continue;
            }
            let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(&name);
            let meta = path.with_file_name(format!("{stem}.meta.json"));
            let text = std::fs::read_to_string(&meta)
                .unwrap_or_else(|e| panic!("{dir}/{name} has no sidecar {}: {e}", meta.display()));
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(
                value.get("command").is_some(),
                "{} names no command",
                meta.display()
            );
        }
    }
}
