//! The command line: what each subcommand does, and the [`Outcome`] the exit code follows from.
//!
//! `main.rs` parses the arguments into [`Cli`], calls [`execute`], and maps the result to an
//! exit code in one place.

mod bisect;
mod host;
mod stored;

use bisect::bisect;
use host::{attach, run_remote};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use stored::{diff, explain, pack, parse, report};

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use crate::evidence::rundir::ReadError;
use crate::execution::orchestrate::{self, Context, Options, RunError, Verdict};
use crate::pipeline::config::{self, ConfigError, Pipeline};
use crate::planning::plan::Selection;
use crate::process::interrupt::Interrupt;
use crate::process::progress::{self, Terminal};
use crate::process::remote;
use crate::setup::preflight::BuiltinHarness;
use crate::setup::toolchain::Env;

/// Runs pipeline.yaml: compile, inspect, sanitize, stress, bench and profile a CUDA kernel,
/// then report.
#[derive(Debug, Parser)]
#[command(
    name = "exhibit",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// When the first argument is neither a subcommand nor an existing file but close to a
/// subcommand (`chek`, `reprot`), what to say instead of "no such file".
pub fn mistyped_command(args: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory;
    let first = args.get(1)?.to_str()?;
    if first.starts_with('-') || first.contains(['/', '.']) || Path::new(first).exists() {
        return None;
    }
    let command = Cli::command();
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    if names.iter().any(|n| n == first) {
        return None;
    }
    let closest = names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(first, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min()?;
    Some(format!(
        "`{first}` is neither a subcommand nor a file: did you mean `exhibit {}`? (commands: {})",
        closest.1,
        names.join(", ")
    ))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a pipeline (the default when the first argument is a file).
    Run(RunArgs),
    /// Write a commented pipeline.yaml for the program found in DIR (a .cu file, a CMake
    /// project, a PyTorch extension, a Triton, CuPy or Numba script), never over an existing one, then check
    /// it.
    Init {
        /// The program's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Validate a pipeline file without running anything.
    Check {
        /// The pipeline file.
        pipeline: PathBuf,
    },
    /// Render the report of a stored run directory (no tools needed).
    Report {
        /// A run directory (`artifacts/<run-id>`), or a run id as the run printed it (its first
        /// characters will do), or `latest`, looked for in `./artifacts`.
        run_dir: PathBuf,
        /// The report's format: Markdown, JSON, SARIF 2.1.0 or JUnit XML.
        #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
        format: ReportFormat,
        /// The short form (verdict, root causes, timings against the baseline) for a
        /// pull-request comment or `$GITHUB_STEP_SUMMARY`; Markdown only.
        #[arg(long)]
        summary: bool,
        /// SARIF: Exhibit's home page, the driver's `informationUri`.
        #[arg(long, env = "EXHIBIT_HOME", value_name = "URL")]
        home: Option<String>,
        /// SARIF: where `docs/rules.md` is served; each rule's `helpUri` is its section there.
        #[arg(long, env = "EXHIBIT_RULES_URI", value_name = "URL")]
        rules_uri: Option<String>,
    },
    /// Print the rules the report applies, one section per rule id (`docs/rules.md`), or the
    /// section of one rule.
    Rules {
        /// A rule id, as reports and SARIF name it (`out-of-bounds`).
        rule: Option<String>,
    },
    /// Keep a pipeline folder's newest runs and remove the others' run directories
    /// (`artifacts/<id>`) and reports (`reports/<id>.*`).
    Gc {
        /// The pipeline's folder.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// How many of the newest runs to keep.
        #[arg(long, default_value_t = 10)]
        keep: usize,
    },
    /// Diagnose raw logs with no run directory (exit 0 clean, 1 problems found).
    Explain {
        /// The logs: any tool output `exhibit parse` reads (ptxas, SASS, compute-sanitizer,
        /// Nsight Compute CSV pages, harness or benchmark JSON, JUnit XML), `.gz` too.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The explanation's format: Markdown, JSON, SARIF 2.1.0 or JUnit XML.
        #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
        format: ReportFormat,
        /// Parse every file as this format instead of detecting it.
        #[arg(long = "as", value_enum, value_name = "LOG_FORMAT")]
        log_format: Option<LogFormat>,
    },
    /// Find the first commit after GOOD up to BAD at which the evidence changed as it did
    /// between them: a root cause BAD has (or, with --slower, a slower timing). Each commit runs
    /// in a worktree of its own; the user's working tree is never touched.
    Bisect(BisectArgs),
    /// Compare two stored runs: new and fixed findings, resource and timing changes (exit 1 on a
    /// regression).
    Diff {
        /// The earlier run: a run directory (`artifacts/<run-id>`) or a run id, as for `report`;
        /// what B is compared against.
        run_a: PathBuf,
        /// The later run directory: its new and fixed findings are A's counted against it.
        run_b: PathBuf,
        /// The comparison's format: Markdown, JSON, SARIF 2.1.0 or JUnit XML.
        #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
        format: ReportFormat,
        /// Compare timings even when the runs' GPUs or drivers differ.
        #[arg(long)]
        allow_different_gpu: bool,
        /// The smallest change in a timing, in percent, ever called faster or slower.
        #[arg(long, default_value_t = 1.0, value_parser = percent)]
        min_effect: f64,
        /// The significance level of the Mann-Whitney U test made where both runs kept raw
        /// timing samples.
        #[arg(long, default_value_t = 0.05, value_parser = probability)]
        alpha: f64,
        /// Compare runs of different pipelines or programs (refused otherwise).
        #[arg(long)]
        force: bool,
    },
    /// Follow a remote run started with `--host` until it ends, then bring its run directory and
    /// report back (after a dropped connection or a Ctrl-C that left it running).
    Attach {
        /// The session, as `--host` printed it.
        session: String,
        /// The directory of the pipeline the session ran (where `artifacts/.remote/` is).
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Compress a stored run's large logs (gzip) so that it can be committed; `report` reads them
    /// as before.
    Pack {
        /// A run directory (`artifacts/<run-id>`) or a run id, as for `report`.
        run_dir: PathBuf,
        /// Compress logs of at least this many bytes.
        #[arg(long, default_value_t = 256 * 1024)]
        min_bytes: u64,
    },
    /// Detect each file's format and print what the parsers found in it.
    Parse {
        /// The logs to parse (`.gz` too).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the `{"inputs": [...]}` JSON instead of a summary.
        #[arg(long)]
        json: bool,
        /// Parse every file as this format instead of detecting it.
        #[arg(long = "as", value_enum, value_name = "LOG_FORMAT")]
        format: Option<LogFormat>,
    },
    /// The kernel harness (crates/harness), built into the runner so one binary runs every
    /// stage: its arguments and exit codes are the harness's own (`exhibit harness --help`).
    #[command(disable_help_flag = true)]
    Harness {
        /// The harness's arguments (`--cubin`, `--mode`, ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// The pipeline file, e.g. pipeline.yaml.
    #[arg(required = true)]
    pub pipeline: Option<PathBuf>,
    #[command(flatten)]
    pub options: RunOptions,
}

/// How to run a pipeline: `exhibit PIPELINE`'s options, which `exhibit bisect` takes too.
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Run every stage even when an earlier run had the same inputs, and ask every tool its
    /// version and the GPU again instead of reusing what an earlier run learned.
    #[arg(long)]
    pub force: bool,
    /// Run only these stages (and the compile stage they depend on).
    #[arg(long, value_name = "STAGE", num_args = 1, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Run only these matrix configs.
    #[arg(
        long = "config",
        value_name = "NAME",
        num_args = 1,
        value_delimiter = ','
    )]
    pub configs: Vec<String>,
    /// Units at once (default: the number of CPU cores); `-j 1` runs one unit at a time. Bench,
    /// baseline and profile always run alone.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Units sharing one GPU at once (sanitizers, check, stress); default: one per two units
    /// at once, at most one per 8 GiB of GPU memory.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub gpu_jobs: Option<u16>,
    /// Spread GPU units over GPUs: `all`, or the first N (by `CUDA_VISIBLE_DEVICES` when set);
    /// each unit gets its GPU as `CUDA_VISIBLE_DEVICES`. By default the CUDA runtime picks one.
    #[arg(long, value_name = "all|N", value_parser = parse_gpus)]
    pub gpus: Option<orchestrate::Gpus>,
    /// Run on this machine over SSH (`user@host`, or a name from ~/.ssh/config): the inputs are
    /// synced there, the run goes on if the connection drops, and its run directory and report
    /// come back here.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// With --host: where work directories and runner binaries go on the remote, absolute or
    /// relative to its home (default ~/.cache/exhibit), e.g. a scratch file system.
    #[arg(long, value_name = "DIR", requires = "host")]
    pub remote_dir: Option<String>,
    /// Run GPU units as Slurm jobs, with these sbatch options (e.g. "--partition=gpu
    /// --gres=gpu:1"); units that run alone add --exclusive. The run directory must be on a
    /// file system the compute nodes share.
    #[arg(long, value_name = "SBATCH OPTIONS", allow_hyphen_values = true)]
    pub slurm: Option<String>,
    /// Fail (exit 3) when no stage ran the program on a GPU: a compile-only or unchecked run
    /// (a CI runner that lost its driver, a container started without `--gpus`) is then no
    /// pass.
    #[arg(long)]
    pub require_gpu: bool,
    /// Print only what needs attention: no preflight lines and no line for a unit that
    /// passed; skips, failures, findings and the verdict still print.
    #[arg(short, long)]
    pub quiet: bool,
    /// Colour the units' status words: on a terminal unless NO_COLOR is set (auto), always,
    /// or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = progress::Color::Auto)]
    pub color: progress::Color,
}

impl RunOptions {
    /// The options a remote runner is given: these, without `--host`.
    fn forwarded(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.force {
            args.push("--force".to_string());
        }
        if !self.only.is_empty() {
            args.extend(["--only".to_string(), self.only.join(",")]);
        }
        if !self.configs.is_empty() {
            args.extend(["--config".to_string(), self.configs.join(",")]);
        }
        if let Some(jobs) = self.jobs {
            args.extend(["--jobs".to_string(), jobs.to_string()]);
        }
        if let Some(jobs) = self.gpu_jobs {
            args.extend(["--gpu-jobs".to_string(), jobs.to_string()]);
        }
        if let Some(options) = &self.slurm {
            args.extend(["--slurm".to_string(), options.clone()]);
        }
        if self.require_gpu {
            args.push("--require-gpu".to_string());
        }
        if self.quiet {
            args.push("--quiet".to_string());
        }
        match self.gpus {
            Some(orchestrate::Gpus::All) => args.extend(["--gpus".into(), "all".into()]),
            Some(orchestrate::Gpus::Count(n)) => args.extend(["--gpus".into(), n.to_string()]),
            Some(orchestrate::Gpus::Default) | None => {}
        }
        args
    }
}

fn parse_gpus(text: &str) -> Result<orchestrate::Gpus, String> {
    match text {
        "all" => Ok(orchestrate::Gpus::All),
        n => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(orchestrate::Gpus::Count(n)),
            _ => Err(format!(
                "`{n}`: expected `all` or a number of GPUs (1 or more)"
            )),
        },
    }
}

