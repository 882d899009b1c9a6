//! Streaming speed and memory of the compute-sanitizer parser on a large log, next to
//! `grep -c '^========='` on the same file.
//!
//! The log is built in a temporary folder from real records of the fixtures (memcheck, racecheck
//! hazard form, initcheck, synccheck), repeated round-robin up to the size asked for, with a real
//! summary at the end. Run with `cargo bench -p parsers --bench sanitizer_throughput`; the size
//! in MB comes from `EXHIBIT_BENCH_MB` (default 1024). Peak memory is the process's VmHWM from
//! /proc, read after a parse of one eighth of the log and again after the whole log: if memory
//! grew with the log, the second figure would be about eight times the first.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use parsers::Format;

const SOURCES: &[&str] = &[
    "memcheck_oob_read.log",
    "memcheck_oob_write.log",
    "memcheck_templ.log",
    "memcheck_wmma_local.log",
    "memcheck_misaligned_shared.log",
    "memcheck_doublefree_device.log",
    "racecheck_race_hazard.log",
    "racecheck_race.log",
    "initcheck_uninit.log",
    "synccheck_syncdiv_warp.log",
];

fn main() {
    let mb: u64 = std::env::var("EXHIBIT_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    // EXHIBIT_BENCH_DIR keeps the generated logs in a folder of one's choice (for profiling).
    let temp = tempfile::tempdir().expect("temporary folder");
    let dir = std::env::var_os("EXHIBIT_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    let records = records();
    println!(
        "{} distinct real records from {} fixtures",
        records.len(),
        SOURCES.len()
    );

    let small = dir.join("small.log");
    let big = dir.join("big.log");
    write_log(&small, &records, mb * 1024 * 1024 / 8);
    write_log(&big, &records, mb * 1024 * 1024);

    let base = vm_kib("VmHWM");
    let (_, small_findings, _) = parse(&small);
    let after_small = vm_kib("VmHWM");
    let grep_first = grep(&big);
    let (parse_s, findings, bytes) = parse(&big);
    let after_big = vm_kib("VmHWM");
    let grep_second = grep(&big);
    let grep_s = grep_first.0.min(grep_second.0);

    let size_mb = bytes as f64 / 1e6;
    println!(
        "log: {size_mb:.0} MB, {} records counted by grep",
        grep_first.1
    );
    println!(
        "parse_reader: {parse_s:.2} s, {:.0} MB/s, {findings} findings",
        size_mb / parse_s
    );
    println!(
        "grep -c '^=========': {grep_s:.2} s, {:.0} MB/s; parse/grep time ratio {:.2}",
        size_mb / grep_s,
        parse_s / grep_s
    );
    println!(
        "peak RSS (VmHWM): {base} KiB before, {after_small} KiB after the 1/8 log \
         ({small_findings} findings), {after_big} KiB after the whole log"
    );
}

/// Real records (the lines between two bare `=========` lines), without summaries.
fn records() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compute-sanitizer");
    let mut out = Vec::new();
    for name in SOURCES {
        let text = std::fs::read_to_string(dir.join(name)).expect("fixture");
        let mut current = String::new();
        for line in text.lines() {
            if !line.starts_with("=========")
                || line.contains("SUMMARY")
                || line.contains("COMPUTE-SANITIZER")
            {
                // Program output is kept: real logs interleave it.
                if !line.contains("SUMMARY") && !line.contains("COMPUTE-SANITIZER") {
                    current.push_str(line);
                    current.push('\n');
                }
                continue;
            }
            current.push_str(line);
            current.push('\n');
            if line.trim_end() == "=========" {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

fn write_log(path: &Path, records: &[String], bytes: u64) {
    // A log kept in EXHIBIT_BENCH_DIR from an earlier run of the same size is reused.
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= bytes && m.len() < bytes + (1 << 20)) {
        return;
    }
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).expect("create log"));
    let mut written = 0u64;
    writeln!(w, "========= COMPUTE-SANITIZER").expect("write");
    'outer: loop {
        for r in records {
            w.write_all(r.as_bytes()).expect("write");
            written += r.len() as u64;
            if written >= bytes {
                break 'outer;
            }
        }
    }
    writeln!(w, "========= ERROR SUMMARY: 8196 errors").expect("write");
    w.flush().expect("flush");
}

fn parse(path: &Path) -> (f64, usize, u64) {
    let bytes = std::fs::metadata(path).expect("size").len();
    let start = Instant::now();
    let reader = BufReader::with_capacity(1 << 20, File::open(path).expect("open"));
    let log = parsers::parse_reader(Format::ComputeSanitizer, reader).expect("parse");
    let secs = start.elapsed().as_secs_f64();
    assert!(log.complete);
    (secs, log.findings.len(), bytes)
}

fn grep(path: &Path) -> (f64, String) {
    let start = Instant::now();
    let out = Command::new("grep")
        .arg("-c")
        .arg("^=========")
        .arg(path)
        .output()
        .expect("grep");
    (
        start.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

fn vm_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}
