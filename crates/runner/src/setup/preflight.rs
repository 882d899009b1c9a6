//! What this machine can run, found out before any stage starts.
//!
//! [`check`] discovers the tools (provisioning the pinned compiler when a compile-side tool is
//! missing and the pipeline allows it), reads the driver and GPUs from `nvidia-smi`, looks for
//! the CUDA driver library the harness loads, checks whether ncu may read the performance
//! counters and, when a stage that will run needs it, whether `torch` imports. The result feeds
//! the plan, which skips what cannot run with a reason that says why. What the tools answered is
//! kept in the user's cache and reused while nothing it depends on changed ([`crate::setup::facts`]):
//! an unchanged re-run starts no tool to learn what it already knows.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use report::{Environment, Gpu, StageKind};

use crate::pipeline::config::{self, Pipeline};
use crate::process::exec;
use crate::process::interrupt::Interrupt;
use crate::setup::facts::{self, Facts, GpuFacts, GpuKey, Torch};
use crate::setup::toolchain::{self, Env, Toolchain};

/// The machine, as the stages will see it.
#[derive(Debug, Clone)]
pub struct Preflight {
    pub toolchain: Toolchain,
    pub environment: Environment,
    /// Why GPU stages cannot run, when they cannot.
    pub gpu_unavailable: Option<String>,
    /// `sm_XY` of each GPU present; empty when unknown.
    pub gpu_archs: Vec<String>,
    /// How to start the harness: a program and leading arguments. `Err` says why it cannot.
    pub harness: Result<Vec<PathBuf>, String>,
    /// Whether `import torch` works: its version, or why not. `None` when no stage needs it.
    pub torch: Option<Result<String, String>>,
    /// The Python modules a stage needs that no import answered for (`triton`, and `torch` when
    /// only GPU stages want it and there is no GPU): whether Python finds each, without
    /// importing it (`importlib.util.find_spec`), so a run that cannot start says what to install.
    pub modules: BTreeMap<String, Result<(), String>>,
    /// What preflight did that the user should know (provisioning, say).
    pub notes: Vec<String>,
}

/// How the runner reaches the harness when the pipeline does not name one.
#[derive(Debug, Clone)]
pub enum BuiltinHarness {
    /// This executable runs it as `<exe> harness ...`.
    Available(PathBuf),
    /// It is not available, with the reason.
    Unavailable(String),
}

