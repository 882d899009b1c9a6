//! What each stage kind runs, which logs it leaves, and how its ending becomes a status.
//!
//! [`invocation`] builds a unit's argv from the pipeline's target (the built-in kernel's is
//! written by `config::builtin`): its build per config and arch; cuobjdump on its products;
//! compute-sanitizer (always with `--error-exitcode`, so findings and tool failures stay apart)
//! and ncu around its program; the program itself for check, stress and bench; the baseline
//! command. [`gather`] reads back what the unit wrote and parses it with `parsers`, and
//! [`decide`] turns the process ending plus that evidence into a [`StageStatus`] with a reason.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parsers::harness::HarnessOutput;
use parsers::{Format, ParsedLog, Severity};
use report::{StageKind, StageStatus, TargetKind, Wrapper};

use crate::execution::{profile_launches, target};
use crate::pipeline::config::{self, ExitCodes, Pipeline, Stage, Target};
use crate::planning::plan::Unit;
use crate::process::exec::Ending;
use crate::setup::preflight::Preflight;

/// The exit code compute-sanitizer is told to use when it reports errors.
pub use report::SANITIZER_ERROR_EXITCODE;

/// Bytes of padding memcheck puts after every allocation (`--padding`), unless the stage's args
/// name their own. Without it, allocations can sit back to back (a framework's tensors, made
/// one after another), and a read past the end of one lands inside the next, which memcheck
/// cannot tell from a valid read: flash-attention-minimal's K and V tile loads past a
/// sequence's end at `flash.cu:28` went unseen until memcheck had padding to catch them.
pub const MEMCHECK_PADDING: u64 = 1 << 20;

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
    /// Logs whose format is told from their content (a program's results or timings).
    pub detect: Vec<String>,
    /// Environment variables for the process, besides the runner's own.
    pub env: BTreeMap<String, String>,
    /// Its working directory, relative to the pipeline root; `None`: the root.
    pub cwd: Option<PathBuf>,
    /// What the unit runs, as the manifest records it.
    pub unit: report::Unit,
}

/// The Nsight Compute report a target's profile unit keeps, without its `.ncu-rep` extension.
pub const PROFILE_REPORT: &str = "profile";

/// The sections a target's profile collects unless its stage names its own: those behind ncu's
/// rules on throughput, launch, occupancy, memory access, scheduling and stalls, and the source
/// counters that place them on lines.
pub const PROFILE_SECTIONS: &[&str] = &[
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "MemoryWorkloadAnalysis_Tables",
    "SchedulerStats",
    "WarpStateStats",
    "SourceCounters",
];

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

/// An ncu `--kernel-name` (demangled names) matching every kernel but a Python framework's
/// own: PyTorch's (`at::`, `c10::`, its flash attention), CUB's and Thrust's, and the library
/// kernels of cuDNN and cuBLAS. Checked with ncu 2025.3.1 on an H100: a `load_inline` program's
/// kernel is profiled, `torch.randn`'s before it is not.
pub const FRAMEWORK_KERNELS_EXCLUDED: &str =
    "regex:^(?!(void )?(at::|c10::|cub::|thrust::|pytorch_flash::)|.*(cudnn|cublas|nvjet|xmma)).*";

/// Where things are, for building an invocation.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The unit's directory, relative to the pipeline root (the children's working directory).
    pub unit_dir: PathBuf,
    /// A target's build directory for the unit's config and arch, relative to the pipeline
    /// root.
    pub build_dir: Option<PathBuf>,
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

/// The invocation a skipped unit would have run, built only to be recorded: its command as the
/// manifest records commands (tool names, repository-relative paths) and its unit record, so
/// the record still says which kernel, shape and mode it was for. Tools this machine lacks
/// (compute-sanitizer, ncu, a harness that cannot start) are named rather than resolved; `None`
/// when the command cannot be built at all (a unit without a case, a dtype without an entry
/// point).
pub fn planned(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    paths: &Paths,
) -> Option<Invocation> {
    build(unit, stage, pipeline, preflight, paths, Build::Plan).ok()
}

