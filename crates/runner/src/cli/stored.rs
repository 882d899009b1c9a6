//! The commands over stored runs and raw logs: `report`, `diff`, `explain`, `parse`, `pack`.

use super::*;

pub(super) fn explain(
    files: &[PathBuf],
    format: ReportFormat,
    forced: Option<LogFormat>,
) -> Result<Outcome, Error> {
    let logs = read_logs(files, forced)?;
    let inputs = user_files(&report::named_files(&logs));
    let explanation = report::explain(&logs, inputs);
    print(&terminated(report::render_explanation(
        &explanation,
        format.into(),
    )))?;
    Ok(if explanation.is_clean() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The files, relative to this directory, that absolute paths in the logs name: for each, the
/// longest tail of its path that is a file here (a log from another machine, or a CMake build's
/// absolute paths, still names the user's `src/saxpy.cu`). Nothing outside this directory is
/// read, and only whether a file is there.
fn user_files(named: &[String]) -> Vec<String> {
    let Ok(here) = std::env::current_dir() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in named {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let found = (0..parts.len())
            .map(|k| parts[k..].join("/"))
            .filter(|tail| !tail.split('/').any(|p| p == ".."))
            .find(|tail| here.join(tail).is_file());
        if let Some(tail) = found
            && !out.contains(&tail)
        {
            out.push(tail);
        }
    }
    out
}

pub(super) fn diff(
    run_a: &std::path::Path,
    run_b: &std::path::Path,
    format: ReportFormat,
    options: &report::DiffOptions,
    force: bool,
) -> Result<Outcome, Error> {
    let a = crate::evidence::stored::load(run_a)?;
    let b = crate::evidence::stored::load(run_b)?;
    if let Some(why) = report::unrelated(&a.run, &b.run).filter(|_| !force) {
        return Err(Error::Io(format!(
            "cannot compare {} with {}: {why} (`--force` compares them anyway)",
            run_a.display(),
            run_b.display()
        )));
    }
    let diff = report::diff(&a, &b, options);
    print(&terminated(report::render_diff(&diff, format.into())))?;
    Ok(match diff.verdict {
        report::DiffVerdict::Incomplete => Outcome::Incomplete,
        report::DiffVerdict::Regression => Outcome::Findings,
        report::DiffVerdict::Ambiguous | report::DiffVerdict::NoRegression => Outcome::Clean,
    })
}

pub(super) fn pack(run_dir: &std::path::Path, min_bytes: u64) -> Result<Outcome, Error> {
    let packed = crate::evidence::pack::pack(run_dir, min_bytes).map_err(|e| match e {
        crate::evidence::pack::PackError::Read(e) => Error::Read(e),
        e => Error::Io(e.to_string()),
    })?;
    print(&format!(
        "{}: compressed {} logs, {} -> {} bytes\n",
        run_dir.display(),
        packed.files,
        packed.bytes_before,
        packed.bytes_after
    ))?;
    Ok(Outcome::Clean)
}

impl From<ReportFormat> for report::OutputFormat {
    fn from(format: ReportFormat) -> report::OutputFormat {
        match format {
            ReportFormat::Md => report::OutputFormat::Markdown,
            ReportFormat::Json => report::OutputFormat::Json,
            ReportFormat::Sarif => report::OutputFormat::Sarif,
            ReportFormat::Junit => report::OutputFormat::Junit,
        }
    }
}

/// Reads and parses each file (gzip-compressed when its name ends in `.gz`), detecting its format
/// from its first 256 KiB unless one is forced. The log streams through
/// [`parsers::parse_reader`]: a multi-gigabyte sanitizer log is never held in memory.
pub(super) fn read_logs(
    files: &[PathBuf],
    forced: Option<LogFormat>,
) -> Result<Vec<(String, parsers::ParsedLog)>, Error> {
    use std::io::Read;
    const HEAD: u64 = 256 * 1024;
    let mut parsed = Vec::new();
    for path in files {
        let failed = |e: std::io::Error| Error::Usage(format!("read {}: {e}", path.display()));
        let mut reader = crate::evidence::rundir::open_log(path).map_err(failed)?;
        let mut head = Vec::new();
        reader
            .by_ref()
            .take(HEAD)
            .read_to_end(&mut head)
            .map_err(failed)?;
        let format = match forced {
            Some(f) => f.into(),
            None => parsers::detect(&String::from_utf8_lossy(&head)).ok_or_else(|| {
                Error::Usage(format!(
                    "{}: cannot tell which tool wrote this log; name its format with --as",
                    path.display()
                ))
            })?,
        };
        let whole = std::io::BufReader::new(std::io::Cursor::new(head).chain(reader));
        let log = parsers::parse_reader(format, whole).map_err(failed)?;
        parsed.push((path.to_string_lossy().into_owned(), log));
    }
    Ok(parsed)
}

pub(super) fn report(
    run_dir: &std::path::Path,
    format: ReportFormat,
    summary: bool,
    home: &report::Home,
) -> Result<Outcome, Error> {
    for uri in [&home.information_uri, &home.rules_uri]
        .into_iter()
        .flatten()
    {
        if !(uri.starts_with("https://") || uri.starts_with("http://")) {
            return Err(Error::Usage(format!(
                "`{uri}`: SARIF wants an absolute http(s) URL for --home and --rules-uri"
            )));
        }
    }
    if summary && format != ReportFormat::Md {
        return Err(Error::Usage(
            "--summary is a Markdown form: drop --format or give --format md".into(),
        ));
    }
    let evidence = crate::evidence::stored::load(run_dir)?;
    let text = if summary {
        report::render_summary(&evidence)
    } else if format == ReportFormat::Sarif {
        report::render_sarif(&report::analyze(&evidence), &evidence.run, home)
    } else {
        report::render(&evidence, format.into())
    };
    print(&terminated(text))?;
    for (log, why) in &evidence.missing {
        say!(
            "{}",
            report::text::strip_controls(&format!("runner: {}: {log}: {why}", run_dir.display()))
        );
    }
    // Evidence that could not be read is an infrastructure problem, whatever the report says.
    Ok(if evidence.missing.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Incomplete
    })
}

/// One entry of `exhibit parse --json`: the path, then the parsed log's fields.
#[derive(Serialize)]
struct ParsedInput<'a> {
    path: String,
    #[serde(flatten)]
    log: &'a parsers::ParsedLog,
}

