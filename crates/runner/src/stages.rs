//! What each stage kind runs, which logs it leaves, and how its ending becomes a status.
//!
//! [`invocation`] builds a unit's argv: nvcc per config and arch; cuobjdump on the cubin;
//! compute-sanitizer (always with `--error-exitcode`, so findings and tool failures stay apart)
//! and ncu around the harness; the harness itself for check, stress and bench; the baseline
//! command. [`gather`] reads back what the unit wrote and parses it with `parsers`, and
//! [`decide`] turns the process ending plus that evidence into a [`StageStatus`] with a reason.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parsers::harness::HarnessOutput;
use parsers::{Format, ParsedLog, Severity};
use report::{StageKind, StageStatus};

use crate::config::{self, Pipeline, Stage};
use crate::exec::Ending;
use crate::plan::Unit;
use crate::preflight::Preflight;

/// The exit code compute-sanitizer is told to use when it reports errors.
pub const SANITIZER_ERROR_EXITCODE: i32 = 86;

/// The harness's exit codes (see the harness CLI contract).
pub mod harness_exit {
    pub const MISBEHAVED: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const INFRASTRUCTURE: i32 = 3;
    pub const NO_GPU: i32 = 4;
}

/// A process to start for a unit, and the files it leaves in the unit's directory.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub argv: Vec<OsString>,
    /// The argv as recorded: tool names instead of their paths, paths relative to the
    /// repository.
    pub display: Vec<String>,
    /// File names, inside the unit directory, receiving stdout and stderr.
    pub stdout: String,
    pub stderr: String,
    /// Every file the unit leaves, with its format when it is parsed.
    pub logs: Vec<(String, Option<Format>)>,
    /// The tool named in messages.
    pub tool: String,
}

/// Where things are, for building an invocation.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The unit's directory, relative to the pipeline root (the children's working directory).
    pub unit_dir: PathBuf,
    /// The cubin the unit consumes, relative to the pipeline root.
    pub cubin: Option<PathBuf>,
}

/// The cubin a compile unit of `config` writes, inside its directory.
pub fn cubin_name(pipeline: &Pipeline, config: Option<&str>) -> String {
    let source = config.map_or(pipeline.kernel.source.as_path(), |c| pipeline.source_of(c));
    let stem = source
        .file_stem()
        .map_or_else(|| "kernel".into(), |s| s.to_string_lossy().into_owned());
    format!("{stem}.cubin")
}

/// Builds the command line of a unit; `Err` says why it cannot be built.
pub fn invocation(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    paths: &Paths,
) -> Result<Invocation, String> {
    build(unit, stage, pipeline, preflight, paths, Build::Run)
}

/// The command line a skipped unit would have run, as the manifest records commands (tool
/// names, repository-relative paths), so the record still says which kernel, shape and mode
/// it was for. Tools this machine lacks (compute-sanitizer, ncu, a harness that cannot start)
/// are named rather than resolved; `None` when the command cannot be built at all (a unit
/// without a case, a dtype without an entry point).
pub fn planned(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    paths: &Paths,
) -> Option<Vec<String>> {
    build(unit, stage, pipeline, preflight, paths, Build::Plan)
        .ok()
        .map(|i| i.display)
}

/// Whether a command line is built to run, or only to be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Run,
    Plan,
}

