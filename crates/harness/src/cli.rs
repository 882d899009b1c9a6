//! The command line: parsing and validation into a [`Command`]. Usage errors are clap errors
//! (exit code 2).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

use crate::canary::{DEFAULT_GUARD_BYTES, GUARD_ALIGN};
use crate::float::Dtype;
use crate::problem::Shape;

/// The seed used when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 0x5EED_CAFE_F00D_0001;

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Describe the driver and device as JSON.
    Probe(ProbeOptions),
    /// Load a cubin and run one mode.
    Run(RunOptions),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOptions {
    pub device: usize,
    pub out: Option<PathBuf>,
}

/// A validated run request.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    pub cubin: PathBuf,
    pub kernel: String,
    pub shape: Shape,
    pub dtype: Dtype,
    pub causal: bool,
    pub mode: Mode,
    pub launches: u64,
    pub sync: SyncPolicy,
    pub config: Option<String>,
    pub json: bool,
    pub out: Option<PathBuf>,
    pub seed: u64,
    pub tolerance: Option<f64>,
    pub random_shapes: usize,
    pub full_reference: bool,
    pub cache: CacheMode,
    pub timing: Timing,
    pub max_seconds: f64,
    pub target_noise: f64,
    pub warmup_ms: f64,
    pub measure_peaks: bool,
    pub guard_bytes: usize,
    pub device: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// One launch, for compute-sanitizer and ncu to wrap.
    Once,
    /// Compare with the f64 CPU reference.
    Check,
    /// Repeated launches, each output compared bitwise with the first.
    Stress,
    /// Timing.
    Bench,
}

impl Mode {
    pub fn to_schema(self) -> parsers::harness::Mode {
        match self {
            Mode::Once => parsers::harness::Mode::Once,
            Mode::Check => parsers::harness::Mode::Check,
            Mode::Stress => parsers::harness::Mode::Stress,
            Mode::Bench => parsers::harness::Mode::Bench,
        }
    }
}

/// When stress synchronises with the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// After every launch.
    Every,
    /// After every K launches (and after the last).
    EveryK(u64),
    /// Once, after the last launch.
    End,
}

