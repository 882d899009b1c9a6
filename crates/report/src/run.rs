//! A run as the runner records it in `artifacts/<run-id>/manifest.json`. The runner writes these
//! values; `report` reads them. Fields may be added, never renamed or removed.
//!
//! The runner writes [`RUN_SCHEMA`] (`exhibit.run/2`), in which every stage records its unit
//! ([`Stage::unit`]). Manifests of `exhibit.run/1` still read: their stages that lack the
//! record get the one their command line implies ([`crate::run_v1`]).

pub use crate::stage_kind::StageKind;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::hypothesis::{ExperimentKind, KnobRole, Outcome};
use crate::rule_id::RuleId;

/// The schema of the manifests the runner writes: every stage records its unit.
pub const RUN_SCHEMA: &str = "exhibit.run/2";

/// One pipeline run: its header, environment, inputs and every stage it executed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// [`RUN_SCHEMA`] as the runner writes it now; `exhibit.run/1` in a manifest written before
    /// every stage recorded its unit.
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
    /// Milliseconds from the run's start to its end, as measured by the runner's monotonic
    /// clock; absent in manifests written before it existed and in unfinished runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// The inputs reached through a symbolic link, by path, with the link's target. Their
    /// content (the target's) is what `inputs` and the cache keys hash.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub links: BTreeMap<String, String>,
    /// The pipeline's knobs (`knobs:`, or found where its configs vary a value), with each
    /// config's value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<Knob>,
    /// The experiments run on the report's hypotheses, each with its trials' units.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experiments: Vec<Experiment>,
    /// Generated files mapped back to the user's own, found when the run ended: a packed run
    /// keeps no JIT cache, so a report rendered from it reads them here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_maps: Vec<SourceMap>,
}

impl Run {
    /// The unit records of every experiment's trials (each trial's build, when it had its own,
    /// and its stage): units like the run's own, kept apart from [`Run::stages`].
    pub fn trial_units(&self) -> impl Iterator<Item = &Stage> {
        self.experiments
            .iter()
            .flat_map(|e| &e.trials)
            .flat_map(|t| &t.units)
    }
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
    /// The facts above that the preflight took from its cache of earlier runs rather than
    /// asking the tools again (`nvcc --version`, `gpu`, `torch`), because nothing they depend
    /// on changed; empty when it asked every tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight_cached: Vec<String>,
    /// The machine as the user named it to `exhibit --host`, for a run made there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Why provisioning the pinned CUDA compiler failed, when it did: the failed step, the
    /// line of its log that says what to do, and which log (by name, in the runner's cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_failed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Gpu {
    pub name: String,
    /// The card's own id: the run keeps it, a report never shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    pub sm_count: Option<u32>,
    pub compute_capability: Option<String>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub ecc: Option<String>,
    pub mig: Option<String>,
    pub memory_mib: Option<u64>,
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

/// The exit status compute-sanitizer is given for a run in which it found errors
/// (`--error-exitcode`), so that its findings and the program's own failure stay apart.
pub const SANITIZER_ERROR_EXITCODE: i32 = 86;

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
    /// What the unit ran (or would have run, when it did not), as typed data: the report reads
    /// this and never re-parses `command`. Every stage of an `exhibit.run/2` manifest records
    /// it; an `exhibit.run/1` stage without it gets the one its command line implies when the
    /// manifest is read ([`crate::run_v1`]).
    pub unit: Unit,
    /// The repeated-launch search of a stress stage on a user's program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_search: Option<LaunchSearch>,
    /// Processes of the stage still running after it ended (daemons, escaped descendants),
    /// which the runner then ended: their command lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<String>,
    /// The GPU the unit ran on (its `CUDA_VISIBLE_DEVICES`), when the run spread over GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The sha256 of every file the unit left in its directory, by path relative to the run
    /// directory, recorded when it ran. The cache serves the unit only while each still matches.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// The logs cut at the runner's output limit (their first and last halves kept, a line
    /// between them), by path relative to the run directory, with the size the stream wrote.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cut: BTreeMap<String, u64>,
    /// A stage split by test (`split: tests`): each test the program holds, run in a process of
    /// its own under the stage's tool, with the log of its run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<TestRun>,
    /// The user's source line at each place the unit's logs name in one of the run's inputs,
    /// by `file:line` (relative to the pipeline's directory), read when the unit ended.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub site_lines: BTreeMap<String, String>,
    /// The runner's seal over the unit's input hash, ending and files (an HMAC with a key kept
    /// in the user's cache directory): the cache serves a unit only under a seal of this
    /// machine's user, so a run directory made elsewhere is read, never executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
    /// What this machine lacked for a skipped unit, by name: `gpu`, a tool (`compute-sanitizer`,
    /// `ncu`, `python3`), a Python module (`torch`, `triton`); [`crate::missing`] says each in
    /// words with the command that installs it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// One test of a stage split by test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    /// The test's id as its framework takes it on the command line (a pytest node id).
    pub id: String,
    /// The tool's log of its run, relative to the run directory.
    pub log: String,
    pub status: StageStatus,
}