fn build(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    paths: &Paths,
    build: Build,
) -> Result<Invocation, String> {
    let mut cmd = Argv::default();
    let file = |name: &str| paths.unit_dir.join(name);
    let tool_path = |name: &str| match preflight.toolchain.get(name) {
        Some(t) => Ok(t.path.clone()),
        None if build == Build::Plan => Ok(PathBuf::from(name)),
        None => Err(preflight
            .missing(name)
            .unwrap_or_else(|| format!("{name} not found"))),
    };
    let cubin = || {
        paths
            .cubin
            .clone()
            .ok_or_else(|| "no cubin to work on".to_string())
    };
    // The harness's single launch that compute-sanitizer and ncu wrap, with the stage's own
    // harness arguments after it.
    let wrap_once = |cmd: &mut Argv| -> Result<(), String> {
        harness(
            cmd,
            unit,
            pipeline,
            preflight,
            build,
            &Launch {
                cubin: &cubin()?,
                mode: "once",
                out: &file("harness.json"),
                wrapped: true,
            },
        )?;
        cmd.words(stage.harness_args.iter().map(String::as_str));
        Ok(())
    };
    let arch = unit.arch.as_deref().unwrap_or("sm_90");
    match unit.kind {
        StageKind::Compile => {
            cmd.tool("nvcc", tool_path("nvcc")?);
            cmd.words(["-cubin", "-O3", "-lineinfo"]);
            cmd.word(&format!("-arch={arch}"));
            cmd.words(["-Xptxas", "-v"]);
            let config = unit.config.as_deref().unwrap_or_default();
            let defines = pipeline.matrix.configs.get(config).map(|c| &c.defines);
            for (name, value) in defines.into_iter().flatten() {
                cmd.word(&format!("-D{name}={}", value.0));
            }
            cmd.words(stage.args.iter().map(String::as_str));
            cmd.word("-o");
            let cubin = cubin_name(pipeline, Some(config));
            cmd.path(&file(&cubin));
            cmd.path(pipeline.source_of(config));
            Ok(cmd.finish(
                "nvcc",
                "stdout.log",
                "ptxas.log",
                vec![
                    (cubin, None),
                    ("ptxas.log".into(), Some(Format::Ptxas)),
                    ("stdout.log".into(), None),
                ],
            ))
        }
        StageKind::Sass => {
            cmd.tool("cuobjdump", tool_path("cuobjdump")?);
            cmd.word("-sass");
            cmd.words(stage.args.iter().map(String::as_str));
            cmd.path(&cubin()?);
            Ok(cmd.finish(
                "cuobjdump",
                "sass.log",
                "stderr.log",
                vec![
                    ("sass.log".into(), Some(Format::Sass)),
                    ("stderr.log".into(), None),
                ],
            ))
        }
        kind if config::is_sanitizer(kind) => {
            let tool = config::kind_name(kind);
            cmd.tool("compute-sanitizer", tool_path("compute-sanitizer")?);
            cmd.words(["--tool", tool, "--error-exitcode"]);
            cmd.word(&SANITIZER_ERROR_EXITCODE.to_string());
            if let Some(limit) = stage.print_limit {
                cmd.words(["--print-limit", &limit.to_string()]);
            }
            cmd.words(stage.args.iter().map(String::as_str));
            wrap_once(&mut cmd)?;
            let log = format!("{tool}.log");
            Ok(cmd.finish(
                "compute-sanitizer",
                &log,
                "stderr.log",
                vec![
                    (log.clone(), Some(Format::ComputeSanitizer)),
                    ("harness.json".into(), Some(Format::Harness)),
                    ("stderr.log".into(), None),
                ],
            ))
        }
        StageKind::Check | StageKind::Stress | StageKind::Bench => {
            let mode = config::kind_name(unit.kind);
            harness(
                &mut cmd,
                unit,
                pipeline,
                preflight,
                build,
                &Launch {
                    cubin: &cubin()?,
                    mode,
                    out: &file("harness.json"),
                    wrapped: false,
                },
            )?;
            cmd.words(stage.args.iter().map(String::as_str));
            Ok(cmd.finish(
                "harness",
                "stdout.log",
                "stderr.log",
                vec![
                    ("harness.json".into(), Some(Format::Harness)),
                    ("stdout.log".into(), None),
                    ("stderr.log".into(), None),
                ],
            ))
        }
        StageKind::Profile => {
            cmd.tool("ncu", tool_path("ncu")?);
            cmd.words(["--csv", "--clock-control", "none"]);
            cmd.words(stage.args.iter().map(String::as_str));
            wrap_once(&mut cmd)?;
            Ok(cmd.finish(
                "ncu",
                "ncu.csv",
                "stderr.log",
                vec![
                    ("ncu.csv".into(), Some(Format::NcuCsv)),
                    ("harness.json".into(), Some(Format::Harness)),
                    ("stderr.log".into(), None),
                ],
            ))
        }
        StageKind::Baseline => {
            let case = unit.case.as_ref().ok_or("a baseline unit without a case")?;
            let (program, rest) = stage
                .command
                .split_first()
                .ok_or("the baseline has no command")?;
            match preflight.toolchain.get(program) {
                Some(tool) => cmd.tool(program, tool.path.clone()),
                None => cmd.tool(program, PathBuf::from(program)),
            }
            cmd.words(rest.iter().map(String::as_str));
            cmd.words([
                "--shape",
                &case.shape.to_string(),
                "--dtype",
                &case.dtype.to_string(),
            ]);
            if case.causal {
                cmd.word("--causal");
            }
            cmd.word("--json");
            cmd.words(stage.args.iter().map(String::as_str));
            Ok(cmd.finish(
                "baseline",
                "baseline.json",
                "stderr.log",
                vec![
                    ("baseline.json".into(), Some(Format::Harness)),
                    ("stderr.log".into(), None),
                ],
            ))
        }
        StageKind::Report => Err("the report stage runs no process".to_string()),
        _ => Err("unknown stage kind".to_string()),
    }
}

