//! What a finished unit left behind, read back and parsed: its logs, the program's output
//! ends, the results and timings it wrote.

use std::path::Path;

use parsers::harness::HarnessOutput;
use parsers::{Format, ParsedLog};

use super::Invocation;

/// What a finished unit left behind, read back and parsed.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// Each log that exists, with its path relative to the unit directory and its parse.
    pub parsed: Vec<(String, ParsedLog)>,
    /// Logs that exist, with their format (the manifest records these).
    pub present: Vec<(String, Option<Format>)>,
    /// The harness or baseline JSON, when one was written and reads as the schema.
    pub harness: Option<HarnessOutput>,
    /// Why the JSON did not read, when it was there.
    pub harness_error: Option<String>,
    /// The last non-empty line of stderr.
    pub stderr_last: Option<String>,
    /// Whether stdout held anything.
    pub stdout_empty: bool,
    /// The first non-empty line of stdout, when stdout is one of the unit's logs.
    pub stdout_first: Option<String>,
    /// Whether ncu said it may not read the counters.
    pub counters_denied: bool,
    /// A target program's stdout and stderr, for saying how it failed.
    pub program_output: String,
    /// Whether the program wrote results or timings in a known format.
    pub program_results: bool,
    /// Why a stage's `pattern:` read no timing (nothing matched, no match gave a time, no file
    /// to read), when it read none.
    pub pattern_problem: Option<String>,
}

/// Reads a unit's files and parses those with a format.
pub fn gather(dir: &Path, invocation: &Invocation) -> Gathered {
    use crate::evidence::rundir::read_head_tail;
    let mut gathered = Gathered {
        stdout_empty: std::fs::metadata(dir.join(&invocation.stdout))
            .map_or(true, |m| m.len() == 0),
        ..Gathered::default()
    };
    for (name, format) in &invocation.logs {
        let path = dir.join(name);
        if !path.is_file() || std::fs::File::open(&path).is_err() {
            continue;
        }
        gathered.present.push((name.clone(), *format));
        if *name == invocation.stderr || *name == invocation.stdout {
            let ends = read_head_tail(&path, OUTPUT_ENDS).unwrap_or_default();
            if *name == invocation.stderr {
                gathered.stderr_last = last_line(&ends);
            }
            if *name == invocation.stdout {
                gathered.stdout_first = ends
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(|l| l.chars().take(120).collect());
            }
            gathered.counters_denied |= ends.contains("ERR_NVGPUCTRPERM");
        }
        let Some(format) = format else { continue };
        // A tool's log streams through its parser: memory stays bounded however long it is.
        if !matches!(*format, Format::TextTimings | Format::Harness) {
            let parsed = std::fs::File::open(&path)
                .and_then(|f| parsers::parse_reader(*format, std::io::BufReader::new(f)));
            if let Ok(parsed) = parsed {
                gathered.parsed.push((name.clone(), parsed));
            }
            continue;
        }
        let text = read_head_tail(&path, READ_WHOLE).unwrap_or_default();
        if *format == Format::TextTimings {
            let parsed = text_timings(&text, invocation.unit.timing_pattern.as_ref());
            gathered.pattern_problem = pattern_problem(name, &parsed, &invocation.unit);
            gathered.program_results |= !parsed.timings.is_empty();
            gathered.parsed.push((name.clone(), parsed));
            continue;
        }
        match serde_json::from_str::<HarnessOutput>(text.trim()) {
            Ok(doc) => gathered.harness = Some(doc),
            Err(e) => gathered.harness_error = Some(format!("{name}: {e}")),
        }
        gathered
            .parsed
            .push((name.clone(), parsers::parse(*format, &text)));
    }
    // A program's own results and timings: their format is told from their content.
    for name in &invocation.detect {
        let Ok(text) = read_head_tail(&dir.join(name), READ_WHOLE) else {
            continue;
        };
        if *name == invocation.stdout || *name == invocation.stderr {
            gathered
                .program_output
                .push_str(&read_head_tail(&dir.join(name), OUTPUT_ENDS).unwrap_or_default());
        }
        let format = parsers::detect(&text).filter(|f| {
            matches!(
                f,
                Format::Harness
                    | Format::PytestBenchmark
                    | Format::GoogleBenchmark
                    | Format::Nvbench
                    | Format::ProgramResults
                    | Format::JUnit
            )
        });
        match gathered.present.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = entry.1.or(format),
            None => gathered.present.push((name.clone(), format)),
        }
        if format == Some(Format::Harness)
            && let Ok(doc) = serde_json::from_str::<HarnessOutput>(text.trim())
        {
            gathered.harness = Some(doc);
        }
        if let Some(format) = format {
            gathered.program_results = true;
            gathered
                .parsed
                .push((name.clone(), parsers::parse(format, &text)));
        }
    }
    // The file a pattern reads, when the program never wrote it.
    if let Some((name, _)) = invocation.logs.iter().find(|(n, f)| {
        *f == Some(Format::TextTimings) && !gathered.present.iter().any(|(p, _)| p == n)
    }) {
        gathered.pattern_problem = Some(format!(
            "the program wrote no {name} (`{{out}}`) for the stage's pattern to read timings from"
        ));
    }
    for name in [&invocation.stdout, &invocation.stderr] {
        if !invocation.detect.contains(name)
            && let Ok(text) = read_head_tail(&dir.join(name), OUTPUT_ENDS)
        {
            gathered.program_output.push_str(&text);
        }
    }
    gathered
}

/// Of a program's output, the most read for what the report quotes (its first and last lines,
/// the line that explains a failure): its first and last halves of this.
const OUTPUT_ENDS: u64 = 2 << 20;
/// The most of a log read whole (a program's timings as text, a harness or benchmark document):
/// its first and last halves of this. Every other log streams through its parser.
const READ_WHOLE: u64 = 32 << 20;

/// Reads a program's text with its stage's pattern (`pattern:`, as the unit records it).
fn text_timings(text: &str, pattern: Option<&parsers::text_timings::TimingPattern>) -> ParsedLog {
    match pattern.map(parsers::text_timings::TimingPattern::compile) {
        Some(Ok(matcher)) => parsers::text_timings::parse(text, &matcher),
        // Checked when the pipeline was read: neither happens for a unit the runner planned.
        Some(Err(e)) => unread_pattern(&e.to_string()),
        None => unread_pattern("the unit records no pattern"),
    }
}

/// An empty, incomplete text-timings log saying why it was not read.
fn unread_pattern(why: &str) -> ParsedLog {
    let mut log = ParsedLog::new(Format::TextTimings, None);
    log.unparsed_examples.push(why.to_string());
    log
}

/// Why a pattern read no timing from `name`, when it read none: what the stage's reason says.
fn pattern_problem(name: &str, parsed: &ParsedLog, unit: &report::Unit) -> Option<String> {
    if !parsed.timings.is_empty() {
        return None;
    }
    let pattern = unit
        .timing_pattern
        .as_ref()
        .map(|p| clip(&p.pattern, 120))
        .unwrap_or_default();
    Some(match parsed.unparsed_examples.first() {
        Some(example) if parsed.unparsed_lines > 0 => format!(
            "the pattern `{pattern}` matched {} time{} in {name} but read no time: {example}",
            parsed.unparsed_lines,
            if parsed.unparsed_lines == 1 { "" } else { "s" },
        ),
        Some(example) => format!("the timings in {name} were not read: {example}"),
        None => format!("the pattern `{pattern}` matched no line of {name}"),
    })
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
}
