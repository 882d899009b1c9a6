//! The typed values every parser produces. This is the contract between `parsers`, `report`
//! and `exhibit parse --json`: fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::facts::{Facts, TestOutcome};
use crate::memory_space::MemorySpace;

/// What kind of log a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `nvcc -Xptxas -v` output (resource usage, warnings, errors).
    Ptxas,
    /// `cuobjdump -sass` or `nvdisasm` output.
    Sass,
    /// compute-sanitizer's text output.
    ComputeSanitizer,
    /// compute-sanitizer's `--xml --save` output.
    ComputeSanitizerXml,
    /// Nsight Compute `--csv` output (details page or `--page raw`).
    NcuCsv,
    /// The harness's JSON (also printed by the baseline scripts).
    Harness,
    /// pytest-benchmark's `--benchmark-json` file.
    PytestBenchmark,
    /// Google Benchmark's JSON (`--benchmark_format=json` on stdout, or the
    /// `--benchmark_out=FILE --benchmark_out_format=json` file).
    GoogleBenchmark,
    /// nvbench's JSON (`--json FILE`; see [`crate::nvbench`]).
    Nvbench,
    /// The `exhibit.results/1` JSON a user's check program writes (see [`crate::bench_json`]).
    ProgramResults,
    /// A program's plain-text output, its timings read with a bench or baseline stage's
    /// `pattern:` (see [`crate::text_timings`]). Never detected: only the pattern reads it.
    TextTimings,
    /// `nvdisasm -g -c` of a cubin: the SASS with its line table, read for the call sites of
    /// each function (`sass_lines.rs`).
    SassLines,
    /// Nsight Compute's source page (`--page source --csv --print-source cuda,sass`): counters
    /// per source line and per SASS instruction.
    NcuSource,
    /// JUnit XML from a test framework (pytest, GoogleTest, Catch2, ctest).
    #[serde(rename = "junit")]
    JUnit,
}

/// Which compute-sanitizer tool produced a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Memcheck,
    Racecheck,
    Initcheck,
    Synccheck,
}

impl Tool {
    /// The tool's name, as `--tool` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// What a finding is about. Serialised in snake_case; new kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    // compute-sanitizer memcheck
    /// "Invalid __global__/__shared__/__local__ read/write of size N bytes".
    InvalidAccess,
    /// "Misaligned Shared or Local Address", "Misaligned address" and the like.
    MisalignedAccess,
    /// "Trace/breakpoint trap" (what sm_90 prints for a trapped WMMA on local memory).
    Trap,
    /// Other device exceptions ("Illegal Instruction", "Warp Illegal Address", ...).
    DeviceException,
    /// "Leaked N bytes at 0x...".
    MemoryLeak,
    /// Invalid or double free, malloc errors.
    AllocationError,
    /// "Program hit cudaErrorLaunchFailure (error 719) due to ... on CUDA API call to ...".
    HostApiError,
    // racecheck
    /// A shared-memory data race (either racecheck report form).
    Race,
    // initcheck
    /// "Uninitialized __global__ memory read of size N bytes".
    UninitializedRead,
    /// initcheck's unused-memory report.
    UnusedMemory,
    // synccheck
    /// "Barrier error detected. Divergent thread(s) in warp/block" and other barrier misuse.
    BarrierError,
    // compiler
    /// "cannot perform wmma load or store on local memory".
    WmmaLocalMemory,
    /// Another operation the compiler cannot do on a thread-local address and replaced with a
    /// trap: "Cannot do atomic on local memory".
    LocalMemoryOperation,
    /// "Registers are spilled to local memory" or non-zero spill counts.
    RegisterSpill,
    /// Any other compiler warning.
    CompilerWarning,
    /// The compiler's word that the build is a device-debug (`-G`) one: "'--device-debug (-G)'
    /// overrides '--generate-line-info (-lineinfo)'" and the conflict it reports between them.
    DebugBuild,
    /// A compile error with its location.
    CompileError,
    // harness
    /// Output differs from the CPU reference beyond the dtype tolerance.
    WrongResult,
    /// NaN or Inf in the output.
    NanOutput,
    /// Output elements the kernel never wrote (still NaN-poisoned).
    UnwrittenOutput,
    /// A guard region around a buffer was overwritten.
    CanaryCorrupted,
    /// A launch or synchronisation returned a CUDA error.
    LaunchError,
    /// Repeated launches on identical inputs gave different outputs.
    Nondeterminism,
    // user programs
    /// A check a user's program reported as failed (`exhibit.results/1` `"passed": false`), or a
    /// Google Benchmark run that stopped with `"error_occurred": true`.
    CheckFailed,
    // tools themselves
    /// The tool reported a failure of its own ("Error: No attachable process found",
    /// ncu's "==ERROR== LaunchFailed"): its log says less than a complete run would.
    ToolError,
    /// The tool's own summary counts errors that no record in the log could be read as: the
    /// log is never clean, whatever else it holds.
    UnreadErrors,
    /// An Nsight Compute rule result (rule name, type such as OPT or WRN, and its advice).
    ProfilerRule,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
}