/// How the harness is launched for a unit.
struct Launch<'a> {
    cubin: &'a Path,
    /// `once`, `check`, `stress` or `bench`.
    mode: &'a str,
    /// Where the harness writes its JSON.
    out: &'a Path,
    /// Whether compute-sanitizer or ncu runs it (their log is its stdout).
    wrapped: bool,
}

fn harness(
    cmd: &mut Argv,
    unit: &Unit,
    pipeline: &Pipeline,
    preflight: &Preflight,
    build: Build,
    launch: &Launch<'_>,
) -> Result<(), String> {
    let Launch {
        cubin,
        mode,
        out,
        wrapped,
    } = *launch;
    let case = unit.case.as_ref().ok_or("a kernel launch without a case")?;
    // A plan names the built-in harness when this machine cannot start one.
    let builtin = [PathBuf::from("runner"), PathBuf::from("harness")];
    let prefix = match (&preflight.harness, build) {
        (Ok(prefix), _) => prefix.as_slice(),
        (Err(_), Build::Plan) => builtin.as_slice(),
        (Err(reason), Build::Run) => return Err(reason.clone()),
    };
    let (program, rest) = prefix.split_first().ok_or("empty harness command")?;
    cmd.tool_inline("runner", program.clone());
    for word in rest {
        cmd.word(&word.to_string_lossy());
    }
    let kernel = pipeline
        .kernel
        .entry_points
        .get(&case.dtype)
        .ok_or_else(|| format!("no entry point for {}", case.dtype))?;
    cmd.word("--cubin");
    cmd.path(cubin);
    cmd.words(["--kernel", kernel, "--shape", &case.shape.to_string()]);
    cmd.words(["--dtype", &case.dtype.to_string()]);
    if case.causal {
        cmd.word("--causal");
    }
    cmd.words(["--mode", mode]);
    if let Some(config) = &unit.config {
        cmd.words(["--config", config]);
    }
    // Under compute-sanitizer and ncu stdout is the tool's log: the JSON goes only to the file,
    // and the harness prints its one-line summary there instead.
    if !wrapped {
        cmd.word("--json");
    }
    cmd.word("--out");
    cmd.path(out);
    Ok(())
}

#[derive(Default)]
struct Argv {
    argv: Vec<OsString>,
    display: Vec<String>,
}

impl Argv {
    fn tool(&mut self, name: &str, path: PathBuf) {
        self.tool_inline(name, path);
    }
    fn tool_inline(&mut self, name: &str, path: PathBuf) {
        self.argv.push(path.into_os_string());
        self.display.push(name.to_string());
    }
    fn word(&mut self, word: &str) {
        self.argv.push(word.into());
        self.display.push(word.to_string());
    }
    fn words<'a>(&mut self, words: impl IntoIterator<Item = &'a str>) {
        for word in words {
            self.word(word);
        }
    }
    fn path(&mut self, path: &Path) {
        self.argv.push(path.as_os_str().to_os_string());
        self.display.push(path.to_string_lossy().into_owned());
    }
    fn finish(
        self,
        tool: &str,
        stdout: &str,
        stderr: &str,
        logs: Vec<(String, Option<Format>)>,
    ) -> Invocation {
        Invocation {
            argv: self.argv,
            display: self.display,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            logs,
            tool: tool.to_string(),
        }
    }
}

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
    /// Whether ncu said it may not read the counters.
    pub counters_denied: bool,
    /// Whether a compile unit's cubin exists.
    pub cubin_present: bool,
}

/// Reads a unit's files and parses those with a format.
pub fn gather(dir: &Path, invocation: &Invocation, cubin: Option<&str>) -> Gathered {
    let mut gathered = Gathered {
        stdout_empty: std::fs::metadata(dir.join(&invocation.stdout))
            .map_or(true, |m| m.len() == 0),
        cubin_present: cubin.is_some_and(|c| dir.join(c).is_file()),
        ..Gathered::default()
    };
    for (name, format) in &invocation.logs {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        gathered.present.push((name.clone(), *format));
        let text = String::from_utf8_lossy(&bytes);
        if *name == invocation.stderr {
            gathered.stderr_last = last_line(&text);
        }
        if *name == invocation.stderr || *name == invocation.stdout {
            gathered.counters_denied |= text.contains("ERR_NVGPUCTRPERM");
        }
        let Some(format) = format else { continue };
        if *format == Format::Harness {
            match serde_json::from_str::<HarnessOutput>(text.trim()) {
                Ok(doc) => gathered.harness = Some(doc),
                Err(e) => gathered.harness_error = Some(format!("{name}: {e}")),
            }
        }
        gathered
            .parsed
            .push((name.clone(), parsers::parse(*format, &text)));
    }
    gathered
}

