//! Runs one child process with a deadline, in its own process group.
//!
//! Every child is started through duct with an argv (never a shell string), stdin from
//! `/dev/null` (or a file), and stdout and stderr written straight into files by the kernel, so logs hold
//! exactly what the tool printed, as it printed it, and no pipe can fill up. The child leads a
//! new process group; at its deadline, or when the run is interrupted, SIGTERM goes to the whole
//! group, then SIGKILL after a grace period. compute-sanitizer and ncu run the harness as a
//! grandchild, and `kill()` on the child alone would leave it running: signalling the group
//! reaches it. Once the child has exited, whatever it left behind, in its group or outside it
//! ([`crate::process::leftovers`]), is ended the same way and named in the outcome, so no stage outlives
//! its record.
//!
//! An interrupt forwards the signal received to the group; a second one is forwarded too, and a
//! third ends the grace period at once.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::process::interrupt::Interrupt;
use crate::process::leftovers;

/// What to run and where its output goes.
#[derive(Debug, Clone)]
pub struct Command {
    /// The program, then its arguments.
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// A file to read stdin from; `None` gives `/dev/null`.
    pub stdin: Option<PathBuf>,
    /// Where stdout goes; `None` discards it.
    pub stdout: Option<PathBuf>,
    /// Where stderr goes; `None` discards it.
    pub stderr: Option<PathBuf>,
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (not one sent by us).
    Signaled(i32),
    /// It was still running at its deadline and was killed.
    TimedOut,
    /// The run was interrupted while it was running, and it was killed.
    Interrupted,
    /// Its standard output or error passed [`RUNAWAY_FACTOR`] times the output limit while it
    /// ran, and it was stopped: what it wrote is cut afterwards, and the disk is not filled.
    OutputRunaway,
}

/// The child is killed when the runner dies, however it dies (SIGKILL included): no tool, and
/// no ssh that could reconnect on its own, outlives it. (The signal follows the thread that
/// spawned the child; every child here is waited for by that thread.)
#[allow(unsafe_code)] // `pre_exec` is unsafe; the closure does only what is allowed after fork.
fn die_with_the_runner(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: prctl, getppid and _exit are async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            // The runner died before the signal was armed.
            if std::os::unix::process::parent_id() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// The result of [`run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub ending: Ending,
    pub duration: Duration,
    /// The exit code or signal the child finally reported, also when we killed it.
    pub raw_code: Option<i32>,
    /// Processes still running once the child had ended, which were then ended: their
    /// command lines.
    pub leftovers: Vec<String>,
    /// The output files cut at the output limit, with the size the streams had written.
    pub cut: Vec<(PathBuf, u64)>,
}

/// Why a child could not be run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The argv was empty.
    #[error("run an empty command")]
    Empty,
    /// An output file could not be created.
    #[error("create {path}: {source}")]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The program could not be started (not found, not executable).
    #[error("start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// Waiting on the child failed.
    #[error("wait for `{program}`: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs `command` to completion, its deadline, or an interrupt; never leaves a process of it
