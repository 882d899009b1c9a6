//! Runs `pipeline.yaml`: compile a CUDA kernel per config, inventory its SASS, run it under
//! compute-sanitizer, stress, bench and profile it, and keep every raw log in a reproducible run
//! directory with a manifest and a report.
//!
//! Brief overview: [`config::Pipeline`] is the typed pipeline file. [`preflight::check`] finds
//! out what this machine can run, with [`toolchain`] discovering (or provisioning) the CUDA
//! tools and [`facts`] keeping what they answered for the next run. [`plan::plan`] expands the stages over the matrix into units, each planned to run or
//! skipped with a reason. [`orchestrate::run`] executes them: [`stages`] builds each command and
//! judges its ending, [`exec`] runs it in its own process group with a deadline, [`cache`]
//! serves units whose inputs match an earlier run, and [`rundir`] writes
//! `artifacts/<run-id>/manifest.json` (a [`report::Run`]) crash-safely. [`progress`] draws the
//! terminal; [`pack`] compresses a stored run's large logs for committing; [`cli`] holds the
//! subcommands. [`interrupt`] turns Ctrl-C into a flag the execution loop polls, [`hash`] names
//! inputs by sha256 for the cache, and [`evidence`] reads a stored run back as a
//! [`report::Evidence`] for `runner report`.
//!
//! This is the only crate of the workspace that starts processes. Parsing belongs to `parsers`
//! and diagnosis to `report`: the runner calls them and never inspects tool output itself beyond
//! the exit status and a few sentinels (the ncu permission error).
//!
//! ```
//! use std::path::Path;
//! use runner::config::Pipeline;
//!
//! let yaml = r#"
//! kernel:
//!   source: kernel/attention.cu
//!   entry_points: { f16: attention_fwd_f16 }
//! toolchain:
//!   cuda: 13.0.88
//!   wheels: { nvidia-cuda-nvcc: 13.0.88 }
//! matrix:
//!   configs:
//!     d64: { HEAD_DIM: 64, BLOCK_M: 64 }
//! cases:
//!   seed: { shape: "2,8,512,64", dtypes: [f16], causal: [false] }
//! stages:
//!   compile: {}
//!   memcheck: { cases: [seed] }
//! "#;
//! // Paths in the file are relative to it: here, the repository root.
//! let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../pipeline.yaml"));
//! let pipeline = Pipeline::parse(path, yaml).unwrap();
//! assert!(pipeline.stage("memcheck").is_some());
//! assert!(Pipeline::parse(path, "stages: 3").is_err());
//! ```

pub mod cache;
pub mod cli;
pub mod config;
pub mod evidence;
pub mod exec;
pub mod facts;
pub mod hash;
pub mod inline_sources;
pub mod interrupt;
pub mod leftovers;
pub mod orchestrate;
pub mod pack;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod remote;
pub mod rundir;
pub mod schedule;
pub mod slurm;
pub mod stages;
pub mod steps;
pub mod target;
pub mod toolchain;