/// Turns a unit's ending and evidence into its status and reason.
pub fn decide(
    kind: StageKind,
    tool: &str,
    timeout: Duration,
    ending: Ending,
    evidence: &Gathered,
) -> (StageStatus, Option<String>) {
    let code = match ending {
        Ending::TimedOut => {
            return (
                StageStatus::TimedOut,
                Some(format!(
                    "{tool} still running after {}: its process group was killed",
                    humantime::format_duration(timeout)
                )),
            );
        }
        Ending::Interrupted => return (StageStatus::Interrupted, Some("interrupted".into())),
        Ending::Signaled(signal) => {
            return (
                StageStatus::Failed,
                Some(format!("{tool} killed by {}", signal_name(signal))),
            );
        }
        Ending::Exited(code) => code,
    };
    let stderr = || {
        evidence
            .stderr_last
            .as_deref()
            .map(|l| format!(": {l}"))
            .unwrap_or_default()
    };
    let exited = || {
        (
            StageStatus::Failed,
            Some(format!("{tool} exited with status {code}{}", stderr())),
        )
    };
    let findings = findings(evidence);
    match kind {
        StageKind::Compile => {
            if code != 0 {
                return match find_kind(evidence, parsers::FindingKind::CompileError) {
                    Some(message) => (
                        StageStatus::Findings,
                        Some(format!("compile error: {message}")),
                    ),
                    None => exited(),
                };
            }
            if !evidence.cubin_present {
                return (
                    StageStatus::Failed,
                    Some(format!("{tool} exited 0 but wrote no cubin")),
                );
            }
            verdict_from_findings(&findings)
        }
        StageKind::Sass => {
            if code != 0 {
                return exited();
            }
            if evidence.stdout_empty {
                return (StageStatus::Failed, Some(format!("{tool} printed no SASS")));
            }
            verdict_from_findings(&findings)
        }
        kind if config::is_sanitizer(kind) => match code {
            SANITIZER_ERROR_EXITCODE => {
                let errors = evidence
                    .parsed
                    .iter()
                    .filter(|(_, p)| p.format == Format::ComputeSanitizer)
                    .find_map(|(_, p)| p.reported_errors);
                let count = errors.map_or_else(String::new, |n| format!(" {n}"));
                (
                    StageStatus::Findings,
                    Some(format!(
                        "compute-sanitizer reported{count} errors (exit {code})"
                    )),
                )
            }
            0 => {
                if let Some(blocker) = launch_blocker(evidence) {
                    return (StageStatus::Inconclusive, Some(blocker));
                }
                let complete = evidence
                    .parsed
                    .iter()
                    .filter(|(_, p)| p.format == Format::ComputeSanitizer)
                    .all(|(_, p)| p.complete);
                if !findings.is_empty() {
                    return verdict_from_findings(&findings);
                }
                if !complete {
                    return (
                        StageStatus::Inconclusive,
                        Some("compute-sanitizer's summary line is missing".into()),
                    );
                }
                (StageStatus::Passed, None)
            }
            harness_exit::MISBEHAVED => (
                StageStatus::Findings,
                Some(format!("the harness reported a kernel failure{}", stderr())),
            ),
            harness_exit::NO_GPU => skipped_by_harness(evidence),
            _ => exited(),
        },
        StageKind::Check | StageKind::Stress | StageKind::Bench => match code {
            0 => {
                if let Some(blocker) = launch_blocker(evidence) {
                    return (StageStatus::Inconclusive, Some(blocker));
                }
                if let Some(problem) = result_problem(evidence) {
                    return (StageStatus::Findings, Some(problem));
                }
                verdict_from_findings(&findings)
            }
            harness_exit::MISBEHAVED => (
                StageStatus::Findings,
                Some(result_problem(evidence).unwrap_or_else(|| {
                    format!("the harness reported a kernel failure{}", stderr())
                })),
            ),
            harness_exit::NO_GPU => skipped_by_harness(evidence),
            _ => exited(),
        },
        StageKind::Baseline => match code {
            0 => match &evidence.harness {
                None => (
                    StageStatus::Failed,
                    Some(format!(
                        "{tool} printed no harness JSON{}",
                        evidence
                            .harness_error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    )),
                ),
                Some(doc)
                    if !doc.results.is_empty()
                        && doc.results.iter().all(|r| r.skipped.is_some()) =>
                {
                    (
                        StageStatus::Skipped,
                        doc.results.iter().find_map(|r| r.skipped.clone()),
                    )
                }
                Some(doc) if doc.results.is_empty() => (
                    StageStatus::Inconclusive,
                    Some(format!("{tool} printed no results")),
                ),
                Some(_) => (StageStatus::Passed, None),
            },
            harness_exit::NO_GPU => skipped_by_harness(evidence),
            _ => exited(),
        },
        StageKind::Profile => {
            if evidence.counters_denied {
                return (
                    StageStatus::Skipped,
                    Some("ncu cannot read performance counters (ERR_NVGPUCTRPERM)".into()),
                );
            }
            match code {
                0 => {
                    let metrics = evidence
                        .parsed
                        .iter()
                        .filter(|(_, p)| p.format == Format::NcuCsv)
                        .map(|(_, p)| p.metrics.len())
                        .sum::<usize>();
                    if let Some(blocker) = launch_blocker(evidence) {
                        (StageStatus::Inconclusive, Some(blocker))
                    } else if metrics == 0 {
                        (
                            StageStatus::Inconclusive,
                            Some("ncu reported no metrics".into()),
                        )
                    } else {
                        (StageStatus::Passed, None)
                    }
                }
                harness_exit::MISBEHAVED => (
                    StageStatus::Findings,
                    Some(format!("the harness reported a kernel failure{}", stderr())),
                ),
                harness_exit::NO_GPU => skipped_by_harness(evidence),
                _ => exited(),
            }
        }
        _ => exited(),
    }
}

