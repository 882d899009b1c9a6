//! Finding the CUDA tools, and installing the pinned compiler when there is none.
//!
//! [`discover`] looks for each tool in the pipeline's overrides, then on `PATH`, then under
//! `CUDA_HOME`, `CUDA_PATH` and `/usr/local/cuda`, then in a toolchain provisioned earlier.
//! [`provision`] installs the PyPI wheels the pipeline pins (nvcc, crt, nvvm, runtime, cccl,
//! cuobjdump, nvdisasm; the runner's default set, `config::DEFAULT_WHEELS`, where the pipeline
//! pins none) into a virtual environment under the user's cache directory, so the compile and
//! SASS stages run for real on any Linux machine, with no GPU and no CUDA installed.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::pipeline::config;
use crate::process::exec;
use crate::process::interrupt::Interrupt;
use crate::setup::facts::Facts;

/// The tools found, with where they came from and their version lines.
#[derive(Debug, Clone, Default)]
pub struct Toolchain {
    pub tools: BTreeMap<String, Tool>,
    /// Tools looked for and not found, with why.
    pub missing: BTreeMap<String, String>,
}

/// One executable.
#[derive(Debug, Clone)]
pub struct Tool {
    pub path: PathBuf,
    pub source: Source,
    /// The line of `--version` output that names the version, when the tool printed one.
    pub version: Option<String>,
}

/// Where a tool was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `toolchain.tools` in pipeline.yaml.
    Override,
    Path,
    CudaHome,
    CudaPath,
    UsrLocalCuda,
    /// The pinned wheels, installed by [`provision`]; carries the CUDA version.
    Provisioned(String),
}

/// The parts of the process environment discovery reads, and what the run asks of the
/// preflight.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub path: Option<OsString>,
    pub cuda_home: Option<PathBuf>,
    pub cuda_path: Option<PathBuf>,
    pub xdg_cache_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// Whether the preflight may reuse what earlier runs learned (`--force` says no); see
    /// [`crate::setup::facts`].
    pub reuse_facts: bool,
    /// The stages the run was asked for (`--only`); empty: all. The preflight checks only the
    /// tools of the stages that will run (it imports torch only for those).
    pub stages: Vec<String>,
}

/// Why provisioning failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolchainError {
    /// No cache directory could be named.
    #[error("provision CUDA: neither XDG_CACHE_HOME nor HOME is set")]
    NoCacheDir,
    #[error("provision CUDA: python3 not found (install a CUDA toolkit, or python3 with venv)")]
    NoPython,
    /// A step of the installation failed; `log` holds the line quoted in `detail` (the tool's
    /// own advice where it gave one, as Debian's venv does: "apt install python3.11-venv"),
    /// else its output.
    #[error("provision CUDA {version}: {step} failed{detail}; see {log}")]
    Step {
        version: String,
        step: &'static str,
        detail: String,
        log: PathBuf,
    },
    #[error("provision CUDA {version}: the wheels installed no nvcc under {dir}")]
    NoCompiler { version: String, dir: PathBuf },
    #[error("provision CUDA: {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("provision CUDA: interrupted")]
    Interrupted,
    /// A toolkit in the cache another user could have changed: never run, never replaced.
    #[error(
        "provision CUDA {version}: {dir} is {why}, so the runner will not run it; remove it \
         (or `chmod o-w` it if it is yours), or set XDG_CACHE_HOME to a directory of your own"
    )]
    Foreign {
        version: String,
        dir: PathBuf,
        why: &'static str,
    },
}

impl ToolchainError {
    /// The error as a report says it: a log by its name in the runner's cache, never a path
    /// of this machine.
    pub fn for_report(&self) -> String {
        match self {
            ToolchainError::Step {
                version,
                step,
                detail,
                log,
            } => format!(
                "provision CUDA {version}: {step} failed{detail}; see {} in the runner's cache \
                 directory",
                log.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ),
            ToolchainError::NoCompiler { version, .. } => {
                format!("provision CUDA {version}: the wheels installed no nvcc")
            }
            ToolchainError::Io { source, .. } => format!("provision CUDA: {source}"),
            ToolchainError::Foreign { version, why, .. } => format!(
                "provision CUDA {version}: the toolkit in the runner's cache directory is {why}, \
                 so the runner will not run it"
            ),
            other => other.to_string(),
        }
    }
}