/// Runs every check. `say` prints a line on the terminal as it happens.
///
/// What the tools said on an earlier run is reused while nothing it depends on changed
/// ([`crate::setup::facts`]), unless `env.reuse_facts` is false (`--force`).
pub fn check(
    pipeline: &Pipeline,
    env: &Env,
    builtin_harness: &BuiltinHarness,
    say: &dyn Fn(&str),
    interrupt: &Interrupt,
) -> Preflight {
    let mut notes = Vec::new();
    let mut facts = Facts::open(
        toolchain::cache_home(env).map(|dir| dir.join(facts::FILE)),
        env.reuse_facts,
    );
    let mut tools = toolchain::discover(pipeline, env, interrupt, &mut facts);

    let wanted = wanted_tools(pipeline, &env.stages);
    let missing = |tool: &str| {
        tools.missing.contains_key(tool) && !pipeline.toolchain.tools.contains_key(tool)
    };
    // A build is taken to compile CUDA whatever its first word (a script, make, CMake, a
    // Python build): it calls `nvcc` by name, and finds the provisioned one on its PATH.
    let builds = pipeline.stages.iter().any(|s| {
        s.enabled && s.kind == StageKind::Compile && config::runs(pipeline, &env.stages, s)
    });
    let mut provisioning_failed = None;
    let needs_compiler = toolchain::COMPILER_TOOLS
        .iter()
        .any(|t| wanted.get(*t) == Some(&false) && missing(t))
        || builds && missing("nvcc");
    if needs_compiler && pipeline.toolchain.provision {
        match tools.get("python3").map(|t| t.path.clone()) {
            None => {
                let e = toolchain::ToolchainError::NoPython;
                say(&format!("warning: {e}"));
                notes.push(e.to_string());
            }
            Some(python3) => match toolchain::provision(pipeline, env, &python3, say, interrupt) {
                Ok(_) => tools = toolchain::discover(pipeline, env, interrupt, &mut facts),
                Err(e) => {
                    // Said once, here; the tools it left missing only point at it.
                    say(&format!("warning: failed to {e}"));
                    notes.push(format!("failed to {e}"));
                    provisioning_failed = Some(e.for_report());
                    for tool in toolchain::COMPILER_TOOLS {
                        if let Some(reason) = tools.missing.get_mut(*tool) {
                            *reason = format!(
                                "{reason} (provisioning CUDA {} failed: see its warning, or the \
                                 report's Environment)",
                                pipeline.toolchain.cuda
                            );
                        }
                    }
                }
            },
        }
    }

    let harness = harness_argv(pipeline, builtin_harness);
    let smi = which("nvidia-smi");
    let key = GpuKey::new(
        Path::new(facts::DRIVER_DIR),
        smi.as_deref(),
        harness
            .as_ref()
            .ok()
            .and_then(|h| h.first())
            .map(PathBuf::as_path),
    );
    let gpu = facts.gpu(key, || {
        gpu_facts(pipeline, smi.as_deref(), &harness, &mut notes, interrupt)
    });
    let GpuFacts {
        driver,
        gpus,
        unavailable: gpu_unavailable,
    } = gpu;
    let gpu_archs: Vec<String> = gpus
        .iter()
        .filter_map(|g| g.compute_capability.as_deref())
        .filter_map(arch_of_capability)
        .collect();

    let torch = if wanted
        .get("torch")
        .is_some_and(|&gpu_only| !gpu_only || gpu_unavailable.is_none())
    {
        Some(match tools.get("python3") {
            None => Err("torch not importable: python3 not found".to_string()),
            Some(python) => facts.torch(&python.path, || {
                import_torch(&python.path, &pipeline.root, interrupt)
            }),
        })
    } else {
        None
    };

    let modules = unasked_modules(pipeline, &tools, &wanted, torch.is_some(), interrupt);

    let counters_permitted = tools.get("ncu").and_then(|_| counters_permitted());
    let versions = versions(&tools, torch.as_ref());
    if let Err(e) = facts.save() {
        notes.push(format!("failed to keep the preflight's facts: {e}"));
    }
    let environment = Environment {
        os: os_description(),
        tools: versions,
        toolchain_source: tools.compiler_source(),
        driver,
        gpus,
        gpu_unavailable: gpu_unavailable.clone(),
        counters_permitted,
        preflight_cached: facts.reused().to_vec(),
        // Set by `exhibit --host` on the runner it starts there.
        host: std::env::var(crate::process::remote::HOST_VARIABLE)
            .ok()
            .filter(|h| !h.is_empty()),
        provisioning_failed,
    };
    Preflight {
        toolchain: tools,
        environment,
        gpu_unavailable,
        gpu_archs,
        harness,
        torch,
        modules,
        notes,
    }
}

/// How to start the harness: the pipeline's `toolchain.tools.harness`, which must be a file,
/// else this executable's `harness` subcommand, when it has one.
fn harness_argv(
    pipeline: &Pipeline,
    builtin_harness: &BuiltinHarness,
) -> Result<Vec<PathBuf>, String> {
    match pipeline.toolchain.tools.get("harness") {
        Some(path) => {
            let resolved = pipeline.resolve(path);
            if resolved.is_file() {
                Ok(vec![resolved])
            } else {
                Err(format!(
                    "harness not found at {} (toolchain.tools.harness)",
                    path.display()
                ))
            }
        }
        None => match builtin_harness {
            BuiltinHarness::Available(exe) => Ok(vec![exe.clone(), PathBuf::from("harness")]),
            BuiltinHarness::Unavailable(reason) => Err(reason.clone()),
        },
    }
}

/// The Python modules the stages want that no import answered for (`torch` when it was
/// imported, `asked_torch`, is not asked again): found or not, asked in one quick process.
fn unasked_modules(
    pipeline: &Pipeline,
    tools: &Toolchain,
    wanted: &BTreeMap<String, bool>,
    asked_torch: bool,
    interrupt: &Interrupt,
) -> BTreeMap<String, Result<(), String>> {
    let unasked: Vec<&str> = config::PYTHON_MODULES
        .iter()
        .copied()
        .filter(|m| wanted.contains_key(*m) && !(*m == "torch" && asked_torch))
        .collect();
    match (unasked.is_empty(), tools.get("python3")) {
        (true, _) => BTreeMap::new(),
        (false, None) => unasked
            .iter()
            .map(|m| {
                (
                    m.to_string(),
                    Err(format!("{m} not importable: python3 not found")),
                )
            })
            .collect(),
        (false, Some(python)) => find_modules(&python.path, &pipeline.root, &unasked, interrupt),
    }
}

