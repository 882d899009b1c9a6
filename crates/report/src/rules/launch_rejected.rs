//! `launch-rejected`: the runtime refused a launch before the kernel ran. The evidence is an
//! API error at a launch call (`cudaLaunchKernel` returned `cudaErrorInvalidValue`, "invalid
//! configuration argument", "too many resources requested for launch"), or the program's own
//! error line saying so, while no tool saw the kernel run (no device-side record in the config,
//! no profiled launch). One root cause per config, whatever the number of stages that failed
//! on it: the causes the error allows are ranked with the numbers the build gives (ptxas's
//! registers and static shared memory, shared-memory instructions in the SASS) against the
//! arch's limits.

use parsers::FindingKind;
use parsers::cuda::CudaError;
use serde_json::json;

use super::host_api::{api_call, api_error, is_device_fault};
use super::{Ctx, Role, Rule, RuleId, push_new};
use crate::diagnosis::{Confidence, Draft, Level, SourceLocation};
use crate::kernel_id::KernelId;
use crate::message::{Message, code, figure, msg, path, quote};
use crate::text::bytes;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::LaunchRejected,
    Role::SitedFault {
        rank: 1,
        unplaced: true,
    },
    "Launch rejected",
    "A launch the runtime refused before the kernel ran (invalid argument, \
        invalid configuration, too many resources) with no device-side record of \
        it: one root cause for every stage that failed on it, with the limits the \
        build's numbers make likely.",
    "crates/report/src/rules/launch_rejected.rs",
    run,
);

/// The calls that launch a kernel, in the runtime and the driver API.
const LAUNCH_CALLS: &[&str] = &[
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelEx",
    "cudaLaunchCooperativeKernel",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
];

/// What the runtime said, by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// `cudaErrorInvalidValue` at a launch: a limit of the launch configuration (block size,
    /// dynamic shared memory) broken.
    InvalidValue,
    /// `cudaErrorInvalidConfiguration`: the grid or block dimensions.
    InvalidConfiguration,
    /// `cudaErrorLaunchOutOfResources`: registers (or shared memory) for the block.
    OutOfResources,
}

impl Refusal {
    fn of(error: CudaError) -> Option<Refusal> {
        match error {
            CudaError::InvalidValue => Some(Refusal::InvalidValue),
            CudaError::InvalidConfiguration => Some(Refusal::InvalidConfiguration),
            CudaError::LaunchOutOfResources => Some(Refusal::OutOfResources),
            _ => None,
        }
    }

    /// What the runtime said, in its own short words, and the error's name in the runtime:
    /// "invalid argument", `cudaErrorInvalidValue`.
    fn said(self) -> (&'static str, &'static str) {
        match self {
            Refusal::InvalidValue => ("invalid argument", "cudaErrorInvalidValue"),
            Refusal::InvalidConfiguration => {
                ("invalid configuration argument", "cudaErrorInvalidConfiguration")
            }
            Refusal::OutOfResources => {
                ("too many resources requested for launch", "cudaErrorLaunchOutOfResources")
            }
        }
    }
}

/// Whether a finding is device-side evidence that a kernel of the config ran: a device fault,
/// or a sanitizer's record of the kernel's accesses or barriers.
fn ran_on_device(kind: FindingKind) -> bool {
    is_device_fault(kind)
        || matches!(
            kind,
            FindingKind::Race | FindingKind::UninitializedRead | FindingKind::BarrierError
        )
}

