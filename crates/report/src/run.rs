//! A run as the runner records it in `artifacts/<run-id>/manifest.json`. The runner writes these
//! values; `report` reads them. Fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One pipeline run: its header, environment, inputs and every stage it executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always `exhibit.run/1`.
    pub schema: String,
    /// `<UTC time>-<short hash>`, e.g. `20261122T101500Z-3fa9c2d1`.
    pub id: String,
    /// The pipeline file, relative to the repository.
    pub pipeline: String,
    /// RFC 3339 UTC start and end, as the runner read the clock.
    pub started: String,
    pub finished: Option<String>,
    /// True when the run was cut short (Ctrl-C, a crash of the runner).
    pub interrupted: bool,
    pub git: Option<Git>,
    pub environment: Environment,
    /// sha256 of every input, keyed by its path relative to the repository (or `flags:<stage>`).
    pub inputs: BTreeMap<String, String>,
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Git {
    pub commit: String,
    pub dirty: bool,
}

/// What the machine could run, as the preflight found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Environment {
    pub os: String,
    /// Tool name (`nvcc`, `ptxas`, `cuobjdump`, `nvdisasm`, `compute-sanitizer`, `ncu`,
    /// `python3`, `torch`) to its version line; absent when not found.
    pub tools: BTreeMap<String, String>,
    /// Where the CUDA compiler came from: `path`, `CUDA_HOME`, or `provisioned 13.0.88`.
    pub toolchain_source: Option<String>,
    pub driver: Option<String>,
    pub gpus: Vec<Gpu>,
    /// Why GPU stages cannot run here, when they cannot.
    pub gpu_unavailable: Option<String>,
    /// Whether ncu may read the performance counters.
    pub counters_permitted: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Gpu {
    pub name: String,
    pub uuid: Option<String>,
    pub sm_count: Option<u32>,
    pub compute_capability: Option<String>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub ecc: Option<String>,
    pub mig: Option<String>,
    pub memory_mib: Option<u64>,
}

/// The stage types pipeline.yaml knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    Compile,
    Sass,
    Memcheck,
    Racecheck,
    Initcheck,
    Synccheck,
    Check,
    Stress,
    Bench,
    Baseline,
    Profile,
    Report,
}

/// How a stage ended. Tool failure, application failure and findings are never conflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// The tool ran and found nothing.
    Passed,
    /// The tool worked and found problems.
    Findings,
    /// The tool itself broke (crashed, bad usage, missing output).
    Failed,
    TimedOut,
    /// Not run, with a reason.
    Skipped,
    /// Ran, but the evidence cannot support a verdict (summary missing, kernel never launched).
    Inconclusive,
    /// The run was interrupted while the stage was running.
    Interrupted,
}

/// One execution of a stage for one config and arch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// The stage's name in pipeline.yaml.
    pub name: String,
    pub kind: StageKind,
    /// The matrix config, when the stage runs per config.
    pub config: Option<String>,
    pub arch: Option<String>,
    pub status: StageStatus,
    /// Why it was skipped, failed, timed out or is inconclusive.
    pub reason: Option<String>,
    /// argv, with paths relative to the repository.
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Served from an earlier run with the same input hash.
    pub cached_from: Option<String>,
    /// Hash of everything the stage's result depends on (sources, flags, tool versions, GPU).
    pub input_hash: Option<String>,
    pub logs: Vec<Log>,
}

/// A raw log a stage wrote, relative to the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    pub path: String,
    /// How to parse it; `None` for logs kept only for people (e.g. stderr of a script).
    pub format: Option<parsers::Format>,
}
