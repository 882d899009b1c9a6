//! Exhibit's harness: loads a compiled attention kernel through cudarc, checks it against an
//! f64 CPU reference, stresses it with repeated launches and times it. It is the only crate of
//! the workspace that touches CUDA.
//!
//! # Brief overview
//!
//! [`cli_main`] parses the command line ([`cli`]) and opens the device ([`gpu::Gpu`]; without
//! `libcuda` it exits 4 before cudarc is touched, since cudarc panics then). It loads the cubin
//! ([`gpu::AttentionKernel`]), launches `attention_launch_info` once to learn the config
//! ([`abi::LaunchInfo`]), and runs one mode ([`modes`]): `once`, `check`, `stress` or `bench`.
//! Every mode works on a [`problem::Problem`] whose inputs are seeded normal values
//! ([`prng`], [`float`]) in device buffers with guard regions on both sides ([`canary`]); the
//! output is poisoned before each launch. `check` compares with [`reference::Reference`] under
//! the gates of [`tolerance`]; `stress` keeps its books in [`consistency`]; `bench` summarises
//! samples and decides when to stop with [`stats`]. The modes return records that
//! [`document`] turns into the `exhibit.harness/1` JSON of `parsers::harness`.
//!
//! Everything but [`gpu`] and [`modes`] is plain CPU code, tested without a GPU.
//!
//! # Exit codes
//!
//! 0 ok; 1 the kernel misbehaved (a check or stress failure, a CUDA fault, a changed guard);
//! 2 usage; 3 infrastructure (unreadable cubin, load failure, output file); 4 no CUDA driver or
//! device, with stderr saying e.g. `no CUDA driver: libcuda.so.1 not found`.
//!
//! # Example
//!
//! ```text
//! harness --cubin attention.cubin --kernel attention_fwd_f16 --shape 2,8,512,64 --dtype f16 \
//!     --mode check --random-shapes 8 --json
//! ```

pub mod abi;
pub mod canary;
pub mod cli;
pub mod consistency;
pub mod document;
pub mod float;
pub mod gpu;
pub mod modes;
pub mod prng;
pub mod problem;
pub mod reference;
pub mod shapes;
pub mod stats;
pub mod tolerance;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Map, Value, json};

use crate::cli::{Command, Mode, ProbeOptions, RunOptions};
use crate::gpu::{AttentionKernel, Gpu, LoadError, OpenError};
use crate::modes::{Record, Verdict};
use crate::problem::Problem;

/// Exit code: the kernel misbehaved.
pub const EXIT_KERNEL: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: infrastructure error.
pub const EXIT_INFRA: u8 = 3;
/// Exit code: no CUDA driver or device.
pub const EXIT_NO_DEVICE: u8 = 4;

/// Runs the harness command line. `args` starts with the program name, as
/// `std::env::args_os()` yields it (the runner's `exhibit harness ...` passes `harness` first).
pub fn cli_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let command = match cli::parse(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    match command {
        Command::Probe(p) => probe(&p),
        Command::Run(opts) => run(&opts),
    }
}

fn open(device: usize) -> Result<Gpu, ExitCode> {
    Gpu::open(device).map_err(|e: OpenError| {
        eprintln!("harness: {e}");
        ExitCode::from(EXIT_NO_DEVICE)
    })
}

fn probe(p: &ProbeOptions) -> ExitCode {
    let gpu = match open(p.device) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let doc = document::document(Some(gpu.info()), &[], Map::new());
    emit(&doc, true, p.out.as_deref()).unwrap_or_else(|code| code)
}