/// `exhibit bisect`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    /// A commit without it (any revision git understands: a hash, a tag, `HEAD~30`).
    pub good: String,
    /// A commit with it.
    pub bad: String,
    /// The pipeline file, in the repository.
    #[arg(default_value = "pipeline.yaml")]
    pub pipeline: PathBuf,
    /// Look for this root cause of BAD's run, numbered from 1 as its report numbers them
    /// (default: BAD's only one, or the first one GOOD has not).
    #[arg(long, value_name = "N", conflicts_with = "slower", value_parser = clap::value_parser!(u16).range(1..))]
    pub cause: Option<u16>,
    /// Look for the commit that made a timing slower: a config's name, or part of a timing's
    /// label as `exhibit diff` shows it (`d64`, `B=2 H=8 S=512`).
    #[arg(long, value_name = "BENCH")]
    pub slower: Option<String>,
    /// The answer's format on stdout (both are kept beside the runs).
    #[arg(long, value_enum, default_value_t = BisectFormat::Md)]
    pub format: BisectFormat,
    /// The short form, for a pull-request comment; Markdown only.
    #[arg(long)]
    pub summary: bool,
    #[command(flatten)]
    pub options: RunOptions,
}

/// A rendered format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown.
    Md,
    /// JSON.
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, for CI dashboards.
    Junit,
}