impl SyncPolicy {
    /// Parses `every`, `every:K` (K >= 1) or `end`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "every" => Ok(SyncPolicy::Every),
            "end" => Ok(SyncPolicy::End),
            _ => {
                let k = text
                    .strip_prefix("every:")
                    .ok_or_else(|| format!("expected every, every:K or end, got `{text}`"))?;
                match k.parse::<u64>() {
                    Ok(0) | Err(_) => {
                        Err(format!("K in every:K must be an integer >= 1, got `{k}`"))
                    }
                    Ok(1) => Ok(SyncPolicy::Every),
                    Ok(k) => Ok(SyncPolicy::EveryK(k)),
                }
            }
        }
    }

    /// Whether the host synchronises after launch `index` (1-based) of `total`.
    pub fn syncs_after(self, index: u64, total: u64) -> bool {
        index >= total
            || match self {
                SyncPolicy::Every => true,
                SyncPolicy::EveryK(k) => index.is_multiple_of(k),
                SyncPolicy::End => false,
            }
    }

    /// The most launches between two synchronisations.
    pub fn window(self, total: u64) -> u64 {
        match self {
            SyncPolicy::Every => 1,
            SyncPolicy::EveryK(k) => k.min(total),
            SyncPolicy::End => total,
        }
    }

    pub fn name(self) -> String {
        match self {
            SyncPolicy::Every => "every".to_string(),
            SyncPolicy::EveryK(k) => format!("every:{k}"),
            SyncPolicy::End => "end".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CacheMode {
    /// Inputs may stay in L2 between samples.
    Warm,
    /// A buffer larger than L2 is written before every sample.
    Cold,
}

impl CacheMode {
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Warm => "warm",
            CacheMode::Cold => "cold",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Timing {
    /// CUDA events around each launch.
    Events,
    /// CUDA events around replays of a captured graph of launches.
    Graph,
    /// Graph when a launch takes under 50 us (launch-bound), else events.
    Auto,
}

#[derive(Debug, Parser)]
#[command(
    name = "harness",
    version,
    about = "Checks, stresses and times a compiled attention kernel (exhibit.harness/1 JSON).",
    after_help = "Exit codes: 0 ok, 1 the kernel misbehaved, 2 usage, 3 infrastructure error, \
                  4 no CUDA driver or GPU."
)]
struct Args {
    /// Print the CUDA driver and device as JSON and exit.
    #[arg(long)]
    probe: bool,
    /// The compiled kernel.
    #[arg(long, value_name = "FILE", required_unless_present = "probe")]
    cubin: Option<PathBuf>,
    /// Entry point to launch [default: the `--entry-point` of the dtype, else
    /// attention_fwd_<dtype>].
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// The entry point of one dtype, e.g. `bf16=attention_fwd_bf16` (repeatable): the one of
    /// `--dtype` is launched, so one command line serves every case.
    #[arg(long = "entry-point", value_name = "DTYPE=NAME")]
    entry_points: Vec<String>,
    /// Problem shape B,H,S,D.
    #[arg(long, value_name = "B,H,S,D", required_unless_present = "probe")]
    shape: Option<String>,
    #[arg(long, value_enum, required_unless_present = "probe")]
    dtype: Option<Dtype>,
    /// Causal mask (query i sees keys 0..=i); `--causal false` is the dense problem.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    causal: bool,
    #[arg(long, value_enum, required_unless_present = "probe")]
    mode: Option<Mode>,
    /// Launches in stress mode.
    #[arg(long, value_name = "N", default_value_t = 100)]
    launches: u64,
    /// Host synchronisation in stress mode: every, every:K or end.
    #[arg(long, value_name = "POLICY", default_value = "every")]
    sync: String,
    /// Named config from pipeline.yaml, copied into the JSON.
    #[arg(long, value_name = "NAME")]
    config: Option<String>,
    /// Print the JSON document on stdout (otherwise a summary).
    #[arg(long)]
    json: bool,
    /// Also write the JSON document to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Seed of every input, guard pattern and random shape.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Relative L2 tolerance of check [default: 1e-3 for f16, 1e-2 for bf16].
    #[arg(long, value_name = "REL")]
    tolerance: Option<f64>,
    /// Check N seeded random shapes too (both masks each).
    #[arg(long, value_name = "N")]
    random_shapes: Option<usize>,
    /// Compare every row with the reference even when that is slow (default: sample rows of
    /// large problems).
    #[arg(long)]
    full_reference: bool,
    /// L2 state in bench mode.
    #[arg(long, value_enum, default_value = "warm")]
    cache: CacheMode,
    /// Timing method in bench mode.
    #[arg(long, value_enum, default_value = "events")]
    timing: Timing,
    /// Time cap of bench sampling, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    max_seconds: f64,
    /// Stop bench sampling when the median's relative 95% CI half-width is under this.
    #[arg(long, value_name = "REL", default_value_t = 0.005)]
    target_noise: f64,
    /// Warm-up time before bench sampling, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200.0)]
    warmup_ms: f64,
    /// Skip measuring the device-to-device copy bandwidth in bench mode.
    #[arg(long)]
    no_peaks: bool,
    /// Bytes of each guard region (a multiple of 256; 0 under compute-sanitizer memcheck, so
    /// out-of-bounds accesses leave the allocation).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_GUARD_BYTES)]
    guard_bytes: usize,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

/// Parses the command line (`args` starts with the program name, as `std::env::args_os`
/// does). Errors carry clap's exit code: 2 for usage errors, 0 for `--help` and `--version`.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, clap::Error> {
    let args = Args::try_parse_from(args)?;
    let invalid = |msg: String| Args::command().error(clap::error::ErrorKind::ValueValidation, msg);
    if args.probe {
        return Ok(Command::Probe(ProbeOptions {
            device: args.device,
            out: args.out,
        }));
    }
    let (Some(cubin), Some(shape), Some(dtype), Some(mode)) =
        (args.cubin, args.shape, args.dtype, args.mode)
    else {
        return Err(invalid(
            "--cubin, --shape, --dtype and --mode are required".to_string(),
        ));
    };
    let shape = Shape::parse(&shape).map_err(|e| invalid(format!("--shape: {e}")))?;
    let sync = SyncPolicy::parse(&args.sync).map_err(|e| invalid(format!("--sync: {e}")))?;
    let mut chosen = None;
    for entry in &args.entry_points {
        let Some((name, symbol)) = entry.split_once('=') else {
            return Err(invalid(format!(
                "--entry-point: `{entry}` is not DTYPE=NAME"
            )));
        };
        let of = Dtype::from_str(name, true).map_err(|_| {
            invalid(format!(
                "--entry-point: `{name}` is not a dtype (f16, bf16)"
            ))
        })?;
        if of == dtype {
            chosen = Some(symbol.to_string());
        }
    }
    let kernel = args
        .kernel
        .or(chosen)
        .unwrap_or_else(|| dtype.default_kernel().to_string());
    if kernel.is_empty() || kernel.contains('\0') {
        return Err(invalid(format!(
            "--kernel: `{kernel}` is not a symbol name"
        )));
    }
    if args.launches == 0 {
        return Err(invalid("--launches must be at least 1".to_string()));
    }
    if let Some(t) = args.tolerance
        && !(t.is_finite() && t > 0.0)
    {
        return Err(invalid(format!(
            "--tolerance must be a positive number, got {t}"
        )));
    }
    if !(args.target_noise.is_finite() && args.target_noise > 0.0 && args.target_noise < 1.0) {
        return Err(invalid(format!(
            "--target-noise must lie in (0, 1), got {}",
            args.target_noise
        )));
    }
    if !(args.max_seconds.is_finite() && args.max_seconds > 0.0) {
        return Err(invalid(format!(
            "--max-seconds must be positive, got {}",
            args.max_seconds
        )));
    }
    if !(args.warmup_ms.is_finite() && args.warmup_ms >= 0.0) {
        return Err(invalid(format!(
            "--warmup-ms must be zero or positive, got {}",
            args.warmup_ms
        )));
    }
    if !args.guard_bytes.is_multiple_of(GUARD_ALIGN) {
        return Err(invalid(format!(
            "--guard-bytes must be a multiple of {GUARD_ALIGN}, got {}",
            args.guard_bytes
        )));
    }
    if args.random_shapes.is_some() && mode != Mode::Check {
        return Err(invalid("--random-shapes needs --mode check".to_string()));
    }
    Ok(Command::Run(RunOptions {
        cubin,
        kernel,
        shape,
        dtype,
        causal: args.causal,
        mode,
        launches: args.launches,
        sync,
        config: args.config,
        json: args.json,
        out: args.out,
        seed: args.seed,
        tolerance: args.tolerance,
        random_shapes: args.random_shapes.unwrap_or(0),
        full_reference: args.full_reference,
        cache: args.cache,
        timing: args.timing,
        max_seconds: args.max_seconds,
        target_noise: args.target_noise,
        warmup_ms: args.warmup_ms,
        measure_peaks: !args.no_peaks,
        guard_bytes: args.guard_bytes,
        device: args.device,
    }))
}