impl Stage {
    /// The unit's typed record, the field [`Stage::unit`](#structfield.unit). It is a `Cow`
    /// (always borrowed) only for the callers written when this derived the record of an older
    /// manifest's stage (`ConfigParams::from_unit(&stage.unit(), ..)` in `join.rs`): once they
    /// read the field, this goes.
    pub fn unit(&self) -> std::borrow::Cow<'_, Unit> {
        std::borrow::Cow::Borrowed(&self.unit)
    }
}

/// What one stage execution ran: the target, what wrapped it, and with which parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Unit {
    pub target: TargetKind,
    /// The tool around the target, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapper: Option<Wrapper>,
    /// The matrix config's `-D` defines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub defines: BTreeMap<String, String>,
    /// Environment variables the pipeline gave the process (config, target and stage ones, and
    /// those the runner sets, such as `PYTORCH_NO_CUDA_MEMORY_CACHING`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The translation unit compiled, relative to the repository (the built-in kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The problem the built-in harness runs, when it runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<Case>,
    /// The problems of a unit that runs several in one process (the baseline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<Case>,
    /// The entry point the built-in harness launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The harness mode (`once`, `check`, `stress`, `bench`); typed by [`Unit::mode`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// How many launches the target was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches: Option<u64>,
    /// A profile unit: the problem's size in elements, as the pipeline gives it (`elements:`),
    /// for figures per element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements: Option<u64>,
    /// `-maxrregcount` given to the compiler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_registers: Option<u32>,
    /// A target's build that other configs share (theirs would be the same): those configs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serves: Vec<String>,
    /// A bench or baseline stage's `pattern:`: how its timings are read from the program's text
    /// (its logs of format `text-timings`), kept so that the run renders the same timings again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_pattern: Option<parsers::text_timings::TimingPattern>,
    /// A profile unit's choice of the launches ncu measured, and who made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_launches: Option<ProfileLaunches>,
    /// A sanitizer unit's launches, where its stage's arguments chose which to instrument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitized_launches: Option<SanitizedLaunches>,
}

/// Which of its target's launches a sanitizer unit instrumented, where the stage's arguments
/// chose (compute-sanitizer's `--launch-count`, `--launch-skip`, a kernel filter). A launch
/// outside the choice runs uninstrumented, and initcheck does not see what it writes: memory
/// only such a launch wrote reads to it as never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "chosen")]
pub enum SanitizedLaunches {
    /// The first `count` launches (`--launch-count` alone): every launch before a checked one
    /// was checked too, so a kernel's records stand; a host call after them may not.
    First { count: u64 },
    /// Launches after a skip, or of some kernels only: a kernel's read may follow a launch that
    /// was not checked.
    Selected,
}

/// Which launches of its target a profile unit measured. Without a choice ncu profiles every
/// launch with every section, which for a program that loops over its kernels costs minutes; the
/// runner bounds it unless the stage's ncu arguments choose for themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "chosen_by")]
pub enum ProfileLaunches {
    /// The stage's own ncu arguments chose them (a launch count or skip, a kernel name or id, a
    /// range or NVTX filter).
    Stage,
    /// The built-in harness under ncu launches its kernel once (`--mode once`): that launch.
    HarnessOnce,
    /// The runner's default for a program: the first `per_kernel` launches of each of its kernel
    /// functions (ncu's `--kernel-id` invocation numbers), so that where a kernel launched more
    /// than once the last of them ran after a warm-up, and a kernel launched once is still
    /// measured at its one launch.
    FirstOfEachKernel { per_kernel: u32 },
}

impl Unit {
    /// The harness mode, typed: `None` when the unit names none, or one this version does not
    /// know.
    pub fn mode(&self) -> Option<parsers::harness::Mode> {
        use parsers::harness::Mode;
        match self.mode.as_deref()? {
            "once" => Some(Mode::Once),
            "check" => Some(Mode::Check),
            "stress" => Some(Mode::Stress),
            "bench" => Some(Mode::Bench),
            _ => None,
        }
    }
}

