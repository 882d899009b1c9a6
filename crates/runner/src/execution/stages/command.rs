//! A unit's command line for each stage kind: the tool and its words (compute-sanitizer's,
//! ncu's, cuobjdump's), the program line, and the logs the process leaves.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use parsers::Format;
use report::StageKind;

use crate::execution::profile_launches;
use crate::pipeline::config::{self, Pipeline, Stage, Target};
use crate::planning::plan::Unit;
use crate::setup::preflight::Preflight;

use super::{
    FRAMEWORK_KERNELS_EXCLUDED, Invocation, MEMCHECK_PADDING, PROFILE_REPORT, PROFILE_SECTIONS,
    PROGRAM_OUT, Paths, ProgramLine, SANITIZER_ERROR_EXITCODE, program_line, resolve_program,
    target_kind, unit_record,
};

/// ncu's words for a profile unit, the built-in kernel's or a target's: a report kept in the
/// unit directory (for the Nsight Compute GUI), whose details and source pages are exported as
/// CSV afterwards ([`crate::execution::steps::profile`]), with source correlation: unless the stage
/// chooses a set, the sections behind ncu's rules (or the stage's own sections) and the
/// per-line source counters. A stage's `--metrics` are collected beside them.
fn profile_report(cmd: &mut Argv, stage: &Stage, pipeline: &Pipeline, paths: &Paths) {
    cmd.words([
        "--clock-control",
        "none",
        "--import-source",
        "yes",
        "-f",
        "-o",
    ]);
    let report = paths.unit_dir.join(PROFILE_REPORT);
    // Absolute: the program's working directory need not be the pipeline's.
    let absolute = pipeline.resolve(&report);
    let absolute = std::path::absolute(&absolute).unwrap_or(absolute);
    cmd.argv.push(absolute.into_os_string());
    cmd.display.push(report.to_string_lossy().into_owned());
    let set = stage
        .args
        .iter()
        .any(|a| a == "--set" || a.starts_with("--set="));
    let sections: Vec<&str> = stage
        .args
        .iter()
        .zip(stage.args.iter().skip(1))
        .filter(|(a, _)| *a == "--section")
        .map(|(_, name)| name.as_str())
        .chain(
            stage
                .args
                .iter()
                .filter_map(|a| a.strip_prefix("--section=")),
        )
        .collect();
    if set {
        return;
    }
    if sections.is_empty() {
        for section in PROFILE_SECTIONS {
            cmd.words(["--section", section]);
        }
    } else if !sections.contains(&"SourceCounters") {
        // The stage's own sections, and the per-line counters a diagnosis names lines from.
        cmd.words(["--section", "SourceCounters"]);
    }
}

/// Where a tool is: the path the preflight found, or its name in a command built only to be
/// recorded; `Err` says why it cannot run.
fn tool_path(preflight: &Preflight, name: &str, build: Build) -> Result<PathBuf, String> {
    match preflight.toolchain.get(name) {
        Some(t) => Ok(t.path.clone()),
        None if build == Build::Plan => Ok(PathBuf::from(name)),
        None => Err(preflight
            .missing(name)
            .unwrap_or_else(|| format!("{name} not found"))),
    }
}

/// Whether a command line is built to run, or only to be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Build {
    Run,
    Plan,
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
            detect: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            unit: report::Unit::default(),
        }
    }
}

/// The number after `name` (`name N` or `name=N`) in a command line.
fn flag(words: &[String], name: &str) -> Option<u64> {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if word == name {
            return words.next().and_then(|n| n.parse().ok());
        }
        if let Some(value) = word.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return value.parse().ok();
        }
    }
    None
}