/// running.
pub fn run(command: &Command, interrupt: &Interrupt) -> Result<Outcome, ExecError> {
    let (program, args) = command.argv.split_first().ok_or(ExecError::Empty)?;
    let program_name = Path::new(program)
        .file_name()
        .unwrap_or(program)
        .to_string_lossy()
        .into_owned();
    // Before the first child: what the runner starts is ended even if it is SIGKILLed.
    crate::process::supervisor::ensure();
    let token = leftovers::new_token();
    let mut expression = duct::cmd(program, args)
        .dir(&command.cwd)
        .unchecked()
        .env(leftovers::TOKEN_VARIABLE, &token)
        .before_spawn(|cmd| {
            cmd.process_group(0);
            die_with_the_runner(cmd);
            Ok(())
        });
    for (key, value) in &command.env {
        expression = expression.env(key, value);
    }
    expression = match &command.stdin {
        Some(path) => expression.stdin_path(path),
        None => expression.stdin_null(),
    };
    expression = match &command.stdout {
        Some(path) => expression.stdout_file(create(path)?),
        None => expression.stdout_null(),
    };
    expression = match &command.stderr {
        Some(path) => expression.stderr_file(create(path)?),
        None => expression.stderr_null(),
    };

    let started = Instant::now();
    let handle = leftovers::register(&token, || {
        let handle = expression.start()?;
        let pid = handle.pids().first().and_then(|&p| i32::try_from(p).ok());
        Ok((handle, pid))
    })
    .map_err(|source| ExecError::Spawn {
        program: program_name.clone(),
        source,
    })?;
    let pid = handle.pids().first().and_then(|&p| i32::try_from(p).ok());
    let group = pid.map(Pid::from_raw);
    let deadline = started + command.timeout;
    let finish = |ending: Ending, status: std::process::ExitStatus| {
        if let Some(pid) = pid {
            leftovers::unregister(pid);
        }
        let leftovers = leftovers::sweep(&token, group, command.grace);
        Outcome {
            ending,
            duration: started.elapsed(),
            raw_code: status.code().or(status.signal()),
            leftovers,
            // Nothing writes to the files any more.
            cut: cut_outputs(command),
        }
    };
    let wait_error = |source| ExecError::Wait {
        program: program_name.clone(),
        source,
    };

    let mut pause = Duration::from_millis(1);
    let stop = loop {
        if let Some(output) = handle.try_wait().map_err(wait_error)? {
            let status = output.status;
            let ending = match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signaled(signal),
                (None, None) => Ending::Signaled(0),
            };
            return Ok(finish(ending, status));
        }
        if interrupt.is_set() {
            break Ending::Interrupted;
        }
        if Instant::now() >= deadline {
            break Ending::TimedOut;
        }
        if runaway(command) {
            break Ending::OutputRunaway;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(25));
    };

    // Deadline or interrupt: the whole group gets SIGTERM (or, when interrupted, the signal the
    // runner received), then SIGKILL after the grace period.
    if let Some(group) = group {
        let received = || interrupt.latest().and_then(|s| Signal::try_from(s).ok());
        let first = match stop {
            Ending::Interrupted => received().unwrap_or(Signal::SIGTERM),
            _ => Signal::SIGTERM,
        };
        signal_group(group, first);
        let before = if stop == Ending::Interrupted {
            interrupt.count().saturating_sub(1)
        } else {
            interrupt.count()
        };
        let mut forwarded = interrupt.count();
        let grace_end = Instant::now() + command.grace;
        while Instant::now() < grace_end {
            let reaped = handle.try_wait().map_err(wait_error)?.is_some();
            if reaped && !(group_alive(group) && leftovers::group_running(group)) {
                break;
            }
            let count = interrupt.count();
            if count > forwarded {
                if count - before >= 3 {
                    // The third signal: no more grace.
                    break;
                }
                if let Some(signal) = received() {
                    signal_group(group, signal);
                }
                forwarded = count;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        signal_group(group, Signal::SIGKILL);
    } else {
        // Without a pid there is no group to signal; the handle can still kill the child.
        let _ = handle.kill();
    }
    let output = handle.wait().map_err(wait_error)?;
    if let Some(group) = group {
        leftovers::settle(group, Duration::from_secs(1));
    }
    Ok(finish(stop, output.status))
}

fn signal_group(group: Pid, signal: Signal) {
    // ESRCH (the group is already gone) is the outcome we want; nothing else can fail here for
    // a group we created.
    let _ = killpg(group, signal);
}

fn group_alive(group: Pid) -> bool {
    !matches!(killpg(group, None), Err(Errno::ESRCH))
}

/// The most of one output stream a log keeps: its first and last halves of this, with a line
/// between them saying how much was left out. The environment's `EXHIBIT_OUTPUT_LIMIT` (bytes)
/// overrides it. Whatever a program prints, the runner's memory for a unit stays bounded by this.
pub const OUTPUT_LIMIT: u64 = 128 << 20;

/// How many times the output limit one stream may write while its program runs: past it the
/// program is stopped, before its output fills the disk (the log keeps the limit's worth).
pub const RUNAWAY_FACTOR: u64 = 8;

/// Whether one of a running command's output files has passed [`RUNAWAY_FACTOR`] times the
/// output limit.
fn runaway(command: &Command) -> bool {
    let cap = output_limit().saturating_mul(RUNAWAY_FACTOR);
    [&command.stdout, &command.stderr]
        .into_iter()
        .flatten()
        .any(|path| std::fs::metadata(path).is_ok_and(|m| m.len() > cap))
}

/// The words for a program stopped for its output: "its output passed 1 GiB".
pub fn runaway_words() -> String {
    format!(
        "stopped: one of its output streams passed {} bytes ({RUNAWAY_FACTOR} times the output \
         limit) while it ran",
        output_limit().saturating_mul(RUNAWAY_FACTOR)
    )
}

/// Room for the line that replaces the middle of a cut log.
const CUT_LINE_ROOM: u64 = 4096;

/// Cuts the output files of a command that ended to the output limit; returns those it cut, with
/// the size they had.
pub fn cut_outputs(command: &Command) -> Vec<(PathBuf, u64)> {
    let limit = output_limit();
    [&command.stdout, &command.stderr]
        .into_iter()
        .flatten()
        .filter_map(|path| Some((path.clone(), cut(path, limit).ok().flatten()?)))
        .collect()
}

fn output_limit() -> u64 {
    std::env::var("EXHIBIT_OUTPUT_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &u64| n >= 2)
        .unwrap_or(OUTPUT_LIMIT)
}

/// Cuts the file at `path` to its first and last `limit / 2` bytes, with a line between them,
/// when it holds more than `limit` (and the room for that line); returns the size it had. The
/// tail is moved in place, a block at a time, so memory stays small however large the file.
pub fn cut(path: &Path, limit: u64) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() || metadata.len() <= limit + CUT_LINE_ROOM {
        return Ok(None);
    }
    let size = metadata.len();
    let half = limit / 2;
    let line = format!(
        "\n[exhibit: {} bytes left out here: this stream wrote {size} bytes, more than the output \
         limit of {limit}; its first and last {half} bytes are kept]\n",
        size - 2 * half
    );
    file.write_all_at(line.as_bytes(), half)?;
    let mut to = half + line.len() as u64;
    let mut from = size - half;
    let mut block = vec![0u8; 1 << 20];
    while from < size {
        let n = usize::try_from((size - from).min(block.len() as u64)).unwrap_or(block.len());
        let chunk = block.get_mut(..n).unwrap_or_default();
        file.read_exact_at(chunk, from)?;
        file.write_all_at(chunk, to)?;
        from += n as u64;
        to += n as u64;
    }
    file.set_len(to)?;
    Ok(Some(size))
}

fn create(path: &Path) -> Result<std::fs::File, ExecError> {
    std::fs::File::create(path).map_err(|source| ExecError::Output {
        path: path.to_path_buf(),
        source,
    })
}

impl Command {
    /// A command with no environment additions, output discarded, and the given limits.
    pub fn new<I, S>(argv: I, cwd: &Path, timeout: Duration) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Command {
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
            stdin: None,
            stdout: None,
            stderr: None,
            timeout,
            grace: Duration::from_secs(2),
        }
    }
}