/// What a planned unit runs, as the manifest records it ([`report::Unit`]), from the plan and
/// the pipeline alone: every unit's record, whether it ran, was skipped, blocked or failed
/// before it started. The fields only its process line knows (its environment, a launch count
/// or register cap given in its arguments) are left for [`invocation`] to fill.
pub fn unit_record(unit: &Unit, pipeline: &Pipeline) -> report::Unit {
    let kind = unit.kind;
    let config = unit
        .config
        .as_deref()
        .and_then(|c| pipeline.matrix.configs.get(c));
    // The built-in kernel's program is the harness: the record names the entry point its case
    // launches and the harness's mode.
    let builtin = pipeline
        .kernel
        .as_ref()
        .filter(|_| config::launches_kernel(kind));
    // A stress stage with `launches:` searches over `{launches}`; one without runs once.
    let launches = (kind == StageKind::Stress)
        .then(|| pipeline.stages.get(unit.stage).and_then(|s| s.launches))
        .flatten();
    let timing_pattern = pipeline
        .stages
        .get(unit.stage)
        .filter(|_| matches!(kind, StageKind::Bench | StageKind::Baseline))
        .and_then(|s| {
            s.pattern
                .as_ref()
                .map(|p| p.recorded(unit.config.as_deref(), pipeline.only_config(), &s.name))
        });
    let target = target_kind(unit, pipeline);
    let profile_launches = (kind == StageKind::Profile)
        .then(|| pipeline.stages.get(unit.stage))
        .flatten()
        .map(|s| {
            let args: &[String] = if unit.profiles_baseline.is_some() {
                &[]
            } else {
                &s.args
            };
            profile_launches::choose(target, args)
        });
    report::Unit {
        target,
        wrapper: wrapper_of(kind),
        defines: defines_of(config),
        env: BTreeMap::new(),
        source: (kind == StageKind::Compile)
            .then(|| config.and_then(|c| c.source.as_deref()))
            .flatten()
            .map(crate::evidence::rundir::slash),
        arch: unit.arch.clone(),
        case: unit.case.as_ref().map(report_case),
        cases: unit.cases.iter().map(report_case).collect(),
        kernel: builtin.and_then(|k| {
            unit.case
                .as_ref()
                .and_then(|c| k.entry_points.get(&c.dtype).cloned())
        }),
        mode: builtin.map(|_| {
            if config::wraps_harness(kind) {
                "once".to_string()
            } else {
                config::kind_name(kind).to_string()
            }
        }),
        launches,
        max_registers: None,
        serves: unit.serves.clone(),
        timing_pattern,
        profile_launches,
    }
}