pub(super) fn parse(
    files: &[PathBuf],
    json: bool,
    forced: Option<LogFormat>,
) -> Result<Outcome, Error> {
    let parsed = read_logs(files, forced)?;
    let mut out = String::new();
    if json {
        let inputs: Vec<ParsedInput> = parsed
            .iter()
            .map(|(path, log)| ParsedInput {
                path: path.clone(),
                log,
            })
            .collect();
        let value = serde_json::json!({ "inputs": inputs });
        out = serde_json::to_string_pretty(&value).map_err(|e| Error::Io(e.to_string()))?;
        out.push('\n');
    } else {
        for (path, log) in &parsed {
            out.push_str(&summarize(path, log));
        }
    }
    print(&out)?;
    Ok(Outcome::Clean)
}

pub(super) fn summarize(path: &str, log: &parsers::ParsedLog) -> String {
    let word = |v: &dyn erased::Word| v.word();
    let mut out = format!(
        "{path}: {}{}, {}\n",
        word(&log.format),
        log.tool
            .map(|t| format!(" ({})", word(&t)))
            .unwrap_or_default(),
        if log.complete {
            "complete"
        } else {
            "incomplete (no summary)"
        }
    );
    if let Some(n) = log.reported_errors {
        out.push_str(&format!(
            "  tool reported {}",
            report::text::plural(n, "error", "errors")
        ));
        if log.unprinted_errors > 0 {
            out.push_str(&format!(" ({} not printed)", log.unprinted_errors));
        }
        out.push('\n');
    }
    for f in &log.findings {
        let location = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" at {file}:{line}"),
            (Some(file), None) => format!(" in {file}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {} {} x{}{}{}: {}\n",
            word(&f.severity),
            word(&f.kind),
            f.count,
            f.kernel
                .as_deref()
                .map(|k| format!(" in {k}"))
                .unwrap_or_default(),
            location,
            f.message
        ));
    }
    for k in &log.kernels {
        let opt = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |n| n.to_string());
        out.push_str(&format!(
            "  kernel {} [{}]: {} registers, {} B shared, spills {}/{} B",
            k.name,
            k.arch.as_deref().unwrap_or("?"),
            opt(k.registers.map(u64::from)),
            opt(k.shared_bytes),
            opt(k.spill_store_bytes),
            opt(k.spill_load_bytes),
        ));
        if let Some(s) = &k.sass {
            out.push_str(&format!(
                "; SASS {} instructions, {} HMMA, {} HGMMA, {} LDL, {} STL",
                s.total, s.hmma, s.hgmma, s.ldl, s.stl
            ));
        }
        out.push('\n');
    }
    if !log.metrics.is_empty() {
        out.push_str(&format!("  {} metrics\n", log.metrics.len()));
    }
    if !log.results.is_empty() {
        out.push_str(&format!("  {} harness results\n", log.results.len()));
    }
    if log.unparsed_lines > 0 {
        out.push_str(&format!("  {} unparsed lines\n", log.unparsed_lines));
    }
    out
}

/// The serde spelling of a unit enum value, for plain-text output.
mod erased {
    pub trait Word {
        fn word(&self) -> String;
    }
    impl<T: serde::Serialize> Word for T {
        fn word(&self) -> String {
            serde_json::to_value(self)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }
    }
}

impl From<LogFormat> for parsers::Format {
    fn from(f: LogFormat) -> parsers::Format {
        match f {
            LogFormat::Ptxas => parsers::Format::Ptxas,
            LogFormat::Sass => parsers::Format::Sass,
            LogFormat::ComputeSanitizer => parsers::Format::ComputeSanitizer,
            LogFormat::ComputeSanitizerXml => parsers::Format::ComputeSanitizerXml,
            LogFormat::NcuCsv => parsers::Format::NcuCsv,
            LogFormat::NcuSource => parsers::Format::NcuSource,
            LogFormat::Harness => parsers::Format::Harness,
            LogFormat::PytestBenchmark => parsers::Format::PytestBenchmark,
            LogFormat::GoogleBenchmark => parsers::Format::GoogleBenchmark,
            LogFormat::Nvbench => parsers::Format::Nvbench,
            LogFormat::ProgramResults => parsers::Format::ProgramResults,
            LogFormat::Junit => parsers::Format::JUnit,
        }
    }
}