/// What runs in a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A CUDA tool on the pipeline's own files (nvcc on the kernel, cuobjdump on a cubin).
    #[default]
    Tool,
    /// The built-in attention harness (`exhibit harness`).
    Harness,
    /// The target's build command.
    Build,
    /// The target's own program (test binary, oracle script, benchmark).
    Program,
    /// A baseline command.
    Baseline,
}

/// A tool that runs the target inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "tool")]
pub enum Wrapper {
    ComputeSanitizer { check: parsers::Tool },
    Ncu,
}

/// A named problem: its name, how people read it, and what it is. Manifests written before
/// the problem was recorded typed have only the name and label (their typed fields are `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Case {
    pub name: String,
    /// e.g. `2,8,512,64 f16 causal`.
    pub label: String,
    /// Batch, heads, sequence length and head dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<parsers::harness::Shape>,
    /// The element type, as the harness's `--dtype` takes it (`f16`, `bf16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Whether the attention is causally masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causal: Option<bool>,
}

/// The smallest failing launch count of a program, found by a search over launch counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSearch {
    /// The largest count tried when nothing failed.
    pub limit: u64,
    /// The largest count that ran clean, when one did.
    pub clean_at: Option<u64>,
    /// The smallest count that failed, when one did.
    pub fails_at: Option<u64>,
    /// How the failing run failed, e.g. `exit status 1: CUDA error: an illegal memory access`.
    pub failure: Option<String>,
    /// Every count tried, in order, with how it ended.
    pub attempts: Vec<LaunchAttempt>,
    /// The same search under memcheck, when the program's own runs stayed clean at every count
    /// and memcheck still found errors at the limit: a fault the program cannot see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcheck: Option<MemcheckSearch>,
}

/// The largest launch count memcheck found clean and the smallest it found errors at, in a
/// [`LaunchSearch`] whose program ran clean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemcheckSearch {
    pub clean_at: Option<u64>,
    pub fails_at: Option<u64>,
    /// Every count tried, in order: `passed` when memcheck found no error.
    pub attempts: Vec<LaunchAttempt>,
}

/// One run of the program in a [`LaunchSearch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchAttempt {
    pub launches: u64,
    pub passed: bool,
    /// `exit 0`, `exit 1`, `SIGSEGV`, `timed out`.
    pub ending: String,
}

/// A raw log a stage wrote, relative to the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    pub path: String,
    /// How to parse it; `None` for logs kept only for people (e.g. stderr of a script).
    pub format: Option<parsers::Format>,
}

#[cfg(test)]
mod tests {
    use super::{Case, Unit};

    #[test]
    fn a_case_without_its_typed_fields_still_loads() {
        let old: Case =
            serde_json::from_str(r#"{"name":"seed","label":"2,8,512,64 f16 causal"}"#).unwrap();
        assert_eq!(old.shape, None);
        assert_eq!(old.dtype, None);
        assert_eq!(old.causal, None);
        // And one without them is written as it was.
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"{"name":"seed","label":"2,8,512,64 f16 causal"}"#
        );
        let new: Case = serde_json::from_str(
            r#"{"name":"seed","label":"2,8,512,64 f16 causal",
                "shape":{"batch":2,"heads":8,"seq_len":512,"head_dim":64},
                "dtype":"f16","causal":true}"#,
        )
        .unwrap();
        assert_eq!(new.shape.map(|s| s.seq_len), Some(512));
        assert_eq!(new.dtype.as_deref(), Some("f16"));
        assert_eq!(new.causal, Some(true));
    }

    #[test]
    fn the_harness_mode_is_typed() {
        let unit = |mode: Option<&str>| Unit {
            mode: mode.map(str::to_string),
            ..Unit::default()
        };
        assert_eq!(
            unit(Some("stress")).mode(),
            Some(parsers::harness::Mode::Stress)
        );
        assert_eq!(
            unit(Some("once")).mode(),
            Some(parsers::harness::Mode::Once)
        );
        assert_eq!(unit(Some("warp")).mode(), None);
        assert_eq!(unit(None).mode(), None);
    }
}

// What an experiment is, as a run records it: the knobs a pipeline names, each experiment's
// prediction and trials, and what the trials concluded (`experiment` proposes and
// concludes them).

/// How a knob reaches the program or its build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobInput {
    /// An environment variable of the program.
    Env(String),
    /// A `-D` define of the build.
    Define(String),
    /// A build flag, `{value}` standing for the value (`-maxrregcount={value}`).
    Flag(String),
    /// The sequence length `S` of the pipeline's cases (`shape: B,H,S,D`), where they vary it:
    /// a trial is a case of its own.
    SeqLen,
}

