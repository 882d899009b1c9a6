//! Before anything runs: what this machine can run (the preflight), the CUDA tools found or provisioned, and the answers kept for the next run.

pub mod facts;
pub mod preflight;
pub mod toolchain;