/// One draft per config with a refused launch and no sign that a kernel of it ran.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    'configs: for config in j.config_names() {
        let config = config.as_deref();
        // The sanitizers' records of the refused call, in a config where no kernel ran.
        let mut refusal = None;
        let mut explains = Vec::new();
        let mut evidence = Vec::new();
        for (i, f) in j.findings_in(config) {
            if ran_on_device(f.finding.kind) {
                continue 'configs;
            }
            if f.finding.kind != FindingKind::HostApiError {
                continue;
            }
            let at_launch = api_call(f.finding).is_some_and(|c| LAUNCH_CALLS.contains(&c));
            let class = api_error(f.finding).and_then(|a| Refusal::of(a.error()));
            match class {
                Some(class) if at_launch => {
                    refusal.get_or_insert(class);
                    explains.push(i);
                    push_new(&mut evidence, [ctx.finding_evidence(f)], |a, b| a.stage == b.stage);
                }
                // The same error read back by the next call (`cudaGetLastError`): part of it.
                Some(_) => explains.push(i),
                None => {}
            }
        }
        // The program's own words, stage by stage.
        let mut program_line = None;
        for stage in j.stages_in(config) {
            let reason = stage
                .launch_search
                .as_ref()
                .and_then(|s| s.failure.as_deref())
                .or(stage.reason.as_deref())
                .unwrap_or("");
            if let Some(class) = CudaError::of_launch_line(reason).and_then(Refusal::of) {
                refusal.get_or_insert(class);
                program_line.get_or_insert_with(|| reason.to_string());
            }
        }
        let Some(refusal) = refusal else {
            continue;
        };
        let in_config = |c: &Option<String>| c.as_deref() == config;
        // The refused kernel is one the build defined that no profiled launch ran (a framework's
        // kernels, or another of the program's, may well have run before it).
        let profiled: std::collections::BTreeSet<&crate::kernel_id::KernelId> = j
            .metrics
            .iter()
            .filter(|m| in_config(&m.config))
            .map(|m| &m.kernel)
            .collect();
        let defined = || j.kernels.iter().filter(|k| in_config(&k.config));
        let kernels: Vec<&crate::join::KernelView> =
            defined().filter(|k| !profiled.contains(&k.name)).collect();
        // Every kernel the build defined ran under the profiler: the refused launch is none of
        // them (a library's), or the refusal was not at every launch.
        if kernels.is_empty() && defined().next().is_some() {
            continue;
        }
        let mut d = Draft::new(RuleId::LaunchRejected, Level::Error, Message::new());
        d.config = config.map(str::to_string);
        d.explains = explains;
        d.evidence = evidence;
        if let Some(line) = &program_line {
            let scrubbed = crate::text::scrub(line, &j.repo_files);
            d.call_site = call_site(&scrubbed, &j.repo_files);
            if d.evidence.len() < 2 {
                d.evidence.push(ctx.source_evidence(
                    None,
                    config,
                    msg!("the program: {}", quote(scrubbed)),
                ));
            }
        }
        let one = kernels.len() == 1;
        d.kernel = kernels.first().filter(|_| one).map(|k| k.name.to_string());
        let build = build_of(ctx, &kernels, config);
        d.location = ctx.kernel_file(config).filter(|_| one);
        d.confidence = if d.evidence.iter().any(|e| !e.excerpt.is_empty()) {
            Confidence::High
        } else {
            Confidence::Medium
        };
        let rejected = Rejected {
            refusal,
            kernels: kernels.iter().map(|k| &k.name).collect(),
            unprofiled: profiled.is_empty()
                && j.sources_in(config)
                    .any(|s| s.kind == crate::run::StageKind::Profile),
            causes: ranked_causes(refusal, &build),
            build,
        };
        word_rejected(&mut d, &rejected);
        d.figures
            .insert("refusal".into(), json!(format!("{refusal:?}")));
        d.key = format!("{refusal:?}");
        out.push(d);
    }
    out
}

/// A refused launch, as its draft words it.
struct Rejected<'a> {
    refusal: Refusal,
    /// The kernels it may be: one the build defined that no profiled launch ran.
    kernels: Vec<&'a KernelId>,
    /// Nsight Compute ran in the config and profiled no launch.
    unprofiled: bool,
    /// The causes the refusal allows, most likely first.
    causes: Vec<Cause>,
    build: Build,
}