/// A source location: the `file:line` a tool printed, plus the function it named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Location {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Which threads a race or a barrier concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncScope {
    Warp,
    Block,
}

/// One other side of a race.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceSide {
    pub access: Option<Access>,
    pub location: Location,
    /// The tool's count for this side (`[512 hazards]`), when it printed one.
    pub hazards: Option<u64>,
}

/// A thread and its block, as compute-sanitizer prints them: `thread (x,y,z) in block (x,y,z)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ThreadIndex {
    pub thread: [u32; 3],
    pub block: [u32; 3],
}

impl ThreadIndex {
    /// `thread (x,y,z) in block (x,y,z)`, as compute-sanitizer prints it.
    pub fn parse(text: &str) -> Option<ThreadIndex> {
        let triple = |text: &str| -> Option<[u32; 3]> {
            let inner = text.trim().strip_prefix('(')?.split(')').next()?;
            let mut parts = inner.split(',').map(|p| p.trim().parse::<u32>().ok());
            Some([parts.next()??, parts.next()??, parts.next()??])
        };
        let rest = text.trim().strip_prefix("thread")?;
        let (thread, block) = rest.split_once(" in block")?;
        Some(ThreadIndex {
            thread: triple(thread)?,
            block: triple(block)?,
        })
    }
}

impl Finding {
    /// Whether the record is only the target process's exit status as a tool reports it
    /// (compute-sanitizer's "Error: process didn't terminate successfully", Nsight Compute's
    /// "The application returned an error code"), or the tool's own error, which ends the run
    /// the same way: a symptom of whatever ended the process.
    pub fn is_exit_status(&self) -> bool {
        self.kind == FindingKind::ToolError
            || self
                .message
                .contains("process didn't terminate successfully")
            || self.message.contains("application returned an error code")
    }
}

/// Whether a raw line of a sanitizer record is a host backtrace frame (`Host Frame:`).
pub fn is_host_frame_line(line: &str) -> bool {
    line.contains("Host Frame:")
}

/// One distinct problem site, however many times the tool reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// How many records the log held for this site.
    pub count: u64,
    /// Stable across runs: built from kind, kernel, file, line, space and access size only.
    pub fingerprint: String,
    /// Demangled kernel name.
    pub kernel: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub space: Option<MemorySpace>,
    pub access: Option<Access>,
    /// Access size in bytes.
    pub size: Option<u32>,
    /// One-line summary as the tool worded it, volatile values (addresses, pids) removed.
    pub message: String,
    /// The raw lines of the first record, exactly as printed: the smoking-gun excerpt.
    pub excerpt: Vec<String>,
    /// Up to a few example threads and blocks, as printed, e.g. "thread (114,0,0) in block (59,0,0)".
    pub examples: Vec<String>,
    /// The other side of a race, or a second site a tool names.
    pub related: Vec<Location>,
    /// The other sides of a race, typed: each side's access, place (its function without the
    /// access word) and the tool's hazard count for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sides: Vec<RaceSide>,
    /// For a race whose record does not name both sides' accesses: the record's own access and
    /// the other side's, as the tool's wording ("Read access ... and Write access") or its
    /// hazard type (RAW, WAR, WAW) gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race_accesses: Option<[Option<Access>; 2]>,
    /// For a race or a barrier error: whether it concerns the lanes of one warp or the threads
    /// of a block (racecheck's "(Warp Level Programming)" category, synccheck's wording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_scope: Option<SyncScope>,
    /// For a barrier error: the barrier was given invalid arguments (a `__syncwarp` mask that
    /// names lanes not calling it), rather than reached by only part of its threads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid_arguments: bool,
    /// The example threads (`examples`) as coordinates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadIndex>,
    /// The first record's device call stack (`Device Frame:` lines), innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_frames: Vec<Location>,
    /// The first record's host backtrace (`Host Frame:` lines), innermost first: native frames
    /// and, for a Python program, its Python frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_frames: Vec<Location>,
    /// What the tool states beyond the site, typed and grouped by the kind of record: bytes
    /// past an allocation, a race's hazards, a CUDA call's error, a failed test's message, ...
    #[serde(default, skip_serializing_if = "Facts::is_empty")]
    pub facts: Facts,
    /// How many lines of the program's own output a sanitizer log held before this site's
    /// first record: with [`ParsedLog::failure_output`], whether the program had already printed
    /// its failure when the fault happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_before: Option<u32>,
    /// An Nsight Compute rule result's name, type, section, estimated speedup and the figures
    /// its message states ([`FindingKind::ProfilerRule`] only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler_rule: Option<Box<crate::ncu_rule::ProfilerRule>>,
}

