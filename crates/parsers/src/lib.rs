//! Typed findings from raw GPU tool output.
//!
//! Brief overview: [`detect`] guesses a log's [`Format`] from its text, and [`parse`] turns the
//! text into a [`ParsedLog`]: [`Finding`]s (one per distinct site, with an occurrence count, a
//! stable fingerprint and the [`facts::Facts`] its tool stated), per-[`Kernel`] resource usage
//! and SASS counts, Nsight Compute [`Metric`]s, and harness results. [`parse_reader`] does the
//! same from any [`BufRead`] without holding the log in memory, for multi-gigabyte sanitizer
//! logs. Parsers do no I/O of their own,
//! never read the clock and never panic: lines they do not recognise are counted in
//! `unparsed_lines`, and a log without its summary is marked incomplete.
//!
//! One module per format: `ptxas` (nvcc `-Xptxas -v`), `sass` (cuobjdump and nvdisasm),
//! `sanitizer` (compute-sanitizer text), `sanitizer_xml` (`--xml --save`), `ncu` (Nsight Compute
//! CSV), `harness_json` (the `exhibit.harness/1` JSON, whose schema is [`harness`]) and
//! [`bench_json`] (what users' own programs print: pytest-benchmark and Google Benchmark JSON
//! timings, `exhibit.results/1` checks) and [`nvbench`] (nvbench's `--json` timings) and
//! [`text_timings`] (timings in a program's plain text, read with a stage's regular expression:
//! [`text_timings::parse`]). `site` folds records into findings and computes fingerprints.
//!
//! ```
//! let log = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n";
//! let format = parsers::detect(log).unwrap();
//! let parsed = parsers::parse(format, log);
//! assert!(parsed.complete && parsed.findings.is_empty());
//! ```

use std::io::{self, BufRead};

pub mod bench_json;
mod csv_line;
pub mod cuda;
mod demangle;
pub mod facts;
pub mod harness;
mod harness_json;
mod junit;
mod lines;
mod memory_space;
pub mod mismatch;
mod model;
mod ncu;
mod ncu_rule;
mod ncu_source;
pub mod nvbench;
pub mod program;
mod ptxas;
mod records;
mod sanitizer;
mod sanitizer_xml;
mod sass;
mod sass_lines;
mod site;
pub mod text_timings;
mod util;

pub use facts::TestOutcome;
pub use memory_space::MemorySpace;
pub use model::*;
pub use ncu_rule::{Excessive, ExcessiveUnit, OccupancyLimiter, ProfilerRule, SpeedupType};
pub use ncu_source::WmmaFragment;
pub use ptxas::local_memory_operation;

/// How much of a log [`detect`] looks at.
const DETECT_WINDOW: usize = 256 * 1024;
/// The largest JSON document (harness, benchmark, results) read by [`parse_reader`].
const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;

/// Guesses the format of a log from its first lines; `None` when nothing matches.
pub fn detect(text: &str) -> Option<Format> {
    let mut end = text.len().min(DETECT_WINDOW);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end).unwrap_or("");
    let trimmed = head.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') && head.contains(harness::SCHEMA.trim_end_matches("/1")) {
        return Some(Format::Harness);
    }
    if trimmed.starts_with("<?xml")
        || trimmed.starts_with("<testsuite")
        || head.contains("<ComputeSanitizerOutput")
    {
        if head.contains("<ComputeSanitizerOutput") {
            return Some(Format::ComputeSanitizerXml);
        }
        // JUnit XML: pytest, GoogleTest, Catch2 and ctest open with one of these.
        return (head.contains("<testsuites") || head.contains("<testsuite"))
            .then_some(Format::JUnit);
    }
    let mut ptxas = false;
    let mut sass = false;
    for line in head.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with("=========") && line.as_bytes().get(9) != Some(&b'=') {
            return Some(Format::ComputeSanitizer);
        }
        // The source page; a SASS-only one (code without line information) opens with the
        // kernel's name.
        // ncu's answer for code without line information holds only this warning.
        if line.starts_with("\"File Path\",")
            || line.starts_with("\"Kernel Name\",")
            || line.starts_with("==WARNING== No lineinfo available to show CUDA-C source")
        {
            return Some(Format::NcuSource);
        }
        if line.starts_with("==PROF==")
            || line.starts_with("\"ID\",\"Process ID\"")
            || line.starts_with("==ERROR==")
            || line.starts_with("==WARNING==")
        {
            return Some(Format::NcuCsv);
        }
        let t = line.trim_start();
        if t.starts_with("ptxas ")
            || t.contains("bytes stack frame, ")
            || t.starts_with("nvcc ")
            || (t.contains(".cu(") && (t.contains("): error") || t.contains("): warning")))
            || t.contains("Warning: cannot perform wmma")
            || t.contains("Warning: Cannot perform wmma")
        {
            ptxas = true;
        }
        if t.starts_with("Function : ")
            || t.starts_with("code for sm_")
            || t.starts_with("/*0000*/")
            || t.starts_with("//--------------------- .text.")
        {
            sass = true;
        }
    }
    // After the sanitizer and ncu markers: a user's program run under those tools prints its
    // JSON into their logs.
    if let Some(format) = detect_bench_json(head) {
        return Some(format);
    }
    if sass {
        Some(Format::Sass)
    } else if ptxas {
        Some(Format::Ptxas)
    } else {
        None
    }
}

