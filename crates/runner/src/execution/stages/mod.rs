//! What each stage kind runs, which logs it leaves, and how its ending becomes a status.
//!
//! [`invocation`] builds a unit's argv from the pipeline's target (the built-in kernel's is
//! written by `config::builtin`): its build per config and arch; cuobjdump on its products;
//! compute-sanitizer (always with `--error-exitcode`, so findings and tool failures stay apart)
//! and ncu around its program; the program itself for check, stress and bench; the baseline
//! command. [`gather`] reads back what the unit wrote and parses it with `parsers`, and
//! [`decide`] turns the process ending plus that evidence into a [`StageStatus`] with a reason.

mod command;
mod decide;
mod gather;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use parsers::Format;
use report::{StageKind, TargetKind, Wrapper};

use crate::execution::{profile_launches, target};
use crate::pipeline::config::{self, Pipeline, Stage, Target};
use crate::planning::plan::Unit;
use crate::setup::preflight::Preflight;
use command::{Build, build};
pub use decide::{decide, signal_name};
pub use gather::{Gathered, gather};

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
    let sanitized_launches = wrapper_of(kind)
        .filter(|w| matches!(w, Wrapper::ComputeSanitizer { .. }))
        .and(pipeline.stages.get(unit.stage))
        .and_then(|s| sanitized_launches(&s.args));
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
        elements: (kind == StageKind::Profile)
            .then(|| pipeline.stages.get(unit.stage).and_then(|s| s.elements))
            .flatten(),
        max_registers: None,
        serves: unit.serves.clone(),
        timing_pattern,
        profile_launches,
        sanitized_launches,
    }
}

/// What a unit runs: the build, a tool, the baseline, the built-in harness or the program.
pub(super) fn target_kind(unit: &Unit, pipeline: &Pipeline) -> TargetKind {
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

/// Which launches compute-sanitizer instruments, where a stage's arguments choose: the first N
/// (`--launch-count N` or `-c N` alone), or a selection (a skip, a kernel filter).
fn sanitized_launches(args: &[String]) -> Option<report::SanitizedLaunches> {
    let mut count = None;
    let mut selected = false;
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word, None),
        };
        match name {
            "--launch-count" | "-c" => {
                let value = inline.or_else(|| words.next());
                match value.and_then(|v| v.parse::<u64>().ok()) {
                    // compute-sanitizer reads 0 as every launch.
                    Some(0) => {}
                    Some(n) => count = Some(n),
                    None => selected = true,
                }
            }
            "--launch-skip" | "-s" => {
                let value = inline.or_else(|| words.next());
                selected |= value != Some("0");
            }
            "--kernel-name" | "--kernel-name-exclude" | "-k" => selected = true,
            _ => {}
        }
    }
    match (selected, count) {
        (true, _) => Some(report::SanitizedLaunches::Selected),
        (false, Some(count)) => Some(report::SanitizedLaunches::First { count }),
        (false, None) => None,
    }
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
