//! The `exhibit` binary (package `runner`): parses the command line, runs the command, and decides the exit code.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use runner::cli::{self, Cli, Error, Host, Outcome};
use runner::process::supervisor;
use runner::setup::preflight::BuiltinHarness;

/// Exit codes, documented in docs/commands.md. Decided here and nowhere else.
mod code {
    /// Nothing wrong found.
    pub const CLEAN: u8 = 0;
    /// Findings, or a regression.
    pub const FINDINGS: u8 = 1;
    /// A bad pipeline file or command line.
    pub const USAGE: u8 = 2;
    /// The run could not do its job: a tool failed, timed out or gave no verdict; or a diff is
    /// incomplete (a log is missing, or B did not re-test a root cause or finding of A).
    pub const INFRASTRUCTURE: u8 = 3;
    /// Interrupted by signal N (Ctrl-C, SIGTERM, SIGHUP): 128 + N, as a shell reports a command
    /// a signal ended (130 for Ctrl-C), once the stage's processes ended and the manifest was
    /// written.
    pub fn interrupted(signal: i32) -> u8 {
        u8::try_from(128 + signal.clamp(1, 127)).unwrap_or(130)
    }
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "harness") {
        return harness(args.get(2..).unwrap_or_default());
    }
    if args.get(1).is_some_and(|a| a == supervisor::SUBCOMMAND) {
        let prefix = args.get(2).and_then(|a| a.to_str()).unwrap_or_default();
        return supervisor::main(prefix);
    }
    supervisor::arm();
    if let Some(message) = cli::mistyped_command(&args) {
        let _ = writeln!(std::io::stderr(), "error: {message}");
        return ExitCode::from(code::USAGE);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                code::USAGE
            } else {
                code::CLEAN
            });
        }
    };
    let host = Host {
        harness: builtin_harness(),
    };
    let result = cli::execute(cli, host).map_err(anyhow::Error::from);
    if let Err(e) = &result {
        let _ = writeln!(
            std::io::stderr(),
            "error: {}",
            report::text::strip_controls(&message(e))
        );
    }
    supervisor::finish();
    ExitCode::from(exit_code(&result))
}

/// The error and its causes, each said once: many errors already quote their cause.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

/// The one place that maps results to exit codes.
fn exit_code(result: &anyhow::Result<Outcome>) -> u8 {
    match result {
        Ok(Outcome::Clean) => code::CLEAN,
        Ok(Outcome::Findings) => code::FINDINGS,
        Ok(Outcome::Incomplete) => code::INFRASTRUCTURE,
        Ok(Outcome::Interrupted(signal)) => code::interrupted(*signal),
        Err(e) if e.downcast_ref::<Error>().is_some_and(Error::is_usage) => code::USAGE,
        Err(_) => code::INFRASTRUCTURE,
    }
}

/// How `exhibit harness ...` is reached from the pipeline's GPU stages: this very executable,
/// so that one binary carried to a GPU machine runs every stage, and compute-sanitizer and ncu
/// wrap the runner itself.
fn builtin_harness() -> BuiltinHarness {
    match std::env::current_exe() {
        Ok(exe) => BuiltinHarness::Available(exe),
        Err(e) => BuiltinHarness::Unavailable(format!("cannot locate the runner executable: {e}")),
    }
}

/// `exhibit harness ...`: the kernel harness, carried in the same binary. Its exit codes are the
/// harness's own (0 ok, 1 kernel misbehaved, 2 usage, 3 infrastructure, 4 no CUDA driver or GPU).
fn harness(args: &[OsString]) -> ExitCode {
    let argv = std::iter::once(OsString::from("harness")).chain(args.iter().cloned());
    harness::cli_main(argv)
}