/// The draft's title, explanation and fix (its call site is already set).
fn word_rejected(d: &mut Draft, r: &Rejected) {
    let named = match r.kernels.as_slice() {
        [one] => Message::from(code(one.as_str())),
        [] => msg!("the kernel"),
        many => msg!(
            "one of {}",
            Message::words(many.iter().map(|k| Message::from(code(k.as_str()))).collect())
        ),
    };
    let (said, error) = r.refusal.said();
    d.title = msg!("The launch of {} was rejected: {}", named.clone(), said);
    let at = d
        .call_site
        .as_ref()
        .map(|c| msg!(" (the program checks it at {})", path(c)))
        .unwrap_or_default();
    let causes = r.causes.iter().enumerate().map(|(i, &c)| {
        msg!("({}) {}", (i + 1).to_string(), word_cause(c, &r.build).0)
    });
    d.explanation = msg!(
        "The runtime refused the launch of {} with {}{}, so that launch never ran: no tool \
         recorded it on the device{}. Every later failure in this config follows from it. A \
         launch is refused when its configuration breaks a limit of the device; the ones this \
         error allows, most likely first from what the build shows: {}.",
        named,
        msg!("{} ({})", said, code(error)),
        at,
        if r.unprofiled {
            ", and Nsight Compute profiled no launch"
        } else {
            ""
        },
        Message::join(causes, "; ")
    );
    d.fix = r
        .causes
        .first()
        .map(|&c| word_cause(c, &r.build).1)
        .unwrap_or_default();
}

/// A cause a refusal allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// Dynamic shared memory above the default or the opt-in limit.
    SharedMemory,
    /// Too many threads per block.
    Threads,
    /// A grid dimension past its limit, or zero.
    Grid,
    /// Registers per thread times threads per block above the block's registers.
    Registers,
}

/// What the build shows about the refused kernels, and the arch's limits they launch under.
struct Build {
    arch: String,
    limits: crate::occupancy::ArchLimits,
    /// Shared memory the kernel touches that ptxas did not count as static: its shared-memory
    /// instructions in the SASS, and the kernel.
    dynamic: Option<(u64, KernelId)>,
    /// The most registers per thread ptxas gives any of them.
    registers: Option<u32>,
}

/// What the build shows about `kernels` in this config.
fn build_of(ctx: &Ctx, kernels: &[&crate::join::KernelView], config: Option<&str>) -> Build {
    let arch = kernels
        .iter()
        .find_map(|k| k.arch.clone())
        .or_else(|| {
            config
                .and_then(|c| ctx.joined.configs.get(c))
                .and_then(|p| p.arch.clone())
        })
        .unwrap_or_else(|| "sm_90".to_string());
    let limits = crate::occupancy::limits(&arch).unwrap_or(crate::occupancy::SM_90);
    // Shared memory the kernel touches that ptxas did not count as static: a dynamic tile,
    // sized at launch.
    let dynamic = kernels.iter().find_map(|k| {
        let sass = k.sass?;
        let touched = sass.lds + sass.sts + sass.ldsm;
        let stat = k.resources.and_then(|r| r.shared_bytes).unwrap_or(0);
        (touched > 0 && stat == 0).then_some((touched, k.name.clone()))
    });
    let registers = kernels.iter().filter_map(|k| k.registers()).max();
    Build {
        arch,
        limits,
        dynamic,
        registers,
    }
}

/// The causes `refusal` allows, most likely first: what the build shows moves a cause up.
fn ranked_causes(refusal: Refusal, build: &Build) -> Vec<Cause> {
    use Cause::*;
    match refusal {
        Refusal::OutOfResources => vec![Registers, SharedMemory],
        Refusal::InvalidConfiguration => vec![Threads, Grid, SharedMemory],
        Refusal::InvalidValue if build.dynamic.is_some() => vec![SharedMemory, Threads, Grid],
        Refusal::InvalidValue => vec![Threads, SharedMemory, Grid],
    }
}