/// The formats of `exhibit bisect`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BisectFormat {
    /// Markdown (`bisect.md`).
    Md,
    /// JSON (`bisect.json`).
    Json,
}

impl From<BisectFormat> for ReportFormat {
    fn from(format: BisectFormat) -> ReportFormat {
        match format {
            BisectFormat::Md => ReportFormat::Md,
            BisectFormat::Json => ReportFormat::Json,
        }
    }
}

/// Log formats `exhibit parse --format` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Ptxas,
    Sass,
    ComputeSanitizer,
    ComputeSanitizerXml,
    NcuCsv,
    NcuSource,
    Harness,
    PytestBenchmark,
    GoogleBenchmark,
    Nvbench,
    ProgramResults,
    Junit,
}

/// How a command ended, when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing wrong found.
    Clean,
    /// Findings (or a regression).
    Findings,
    /// Some stage failed, timed out or was inconclusive.
    Incomplete,
    /// Interrupted by this signal (its number), once its stage's processes ended and the
    /// manifest was written.
    Interrupted(i32),
}

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pipeline file is bad.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The command line asks for something that does not exist.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A remote run could not be started, followed or collected.
    #[error(transparent)]
    Remote(#[from] remote::RemoteError),
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Bisect(#[from] crate::bisect::BisectError),
}

impl Error {
    /// Whether the user can fix this by changing the command line or the pipeline file.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Config(_) | Error::Usage(_) => true,
            Error::Bisect(crate::bisect::BisectError::Usage(_)) => true,
            Error::Run(RunError::Plan(_) | RunError::Gpus(_)) => true,
            Error::Read(ReadError::Refused { source, .. }) => {
                matches!(source, crate::evidence::rundir::Refused::Missing)
            }
            _ => false,
        }
    }
}