/// Tools whose absence provisioning can fix.
pub const COMPILER_TOOLS: &[&str] = &["nvcc", "ptxas", "cuobjdump", "nvdisasm"];

/// Executables discovery looks for (`harness` and `torch` are handled by the preflight).
pub const EXECUTABLES: &[&str] = &[
    "nvcc",
    "ptxas",
    "cuobjdump",
    "nvdisasm",
    "compute-sanitizer",
    "ncu",
    "python3",
    "cmake",
];

/// The tools of [`EXECUTABLES`] that only some builds start: the preflight's summary lists one
/// only when it is found.
pub const ON_DEMAND: &[&str] = &["cmake"];

impl Env {
    /// Reads the variables from this process.
    pub fn from_process() -> Env {
        Env {
            path: std::env::var_os("PATH"),
            cuda_home: std::env::var_os("CUDA_HOME").map(PathBuf::from),
            cuda_path: std::env::var_os("CUDA_PATH").map(PathBuf::from),
            xdg_cache_home: std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            home: std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            reuse_facts: true,
            stages: Vec::new(),
        }
    }
}

impl Toolchain {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// Where the CUDA compiler came from, for the manifest.
    pub fn compiler_source(&self) -> Option<String> {
        self.tools.get("nvcc").map(|t| t.source.to_string())
    }

    /// The `PATH` a build or program runs with when the compiler the preflight found is not on
    /// `inherited` (provisioned, or under `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`):
    /// `inherited` with the compiler's directory after it, so that a build script or CMake
    /// calling `nvcc` by name finds the same compiler a command's first word `nvcc` runs.
    /// `None` when nothing needs adding (no compiler, one on `PATH`, or a pipeline override).
    pub fn search_path(&self, inherited: Option<&std::ffi::OsStr>) -> Option<String> {
        let nvcc = self.tools.get("nvcc")?;
        if matches!(nvcc.source, Source::Path | Source::Override) {
            return None;
        }
        let dir = nvcc.path.parent()?;
        let mut dirs: Vec<PathBuf> = inherited
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default();
        if dirs.iter().any(|d| d == dir) {
            return None;
        }
        dirs.push(dir.to_path_buf());
        std::env::join_paths(dirs)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Source::Override => f.write_str("pipeline override"),
            Source::Path => f.write_str("path"),
            Source::CudaHome => f.write_str("CUDA_HOME"),
            Source::CudaPath => f.write_str("CUDA_PATH"),
            Source::UsrLocalCuda => f.write_str("/usr/local/cuda"),
            Source::Provisioned(v) => write!(f, "provisioned {v}"),
        }
    }
}

/// The user's cache directory for exhibit: `$XDG_CACHE_HOME/exhibit`, else `~/.cache/exhibit`.
pub fn cache_home(env: &Env) -> Option<PathBuf> {
    let base = match (&env.xdg_cache_home, &env.home) {
        (Some(xdg), _) => xdg.clone(),
        (None, Some(home)) => home.join(".cache"),
        (None, None) => return None,
    };
    Some(base.join("exhibit"))
}

/// The cache directory a pinned toolchain is provisioned into.
pub fn cache_dir(env: &Env, version: &str) -> Option<PathBuf> {
    cache_home(env).map(|base| base.join(format!("cuda-{version}")))
}

