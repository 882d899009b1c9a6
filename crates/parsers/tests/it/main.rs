//! Integration tests: every parser driven through the public entry points, on real tool output
//! from `fixtures/` (each file has a `.meta.json` sidecar saying how it was captured).

mod bench_json;
mod compiler;
mod harness;
mod junit;
mod malformed;
mod ncu;
mod sanitizer;
mod snapshots;

use std::path::{Path, PathBuf};

use parsers::{Format, ParsedLog};

/// The fixtures folder of this crate.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Reads a fixture, e.g. `fixture("compute-sanitizer/memcheck_oob_read.log")`.
pub fn fixture(name: &str) -> String {
    let path = fixtures().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Detects and parses a fixture, checking that detection names the folder's format.
pub fn parse_fixture(name: &str) -> ParsedLog {
    let text = fixture(name);
    let format = folder_format(name);
    assert_eq!(parsers::detect(&text), Some(format), "detect {name}");
    parsers::parse(format, &text)
}

/// The format a fixture folder holds.
pub fn folder_format(name: &str) -> Format {
    match name.split('/').next().unwrap_or("") {
        "compute-sanitizer" => Format::ComputeSanitizer,
        "compute-sanitizer-xml" => Format::ComputeSanitizerXml,
        "junit" => Format::JUnit,
        "ncu-csv" => Format::NcuCsv,
        "ncu-source" => Format::NcuSource,
        "ptxas" => Format::Ptxas,
        "sass" => Format::Sass,
        "harness" => Format::Harness,
        "pytest-benchmark" => Format::PytestBenchmark,
        "google-benchmark" => Format::GoogleBenchmark,
        "nvbench" => Format::Nvbench,
        "program-results" => Format::ProgramResults,
        other => panic!("no format for fixture folder {other}"),
    }
}