/// A target's units (the built-in kernel's too): its build, its program alone or inside
/// compute-sanitizer or ncu, and its baseline. The SASS of its products, a stress search and a
/// stage split by test run several processes and are driven by the orchestrator; this builds
/// their first step's record.
pub(super) fn build(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    paths: &Paths,
    build: Build,
) -> Result<Invocation, String> {
    let target: &Target = pipeline
        .target
        .as_ref()
        .ok_or("the pipeline has no target")?;
    let tool_path = |name: &str| tool_path(preflight, name, build);
    // A stress stage with `launches:` searches over `{launches}`; one without runs once.
    let launches = (unit.kind == StageKind::Stress)
        .then_some(stage.launches)
        .flatten();
    // A profile of the baseline runs the baseline stage's command, with its args and env.
    let program_stage = unit
        .profiles_baseline
        .and_then(|b| pipeline.stages.get(b))
        .unwrap_or(stage);
    let line = program_line(
        unit,
        program_stage,
        pipeline,
        preflight,
        target,
        paths,
        launches,
    );
    let mut cmd = Argv::default();
    let push_program = |cmd: &mut Argv| push_program_line(cmd, preflight, &line, build);
    let kind = unit.kind;
    let mut invocation = match kind {
        StageKind::Compile => {
            push_program(&mut cmd)?;
            // Named by its command's first word in messages: `nvcc exited with status 2`.
            let tool = line
                .display
                .first()
                .and_then(|w| Path::new(w).file_name())
                .map_or_else(|| "build".to_string(), |n| n.to_string_lossy().into_owned());
            cmd.finish(
                &tool,
                "stdout.log",
                "stderr.log",
                vec![
                    ("stdout.log".into(), Some(Format::Ptxas)),
                    ("stderr.log".into(), Some(Format::Ptxas)),
                ],
            )
        }
        StageKind::Sass => {
            cmd.tool("cuobjdump", tool_path("cuobjdump")?);
            // The SASS and, for the kernels no ptxas log covers (JIT builds), their registers,
            // stack frame and shared memory.
            cmd.words(["-sass", "-res-usage"]);
            cmd.words(stage.args.iter().map(String::as_str));
            cmd.finish("cuobjdump", "products.log", "stderr.log", Vec::new())
        }
        kind if config::is_sanitizer(kind) => {
            let tool = config::kind_name(kind);
            cmd.tool("compute-sanitizer", tool_path("compute-sanitizer")?);
            sanitizer_words(&mut cmd, kind, stage);
            push_program(&mut cmd)?;
            let log = format!("{tool}.log");
            let mut inv = cmd.finish(
                "compute-sanitizer",
                &log,
                "stderr.log",
                vec![
                    (log.clone(), Some(Format::ComputeSanitizer)),
                    ("stderr.log".into(), None),
                ],
            );
            inv.detect.push(PROGRAM_OUT.into());
            inv
        }
        StageKind::Profile => {
            cmd.tool("ncu", tool_path("ncu")?);
            let stage_args = ncu_words(&mut cmd, unit, stage, pipeline, target, paths);
            // The stage's args are ncu's (kernel filter, launch count, sections).
            cmd.words(stage_args.iter().map(String::as_str));
            push_program(&mut cmd)?;
            let mut inv = cmd.finish(
                "ncu",
                "ncu.log",
                "stderr.log",
                vec![
                    // ncu's own messages (and the program's output) while it profiled.
                    ("ncu.log".into(), Some(Format::NcuCsv)),
                    ("ncu.csv".into(), Some(Format::NcuCsv)),
                    ("source.csv".into(), Some(Format::NcuSource)),
                    ("stderr.log".into(), None),
                ],
            );
            // What the program wrote under ncu: the problem it ran, for the report.
            inv.detect.push(PROGRAM_OUT.into());
            inv
        }
        StageKind::Bench | StageKind::Baseline if stage.pattern.is_some() => {
            push_program(&mut cmd)?;
            timed_by_pattern(cmd, target, stage)
        }
        StageKind::Check | StageKind::Stress | StageKind::Bench | StageKind::Baseline => {
            push_program(&mut cmd)?;
            program_alone(cmd, kind)
        }
        _ => return Err("the report stage runs no process".to_string()),
    };
    invocation.env = line.env;
    invocation.cwd = if kind == StageKind::Compile {
        None
    } else {
        target.program.cwd.clone()
    };
    // The record from the plan, and what the process line adds to it.
    let mut record = unit_record(unit, pipeline);
    record.env = line.env_display;
    record.launches = launches.or_else(|| flag(&line.display, "--launches"));
    record.max_registers = flag(&line.display, "-maxrregcount").and_then(|n| u32::try_from(n).ok());
    invocation.unit = record;
    Ok(invocation)
}

/// The program line as run (its first word resolved), and as recorded.
fn push_program_line(
    cmd: &mut Argv,
    preflight: &Preflight,
    line: &ProgramLine,
    build: Build,
) -> Result<(), String> {
    let argv = match resolve_program(preflight, &line.argv) {
        Ok(argv) => argv,
        Err(_) if build == Build::Plan => line.argv.iter().map(OsString::from).collect(),
        Err(reason) => return Err(reason),
    };
    cmd.argv.extend(argv);
    cmd.display.extend(line.display.iter().cloned());
    Ok(())
}