impl KnobInput {
    /// `SEQ_LEN` (env), `N` (define), `maxrregcount` (flag): how it is named in sentences.
    pub fn name(&self) -> String {
        match self {
            KnobInput::Env(n) | KnobInput::Define(n) => n.clone(),
            KnobInput::SeqLen => "S".to_string(),
            KnobInput::Flag(t) => t
                .split('=')
                .next()
                .unwrap_or(t)
                .replace("{value}", "")
                .trim()
                .trim_start_matches('-')
                .to_string(),
        }
    }

    /// `env SEQ_LEN`, `define N`, `flag -maxrregcount={value}`.
    pub fn describe(&self) -> String {
        match self {
            KnobInput::Env(n) => format!("env `{n}`"),
            KnobInput::Define(n) => format!("define `{n}`"),
            KnobInput::Flag(t) => format!("build flag `{t}`"),
            KnobInput::SeqLen => "the cases' sequence length `S`".to_string(),
        }
    }
}

/// A knob as the run recorded it: its role, how it is set, and each config's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knob {
    pub role: KnobRole,
    pub input: KnobInput,
    /// For a size: the tile whose multiples the kernel covers without a tail (32 unless the
    /// pipeline says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<u64>,
    /// Found where the configs vary a value, not named under `knobs:`.
    #[serde(default)]
    pub inferred: bool,
    /// Each config's value, where it sets one (each case's, for the cases' `S`).
    #[serde(default)]
    pub values: BTreeMap<String, String>,
}

/// What a trial is predicted to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Clean,
    Fails,
}

/// One run of an experiment: its config, what it changes, what it is predicted to do, and its
/// units once they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// `SEQ_LEN=48`, `run 3`, `registers=64`.
    pub label: String,
    /// The config its units run as: the cause's config with the change (`default@SEQ_LEN=48`).
    pub config: String,
    /// The knob's value it sets, when it sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// The stage whose outcome it reads (its build runs first when it changes the build).
    pub stage: String,
    /// For a trial that is a case of its own: the case it is made from, and its name
    /// (`long@S=96`); its config is then the cause's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<TrialCase>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub defines: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Its units' records, once they ran: its build, when it has its own, and its stage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<Stage>,
    /// sha256 of what the run produced (its `{out}` file, else its stdout without the lines
    /// that print a time or a rate), for comparing identical runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// A trial's own case: the case it copies, with the knob's sequence length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialCase {
    pub base: String,
    pub name: String,
}

/// A hypothesis of one root cause and the runs that test it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub kind: ExperimentKind,
    /// The root cause it tests, as the report named it.
    pub rule: RuleId,
    pub config: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The cause's title when it was proposed.
    pub cause: String,
    /// What the hypothesis predicts, in words.
    pub prediction: String,
    pub trials: Vec<Trial>,
}

/// One trial as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialRow {
    pub label: String,
    /// `clean`, `fails`, `1.12x faster`, `output A`.
    pub outcome: String,
    /// Its stage's first log, relative to the run directory.
    pub evidence: Option<String>,
    /// Served from an earlier run's cache.
    pub cached: bool,
}

/// An experiment read against its prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conclusion {
    pub kind: ExperimentKind,
    pub rule: RuleId,
    pub config: String,
    pub kernel: Option<String>,
    pub cause: String,
    pub prediction: String,
    pub outcome: Outcome,
    /// "Fails exactly when SEQ_LEN % 32 != 0: 32 and 64 pass, 20 and 48 fail." (in JSON, as
    /// its Markdown).
    pub sentence: crate::message::Message,
    pub rows: Vec<TrialRow>,
    /// Runs, those served from the cache, and the time the others took.
    pub runs: usize,
    pub cached: usize,
    pub cost_ms: u64,
}

/// Lines `first..=last` of a generated file (as tools name it: `cuda.cu`) in one config's build
/// are lines `first + offset ..` of `source`, one of the run's inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceMap {
    pub config: Option<String>,
    /// The generated file's name, as tools print it.
    pub generated: String,
    /// The input that holds the text, relative to the repository.
    pub source: String,
    pub first: u32,
    pub last: u32,
    pub offset: i64,
}

impl SourceMap {
    /// The line of `source` that generated line `line` came from, when this map covers it.
    pub fn line(&self, line: u32) -> Option<u32> {
        (self.first..=self.last)
            .contains(&line)
            .then(|| u32::try_from(i64::from(line) + self.offset).ok())
            .flatten()
    }
}