/// Finds every tool in [`EXECUTABLES`] and reads its version, from `facts` while the tool's
/// binary is the one it was read from.
pub fn discover(
    pipeline: &config::Pipeline,
    env: &Env,
    interrupt: &Interrupt,
    facts: &mut Facts,
) -> Toolchain {
    let provisioned = Some(&pipeline.toolchain.cuda)
        .filter(|version| !version.is_empty())
        .and_then(|version| cache_dir(env, version))
        .filter(|dir| stamp_matches(dir, &pipeline.toolchain))
        .and_then(|dir| provisioned_bin(&dir));
    if let Some(bin) = &provisioned {
        link_libraries(bin);
    }
    let mut toolchain = Toolchain::default();
    // Where each tool is (a lookup: ptxas is looked for beside the nvcc found).
    let mut found: Vec<(&str, PathBuf)> = Vec::new();
    for &name in EXECUTABLES {
        match find(name, pipeline, env, provisioned.as_deref(), &toolchain) {
            Ok(Some((path, source))) => {
                toolchain.tools.insert(
                    name.to_string(),
                    Tool {
                        path: path.clone(),
                        source,
                        version: None,
                    },
                );
                found.push((name, path));
            }
            Ok(None) => {
                toolchain
                    .missing
                    .insert(name.to_string(), format!("{name} not found"));
            }
            Err(reason) => {
                toolchain.missing.insert(name.to_string(), reason);
            }
        }
    }
    // The versions no earlier run stored, asked all at once: ncu and compute-sanitizer take
    // a second or more each.
    let asked: BTreeMap<&str, Result<Option<String>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = found
            .iter()
            .filter(|(_, path)| !facts.knows_version(path))
            .map(|(name, path)| {
                (
                    *name,
                    scope.spawn(|| version_of(path, &pipeline.root, interrupt)),
                )
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, handle)| {
                let answer = handle
                    .join()
                    .unwrap_or_else(|_| Err("panicked while asked its version".to_string()));
                (name, answer)
            })
            .collect()
    });
    let mut asked = asked;
    for (name, path) in &found {
        let answer = asked.remove(name);
        let version = facts.version(name, path, || match answer {
            Some(answer) => answer,
            None => version_of(path, &pipeline.root, interrupt),
        });
        match version {
            Ok(version) => {
                if let Some(tool) = toolchain.tools.get_mut(*name) {
                    tool.version = version;
                }
            }
            Err(why) => {
                // A tool that hangs on `--version` would hang every stage it runs.
                toolchain.tools.remove(*name);
                toolchain.missing.insert(
                    name.to_string(),
                    format!(
                        "`{name} --version` {why}: a tool that hangs there would hang its stages"
                    ),
                );
            }
        }
    }
    toolchain
}

fn find(
    name: &str,
    pipeline: &config::Pipeline,
    env: &Env,
    provisioned: Option<&Path>,
    found: &Toolchain,
) -> Result<Option<(PathBuf, Source)>, String> {
    if let Some(path) = pipeline.toolchain.tools.get(name) {
        let resolved = pipeline.resolve(path);
        return if is_executable(&resolved) {
            Ok(Some((resolved, Source::Override)))
        } else {
            Err(format!(
                "{name} not found at {} (toolchain.tools.{name})",
                path.display()
            ))
        };
    }
    // The compiler's companions come from the compiler's own directory first, so that nvcc,
    // ptxas and the disassemblers are one release where possible.
    if COMPILER_TOOLS.contains(&name)
        && name != "nvcc"
        && let Some(nvcc) = found.tools.get("nvcc")
        && let Some(dir) = nvcc.path.parent()
        && is_executable(&dir.join(name))
    {
        return Ok(Some((dir.join(name), nvcc.source.clone())));
    }
    if let Some(path) = &env.path {
        for dir in std::env::split_paths(path) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(Some((candidate, Source::Path)));
            }
        }
    }
    let roots = [
        (env.cuda_home.clone(), Source::CudaHome),
        (env.cuda_path.clone(), Source::CudaPath),
        (Some(PathBuf::from("/usr/local/cuda")), Source::UsrLocalCuda),
    ];
    for (root, source) in roots {
        let Some(root) = root else { continue };
        for candidate in [root.join("bin").join(name), root.join(name).join(name)] {
            if is_executable(&candidate) {
                return Ok(Some((candidate, source)));
            }
        }
    }
    if let Some(dir) = provisioned {
        let candidate = dir.join(name);
        if is_executable(&candidate) {
            return Ok(Some((
                candidate,
                Source::Provisioned(pipeline.toolchain.cuda.clone()),
            )));
        }
    }
    Ok(None)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How long `TOOL --version` may take: every real tool answers in well under a second.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `TOOL --version` and keeps the line that names the version (`None` when it printed
/// none); an error when the tool did not answer in [`VERSION_TIMEOUT`] or was killed.
fn version_of(path: &Path, cwd: &Path, interrupt: &Interrupt) -> Result<Option<String>, String> {
    let argv = [path.as_os_str().to_os_string(), OsString::from("--version")];
    let (_, stdout, stderr) = exec::probe(&argv, cwd, VERSION_TIMEOUT, interrupt)?;
    Ok(version_line(&format!("{stdout}\n{stderr}")))
}

/// Picks the version line from `--version` output: the one naming a release or version, else
/// the last non-empty line.
pub fn version_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let named = lines.iter().find(|l| {
        let lower = l.to_ascii_lowercase();
        (lower.contains("release")
            || lower.starts_with("version")
            || lower.starts_with("python ")
            || lower.starts_with("cmake version"))
            && l.chars().any(|c| c.is_ascii_digit())
    });
    named.or(lines.last()).map(|l| (*l).to_string())
}

