//! Integration tests: the `runner` binary driven through its command line, with small shell
//! scripts standing in for nvcc and cuobjdump (their output is hand-written and says so). No
//! test needs a GPU. The few that compile for real (`real.rs`, `newcomer.rs`, the cuda-cpp
//! example in `targets.rs`) use the nvcc installed, else the pinned set provisioned from PyPI,
//! one at a time (`util::PROVISIONING`).

mod util;

mod action;
mod baseline;
mod bisect;
mod cache;
mod cache_inputs;
mod cli;
mod commands;
mod compare_helpers;
mod config;
mod confined;
mod corpus;
mod damaged;
mod decide;
mod experiments;
mod explain;
mod fault_classes;
mod first_day;
mod help;
mod hostile;
mod large;
mod leftovers;
mod newcomer;
mod output;
mod pack;
mod preflight;
mod process;
mod provision;
mod python_jit;
mod real;
mod reference;
mod references;
mod remote;
mod schedule;
mod skipped;
mod slurm;
mod sshd;
mod targets;
mod trust;