/// Per-kernel counts from a SASS listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassCounts {
    pub total: u64,
    /// Tensor-core instructions: HMMA (mma.sync / WMMA).
    pub hmma: u64,
    /// Hopper warpgroup MMA.
    pub hgmma: u64,
    /// Integer tensor-core MMA.
    pub imma: u64,
    pub ldl: u64,
    pub stl: u64,
    /// `BPT.TRAP`.
    pub bpt_trap: u64,
    /// `BAR` (barriers, any form).
    pub bar: u64,
    /// `LDGSTS` (cp.async).
    pub ldgsts: u64,
    /// `LDSM` (ldmatrix).
    pub ldsm: u64,
    /// TMA copies: `UTMALDG` and `UTMASTG` (tensor), `UBLKCP` (bulk).
    #[serde(default)]
    pub tma: u64,
    /// Shared-memory loads and stores: `LDS` and `STS` (`LDSM`, `LDGSTS` and atomics apart).
    #[serde(default)]
    pub lds: u64,
    #[serde(default)]
    pub sts: u64,
}

/// One kernel's resource usage (ptxas) and/or instruction inventory (SASS).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// Demangled name.
    pub name: String,
    pub mangled: String,
    /// e.g. `sm_90`.
    pub arch: Option<String>,
    pub registers: Option<u32>,
    pub barriers: Option<u32>,
    pub shared_bytes: Option<u64>,
    pub constant_bytes: Option<u64>,
    pub global_bytes: Option<u64>,
    pub stack_frame_bytes: Option<u64>,
    /// `None` when ptxas printed no spill line: unknown, not zero.
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    pub cumulative_stack_bytes: Option<u64>,
    /// The `-maxrregcount` override ptxas reported, if any.
    pub max_registers_override: Option<u32>,
    pub sass: Option<SassCounts>,
}

/// One Nsight Compute metric value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Demangled kernel name, as ncu printed it.
    pub kernel: String,
    /// ncu's launch ID.
    pub launch: Option<u64>,
    pub section: Option<String>,
    pub name: String,
    pub unit: Option<String>,
    pub value: f64,
}

/// One benchmark's timing from a user program's benchmark output, in microseconds whatever unit
/// the format used. A figure the format does not give is `None`, never computed here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The benchmark's name as the tool printed it (`sort_reversed/256`, `test_sum_squares`).
    pub name: String,
    /// The format it was read from.
    pub format: Format,
    /// How many measurements the statistics are over: pytest-benchmark's rounds, Google
    /// Benchmark's repetitions, the matches of a text pattern.
    pub samples: Option<u64>,
    /// Iterations timed per sample.
    pub iterations: Option<u64>,
    pub min_us: Option<f64>,
    pub median_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub stdev_us: Option<f64>,
    pub max_us: Option<f64>,
    /// The interquartile range, when the format gives one (pytest-benchmark's `iqr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iqr_us: Option<f64>,
    /// Every measurement, in µs, in the order taken, when the format keeps them: each match of
    /// a text pattern, each repetition of Google Benchmark, pytest-benchmark's `data` (with
    /// `--benchmark-save-data`). `exhibit diff` tests a change on them for significance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_us: Vec<f64>,
}

/// One test case of a JUnit document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// The test's id as its framework names it: pytest's node id
    /// (`tests/test_x.py::test_y[200]`), GoogleTest's `Suite.Name`, Catch2's test name.
    pub id: String,
    /// The `classname` it was filed under.
    pub suite: Option<String>,
    pub outcome: TestOutcome,
    /// Seconds, as the framework measured.
    pub time_s: Option<f64>,
    /// The failure's, error's or skip's message, on one line.
    pub message: Option<String>,
    /// Where it failed (a failing assertion, the innermost frame of the test's own file), else
    /// where the framework says the test is defined.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// GoogleTest's `value_param`: the parameter of a parametrized test.
    pub param: Option<String>,
    /// Which elements its comparison found wrong, where it used a standard one
    /// (`torch.testing`, `numpy.testing`) that says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<crate::mismatch::ElementMismatch>,
}