/// Installs the pinned wheels into the cache, unless a complete install with the same pins is
/// there already. Returns the directory holding nvcc.
///
/// The install goes into a staging directory beside the cache entry and is renamed into place
/// only once complete, so a failed or interrupted install never removes a working toolchain.
/// (The venv's own scripts name the staging path and are not used after the rename; nvcc and
/// the other tools find their files relative to themselves.)
pub fn provision(
    pipeline: &config::Pipeline,
    env: &Env,
    python3: &Path,
    say: &dyn Fn(&str),
    interrupt: &Interrupt,
) -> Result<PathBuf, ToolchainError> {
    let toolchain = &pipeline.toolchain;
    let version = toolchain.cuda.clone();
    let dir = cache_dir(env, &version).ok_or(ToolchainError::NoCacheDir)?;
    if let Some(why) = [dir.clone(), dir.join(STAMP)]
        .iter()
        .find_map(|p| foreign(p))
    {
        return Err(ToolchainError::Foreign { version, dir, why });
    }
    if stamp_matches(&dir, toolchain)
        && let Some(bin) = provisioned_bin(&dir)
    {
        return Ok(bin);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ToolchainError::Io { path, source }
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    remove_abandoned_staging(parent, &version);
    let staging = parent.join(format!("cuda-{version}{STAGING}{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    say(&format!(
        "no CUDA compiler found: provisioning CUDA {version} from PyPI into {} (about 380 MB, once)",
        dir.display()
    ));
    let installed = install(toolchain, &staging, python3, interrupt);
    let bin = match installed {
        Ok(()) => provisioned_bin(&staging).ok_or_else(|| ToolchainError::NoCompiler {
            version: version.clone(),
            dir: dir.clone(),
        }),
        Err(e) => Err(e),
    };
    if bin.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    bin?;
    let stamp = staging.join(STAMP);
    std::fs::write(&stamp, stamp_text(toolchain)).map_err(io(&stamp))?;
    // Swap: the old install (other pins) moves aside, the new one in, the old one goes.
    let aside = parent.join(format!("cuda-{version}.old-{}", std::process::id()));
    let had_old = dir.exists();
    if had_old {
        std::fs::rename(&dir, &aside).map_err(io(&dir))?;
    }
    if let Err(e) = std::fs::rename(&staging, &dir) {
        if had_old {
            let _ = std::fs::rename(&aside, &dir);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(io(&dir)(e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&aside);
    }
    let bin = provisioned_bin(&dir).ok_or_else(|| ToolchainError::NoCompiler {
        version: version.clone(),
        dir: dir.clone(),
    })?;
    link_libraries(&bin);
    say(&format!("provisioned CUDA {version}: {}", bin.display()));
    Ok(bin)
}

/// `cuda-<version>.partial-<pid>`: an install in progress.
const STAGING: &str = ".partial-";

/// Removes staging directories whose runner is gone (killed mid-install).
fn remove_abandoned_staging(parent: &Path, version: &str) {
    let prefix = format!("cuda-{version}{STAGING}");
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `python3 -m venv DIR`, then `pip install` the pinned wheels into it. Logs go beside `DIR`.
fn install(
    toolchain: &config::Toolchain,
    dir: &Path,
    python3: &Path,
    interrupt: &Interrupt,
) -> Result<(), ToolchainError> {
    let version = &toolchain.cuda;
    let parent = dir.parent().unwrap_or(Path::new("."));
    let log_out = parent.join(format!("cuda-{version}.provision.log"));
    let log_err = parent.join(format!("cuda-{version}.provision.err.log"));
    let step = |step: &'static str, argv: Vec<OsString>, timeout: Duration| {
        let mut command = exec::Command::new(argv, parent, timeout);
        command.stdout = Some(log_out.clone());
        command.stderr = Some(log_err.clone());
        let outcome = exec::run(&command, interrupt).map_err(|e| ToolchainError::Step {
            version: version.clone(),
            step,
            detail: format!(": {e}"),
            log: log_err.clone(),
        })?;
        match outcome.ending {
            exec::Ending::Exited(0) => Ok(()),
            exec::Ending::Interrupted => Err(ToolchainError::Interrupted),
            ending => {
                // The line that says what to do, from whichever log holds it.
                let (line, log) = telling_line(&log_err, &log_out);
                Err(ToolchainError::Step {
                    version: version.clone(),
                    step,
                    detail: format!(
                        " ({}){}",
                        describe(ending),
                        line.map(|l| format!(": {l}")).unwrap_or_default()
                    ),
                    log,
                })
            }
        }
    };
    step(
        "python3 -m venv",
        vec![
            python3.as_os_str().to_os_string(),
            "-m".into(),
            "venv".into(),
            dir.as_os_str().to_os_string(),
        ],
        Duration::from_secs(300),
    )?;
    let mut pip: Vec<OsString> = vec![
        dir.join("bin").join("pip").into_os_string(),
        "install".into(),
        "--disable-pip-version-check".into(),
        "--no-input".into(),
    ];
    pip.extend(
        toolchain
            .wheels
            .iter()
            .map(|(name, version)| OsString::from(format!("{name}=={version}"))),
    );
    // A download of about 380 MB: on a terminal, pip's latest step on one line, rewritten in
    // place; piped, nothing more than the one line `provision` printed.
    if !std::io::stderr().is_terminal() {
        return step("pip install", pip, Duration::from_secs(1800));
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| show_progress(&log_out, &done));
        let result = step("pip install", pip, Duration::from_secs(1800));
        done.store(true, Ordering::Relaxed);
        result
    })
}

/// Rewrites one terminal line with pip's latest step (`Downloading nvidia_cuda_nvcc-...
/// (40.2 MB)`, `Installing collected packages`) until `done`, then clears it.
fn show_progress(log: &Path, done: &AtomicBool) {
    let mut shown = String::new();
    let started = std::time::Instant::now();
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let Ok(text) = std::fs::read(log) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let Some(latest) = text.lines().rev().map(str::trim).find(|l| {
            ["Collecting", "Downloading", "Installing", "Using cached"]
                .iter()
                .any(|w| l.starts_with(w))
        }) else {
            continue;
        };
        let line: String = format!(
            "  provisioning ({:.0} s): {}",
            started.elapsed().as_secs_f64(),
            report::text::strip_controls(latest)
        )
        .chars()
        .take(100)
        .collect();
        if line != shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K{line}");
            shown = line;
        }
    }
    if !shown.is_empty() {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

const STAMP: &str = ".exhibit-complete";

/// The wheels put the CUDA runtime's libraries in `<cu*>/lib`, where nvcc's profile looks in
/// `<cu*>/lib64`: a `lib64 -> lib` link lets the pinned nvcc link executables (cudart_static,
/// cudadevrt) as an installed toolkit does. Best effort: compile-only builds need none of it.
fn link_libraries(bin: &Path) {
    let Some(top) = bin.parent() else { return };
    let lib64 = top.join("lib64");
    if top.join("lib").is_dir() && std::fs::symlink_metadata(&lib64).is_err() {
        let _ = std::os::unix::fs::symlink("lib", &lib64);
    }
}

fn stamp_text(toolchain: &config::Toolchain) -> String {
    toolchain
        .wheels
        .iter()
        .map(|(name, version)| format!("{name}=={version}\n"))
        .collect()
}

fn stamp_matches(dir: &Path, toolchain: &config::Toolchain) -> bool {
    // Only a toolkit this user provisioned, that no other user can change, is run: one owned by
    // another user, or writable by everyone, could hold anything.
    users_own(dir)
        && users_own(&dir.join(STAMP))
        && std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == stamp_text(toolchain))
}