/// compute-sanitizer's words before the program: the tool, the exit code its findings end
/// with, the stage's print limit, memcheck's padding, suppressions and the stage's own args.
fn sanitizer_words(cmd: &mut Argv, kind: StageKind, stage: &Stage) {
    let tool = config::kind_name(kind);
    cmd.words([
        "--tool",
        tool,
        "--target-processes",
        "all",
        "--error-exitcode",
    ]);
    cmd.word(&SANITIZER_ERROR_EXITCODE.to_string());
    if let Some(limit) = stage.print_limit {
        cmd.words(["--print-limit", &limit.to_string()]);
    }
    if kind == StageKind::Memcheck && !stage.args.iter().any(|a| a.starts_with("--padding")) {
        cmd.words(["--padding", &MEMCHECK_PADDING.to_string()]);
    }
    if let Some(file) = &stage.suppressions {
        cmd.word("--suppressions");
        cmd.path(file);
    }
    cmd.words(stage.args.iter().map(String::as_str));
}

/// ncu's words before the stage's own args: the report, the kernel filter and which launches.
/// Returns the stage's ncu args (none for the baseline's profile).
fn ncu_words<'s>(
    cmd: &mut Argv,
    unit: &Unit,
    stage: &'s Stage,
    pipeline: &Pipeline,
    target: &Target,
    paths: &Paths,
) -> &'s [String] {
    cmd.words(["--target-processes", "all"]);
    profile_report(cmd, stage, pipeline, paths);
    // The user's kernels, not the framework's: unless the stage names its own filter,
    // only the kernels the build defined are profiled.
    // The profile stage's ncu arguments are the program's; the baseline's profile takes
    // the runner's bounded default over every kernel it launches (the baseline's are
    // the framework's).
    let of_baseline = unit.profiles_baseline.is_some();
    let stage_args: &[String] = if of_baseline { &[] } else { &stage.args };
    let own_filter = of_baseline
        || stage_args
            .iter()
            .any(|a| a == "-k" || a.starts_with("--kernel-name") || a.starts_with("--kernel-id"));
    let built = paths
        .build_dir
        .as_ref()
        .map(|d| crate::execution::target::built_kernels(&pipeline.resolve(d)))
        .unwrap_or_default();
    let built_filter = crate::execution::target::kernel_filter(&built);
    let filter = if !own_filter && !built.is_empty() {
        Some(("mangled", built_filter.as_str()))
    } else if !own_filter && target.program.is_python() {
        // Kernels compiled just in time (load_inline, Triton) have no build log to name
        // them: leave out the framework's own (PyTorch's, CUB's, cuDNN's, cuBLAS's), so
        // the user's are what ncu measures, not the first kernel the process launches.
        Some(("demangled", FRAMEWORK_KERNELS_EXCLUDED))
    } else {
        None
    };
    // Which launches: the stage's own choice, or the runner's bounded default (which
    // carries the name filter inside its `--kernel-id`).
    let launches = profile_launches::choose(target_kind(unit, pipeline), stage_args);
    match profile_launches::words(launches, filter) {
        Some(words) => cmd.words(words.iter().map(String::as_str)),
        None => {
            if let Some((base, filter)) = filter {
                cmd.words(["--kernel-name-base", base, "--kernel-name", filter]);
            }
        }
    }
    stage_args
}

/// A bench or baseline whose timings a pattern reads: from the file the command names as
/// `{out}`, else from stdout.
fn timed_by_pattern(cmd: Argv, target: &Target, stage: &Stage) -> Invocation {
    let out = target
        .command_of(stage)
        .iter()
        .chain(&stage.args)
        .any(|w| w.contains("{out}"));
    let text = Some(Format::TextTimings);
    let mut inv = cmd.finish(
        "program",
        "stdout.log",
        "stderr.log",
        vec![
            ("stdout.log".into(), if out { None } else { text }),
            ("stderr.log".into(), None),
        ],
    );
    if out {
        inv.logs.push((PROGRAM_OUT.into(), text));
    } else {
        // Results (exhibit.results/1, JUnit) the program may still write to
        // `EXHIBIT_OUT`.
        inv.detect.push(PROGRAM_OUT.into());
    }
    inv
}

/// The program run alone (check, stress, bench, baseline): the results it may write to
/// `EXHIBIT_OUT`, and for a bench or baseline, timings printed on stdout.
fn program_alone(cmd: Argv, kind: StageKind) -> Invocation {
    let mut inv = cmd.finish(
        "program",
        "stdout.log",
        "stderr.log",
        vec![("stdout.log".into(), None), ("stderr.log".into(), None)],
    );
    inv.detect.push(PROGRAM_OUT.into());
    if matches!(kind, StageKind::Bench | StageKind::Baseline) {
        // Timings printed on stdout count when no file was written.
        inv.detect.push("stdout.log".into());
    }
    inv
}