/// Each tool's version as the manifest records it ("version unknown" where it said none), and
/// torch's where it imports.
fn versions(tools: &Toolchain, torch: Option<&Result<String, String>>) -> BTreeMap<String, String> {
    let mut versions: BTreeMap<String, String> = tools
        .tools
        .iter()
        .map(|(name, tool)| {
            (
                name.clone(),
                tool.version
                    .clone()
                    .unwrap_or_else(|| "version unknown".to_string()),
            )
        })
        .collect();
    if let Some(Ok(version)) = torch {
        versions.insert("torch".to_string(), version.clone());
    }
    versions
}

/// Asks the machine about its GPUs: whether the loader finds `libcuda`, what `nvidia-smi` lists,
/// and what the harness opens. The flag says whether the answer may be kept: only when the GPU
/// is usable and every tool answered (a failure or a missing device may pass, and a kept one
/// would stay until the driver changes).
fn gpu_facts(
    pipeline: &Pipeline,
    smi: Option<&Path>,
    harness: &Result<Vec<PathBuf>, String>,
    notes: &mut Vec<String>,
    interrupt: &Interrupt,
) -> (GpuFacts, bool) {
    let (driver, mut gpus, smi_note) = match smi {
        Some(smi) => nvidia_smi(smi, pipeline, interrupt),
        None => (None, Vec::new(), None),
    };
    let mut keep = smi_note.as_deref() != Some(SMI_FAILED);
    let mut unavailable = if !libcuda_present(pipeline, interrupt) {
        Some("no CUDA driver: libcuda.so.1 not found".to_string())
    } else if smi_note.as_deref() == Some(NO_GPU) {
        Some("no GPU: nvidia-smi lists none".to_string())
    } else {
        None
    };
    // The harness has the last word on the GPU: it opens the device the way the stages will.
    if unavailable.is_none()
        && let Ok(prefix) = harness
    {
        match probe(prefix, &pipeline.root, interrupt) {
            Probe::Device(device) => merge_device(&mut gpus, device),
            Probe::NoDevice(reason) => unavailable = Some(reason),
            Probe::Failed(note) => {
                notes.push(note);
                keep = false;
            }
        }
    }
    let keep = keep && unavailable.is_none();
    let facts = GpuFacts {
        driver,
        gpus,
        unavailable,
    };
    (facts, keep)
}

impl Preflight {
    /// Why `tool` is not usable here, or `None` when it is.
    pub fn missing(&self, tool: &str) -> Option<String> {
        match tool {
            "harness" => self.harness.as_ref().err().cloned(),
            "torch" => match (&self.torch, self.modules.get("torch")) {
                (Some(Ok(_)), _) | (None, Some(Ok(()))) => None,
                (Some(Err(reason)), _) | (None, Some(Err(reason))) => Some(reason.clone()),
                (None, _) => Some("torch not checked".to_string()),
            },
            module if config::PYTHON_MODULES.contains(&module) => match self.modules.get(module) {
                Some(Ok(())) => None,
                Some(Err(reason)) => Some(reason.clone()),
                None => Some(format!("{module} not checked")),
            },
            _ if self.toolchain.get(tool).is_some() => None,
            _ => Some(
                self.toolchain
                    .missing
                    .get(tool)
                    .cloned()
                    .unwrap_or_else(|| format!("{tool} not found")),
            ),
        }
    }