/// Whether `path` (not followed) belongs to this user and is not writable by every user.
fn users_own(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok() && foreign(path).is_none()
}

/// Why `path` (not followed), where it exists, is not this user's alone: another user owns
/// it, or every user may write it.
fn foreign(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    if m.uid() != nix::unistd::getuid().as_raw() {
        Some("owned by another user")
    } else if m.mode() & 0o002 != 0 {
        Some("writable by every user")
    } else {
        None
    }
}

/// `<venv>/lib/python3.*/site-packages/nvidia/<cu*>/bin`, the directory holding nvcc.
fn provisioned_bin(venv: &Path) -> Option<PathBuf> {
    let lib = venv.join("lib");
    for python in std::fs::read_dir(&lib).ok()?.flatten() {
        if !python.file_name().to_string_lossy().starts_with("python3") {
            continue;
        }
        let nvidia = python.path().join("site-packages").join("nvidia");
        let Ok(entries) = std::fs::read_dir(&nvidia) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("bin")).collect();
        dirs.sort();
        if let Some(bin) = dirs.into_iter().find(|d| is_executable(&d.join("nvcc"))) {
            return Some(bin);
        }
    }
    None
}

fn describe(ending: exec::Ending) -> String {
    match ending {
        exec::Ending::Exited(code) => format!("exit status {code}"),
        exec::Ending::Signaled(signal) => format!("killed by signal {signal}"),
        exec::Ending::TimedOut => "timed out".into(),
        exec::Ending::Interrupted => "interrupted".into(),
        exec::Ending::OutputRunaway => exec::runaway_words(),
    }
}