/// Runs a short probe (e.g. `nvcc --version`) and returns its stdout and stderr, or `None` if it
/// could not run, failed, or outlived `timeout`.
pub fn capture(
    argv: &[OsString],
    cwd: &Path,
    timeout: Duration,
    interrupt: &Interrupt,
) -> Option<(i32, String, String)> {
    probe(argv, cwd, timeout, interrupt).ok()
}

/// [`capture`], saying why there is no answer: it could not start, outlived `timeout` (its
/// process group was killed), was killed by a signal or interrupted.
pub fn probe(
    argv: &[OsString],
    cwd: &Path,
    timeout: Duration,
    interrupt: &Interrupt,
) -> Result<(i32, String, String), String> {
    let dir = tempfile_dir().ok_or("cannot create a temporary directory")?;
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let mut command = Command::new(argv.iter().cloned(), cwd, timeout);
    command.stdout = Some(out.clone());
    command.stderr = Some(err.clone());
    let outcome = run(&command, interrupt);
    let stdout = std::fs::read(&out).unwrap_or_default();
    let stderr = std::fs::read(&err).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    match outcome.map_err(|e| format!("failed to {e}"))?.ending {
        Ending::Exited(code) => Ok((
            code,
            String::from_utf8_lossy(&stdout).into_owned(),
            String::from_utf8_lossy(&stderr).into_owned(),
        )),
        Ending::TimedOut => Err(format!(
            "did not answer within {} (killed)",
            humantime::format_duration(timeout)
        )),
        Ending::Signaled(signal) => Err(format!("killed by signal {signal}")),
        Ending::OutputRunaway => Err(runaway_words()),
        Ending::Interrupted => Err("interrupted".into()),
    }
}

fn tempfile_dir() -> Option<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("exhibit-probe-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// The environment that puts a unit on its GPU: `CUDA_VISIBLE_DEVICES`, when the run spreads
/// over GPUs. It is not part of a unit's cache key: GPUs of one run are one model.
pub fn device_env(device: Option<&str>) -> Vec<(OsString, OsString)> {
    device
        .map(|d| (OsString::from("CUDA_VISIBLE_DEVICES"), OsString::from(d)))
        .into_iter()
        .collect()
}