    /// Lines summarising the machine, for the terminal: each tool's version and where it came
    /// from, or why it is missing.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for name in toolchain::EXECUTABLES {
            match self.toolchain.get(name) {
                Some(tool) => lines.push(format!(
                    "{name}: {} ({})",
                    tool.version.as_deref().unwrap_or("version unknown"),
                    tool.source
                )),
                None if toolchain::ON_DEMAND.contains(name) => {}
                None => lines.push(format!(
                    "{name}: {}",
                    self.missing(name)
                        .map_or_else(|| "not found".to_string(), |why| strip_name(name, why))
                )),
            }
        }
        match &self.gpu_unavailable {
            Some(reason) => lines.push(format!("gpu: none ({reason})")),
            None if self.environment.gpus.is_empty() => {
                lines.push("gpu: CUDA driver present, nvidia-smi gave no details".to_string());
            }
            None => {
                for gpu in &self.environment.gpus {
                    lines.push(format!(
                        "gpu: {} ({}), driver {}",
                        gpu.name,
                        gpu.compute_capability.as_deref().unwrap_or("arch unknown"),
                        self.environment.driver.as_deref().unwrap_or("unknown")
                    ));
                }
            }
        }
        if let Err(reason) = &self.harness {
            lines.push(format!("harness: {reason}"));
        }
        match &self.torch {
            Some(Ok(v)) => lines.push(format!("torch: {v}")),
            Some(Err(reason)) => lines.push(format!("torch: {reason}")),
            None => {}
        }
        for (module, found) in &self.modules {
            match found {
                Ok(()) => lines.push(format!("{module}: found")),
                Err(reason) => {
                    lines.push(format!("{module}: {}", strip_name(module, reason.clone())))
                }
            }
        }
        if let Some(false) = self.environment.counters_permitted {
            lines.push("ncu: cannot read performance counters (ERR_NVGPUCTRPERM)".to_string());
        }
        if !self.environment.preflight_cached.is_empty() {
            lines.push(format!(
                "from the cache of an earlier run (unchanged since): {}",
                self.environment.preflight_cached.join(", ")
            ));
        }
        lines
    }
}

enum Probe {
    Device(parsers::harness::Device),
    NoDevice(String),
    Failed(String),
}

/// Runs `<harness> --probe`: the device it opens, or why there is none (exit 4).
fn probe(prefix: &[PathBuf], cwd: &Path, interrupt: &Interrupt) -> Probe {
    let mut argv: Vec<OsString> = prefix.iter().map(|p| p.clone().into_os_string()).collect();
    argv.push("--probe".into());
    match exec::capture(&argv, cwd, Duration::from_secs(60), interrupt) {
        Some((0, out, _)) => {
            match serde_json::from_str::<parsers::harness::HarnessOutput>(out.trim()) {
                Ok(doc) => match doc.device {
                    Some(device) => Probe::Device(device),
                    None => Probe::Failed("harness --probe named no device".to_string()),
                },
                Err(e) => Probe::Failed(format!("harness --probe printed no JSON: {e}")),
            }
        }
        Some((4, _, err)) => {
            let line = err
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("no CUDA driver or GPU");
            Probe::NoDevice(line.strip_prefix("harness: ").unwrap_or(line).to_string())
        }
        Some((code, _, err)) => Probe::Failed(format!(
            "harness --probe exited with status {code}: {}",
            err.lines().last().unwrap_or_default().trim()
        )),
        None => Probe::Failed("harness --probe did not finish".to_string()),
    }
}

/// Adds what the harness knows (SM count, compute capability) to what nvidia-smi said.
fn merge_device(gpus: &mut Vec<Gpu>, device: parsers::harness::Device) {
    match gpus.first_mut() {
        Some(gpu) => {
            gpu.sm_count = gpu.sm_count.or(device.sm_count);
            if gpu.compute_capability.is_none() {
                gpu.compute_capability = device.compute_capability;
            }
        }
        None => gpus.push(Gpu {
            name: device.name,
            sm_count: device.sm_count,
            compute_capability: device.compute_capability,
            memory_mib: device.memory_bytes.map(|b| b / (1024 * 1024)),
            ..Gpu::default()
        }),
    }
}

/// Tool name to whether only GPU stages want it (`true`) or some CPU stage does (`false`), over
/// the enabled stages the run will run (`stages`: those `--only` names, empty for all).
fn wanted_tools(pipeline: &Pipeline, stages: &[String]) -> BTreeMap<String, bool> {
    let mut wanted: BTreeMap<String, bool> = BTreeMap::new();
    for stage in pipeline
        .stages
        .iter()
        .filter(|s| s.enabled && config::runs(pipeline, stages, s))
    {
        for tool in &stage.needs.tools {
            let gpu_only = wanted.get(tool).copied().unwrap_or(true) && stage.needs.gpu;
            wanted.insert(tool.clone(), gpu_only);
        }
    }
    wanted
}