/// Commands a tool's own message advises ("apt install python3.11-venv"): the line worth
/// quoting from a failed step's log.
const ADVICE: &[&str] = &[
    "apt install ",
    "apt-get install ",
    "sudo apt",
    "dnf install ",
    "yum install ",
    "zypper install ",
    "apk add ",
    "pacman -S",
    "brew install ",
    "pip install ",
    "python3 -m pip install ",
];

/// The line of a failed step's logs that says what to do, and the log that holds it: a
/// command the tool advises, else its last error line (`ERROR: ...`), else the last line of
/// its stderr, else of its stdout; with no line, the log that has any output.
fn telling_line(err: &Path, out: &Path) -> (Option<String>, PathBuf) {
    let lines = |path: &Path| -> Vec<String> {
        std::fs::read(path)
            .map(|t| {
                String::from_utf8_lossy(&t)
                    .lines()
                    .map(|l| l.trim().chars().take(300).collect::<String>())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    };
    let logs = [(err, lines(err)), (out, lines(out))];
    let advice = |l: &String| ADVICE.iter().any(|a| l.starts_with(a));
    let error = |l: &String| {
        let lower = l.to_ascii_lowercase();
        lower.starts_with("error") || lower.contains("error:")
    };
    for pick in [&advice as &dyn Fn(&String) -> bool, &error] {
        for (path, lines) in &logs {
            if let Some(line) = lines.iter().rev().find(|l| pick(l)) {
                return (Some(line.clone()), path.to_path_buf());
            }
        }
    }
    for (path, lines) in &logs {
        if let Some(line) = lines.last() {
            return (Some(line.clone()), path.to_path_buf());
        }
    }
    (None, err.to_path_buf())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// A provisioned toolkit every user can write is never run as this user's: its stamp is
    /// not believed, whatever it says.
    #[test]
    fn a_toolkit_anyone_can_write_is_not_believed() {
        let dir = tempfile::tempdir().expect("a directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(super::users_own(dir.path()));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!super::users_own(dir.path()));
        let file = dir.path().join("stamp");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!super::users_own(&file));
    }
}