/// One check a user's program reported (`exhibit.results/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramCheck {
    pub name: String,
    pub passed: bool,
    pub message: Option<String>,
    /// The largest absolute difference from the program's reference, when it gave one.
    pub max_abs_err: Option<f64>,
    /// Where the check that failed is in the program's source (`__FILE__`, `__LINE__`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Which elements were wrong, as the program's comparison recorded them
    /// (`helpers/exhibit_compare.py`, `helpers/exhibit_compare.h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<crate::mismatch::ElementMismatch>,
}

/// Everything a parser found in one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedLog {
    pub format: Format,
    pub tool: Option<Tool>,
    /// False when the log ends early (no summary line, truncated file).
    pub complete: bool,
    /// The error count from the tool's own summary line, when it printed one.
    pub reported_errors: Option<u64>,
    /// The warning count from racecheck's summary line, when it printed one.
    #[serde(default)]
    pub reported_warnings: Option<u64>,
    /// "N errors were not printed".
    pub unprinted_errors: u64,
    /// Lines no rule recognised (program output is counted here too).
    pub unparsed_lines: u64,
    /// The first few unparsed lines, for a human to look at.
    pub unparsed_examples: Vec<String>,
    pub findings: Vec<Finding>,
    pub kernels: Vec<Kernel>,
    pub metrics: Vec<Metric>,
    /// Results from harness JSON, when the format is `harness`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<crate::harness::HarnessResult>,
    /// The kernel's launch geometry from the harness document (`harness.launch_info`), when the
    /// format is `harness` and the harness wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::harness::LaunchInfo>,
    /// Benchmark timings, when the format is `pytest-benchmark`, `google-benchmark`, `nvbench`
    /// or `text-timings`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<Timing>,
    /// A user program's checks, when the format is `program-results`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<ProgramCheck>,
    /// The test cases of a JUnit document, when the format is `junit`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestCase>,
    /// The framework that wrote them (`pytest`, `GoogleTest`, `Catch2`), told from their shape.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tests_framework: String,
    /// Nsight Compute's counters per source line, when the format is `ncu-source`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_lines: Vec<SourceLine>,
    /// The executed instruction mix of each function on the source page (`ncu-source`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_mix: Vec<InstructionMix>,
    /// Calls between device functions with the source line each is made at (`nvdisasm -g`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_sites: Vec<CallSite>,
    /// Source lines inlined into others (`nvdisasm -gi`): each line and the line it was inlined
    /// at, one level each; followed up, they lead from a header's line to the user's call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<Inlined>,
    /// In a sanitizer log, the line of the program's own output that says it failed
    /// ([`crate::program::telling_line`]), with its place among the program's lines: the
    /// order of the program's failure and the tool's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_output: Option<OutputLine>,
}

/// A line of a program's own output, and how many of its lines came before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputLine {
    pub text: String,
    pub index: u32,
}