const NO_GPU: &str = "no gpu";
const SMI_FAILED: &str = "nvidia-smi failed";

/// Runs the `nvidia-smi` query; returns the driver, the GPUs and a note when none are listed or
/// the query failed.
fn nvidia_smi(
    smi: &Path,
    pipeline: &Pipeline,
    interrupt: &Interrupt,
) -> (Option<String>, Vec<Gpu>, Option<String>) {
    let query = |fields: &str| {
        exec::capture(
            &[
                smi.as_os_str().to_os_string(),
                OsString::from(format!("--query-gpu={fields}")),
                OsString::from("--format=csv,noheader"),
            ],
            &pipeline.root,
            Duration::from_secs(30),
            interrupt,
        )
    };
    let Some((0, text, _)) = query(
        "name,uuid,driver_version,count,clocks.sm,clocks.mem,ecc.mode.current,mig.mode.current,memory.total",
    ) else {
        return (None, Vec::new(), Some(SMI_FAILED.to_string()));
    };
    let capabilities: Vec<String> = match query("compute_cap") {
        Some((0, caps, _)) => caps.lines().map(|l| l.trim().to_string()).collect(),
        _ => Vec::new(),
    };
    let mut driver = None;
    let mut gpus = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |n: usize| {
            fields
                .get(n)
                .copied()
                .filter(|v| !v.is_empty() && !v.starts_with('[') && *v != "N/A")
        };
        if driver.is_none() {
            driver = field(2).map(str::to_string);
        }
        gpus.push(Gpu {
            name: field(0).unwrap_or("unknown").to_string(),
            uuid: field(1).map(str::to_string),
            sm_count: None,
            compute_capability: capabilities.get(i).cloned().filter(|c| !c.is_empty()),
            sm_clock_mhz: field(4)
                .and_then(leading_number)
                .and_then(|n| u32::try_from(n).ok()),
            mem_clock_mhz: field(5)
                .and_then(leading_number)
                .and_then(|n| u32::try_from(n).ok()),
            ecc: field(6).map(str::to_string),
            mig: field(7).map(str::to_string),
            memory_mib: field(8).and_then(leading_number),
        });
    }
    let note = gpus.is_empty().then(|| NO_GPU.to_string());
    (driver, gpus, note)
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `9.0` becomes `sm_90`.
fn arch_of_capability(capability: &str) -> Option<String> {
    let (major, minor) = capability.trim().split_once('.')?;
    if major.chars().all(|c| c.is_ascii_digit()) && minor.chars().all(|c| c.is_ascii_digit()) {
        Some(format!("sm_{major}{minor}"))
    } else {
        None
    }
}

/// Whether the loader can find `libcuda.so.1`: `LD_LIBRARY_PATH`, `ldconfig -p`, the usual
/// driver directories.
fn libcuda_present(pipeline: &Pipeline, interrupt: &Interrupt) -> bool {
    const NAME: &str = "libcuda.so.1";
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(
        [
            "/usr/local/nvidia/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/lib/wsl/lib",
        ]
        .map(PathBuf::from),
    );
    if dirs.iter().any(|d| d.join(NAME).exists()) {
        return true;
    }
    let ldconfig = which("ldconfig").or_else(|| {
        ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .map(PathBuf::from)
            .into_iter()
            .find(|p| p.is_file())
    });
    ldconfig
        .and_then(|ldconfig| {
            exec::capture(
                &[ldconfig.into_os_string(), OsString::from("-p")],
                &pipeline.root,
                Duration::from_secs(10),
                interrupt,
            )
        })
        .is_some_and(|(_, out, _)| out.lines().any(|l| l.trim_start().starts_with(NAME)))
}

/// ncu needs the counters: the driver may reserve them for administrators
/// (`RmProfilingAdminOnly: 1`). `None` when the driver does not say.
fn counters_permitted() -> Option<bool> {
    let params = std::fs::read_to_string("/proc/driver/nvidia/params").ok()?;
    let admin_only = params
        .lines()
        .find_map(|l| l.strip_prefix("RmProfilingAdminOnly:"))
        .map(|v| v.trim() == "1")?;
    if !admin_only {
        return Some(true);
    }
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    Some(uid == 0)
}