/// The JSON of users' programs, recognised by its keys: `exhibit.results/1`'s schema string,
/// pytest-benchmark's `machine_info` with `benchmarks` and `stats`, Google Benchmark's `context`
/// with `benchmarks` and `real_time` or `time_unit`, nvbench's `meta` with `benchmarks` and its
/// name or its `nv/cold/` summary tags. Lines before the document (a program's
/// banner) are allowed, as the parsers allow them.
fn detect_bench_json(head: &str) -> Option<Format> {
    let json = head.trim_start_matches('\u{feff}').trim_start();
    if !json.starts_with('{') && !head.contains("\n{") {
        return None;
    }
    let key = |k: &str| head.contains(&format!("\"{k}\""));
    if head.contains(&format!(
        "\"{}",
        bench_json::RESULTS_SCHEMA.trim_end_matches("/1")
    )) {
        Some(Format::ProgramResults)
    } else if key("machine_info") && key("benchmarks") && key("stats") {
        Some(Format::PytestBenchmark)
    } else if key("context") && key("benchmarks") && (key("real_time") || key("time_unit")) {
        Some(Format::GoogleBenchmark)
    } else if key("meta") && key("benchmarks") && (key("nvbench") || head.contains("\"nv/cold/")) {
        Some(Format::Nvbench)
    } else {
        None
    }
}

/// Parses a whole log held in memory. Never fails: what is not understood is counted as unparsed.
pub fn parse(format: Format, text: &str) -> ParsedLog {
    match parse_reader(format, text.as_bytes()) {
        Ok(log) => log,
        // Reading from a byte slice cannot fail; this arm only keeps the function total.
        Err(_) => ParsedLog::new(format, None),
    }
}

/// Parses a log from a reader, line by line, in memory that grows with the number of distinct
/// findings rather than with the log. Fails only when the reader does.
pub fn parse_reader<R: BufRead>(format: Format, reader: R) -> io::Result<ParsedLog> {
    Ok(match format {
        Format::ComputeSanitizer => {
            let mut p = sanitizer::SanitizerParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::Ptxas => {
            let mut p = ptxas::PtxasParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::Sass => {
            let mut p = sass::SassParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::NcuCsv => {
            let mut p = ncu::NcuParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::SassLines => {
            let mut p = sass_lines::LinesParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::NcuSource => {
            let mut p = ncu_source::SourceParser::new();
            lines::for_each_line(reader, |l| p.line(l))?;
            p.finish()
        }
        Format::ComputeSanitizerXml => sanitizer_xml::parse(reader),
        Format::JUnit => junit::parse(reader),
        Format::Harness => harness_json::parse_document(&read_json(reader)?),
        Format::PytestBenchmark => bench_json::parse_pytest(&read_json(reader)?),
        Format::GoogleBenchmark => bench_json::parse_google(&read_json(reader)?),
        Format::Nvbench => nvbench::parse(&read_json(reader)?),
        Format::ProgramResults => bench_json::parse_results(&read_json(reader)?),
        // Text timings are read only with their stage's pattern (`text_timings::parse_reader`).
        Format::TextTimings => {
            let mut log = ParsedLog::new(format, None);
            log.unparsed_examples.push(
                "text timings are read with their stage's pattern, which was not given".into(),
            );
            log
        }
    })
}

/// Reads a JSON document whole, up to [`MAX_JSON_BYTES`] (a longer one is cut, and so fails to
/// parse and reads as incomplete).
fn read_json<R: BufRead>(reader: R) -> io::Result<String> {
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(reader, MAX_JSON_BYTES), &mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