/// What a unit runs: the build, a tool, the baseline, the built-in harness or the program.
fn target_kind(unit: &Unit, pipeline: &Pipeline) -> TargetKind {
    if unit.profiles_baseline.is_some() {
        return TargetKind::Baseline;
    }
    match unit.kind {
        StageKind::Compile => TargetKind::Build,
        StageKind::Sass | StageKind::Report => TargetKind::Tool,
        StageKind::Baseline => TargetKind::Baseline,
        kind if pipeline.kernel.is_some() && config::launches_kernel(kind) => TargetKind::Harness,
        _ => TargetKind::Program,
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
enum Build {
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

/// A case as the unit record names it.
fn report_case(c: &config::CaseInstance) -> report::Case {
    report::Case {
        name: c.case.clone(),
        label: format!(
            "{} {}{}",
            c.shape,
            c.dtype,
            if c.causal { " causal" } else { "" }
        ),
        shape: Some(parsers::harness::Shape {
            batch: c.shape.batch,
            heads: c.shape.heads,
            seq_len: c.shape.seq_len,
            head_dim: c.shape.head_dim,
        }),
        dtype: Some(c.dtype.to_string()),
        causal: Some(c.causal),
    }
}

/// A config's `-D` defines as the unit record keeps them.
fn defines_of(config: Option<&config::Config>) -> BTreeMap<String, String> {
    config
        .into_iter()
        .flat_map(|c| &c.defines)
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

/// What wraps the target in a stage of this kind.
fn wrapper_of(kind: StageKind) -> Option<Wrapper> {
    let check = match kind {
        StageKind::Memcheck => parsers::Tool::Memcheck,
        StageKind::Racecheck => parsers::Tool::Racecheck,
        StageKind::Initcheck => parsers::Tool::Initcheck,
        StageKind::Synccheck => parsers::Tool::Synccheck,
        StageKind::Profile => return Some(Wrapper::Ncu),
        _ => return None,
    };
    Some(Wrapper::ComputeSanitizer { check })
}

/// A program's argv as run: a first word that names a tool (nvcc, python3, the built-in
/// harness) runs the tool this machine resolved; the other words are as given. `Err` says why
/// the named tool cannot run here.
pub fn resolve_program(preflight: &Preflight, argv: &[String]) -> Result<Vec<OsString>, String> {
    let Some((first, rest)) = argv.split_first() else {
        return Ok(Vec::new());
    };
    let mut out: Vec<OsString> = match preflight.toolchain.get(first.as_str()) {
        Some(tool) => vec![tool.path.clone().into_os_string()],
        // The built-in harness is this executable's `harness` subcommand unless the pipeline
        // names one of its own.
        None if first == "harness" => preflight
            .harness
            .clone()?
            .into_iter()
            .map(PathBuf::into_os_string)
            .collect(),
        None => vec![first.into()],
    };
    out.extend(rest.iter().map(OsString::from));
    Ok(out)
}

/// The file a target's program may write its results or timings to (`{out}`, `EXHIBIT_OUT`).
pub const PROGRAM_OUT: &str = crate::evidence::rundir::PROGRAM_OUT;

/// The placeholder values of a target unit; `absolute` for the process, else as recorded.
pub fn target_vars(
    unit: &Unit,
    pipeline: &Pipeline,
    paths: &Paths,
    launches: Option<u64>,
    absolute: bool,
) -> target::Vars {
    let place = |p: &Path| {
        let p = pipeline.resolve(p);
        if absolute {
            std::path::absolute(&p).unwrap_or(p)
        } else {
            p.strip_prefix(&pipeline.root)
                .map(Path::to_path_buf)
                .unwrap_or(p)
        }
    };
    let config = unit.config.as_deref().unwrap_or_default();
    target::Vars {
        build_dir: place(paths.build_dir.as_deref().unwrap_or(Path::new("build"))),
        arch: unit.arch.clone().unwrap_or_default(),
        config: config.to_string(),
        defines: target::define_words(pipeline.matrix.configs.get(config)),
        source: pipeline
            .matrix
            .configs
            .get(config)
            .and_then(|c| c.source.as_deref())
            .map(place),
        launches,
        case: unit.case.clone(),
        env: pipeline
            .matrix
            .configs
            .get(config)
            .map(|c| c.env.clone())
            .unwrap_or_default(),
        out: config::launches_kernel(unit.kind)
            .then(|| place(&paths.unit_dir.join(PROGRAM_OUT)))
            .or_else(|| {
                (unit.kind == StageKind::Baseline).then(|| place(&paths.unit_dir.join(PROGRAM_OUT)))
            }),
    }
}

/// The program argv and environment of a target unit (before any wrapper), both as run and as
/// recorded.
pub struct ProgramLine {
    pub argv: Vec<String>,
    pub display: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub env_display: BTreeMap<String, String>,
}

/// The words and environment a target unit's program (or build) runs with.
pub fn program_line(
    unit: &Unit,
    stage: &Stage,
    pipeline: &Pipeline,
    preflight: &Preflight,
    target: &Target,
    paths: &Paths,
    launches: Option<u64>,
) -> ProgramLine {
    let words: Vec<String> = if unit.kind == StageKind::Compile {
        target
            .build
            .as_ref()
            .map(|b| b.command.clone())
            .unwrap_or_default()
    } else {
        target.command_of(stage).to_vec()
    };
    let mut words = words;
    // A wrapper (compute-sanitizer, ncu) takes the stage's args for itself.
    if unit.kind != StageKind::Compile && !config::wraps_harness(unit.kind) {
        words.extend(stage.args.iter().cloned());
    }
    let run = target_vars(unit, pipeline, paths, launches, true);
    let shown = target_vars(unit, pipeline, paths, launches, false);
    let config = unit
        .config
        .as_deref()
        .and_then(|c| pipeline.matrix.configs.get(c));
    let mut extra: BTreeMap<String, String> = BTreeMap::new();
    if unit.kind == StageKind::Compile {
        if let Some(config) = config {
            extra.extend(config.build_env.clone());
        }
        extra.extend(target.build.iter().flat_map(|b| b.env.clone()));
    } else {
        if let Some(config) = config {
            extra.extend(config.env.clone());
        }
        extra.extend(target.program.env.clone());
    }
    extra.extend(stage.env.clone());
    if config::is_sanitizer(unit.kind) && target.program.is_python() {
        // The caching allocator hands out slabs: an access past a tensor lands inside another
        // block and memcheck sees nothing (pytorch#45294).
        extra.insert("PYTORCH_NO_CUDA_MEMORY_CACHING".into(), "1".into());
    }
    let mut env = run.env();
    // A script that calls `nvcc` by name (a build script, CMake, torch's extension builder)
    // finds the compiler the preflight found. Not recorded: that compiler's version is in the
    // manifest and in every cache key.
    if let Some(path) = preflight
        .toolchain
        .search_path(std::env::var_os("PATH").as_deref())
    {
        env.insert("PATH".into(), path);
    }
    env.extend(extra.clone());
    let mut env_display = shown.env();
    env_display.extend(extra);
    ProgramLine {
        argv: run.expand(&words),
        display: shown.expand(&words),
        env,
        env_display,
    }
}

/// A target's units (the built-in kernel's too): its build, its program alone or inside
/// compute-sanitizer or ncu, and its baseline. The SASS of its products, a stress search and a
/// stage split by test run several processes and are driven by the orchestrator; this builds
/// their first step's record.
fn build(
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
    // The program line as run (its first word resolved), and as recorded.
    let push_program = |cmd: &mut Argv| -> Result<(), String> {
        let argv = match resolve_program(preflight, &line.argv) {
            Ok(argv) => argv,
            Err(_) if build == Build::Plan => line.argv.iter().map(OsString::from).collect(),
            Err(reason) => return Err(reason),
        };
        cmd.argv.extend(argv);
        cmd.display.extend(line.display.iter().cloned());
        Ok(())
    };
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
            if kind == StageKind::Memcheck && !stage.args.iter().any(|a| a.starts_with("--padding"))
            {
                cmd.words(["--padding", &MEMCHECK_PADDING.to_string()]);
            }
            if let Some(file) = &stage.suppressions {
                cmd.word("--suppressions");
                cmd.path(file);
            }
            cmd.words(stage.args.iter().map(String::as_str));
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
            cmd.words(["--target-processes", "all"]);
            profile_report(&mut cmd, stage, pipeline, paths);
            // The user's kernels, not the framework's: unless the stage names its own filter,
            // only the kernels the build defined are profiled.
            // The profile stage's ncu arguments are the program's; the baseline's profile takes
            // the runner's bounded default over every kernel it launches (the baseline's are
            // the framework's).
            let of_baseline = unit.profiles_baseline.is_some();
            let stage_args: &[String] = if of_baseline { &[] } else { &stage.args };
            let own_filter = of_baseline
                || stage_args.iter().any(|a| {
                    a == "-k" || a.starts_with("--kernel-name") || a.starts_with("--kernel-id")
                });
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
            // The pattern reads the file the command names as `{out}`, else stdout.
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
        StageKind::Check | StageKind::Stress | StageKind::Bench | StageKind::Baseline => {
            push_program(&mut cmd)?;
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

/// Turns a unit's ending and evidence into its status and reason. A program that fails is a
/// finding (the program is what is under test) unless its exit status says it did not test
/// (`exits`); a tool that breaks is a failure.
pub fn decide(
    kind: StageKind,
    tool: &str,
    timeout: Duration,
    ending: Ending,
    evidence: &Gathered,
    exits: &ExitCodes,
) -> (StageStatus, Option<String>) {
    let how = || {
        crate::execution::target::failure_line(&evidence.program_output, "")
            .map(|l| format!(": {l}"))
            .unwrap_or_default()
    };
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
        Ending::Signaled(signal) if kind == StageKind::Compile => {
            return (
                StageStatus::Failed,
                Some(format!("{tool} killed by {}", signal_name(signal))),
            );
        }
        Ending::Signaled(signal) => {
            return (
                StageStatus::Findings,
                Some(format!(
                    "the program was killed by {}{}",
                    signal_name(signal),
                    how()
                )),
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
    // The program said it did not test: it could not here, or it broke before it did.
    if kind != StageKind::Compile && code != SANITIZER_ERROR_EXITCODE {
        // A program that never started is a broken pipeline, not evidence about a kernel.
        if code != 0
            && let Some(line) =
                crate::execution::target::could_not_start(&evidence.program_output, code)
        {
            return (
                StageStatus::Failed,
                Some(format!("the program could not start: {line}")),
            );
        }
        if exits.skipped.contains(&code) {
            return (
                StageStatus::Skipped,
                Some(
                    evidence.stderr_last.clone().unwrap_or_else(|| {
                        format!("the program could not test here (exit {code})")
                    }),
                ),
            );
        }
        if exits.broken.contains(&code) {
            return (
                StageStatus::Failed,
                Some(format!("the program exited with status {code}{}", stderr())),
            );
        }
    }
    let findings = findings(evidence);
    let results_failed = evidence
        .parsed
        .iter()
        .filter(|(_, p)| {
            matches!(
                p.format,
                Format::ProgramResults | Format::Harness | Format::JUnit
            )
        })
        .flat_map(|(_, p)| &p.findings)
        .find(|f| f.severity == Severity::Error)
        .map(|f| f.message.clone());
    // What its results say went wrong: the harness's own words first.
    let result_failure = || result_problem(evidence).or_else(|| results_failed.clone());
    match kind {
        StageKind::Compile if code != 0 => {
            match find_kind(evidence, parsers::FindingKind::CompileError) {
                Some(message) => (
                    StageStatus::Findings,
                    Some(format!("compile error: {message}")),
                ),
                None => (
                    StageStatus::Failed,
                    Some(format!("{tool} exited with status {code}{}", how())),
                ),
            }
        }
        StageKind::Compile => verdict_from_findings(&findings),
        kind if config::is_sanitizer(kind) => {
            let log = evidence
                .parsed
                .iter()
                .find(|(_, p)| p.format == Format::ComputeSanitizer)
                .map(|(_, p)| p);
            let complete = log.is_some_and(|p| p.complete);
            let errors = log.and_then(|p| p.reported_errors).unwrap_or(0);
            if code == SANITIZER_ERROR_EXITCODE || errors > 0 {
                return (
                    StageStatus::Findings,
                    Some(format!("compute-sanitizer reported {errors} errors")),
                );
            }
            if !complete && code == 0 {
                return (
                    StageStatus::Inconclusive,
                    Some("compute-sanitizer's summary line is missing".into()),
                );
            }
            if !complete {
                return (
                    StageStatus::Failed,
                    Some(format!(
                        "compute-sanitizer exited with status {code} without its summary{}",
                        how()
                    )),
                );
            }
            if code != 0 {
                return (
                    StageStatus::Findings,
                    Some(format!(
                        "the program failed (exit {code}) with no {} error{}",
                        config::kind_name(kind),
                        how()
                    )),
                );
            }
            if let Some(blocker) = launch_blocker(evidence) {
                return (StageStatus::Inconclusive, Some(blocker));
            }
            if let Some(failure) = result_failure() {
                return (StageStatus::Findings, Some(failure));
            }
            (StageStatus::Passed, None)
        }
        StageKind::Check | StageKind::Stress | StageKind::Bench => {
            if code != 0 {
                return (
                    StageStatus::Findings,
                    Some(result_failure().unwrap_or_else(|| {
                        format!("the program exited with status {code}{}", how())
                    })),
                );
            }
            if let Some(blocker) = launch_blocker(evidence) {
                return (StageStatus::Inconclusive, Some(blocker));
            }
            if let Some(failure) = result_failure() {
                return (StageStatus::Findings, Some(failure));
            }
            if kind == StageKind::Bench
                && let Some(problem) = &evidence.pattern_problem
            {
                return (StageStatus::Inconclusive, Some(problem.clone()));
            }
            let timings = evidence
                .parsed
                .iter()
                .map(|(_, p)| {
                    p.timings.len() + p.results.iter().filter(|r| r.bench.is_some()).count()
                })
                .sum::<usize>();
            if kind == StageKind::Bench && timings == 0 {
                return (
                    StageStatus::Inconclusive,
                    Some(
                        "the program printed no timings in a known format (exhibit.harness/1, \
                         pytest-benchmark or Google Benchmark JSON, on stdout or in {out})"
                            .into(),
                    ),
                );
            }
            verdict_from_findings(&findings)
        }
        StageKind::Baseline => {
            if code != 0 {
                return (
                    StageStatus::Failed,
                    Some(format!("the baseline exited with status {code}{}", how())),
                );
            }
            if let Some(doc) = &evidence.harness
                && !doc.results.is_empty()
                && doc.results.iter().all(|r| r.skipped.is_some())
            {
                return (
                    StageStatus::Skipped,
                    doc.results.iter().find_map(|r| r.skipped.clone()),
                );
            }
            if let Some(problem) = &evidence.pattern_problem {
                return (StageStatus::Inconclusive, Some(problem.clone()));
            }
            if !evidence.program_results {
                return (
                    StageStatus::Inconclusive,
                    Some("the baseline printed no timings in a known format".into()),
                );
            }
            (StageStatus::Passed, None)
        }
        StageKind::Profile => {
            if evidence.counters_denied {
                return (
                    StageStatus::Skipped,
                    Some("ncu cannot read performance counters (ERR_NVGPUCTRPERM)".into()),
                );
            }
            let metrics = evidence
                .parsed
                .iter()
                .filter(|(_, p)| p.format == Format::NcuCsv)
                .map(|(_, p)| p.metrics.len())
                .sum::<usize>();
            if code != 0 {
                (
                    StageStatus::Findings,
                    Some(result_failure().unwrap_or_else(|| {
                        format!("the program failed under ncu (exit {code}){}", how())
                    })),
                )
            } else if let Some(blocker) = launch_blocker(evidence) {
                (StageStatus::Inconclusive, Some(blocker))
            } else if metrics == 0 {
                (
                    StageStatus::Inconclusive,
                    Some("ncu reported no metrics (does the kernel filter match?)".into()),
                )
            } else {
                (StageStatus::Passed, None)
            }
        }
        _ if code != 0 => (
            StageStatus::Failed,
            Some(format!("{tool} exited with status {code}{}", stderr())),
        ),
        _ => verdict_from_findings(&findings),
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

/// Why the evidence cannot show the kernel ran: results (exhibit.harness/1) that say a launch
/// never happened.
fn launch_blocker(evidence: &Gathered) -> Option<String> {
    let doc = evidence.harness.as_ref()?;
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
                "check failed: max abs error {:.3e} (tolerance {:.1e}), {} NaN, {} unwritten{}",
                check.max_abs_err,
                check.tolerance,
                check.nan_count,
                check.unwritten,
                report::check_failure::within_tolerance_failure(r)
                    .map(|why| format!("; within tolerance, it failed on: {why}"))
                    .unwrap_or_default()
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