fn findings(evidence: &Gathered) -> Vec<&parsers::Finding> {
    evidence
        .parsed
        .iter()
        .flat_map(|(_, p)| &p.findings)
        .filter(|f| matches!(f.severity, Severity::Error | Severity::Warning))
        .collect()
}

fn verdict_from_findings(findings: &[&parsers::Finding]) -> (StageStatus, Option<String>) {
    if findings.is_empty() {
        return (StageStatus::Passed, None);
    }
    let mut kinds: Vec<String> = findings
        .iter()
        .map(|f| {
            serde_json::to_value(f.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    let n = findings.len();
    (
        StageStatus::Findings,
        Some(format!(
            "{n} finding{}: {}",
            if n == 1 { "" } else { "s" },
            kinds.join(", ")
        )),
    )
}

fn find_kind(evidence: &Gathered, kind: parsers::FindingKind) -> Option<String> {
    evidence
        .parsed
        .iter()
        .flat_map(|(_, p)| &p.findings)
        .find(|f| f.kind == kind)
        .map(|f| f.message.clone())
}

/// Why the evidence cannot show the kernel ran: no harness JSON, or a result that never
/// launched.
fn launch_blocker(evidence: &Gathered) -> Option<String> {
    let Some(doc) = &evidence.harness else {
        return Some(match &evidence.harness_error {
            Some(e) => format!("the harness JSON does not read: {e}"),
            None => "the harness wrote no results: the kernel may never have launched".into(),
        });
    };
    if doc.results.is_empty() {
        return Some("the harness wrote no results: the kernel may never have launched".into());
    }
    doc.results.iter().find(|r| !r.launched).map(|r| {
        format!(
            "the kernel never launched{}",
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        )
    })
}

/// A harness result that shows the kernel misbehaving.
fn result_problem(evidence: &Gathered) -> Option<String> {
    let doc = evidence.harness.as_ref()?;
    doc.results.iter().find_map(|r| {
        if let Some(error) = &r.error {
            return Some(format!("CUDA error: {error}"));
        }
        if let Some(check) = &r.check
            && !check.passed
        {
            return Some(format!(
                "check failed: max abs error {:.3e} (tolerance {:.1e}), {} NaN, {} unwritten",
                check.max_abs_err, check.tolerance, check.nan_count, check.unwritten
            ));
        }
        if let Some(stress) = &r.stress
            && (stress.first_failure.is_some() || stress.mismatched_launches > 0)
        {
            return Some(format!(
                "stress failed at launch {} of {} ({}), {} mismatched",
                stress
                    .first_failure
                    .map_or_else(|| "?".into(), |n| n.to_string()),
                stress.launches,
                stress.failure_kind.as_deref().unwrap_or("mismatch"),
                stress.mismatched_launches
            ));
        }
        None
    })
}

fn skipped_by_harness(evidence: &Gathered) -> (StageStatus, Option<String>) {
    (
        StageStatus::Skipped,
        Some(
            evidence
                .stderr_last
                .clone()
                .unwrap_or_else(|| "no CUDA driver or GPU".to_string()),
        ),
    )
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
}

/// `SIGSEGV`, or `signal N` for one nix does not know.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_string())
}