fn run(opts: &RunOptions) -> ExitCode {
    let gpu = match open(opts.device) {
        Ok(g) => g,
        Err(code) => return code,
    };
    let problem = Problem::new(opts.shape, opts.dtype, opts.causal);
    let mut top = Map::new();
    top.insert("seed".to_string(), json!(opts.seed));
    top.insert("cubin".to_string(), json!(opts.cubin.display().to_string()));
    top.insert("guard_bytes".to_string(), json!(opts.guard_bytes));
    let image = match std::fs::read(&opts.cubin) {
        Ok(bytes) => bytes,
        Err(e) => {
            let message = format!("failed to read cubin {}: {e}", opts.cubin.display());
            return load_failure(&gpu, opts, &problem, top, message);
        }
    };
    let kernel = match AttentionKernel::load(&gpu, image, &opts.kernel) {
        Ok(k) => k,
        Err(e) => {
            let message = match &e {
                LoadError::Abi(_) => e.to_string(),
                _ => format!("{e} (cubin {})", opts.cubin.display()),
            };
            return load_failure(&gpu, opts, &problem, top, message);
        }
    };
    let info = *kernel.info();
    top.insert("launch_info".to_string(), json!(info));
    top.insert(
        "function_attributes".to_string(),
        json!(kernel.attributes()),
    );
    if info.head_dim as usize != opts.shape.head_dim {
        eprintln!(
            "harness: --shape has head_dim {} but the cubin was compiled for HEAD_DIM {}",
            opts.shape.head_dim, info.head_dim
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let records = match opts.mode {
        Mode::Once => vec![modes::run_once(&gpu, &kernel, opts, problem)],
        Mode::Check => modes::run_check(&gpu, &kernel, opts, problem),
        Mode::Stress => vec![modes::run_stress(&gpu, &kernel, opts, problem)],
        Mode::Bench => vec![modes::run_bench(&gpu, &kernel, opts, problem)],
    };
    let doc = document::document(Some(gpu.info()), &records, top);
    if !opts.json {
        print!("{}", document::summary(&records));
    }
    if let Err(code) = emit(&doc, opts.json, opts.out.as_deref()) {
        return code;
    }
    exit_code(&records)
}

/// The cubin could not be made ready: a result saying so, exit 3.
fn load_failure(
    gpu: &Gpu,
    opts: &RunOptions,
    problem: &Problem,
    top: Map<String, Value>,
    message: String,
) -> ExitCode {
    eprintln!("harness: {message}");
    let mut record = Record::new(opts.mode, &opts.kernel, opts, problem);
    record.result.error = Some(message);
    record.verdict = Verdict::Infrastructure;
    let doc = document::document(Some(gpu.info()), std::slice::from_ref(&record), top);
    match emit(&doc, opts.json, opts.out.as_deref()) {
        Ok(_) | Err(_) => ExitCode::from(EXIT_INFRA),
    }
}

/// The exit code of a run: 1 if any result shows the kernel misbehaving, else 3 if any hit an
/// infrastructure error, else 0.
pub fn exit_code_for(records: &[Record]) -> u8 {
    match records.iter().map(|r| r.verdict).max() {
        Some(Verdict::KernelFailure) => EXIT_KERNEL,
        Some(Verdict::Infrastructure) => EXIT_INFRA,
        _ => 0,
    }
}

fn exit_code(records: &[Record]) -> ExitCode {
    ExitCode::from(exit_code_for(records))
}

/// Prints the document (when `stdout`) and writes it to `out`. Failure is exit 3.
fn emit(doc: &Value, stdout: bool, out: Option<&Path>) -> Result<ExitCode, ExitCode> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| {
        eprintln!("harness: failed to serialise the JSON document: {e}");
        ExitCode::from(EXIT_INFRA)
    })?;
    if stdout {
        let mut lock = std::io::stdout().lock();
        if writeln!(lock, "{text}")
            .and_then(|()| lock.flush())
            .is_err()
        {
            eprintln!("harness: failed to write the JSON document to stdout");
            return Err(ExitCode::from(EXIT_INFRA));
        }
    }
    if let Some(path) = out
        && let Err(e) = std::fs::write(path, format!("{text}\n"))
    {
        eprintln!("harness: failed to write {}: {e}", path.display());
        return Err(ExitCode::from(EXIT_INFRA));
    }
    Ok(ExitCode::SUCCESS)
}