/// What the binary provides beyond the library: the built-in harness, if any.
pub struct Host {
    pub harness: BuiltinHarness,
}

/// Runs a parsed command line.
pub fn execute(cli: Cli, host: Host) -> Result<Outcome, Error> {
    match cli.command {
        Some(Command::Run(args)) => run(args, host),
        None => run(cli.run, host),
        Some(Command::Check { pipeline }) => check(&pipeline),
        Some(Command::Init { dir }) => init(&dir),
        Some(Command::Bisect(args)) => bisect(args, host),
        Some(Command::Attach { session, root }) => attach(&root, &session),
        Some(Command::Report {
            run_dir,
            format,
            summary,
            home,
            rules_uri,
        }) => report(
            &stored_run(&run_dir)?,
            format,
            summary,
            &report::Home {
                information_uri: home,
                rules_uri,
            },
        ),
        Some(Command::Pack { run_dir, min_bytes }) => pack(&stored_run(&run_dir)?, min_bytes),
        Some(Command::Rules { rule }) => rules(rule.as_deref()),
        Some(Command::Gc { dir, keep }) => gc(&dir, keep),
        Some(Command::Parse {
            files,
            json,
            format,
        }) => parse(&files, json, format),
        Some(Command::Explain {
            files,
            format,
            log_format,
        }) => explain(&files, format, log_format),
        Some(Command::Diff {
            run_a,
            run_b,
            format,
            allow_different_gpu,
            min_effect,
            alpha,
            force,
        }) => {
            let options = report::DiffOptions {
                allow_different_gpu,
                noise: report::noise::NoiseOptions {
                    min_change: min_effect / 100.0,
                    alpha,
                    ..report::noise::NoiseOptions::default()
                },
            };
            diff(
                &stored_run(&run_a)?,
                &stored_run(&run_b)?,
                format,
                &options,
                force,
            )
        }
        // `main` hands `exhibit harness ...` to the harness before parsing: the subcommand is
        // here for `--help` and the commands' list.
        Some(Command::Harness { .. }) => Err(Error::Usage(
            "`harness` must be the first argument: `exhibit harness --help`".into(),
        )),
    }
}

