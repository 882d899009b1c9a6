//! `exhibit pack` compresses a stored run's logs; `exhibit report` renders it as before.

use crate::util::{Project, code, stderr};

#[test]
fn a_packed_run_renders_the_same_report() {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = project.runs().pop().unwrap();
    let run_arg = run.to_string_lossy().into_owned();
    let before = project.run(&["report", &run_arg]);
    assert_eq!(code(&before), 0, "{}", stderr(&before));

    let packed = project.run(&["pack", &run_arg, "--min-bytes", "1"]);
    assert_eq!(code(&packed), 0, "{}", stderr(&packed));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let logs: Vec<String> = manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["logs"].as_array().unwrap().iter())
        // Only parsed logs are packed; a listing of what was looked at stays as it is.
        .filter(|l| !l["format"].is_null())
        .map(|l| l["path"].as_str().unwrap().to_string())
        .collect();
    assert!(!logs.is_empty());
    for log in &logs {
        if log.ends_with(".gz") {
            assert!(run.join(log).is_file(), "{log} is missing");
            assert!(!run.join(log.trim_end_matches(".gz")).exists());
        } else {
            // An empty log (below the threshold of one byte) stays as it is.
            let empty = std::fs::metadata(run.join(log)).unwrap().len() == 0;
            assert!(empty, "{log} was not packed");
        }
    }
    assert!(run.join("sass/small/sm_90/kernel.cubin.sass.gz").is_file());

    let after = project.run(&["report", &run_arg]);
    assert_eq!(code(&after), 0, "{}", stderr(&after));
    // The same report, but for the names of the compressed logs.
    assert_eq!(
        String::from_utf8_lossy(&after.stdout).replace(".gz`", "`"),
        String::from_utf8_lossy(&before.stdout)
    );

    // Packing again changes nothing.
    let again = project.run(&["pack", &run_arg, "--min-bytes", "1"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("compressed 0 logs"));
}

/// A run that records no end is still writing (or was killed): `pack` refuses it and leaves
/// every log as it was.
#[test]
fn a_run_still_in_progress_is_not_packed() {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = project.runs().pop().unwrap();
    let path = run.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // As the manifest reads while the run is under way.
    manifest.as_object_mut().unwrap().remove("finished");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let sass = run.join("sass/small/sm_90/kernel.cubin.sass");
    let before = std::fs::read(&sass).unwrap();
    let run_arg = run.to_string_lossy().into_owned();
    let packed = project.run(&["pack", &run_arg, "--min-bytes", "1"]);
    assert_ne!(code(&packed), 0, "{}", stderr(&packed));
    assert!(
        stderr(&packed).contains("still running"),
        "{}",
        stderr(&packed)
    );
    assert_eq!(std::fs::read(&sass).unwrap(), before);
    assert!(!run.join("sass/small/sm_90/kernel.cubin.sass.gz").exists());
}

/// A packed log that inflates far past anything the runner stores (a gzip bomb in a received
/// run) is read up to the bound and then named unreadable: `report` ends, and the run is not
/// clean for it.
#[test]
fn a_log_that_inflates_past_the_bound_is_unreadable_not_endless() {
    use std::io::Write;
    let project = Project::new();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = project.runs().pop().unwrap();
    let run_arg = run.to_string_lossy().into_owned();
    let packed = project.run(&["pack", &run_arg, "--min-bytes", "1"]);
    assert_eq!(code(&packed), 0, "{}", stderr(&packed));
    let log = run.join("sass/small/sm_90/kernel.cubin.sass.gz");
    assert!(log.is_file());
    // 300 MiB of zeros, about 300 KB compressed.
    let mut bomb = flate2::write::GzEncoder::new(
        std::fs::File::create(&log).unwrap(),
        flate2::Compression::fast(),
    );
    let block = vec![0u8; 1 << 20];
    for _ in 0..300 {
        bomb.write_all(&block).unwrap();
    }
    bomb.finish().unwrap();
    let report = project.run(&["report", &run_arg]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("inflates past 256 MiB"), "{text}");
    assert!(!text.contains("✅ Clean"), "{text}");
}