/// A cause in words, with its fix, from what the build shows.
fn word_cause(cause: Cause, b: &Build) -> (Message, Message) {
    let max_threads = b.limits.max_threads_per_block.to_string();
    match cause {
        Cause::SharedMemory => (
            msg!(
                "dynamic shared memory above the 48 KiB a kernel gets by default, without \
                 `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                 bytes)` before the launch (or above the {} an {} block may opt in to){}",
                figure(bytes(b.limits.max_shared_per_block)),
                b.arch.as_str(),
                match &b.dynamic {
                    Some((touched, name)) => msg!(
                        ": {} accesses shared memory ({} LDS/STS/LDSM in its SASS) and ptxas \
                         reports no static shared memory, so its shared tile is dynamic, sized \
                         at the launch",
                        code(name.as_str()),
                        touched.to_string()
                    ),
                    None => Message::new(),
                }
            ),
            msg!(
                "Before the launch, raise the kernel's limit to the bytes it is launched with: \
                 `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                 bytes)` (once per kernel; check its return code), or shrink the tile below 48 \
                 KiB."
            ),
        ),
        Cause::Threads => (
            msg!(
                "more than {} threads per block (`blockDim.x * blockDim.y * blockDim.z`), or \
                 `blockDim.z` above 64",
                max_threads.clone()
            ),
            msg!(
                "Launch at most {} threads per block: split the work over more blocks, or loop \
                 inside the block.",
                max_threads
            ),
        ),
        Cause::Grid => (
            msg!(
                "a grid dimension past its limit (`gridDim.y` or `gridDim.z` above 65535, \
                 `gridDim.x` above 2^31 - 1) or zero"
            ),
            msg!(
                "Keep `gridDim.y` and `gridDim.z` within 65535 (fold the rest into `gridDim.x`) \
                 and never launch an empty grid."
            ),
        ),
        Cause::Registers => (
            match b.registers {
                Some(r) => msg!(
                    "registers: ptxas gives the kernel {} per thread, so a block of more than {} \
                     threads asks for more than the {} registers a block may have",
                    r.to_string(),
                    (b.limits.max_registers_per_block / r.max(1)).to_string(),
                    b.limits.max_registers_per_block.to_string()
                ),
                None => msg!(
                    "registers per thread times threads per block above what a block may have"
                ),
            },
            msg!(
                "Launch fewer threads per block, or cap the registers \
                 (`__launch_bounds__(threads)` on the kernel, `-maxrregcount`)."
            ),
        ),
    }
}

/// The `file:line` a program's error line names, when the file is one of the run's inputs (the
/// line of the check after the launch, `src/kernel.cu:34: CUDA error: ...`).
fn call_site(line: &str, repo_files: &[String]) -> Option<SourceLocation> {
    line.split_whitespace().find_map(|word| {
        let word = word.trim_end_matches(':');
        let (file, line) = word.rsplit_once(':')?;
        let line: u32 = line.parse().ok()?;
        let file = repo_files
            .iter()
            .find(|f| f.as_str() == file || f.ends_with(&format!("/{file}")))?;
        Some(SourceLocation {
            file: file.clone(),
            line: Some(line),
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{fixture_case, says};

    /// memcheck on `issue12/invalid_args.cu config` (`compute-sanitizer/memcheck_invalid_config.log`):
    /// `fill<<<1, 2048>>>` is refused with `cudaErrorInvalidValue` at `cudaLaunchKernel`.
    #[test]
    fn fires_on_a_launch_the_runtime_refused_with_invalid_argument() {
        let d = fixture_case!(Memcheck, "compute-sanitizer/memcheck_invalid_config.log")
            .only(RuleId::LaunchRejected);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("release"));
        // No build in the run: which kernel the refused launch was is not known.
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        // The refused launch and the `cudaGetLastError` that read it back.
        assert_eq!(d.explains.len(), 2, "{:?}", d.explains);
        says(&d.title, "invalid argument");
    }

    /// memcheck on `issue12/invalid_args.cu value` (`compute-sanitizer/memcheck_invalid_value.log`):
    /// the same error, at `cudaMemcpy`: no launch was refused.
    #[test]
    fn stays_silent_on_the_same_error_at_a_copy() {
        fixture_case!(Memcheck, "compute-sanitizer/memcheck_invalid_value.log")
            .silent(RuleId::LaunchRejected);
    }
}
