//! The harness's tests: CPU-side logic through the library's public API and the binary's
//! command line. GPU tests run only with `EXHIBIT_GPU=1` (and `EXHIBIT_CUBIN`).

mod abi;
mod canary;
mod cli;
mod consistency;
mod document;
mod fixtures;
mod float;
mod gpu;
mod prng;
mod problem;
mod reference;
mod stats;
mod tolerance;

use std::process::{Command, Output};

/// Runs the `harness` binary with `args`.
pub fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("failed to run the harness binary: {e}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