fn terminated(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn run(args: RunArgs, host: Host) -> Result<Outcome, Error> {
    let path = args
        .pipeline
        .clone()
        .ok_or_else(|| Error::Usage("name a pipeline file, e.g. `exhibit pipeline.yaml`".into()))?;
    let pipeline = Pipeline::load(&path)?;
    let opts = &args.options;
    // A selection that names what the pipeline lacks is a usage error before any tool is asked.
    crate::planning::plan::check_selection(
        &pipeline,
        &Selection {
            stages: opts.only.clone(),
            configs: opts.configs.clone(),
        },
    )
    .map_err(|e| Error::Run(RunError::Plan(e)))?;
    if let Some(remote_host) = &opts.host {
        let base = remote::base(opts.remote_dir.as_deref())?;
        return run_remote(&pipeline, &path, remote_host, &base, &opts.forwarded());
    }
    let interrupt = signals()?;
    prepare(&pipeline);
    opts.color.apply();
    let terminal = Terminal::new().quiet(opts.quiet);
    let cx = Context {
        env: Env {
            reuse_facts: !opts.force,
            stages: opts.only.clone(),
            ..Env::from_process()
        },
        harness: host.harness,
        progress: &terminal,
        interrupt,
    };
    let selection = Selection {
        stages: opts.only.clone(),
        configs: opts.configs.clone(),
    };
    let finished = orchestrate::run(&pipeline, &run_options(opts, selection, opts.force)?, &cx)?;
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for stage in &finished.run.stages {
        *counts
            .entry(progress::status_word(stage.status))
            .or_default() += 1;
    }
    // "8 passed, 1 with findings": each status as a word that reads with any count.
    let counts: Vec<String> = counts
        .iter()
        .map(|(k, v)| match *k {
            "findings" => format!("{v} with findings"),
            "timed_out" => format!("{v} timed out"),
            _ => format!("{v} {k}"),
        })
        .collect();
    // Relative to the directory the command ran in (the pipeline's as the command line named
    // it), or absolute.
    let root = |p: &std::path::Path| crate::evidence::rundir::shown(&pipeline.root.join(p));
    // Progress went to stderr; the result (the verdict and where to read it) goes to stdout.
    say!("run {}: {}", finished.run.id, counts.join(", "));
    let mut result = String::new();
    if let Some(headline) = &finished.headline {
        result.push_str(&format!("verdict: {headline}\n"));
    }
    match &finished.report {
        Some(report) => result.push_str(&format!("report: {}\n", root(report))),
        None => result.push_str(&format!("artifacts: {}\n", root(&finished.dir))),
    }
    if finished.report.is_some() {
        say!("artifacts: {}", root(&finished.dir));
    }
    print(&result)?;
    Ok(
        match required(opts.require_gpu, finished.judged, finished.verdict) {
            Verdict::Clean => Outcome::Clean,
            Verdict::Findings => Outcome::Findings,
            Verdict::Incomplete => Outcome::Incomplete,
            Verdict::Interrupted => {
                Outcome::Interrupted(cx.interrupt.first().unwrap_or(signal_hook::consts::SIGINT))
            }
        },
    )
}

/// `--require-gpu`: a clean verdict of a run in which no stage ran the program on a GPU
/// (compile-only, or nothing checked) is no pass, and says so.
fn required(require_gpu: bool, judged: Option<report::VerdictKind>, verdict: Verdict) -> Verdict {
    let unchecked = matches!(
        judged,
        Some(report::VerdictKind::CompileOnly | report::VerdictKind::NotChecked)
    );
    if require_gpu && unchecked && verdict == Verdict::Clean {
        say!(
            "--require-gpu: no stage ran the program on a GPU (the report's stages say why each \
             was skipped): exit 3"
        );
        return Verdict::Incomplete;
    }
    verdict
}

/// What a run here needs before it starts: the runner adopts orphans, and ends what a killed run
/// left running.
fn prepare(pipeline: &Pipeline) {
    crate::process::leftovers::become_subreaper();
    let orphans = crate::process::leftovers::sweep_orphans(pipeline.grace);
    if !orphans.is_empty() {
        // Command lines are a program's text: no control sequence reaches the terminal.
        say!(
            "{}",
            report::text::strip_controls(&format!(
                "ended {} process{} that a killed run left running: {}",
                orphans.len(),
                if orphans.len() == 1 { "" } else { "s" },
                orphans.join("; ")
            ))
        );
    }
}

/// The orchestrator's options from the command line's.
fn run_options(opts: &RunOptions, selection: Selection, force: bool) -> Result<Options, Error> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let min_free_bytes = match std::env::var("EXHIBIT_MIN_FREE_BYTES") {
        Ok(text) => text.trim().parse().map_err(|_| {
            Error::Usage(format!(
                "EXHIBIT_MIN_FREE_BYTES: `{text}` is not a number of bytes"
            ))
        })?,
        Err(_) => crate::evidence::rundir::MIN_FREE_BYTES,
    };
    Ok(Options {
        min_free_bytes,
        force,
        selection,
        limits: crate::planning::schedule::Limits {
            jobs: opts.jobs.map_or(cores, usize::from),
            // 0: decided from the cores and the GPU's memory once the preflight knows it.
            gpu_jobs: opts.gpu_jobs.map_or(0, usize::from),
            gpus: 1,
        },
        gpus: opts.gpus.unwrap_or_default(),
        launcher: match &opts.slurm {
            Some(options) => crate::process::slurm::Launcher::Slurm(
                options.split_whitespace().map(str::to_string).collect(),
            ),
            None => crate::process::slurm::Launcher::Local,
        },
    })
}