/// What a profiled function executed, from the SASS rows of Nsight Compute's source page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstructionMix {
    /// The function (kernel) as ncu names it.
    pub function: String,
    /// Instructions executed (warp level), all of them.
    pub executed: u64,
    /// Tensor-core instructions executed (HMMA, HGMMA, IMMA).
    pub mma: u64,
    /// Scalar fused multiply-adds executed (FFMA, HFMA2, DFMA).
    pub fma: u64,
    /// Of them, single-precision ones (FFMA): the work the FP32 peak measures.
    #[serde(default)]
    pub ffma: u64,
    /// Of them, paired half-precision ones (HFMA2: two FMAs per lane).
    #[serde(default)]
    pub hfma2: u64,
    /// Of them, double-precision ones (DFMA).
    #[serde(default)]
    pub dfma: u64,
    /// Floating-point operations of the tensor-core instructions whose shape the opcode names
    /// (`HMMA.16816`: 2 x 16 x 8 x 16 = 4096 per warp; `HGMMA.64x128x16`: a warpgroup's 2 x 64 x
    /// 128 x 16 over its four warps); integer `IMMA` is not counted.
    #[serde(default)]
    pub tensor_flops: u64,
    /// Of them, the products on TF32 inputs (`HMMA.1688.F32.TF32`), whose peak is half the
    /// FP16 one.
    #[serde(default)]
    pub tensor_tf32_flops: u64,
    /// Half-precision values widened to float (`HADD2.F32` of a half, `F2F.F32.F16`) executed.
    pub half_to_float: u64,
    /// Special-function instructions executed (`MUFU`: reciprocal, square root, exponential,
    /// sine): the transcendental work of a physics or softmax loop, which no matrix product
    /// has in its inner loop.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mufu: u64,
    /// Bytes the function's threads asked of global memory by loads (`LDG`, `LDGSTS`): each
    /// load's predicated-on thread executions times the width its opcode names.
    #[serde(default)]
    pub global_load_bytes: u64,
    /// The longest run of multiply-adds where each adds to the one before (a dot product
    /// accumulated in one register chain), in SASS order.
    pub fma_chain: u32,
    /// Warp-stall samples by reason, as ncu names its columns (`stall_long_sb`), over the
    /// function's instructions, each counted once (the page lists an inlined instruction again
    /// under every file of its inlining chain). Reasons with no sample are left out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stalls: BTreeMap<String, u64>,
    /// What its memory instructions asked of each space, by opcode.
    #[serde(default)]
    pub memory: MemoryMix,
}

impl InstructionMix {
    /// Of the bytes its threads moved through global loads and local memory, the share that
    /// is local memory's (a stack frame's or spills' traffic).
    pub fn local_share(&self) -> Option<f64> {
        let all = self.memory.local_bytes + self.global_load_bytes;
        (all > 0).then(|| self.memory.local_bytes as f64 / all as f64)
    }
}

/// A function's memory instructions by space, from its SASS page: the figures that tell two
/// kernels doing the same work apart (sectors per request, atomics, local traffic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryMix {
    /// Global loads (`LDG`, `LDGSTS`): warp-level requests (ncu's L1 tag requests, else the
    /// instructions executed), the 32-byte sectors they touched at L2, and the fewest sectors
    /// their bytes needed (ncu's ideal).
    pub global_load_requests: u64,
    pub global_load_sectors: u64,
    #[serde(default)]
    pub global_load_ideal: u64,
    /// Global stores (`STG`), the same way.
    pub global_store_requests: u64,
    pub global_store_sectors: u64,
    #[serde(default)]
    pub global_store_ideal: u64,
    /// Atomics and reductions on global memory (`RED`, `ATOM`, `ATOMG`): warp instructions, and
    /// the thread operations they carry (predicated-on lanes).
    pub global_atomics: u64,
    pub global_atomic_lanes: u64,
    /// Local-memory loads and stores (`LDL`, `STL`): warp instructions, and the bytes their
    /// threads moved (the stack frame's traffic).
    pub local_instructions: u64,
    pub local_bytes: u64,
    /// Shared-memory accesses (`LDS`, `STS`, `LDSM`, `ATOMS`): warp instructions, the
    /// wavefronts they took and the fewest they could have taken, when the page counts them
    /// (more than the ideal: bank conflicts).
    pub shared_requests: u64,
    pub shared_wavefronts: u64,
    #[serde(default)]
    pub shared_ideal: u64,
}

impl MemoryMix {
    /// Adds another listing's counts of the same function.
    pub fn add(&mut self, o: &MemoryMix) {
        self.global_load_requests += o.global_load_requests;
        self.global_load_sectors += o.global_load_sectors;
        self.global_store_requests += o.global_store_requests;
        self.global_store_sectors += o.global_store_sectors;
        self.global_load_ideal += o.global_load_ideal;
        self.global_store_ideal += o.global_store_ideal;
        self.global_atomics += o.global_atomics;
        self.global_atomic_lanes += o.global_atomic_lanes;
        self.local_instructions += o.local_instructions;
        self.local_bytes += o.local_bytes;
        self.shared_requests += o.shared_requests;
        self.shared_wavefronts += o.shared_wavefronts;
        self.shared_ideal += o.shared_ideal;
    }

    /// Sectors per global load request (4 is a warp reading 32 consecutive floats; 32 is every
    /// thread in a sector of its own).
    pub fn load_sectors_per_request(&self) -> Option<f64> {
        ratio(self.global_load_sectors, self.global_load_requests)
    }

    /// Sectors the global loads touched over the fewest their bytes needed: 1 when coalesced,
    /// 8 when each 4-byte value costs a 32-byte sector of its own.
    pub fn load_sectors_per_ideal(&self) -> Option<f64> {
        ratio(self.global_load_sectors, self.global_load_ideal)
    }

