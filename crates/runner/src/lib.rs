//! Runs `pipeline.yaml`: compile a CUDA kernel per config, inventory its SASS, run it under
//! compute-sanitizer, stress, bench and profile it, and keep every raw log in a reproducible run
//! directory with a manifest and a report.
//!
//! The source is grouped by the phases of a run; a group uses only the groups above it:
//!
//! - [`pipeline`]: [`pipeline::config::Pipeline`] is the typed pipeline file, validated with
//!   the line of any error.
//! - [`evidence`]: [`evidence::rundir`] writes `artifacts/<run-id>/manifest.json` (a
//!   [`report::Run`]) crash-safely, [`evidence::cache`] serves units whose inputs match an
//!   earlier run, [`evidence::pack`] compresses a stored run's large logs, and
//!   [`evidence::stored`] reads a stored run back as a [`report::Evidence`] for `exhibit report`.
//! - [`process`]: [`process::exec`] runs a process in its own group with a deadline,
//!   [`process::interrupt`] turns Ctrl-C into a flag, and [`process::remote`] and
//!   [`process::slurm`] run elsewhere.
//! - [`setup`]: [`setup::preflight::check`] finds out what this machine can run, with
//!   [`setup::toolchain`] discovering (or provisioning) the CUDA tools and [`setup::facts`]
//!   keeping what they answered for the next run.
//! - [`planning`]: [`planning::plan::plan`] expands the stages over the matrix into units, each
//!   planned to run or skipped with a reason; [`planning::schedule`] decides which may run at
//!   once.
//! - [`execution`]: [`execution::orchestrate::run`] executes the units: [`execution::stages`]
//!   builds each command and judges its ending, and [`execution::steps`] runs the units of
//!   several processes.
//!
//! [`bisect`] finds the commit that changed the evidence, running the pipeline at each step;
//! [`cli`] holds the subcommands.
//!
//! This is the only crate of the workspace that starts processes. Parsing belongs to `parsers`
//! and diagnosis to `report`: the runner calls them and never inspects tool output itself beyond
//! the exit status and a few sentinels (the ncu permission error).
//!
//! ```
//! use std::path::Path;
//! use runner::pipeline::config::Pipeline;
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

/// `eprintln!` that never panics: when stderr is closed (`exhibit ... 2>&1 | head`), the line is
/// lost and the run goes on writing its run directory and report.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod bisect;
pub mod cli;
pub mod evidence;
pub mod execution;
pub mod init;
pub mod pipeline;
pub mod planning;
pub mod process;
pub mod setup;