/// A stored run as the command line names it: a run directory, or a run id as a run prints
/// it (`20261129T111642Z-217076f7`, or its first characters where they name one run), or
/// `latest`, looked for in `./artifacts`.
fn stored_run(named: &std::path::Path) -> Result<PathBuf, Error> {
    let Some(name) = named.to_str().filter(|n| {
        !named.exists() && !n.is_empty() && !n.contains(['/', '\\']) && !n.starts_with('.')
    }) else {
        return Ok(named.to_path_buf());
    };
    let artifacts = std::path::Path::new(crate::evidence::rundir::ARTIFACTS);
    let mut runs: Vec<String> = std::fs::read_dir(artifacts)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("manifest.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    let matching: Vec<&String> = if name == "latest" {
        runs.last().into_iter().collect()
    } else {
        runs.iter().filter(|r| r.starts_with(name)).collect()
    };
    match matching.as_slice() {
        [one] => Ok(artifacts.join(one)),
        [] => Err(Error::Usage(format!(
            "{name}: no such run directory, and no run of that id in {}/",
            artifacts.display()
        ))),
        several => Err(Error::Usage(format!(
            "{name}: names {} runs in {}/ ({}); give more of the id",
            several.len(),
            artifacts.display(),
            several
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `exhibit rules [ID]`: every rule's section, or one rule's; an unknown id is refused with the
/// nearest ones.
fn rules(id: Option<&str>) -> Result<Outcome, Error> {
    let Some(id) = id else {
        print(&report::render_rules())?;
        return Ok(Outcome::Clean);
    };
    if let Some(section) = report::render_rule(id) {
        print(section.trim_start())?;
        return Ok(Outcome::Clean);
    }
    let ids = report::rule_ids();
    let near = ids
        .iter()
        .map(|n| (strsim::damerau_levenshtein(id, n), n))
        .min()
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .map(|(_, n)| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    Err(Error::Usage(format!(
        "`{}` is no rule id: {near}(rules: {})",
        crate::init::plain(id),
        ids.join(", ")
    )))
}

/// `exhibit gc DIR --keep N`.
fn gc(dir: &std::path::Path, keep: usize) -> Result<Outcome, Error> {
    let collected = crate::evidence::gc::collect(dir, keep)
        .map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
    say!(
        "removed {} ({:.1} MB), kept the newest {}",
        plural_runs(collected.removed.len()),
        collected.bytes as f64 / 1e6,
        collected.kept
    );
    for id in &collected.unfinished {
        say!(
            "kept {id}: still being written, or cut short (remove it by hand once it is not running)"
        );
    }
    Ok(Outcome::Clean)
}

fn plural_runs(n: usize) -> String {
    format!("{n} run{}", plural(n))
}

/// `exhibit init DIR`: writes the pipeline, says what it found, then checks it.
fn init(dir: &std::path::Path) -> Result<Outcome, Error> {
    use crate::init::InitError;
    let written = crate::init::init(dir).map_err(|e| match e {
        InitError::Io(..) => Error::Io(e.to_string()),
        _ => Error::Usage(e.to_string()),
    })?;
    say!(
        "wrote {} for {}: edit it, then `exhibit {}`",
        crate::evidence::rundir::shown(&written.path),
        written.found,
        crate::evidence::rundir::shown(&written.path)
    );
    if let Some(ignore) = &written.ignored {
        say!(
            "added artifacts/ and reports/ (what each run writes) to {}",
            crate::evidence::rundir::shown(ignore)
        );
    }
    check(&written.path)
}

/// What a stage of a target runs, beside the build and program lines: the tool around the
/// program (`<program>`) with the stage's own arguments, the program with them, or a
/// baseline's own command; `None` for a stage that runs the build or the program as they are.
fn runs(stage: &config::Stage) -> Option<Vec<String>> {
    use report::StageKind;
    let args = stage.args.iter().cloned();
    let program = "<program>".to_string();
    let argv: Vec<String> = match stage.kind {
        kind if config::is_sanitizer(kind) => {
            ["compute-sanitizer", "--tool", config::kind_name(kind)]
                .map(String::from)
                .into_iter()
                .chain(args)
                .chain([program])
                .collect()
        }
        // With no launch selection of its own the runner chooses the first launches.
        StageKind::Profile if stage.args.is_empty() => vec![
            "ncu".to_string(),
            program,
            "(its first launches of each kernel)".to_string(),
        ],
        StageKind::Profile => std::iter::once("ncu".to_string())
            .chain(args)
            .chain([program])
            .collect(),
        StageKind::Baseline if !stage.command.is_empty() => {
            stage.command.iter().cloned().chain(args).collect()
        }
        StageKind::Sass => vec!["cuobjdump".to_string(), "-sass".to_string()],
        StageKind::Compile | StageKind::Report => return None,
        _ if stage.args.is_empty() => return None,
        _ => std::iter::once(program).chain(args).collect(),
    };
    Some(argv)
}

fn check(path: &std::path::Path) -> Result<Outcome, Error> {
    let pipeline = Pipeline::load_and_check_tools(path)?;
    let mut out = String::new();
    // Builds: each config for its own archs (a config may pin one), not configs x archs.
    let builds: usize = pipeline
        .matrix
        .configs
        .keys()
        .map(|c| pipeline.archs_of(c).len())
        .sum();
    out.push_str(&format!(
        "{}: ok: {} config{} ({} build{}), {} case{}, {} stage{}\n",
        path.display(),
        pipeline.matrix.configs.len(),
        plural(pipeline.matrix.configs.len()),
        builds,
        plural(builds),
        pipeline.cases.len(),
        plural(pipeline.cases.len()),
        pipeline.stages.len(),
        plural(pipeline.stages.len()),
    ));
    let width = pipeline
        .stages
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(10);
    // What a target's stages run: its build and its program, each stage's tool around it. A
    // script given in one word (`python3 -c`) is shown by its size.
    let shell = |argv: &[String]| {
        argv.iter()
            .map(|w| {
                if w.trim_end().contains('\n') {
                    format!("<script of {} lines>", w.trim_end().lines().count())
                } else if w.is_empty()
                    || w.contains(|c: char| c.is_whitespace() || "'\"$;&|".contains(c))
                {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Some(target) = &pipeline.target {
        if let Some(build) = &target.build {
            out.push_str(&format!(
                "  build:   {}\n",
                crate::init::plain(&shell(&build.command))
            ));
        }
        out.push_str(&format!(
            "  program: {}\n",
            crate::init::plain(&shell(&target.program.command))
        ));
    }
    for stage in &pipeline.stages {
        let mut needs = Vec::new();
        if stage.needs.gpu {
            needs.push("gpu".to_string());
        }
        needs.extend(stage.needs.tools.iter().cloned());
        out.push_str(&format!(
            "  {:<width$} {:<10} {:<8} timeout {:<6} needs {}{}\n",
            stage.name,
            config::kind_name(stage.kind),
            if stage.enabled { "enabled" } else { "disabled" },
            humantime::format_duration(stage.timeout).to_string(),
            if needs.is_empty() {
                "nothing".to_string()
            } else {
                needs.join(", ")
            },
            if stage.cases.is_empty() {
                String::new()
            } else {
                format!("; cases {}", stage.cases.join(", "))
            }
        ));
        if let Some(runs) = pipeline.target.as_ref().and_then(|_| runs(stage)) {
            out.push_str(&format!(
                "  {:<width$} runs {}\n",
                "",
                crate::init::plain(&shell(&runs))
            ));
        }
    }
    // The knobs experiments may vary: named, or found where the configs vary a value.
    for knob in config::knobs_of(&pipeline) {
        let values: Vec<String> = knob
            .values
            .iter()
            .map(|(config, value)| format!("{config}={value}"))
            .collect();
        out.push_str(&format!(
            "  knob {:<9} {}{}{}{}\n",
            knob.role.as_str(),
            knob.input.describe(),
            knob.tile.map(|t| format!(", tile {t}")).unwrap_or_default(),
            match (knob.inferred, &knob.input) {
                (true, report::experiment::KnobInput::SeqLen) => {
                    " (found where the cases vary it)"
                }
                (true, _) => " (found where the configs vary it)",
                _ => "",
            },
            if values.is_empty() {
                String::new()
            } else {
                format!(": {}", values.join(", "))
            }
        ));
    }
    out.push_str(&format!(
        "  experiments {}\n",
        if pipeline.experiments_on() {
            "on (the report's hypotheses are tested by more runs)"
        } else {
            "off"
        }
    ));
    print(&out)?;
    Ok(Outcome::Clean)
}

/// Writes to stdout, without terminal escape sequences or control characters.
fn print(text: &str) -> Result<(), Error> {
    let text = report::text::strip_controls(text);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        // A closed pipe (`exhibit parse ... | head`) is not an error of ours.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Io(format!("write to stdout: {e}"))),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Asks a yes/no question on the terminal.
fn ask(question: &str) -> bool {
    let _ = write!(std::io::stderr(), "{question}");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
}

/// Ctrl-C, SIGTERM and SIGHUP, counted from now on.
fn signals() -> Result<Interrupt, Error> {
    Interrupt::from_signals().map_err(|e| Error::Io(format!("install signal handlers: {e}")))
}

/// A percentage from 0 to 100.
fn percent(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("`{text}` is not a percentage from 0 to 100")),
    }
}

/// A probability strictly between 0 and 1.
fn probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("`{text}` is not a probability between 0 and 1")),
    }
}