    /// The same for global stores.
    pub fn store_sectors_per_ideal(&self) -> Option<f64> {
        ratio(self.global_store_sectors, self.global_store_ideal)
    }

    /// Shared-memory wavefronts over the fewest the accesses needed (1 without bank
    /// conflicts; 32 when a warp's 32 lanes hit one bank).
    pub fn shared_wavefronts_per_ideal(&self) -> Option<f64> {
        ratio(self.shared_wavefronts, self.shared_ideal)
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// A call from one device function to another, at the source line the line table gives the
/// call instruction (a `-G` build keeps the toolkit's intrinsics as functions of their own).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// The calling function, demangled.
    pub caller: String,
    /// The called function, demangled.
    pub callee: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// A source line the compiler inlined into another (`//## File "A", line 190 inlined at "B",
/// line 219`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Inlined {
    pub file: String,
    pub line: u32,
    pub at_file: String,
    pub at_line: u32,
}

/// One source line of a profiled kernel, with the counters Nsight Compute attributes to it (the
/// sum over its SASS instructions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceLine {
    pub file: String,
    /// The function (kernel) as ncu names it.
    pub function: String,
    pub line: u32,
    /// The line's text, trimmed (at most 200 characters).
    pub text: String,
    /// Warp-stall samples on the line (all samples).
    pub stall_samples: u64,
    /// The stall reason with the most samples on the line, as ncu names its column (`stall_mio`).
    pub top_stall: Option<String>,
    /// The line's warp-stall samples by reason (`stall_barrier`), reasons with none left out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stalls: BTreeMap<String, u64>,
    pub instructions: u64,
    /// Thread instructions executed with their predicate on (the lanes that did work), summed
    /// over the line's warp instructions: divided by `instructions`, the lanes active per
    /// instruction (32 when no lane is masked off or predicated off).
    #[serde(default)]
    pub active_lanes: u64,
    /// Shared-memory wavefronts: all, and beyond the ideal (bank conflicts).
    pub shared_wavefronts: u64,
    pub shared_excessive: u64,
    /// Global-memory sectors at L2: all, and beyond the ideal (uncoalesced access).
    pub global_sectors: u64,
    pub global_excessive: u64,
    /// Global atomics and reductions (`RED`, `ATOM`) executed on the line, warp level.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub atomics: u64,
}

impl ParsedLog {
    /// Whether the parser read nothing of its format: no finding, kernel, metric, result,
    /// timing, check, test case, source line, instruction mix or summary count. A log that
    /// holds nothing says nothing about a kernel, least of all that it is clean.
    pub fn holds_nothing(&self) -> bool {
        self.tests.is_empty() && self.holds_nothing_but_tests()
    }

    /// Whether the log's only evidence is test cases (JUnit XML) and every one was skipped:
    /// nothing ran, so the log says nothing of a kernel either.
    pub fn every_test_skipped(&self) -> bool {
        !self.tests.is_empty()
            && self.tests.iter().all(|t| t.outcome == TestOutcome::Skipped)
            && self.holds_nothing_but_tests()
    }

    fn holds_nothing_but_tests(&self) -> bool {
        self.findings.is_empty()
            && self.kernels.is_empty()
            && self.metrics.is_empty()
            && self.results.is_empty()
            && self.timings.is_empty()
            && self.checks.is_empty()
            && self.source_lines.is_empty()
            && self.instruction_mix.is_empty()
            && self.call_sites.is_empty()
            && self.inlined.is_empty()
            && self.reported_errors.is_none()
            && self.reported_warnings.is_none()
            && self.launch.is_none()
    }

    /// An empty result for `format`, to be filled by a parser.
    pub fn new(format: Format, tool: Option<Tool>) -> ParsedLog {
        ParsedLog {
            format,
            tool,
            complete: false,
            reported_errors: None,
            reported_warnings: None,
            unprinted_errors: 0,
            unparsed_lines: 0,
            unparsed_examples: Vec::new(),
            findings: Vec::new(),
            kernels: Vec::new(),
            metrics: Vec::new(),
            results: Vec::new(),
            launch: None,
            timings: Vec::new(),
            checks: Vec::new(),
            tests: Vec::new(),
            tests_framework: String::new(),
            source_lines: Vec::new(),
            instruction_mix: Vec::new(),
            call_sites: Vec::new(),
            inlined: Vec::new(),
            failure_output: None,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
