//! How long `exhibit report` takes on each field-corpus run: every `corpus/<entry>/run.tar.xz`
//! unpacked once, then rendered as Markdown (the median of `EXHIBIT_BENCH_REPEAT` renders,
//! default 3). The target is under 1 s per entry on a 2-core machine; the bench prints each
//! entry's time, slowest first, and names those over it.
//!
//! Run with `cargo bench -p runner --bench corpus_report`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TARGET: Duration = Duration::from_secs(1);

fn main() {
    let repeat: usize = std::env::var("EXHIBIT_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut entries: Vec<_> = std::fs::read_dir(&corpus)
        .expect("corpus/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.tar.xz").is_file())
        .collect();
    entries.sort();
    let mut times: Vec<(Duration, String)> = Vec::new();
    for entry in &entries {
        let name = entry
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let status = Command::new("tar")
            .arg("-xJf")
            .arg(entry.join("run.tar.xz"))
            .arg("-C")
            .arg(dir.path())
            .status()
            .expect("tar starts");
        assert!(status.success(), "{name}: run.tar.xz does not unpack");
        let run = dir.path().join("run");
        let mut samples: Vec<Duration> = (0..repeat)
            .map(|_| {
                let started = Instant::now();
                let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
                    .arg("report")
                    .arg(&run)
                    .output()
                    .expect("runner starts");
                let elapsed = started.elapsed();
                assert!(
                    matches!(out.status.code(), Some(0 | 1)),
                    "{name}: {:?}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                elapsed
            })
            .collect();
        samples.sort();
        times.push((samples[samples.len() / 2], name));
    }
    times.sort_by(|a, b| b.cmp(a));
    for (t, name) in &times {
        let over = if *t > TARGET { "  over 1 s" } else { "" };
        println!("{:>8.3} s  {name}{over}", t.as_secs_f64());
    }
    let over = times.iter().filter(|(t, _)| *t > TARGET).count();
    println!(
        "{} entries, {over} over 1 s, the slowest {:.3} s",
        times.len(),
        times.first().map_or(0.0, |(t, _)| t.as_secs_f64())
    );
}