/// Whether Python finds each module, without importing any: `Err` says why not.
fn find_modules(
    python: &Path,
    cwd: &Path,
    modules: &[&str],
    interrupt: &Interrupt,
) -> BTreeMap<String, Result<(), String>> {
    let argv = [
        python.as_os_str().to_os_string(),
        OsString::from("-c"),
        OsString::from(
            "import importlib.util, sys\n\
             for m in sys.argv[1:]:\n    print(m, importlib.util.find_spec(m) is not None)",
        ),
    ]
    .into_iter()
    .chain(modules.iter().map(OsString::from))
    .collect::<Vec<_>>();
    let answer = exec::capture(&argv, cwd, Duration::from_secs(30), interrupt);
    modules
        .iter()
        .map(|m| {
            let found = match &answer {
                Some((0, out, _)) => out.lines().any(|l| l.trim() == format!("{m} True")),
                _ => false,
            };
            let result = if found {
                Ok(())
            } else if answer.as_ref().is_some_and(|(code, _, _)| *code == 0) {
                Err(format!("{m} not importable: No module named '{m}'"))
            } else {
                Err(format!("{m} not importable: python3 did not answer"))
            };
            (m.to_string(), result)
        })
        .collect()
}

/// Imports torch: its version and the directory it was imported from, or why it did not import.
fn import_torch(python: &Path, cwd: &Path, interrupt: &Interrupt) -> Result<Torch, String> {
    let argv = [
        python.as_os_str().to_os_string(),
        OsString::from("-c"),
        OsString::from(
            "import os, torch; print(torch.__version__); print(os.path.dirname(torch.__file__))",
        ),
    ];
    match exec::capture(&argv, cwd, Duration::from_secs(120), interrupt) {
        Some((0, out, _)) => {
            // The last two lines: anything torch printed on import comes before.
            let lines: Vec<&str> = out
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let (version, dir) = match lines.as_slice() {
                [.., version, dir] => (*version, Some(PathBuf::from(dir))),
                [version] => (*version, None),
                [] => ("", None),
            };
            Ok(Torch {
                version: format!("torch {version}"),
                dir: dir.filter(|d| d.is_absolute()),
            })
        }
        Some((_, _, err)) => Err(format!(
            "torch not importable: {}",
            err.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("python3 failed")
                .trim()
        )),
        None => Err("torch not importable: python3 did not answer".to_string()),
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn os_description() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    let base = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    match pretty {
        Some(p) => format!("{base} ({p})"),
        None => base,
    }
}

/// Whether a pipeline arch (`sm_90`, `sm_90a`) runs on a GPU of arch `gpu` (`sm_90`).
pub fn arch_matches(arch: &str, gpu: &str) -> bool {
    arch.trim_end_matches(['a', 'f']) == gpu
}

/// The stage-level needs, checked against the preflight: `Some(reason)` when a stage cannot run.
/// Everything a stage needs that this machine lacks, by the names [`report::missing`] knows:
/// `gpu`, `counters`, a tool or a module.
pub fn unmet_names(stage: &config::Stage, preflight: &Preflight) -> Vec<String> {
    let mut names = Vec::new();
    if stage.needs.gpu && preflight.gpu_unavailable.is_some() {
        names.push("gpu".to_string());
    }
    for tool in &stage.needs.tools {
        if preflight.missing(tool).is_some() && !names.contains(tool) {
            names.push(tool.clone());
        }
    }
    if stage.kind == report::StageKind::Profile
        && preflight.environment.counters_permitted == Some(false)
    {
        names.push("counters".to_string());
    }
    names
}

pub fn unmet(stage: &config::Stage, preflight: &Preflight) -> Option<String> {
    if stage.needs.gpu
        && let Some(reason) = &preflight.gpu_unavailable
    {
        return Some(reason.clone());
    }
    for tool in &stage.needs.tools {
        if let Some(reason) = preflight.missing(tool) {
            return Some(reason);
        }
    }
    if stage.kind == report::StageKind::Profile
        && preflight.environment.counters_permitted == Some(false)
    {
        return Some("ncu cannot read performance counters (ERR_NVGPUCTRPERM)".to_string());
    }
    None
}

/// "nvcc not found at x" reads "not found at x" after "nvcc: ".
fn strip_name(name: &str, why: String) -> String {
    match why
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(' '))
    {
        Some(rest) => rest.to_string(),
        None => why,
    }
}
