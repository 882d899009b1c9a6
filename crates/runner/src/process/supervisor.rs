//! The watcher that ends a run's processes when the runner dies, however it dies.
//!
//! Every child gets `PR_SET_PDEATHSIG`, but only the child: a grandchild that left its group
//! (`setsid`) or ignores hangups (`nohup`) is re-parented to init when a SIGKILLed runner's
//! adoption as child subreaper dies with it. So before it starts its first process, the runner
//! starts this supervisor: the runner binary again (`exhibit __supervise PREFIX`), in its own
//! process group (a Ctrl-C at the terminal does not reach it), with no death signal, reading
//! the read end of a pipe whose write end only the runner holds (close-on-exec: no child
//! inherits it). When the runner ends, normally or not, the pipe reads EOF, and the supervisor
//! sends SIGKILL to every process whose `EXHIBIT_STAGE_TOKEN` names this runner (the token's
//! `PID.START.` prefix, [`leftovers::run_prefix`]: a pid reused by another runner is never
//! taken for this one) and to the process group of each, scans again until none is left, and
//! exits. After a normal run the runner has already ended them all, and it finds none.
//! Linux only, as the subreaper is; elsewhere nothing is started.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::process::leftovers;

/// The argument that makes the runner binary a supervisor.
pub const SUBCOMMAND: &str = "__supervise";

/// Whether this process is the runner binary, which may start itself as the supervisor (not a
/// test binary that links the library).
static ARMED: AtomicBool = AtomicBool::new(false);

/// The write end of the pipe, held open until the runner exits or [`finish`] closes it, and the
/// supervisor's pid.
static STARTED: OnceLock<Mutex<Option<(std::os::fd::OwnedFd, i32)>>> = OnceLock::new();

/// Called by the runner binary's `main`: the first process started will start the supervisor.
pub fn arm() {
    ARMED.store(true, Ordering::Relaxed);
}

/// Starts the supervisor once, if the runner binary armed it. Failing to start it leaves the
/// run as it was without one (PDEATHSIG, the sweeps, the next run's sweep of orphans).
pub fn ensure() {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    STARTED.get_or_init(|| Mutex::new(start()));
}

/// At the runner's normal exit: closes the pipe and waits (two seconds at most) for the
/// supervisor, which finds the run's processes already ended, so that it does not outlive the
/// run (nor count as a leftover of a run that started this runner as a stage).
pub fn finish() {
    let Some(started) = STARTED.get() else {
        return;
    };
    let Some((write, pid)) = started.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    drop(write);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let pid = nix::unistd::Pid::from_raw(pid);
    let flags = Some(nix::sys::wait::WaitPidFlag::WNOHANG);
    while std::time::Instant::now() < end {
        match nix::sys::wait::waitpid(pid, flags) {
            Ok(nix::sys::wait::WaitStatus::StillAlive) => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => break,
        }
    }
    leftovers::unregister(pid.as_raw());
}

#[cfg(target_os = "linux")]
fn start() -> Option<(std::os::fd::OwnedFd, i32)> {
    let exe = std::env::current_exe().ok()?;
    // Both ends close-on-exec: the supervisor gets the read end as its stdin (dup2 clears the
    // flag there), and no other child ever holds the write end.
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    let expression = duct::cmd(&exe, [SUBCOMMAND, &leftovers::run_prefix()])
        .dir("/")
        .stdin_file(read)
        .stdout_null()
        .stderr_null()
        .unchecked()
        // Not a stage's process: a runner that runs this one as a stage ends this runner, whose
        // supervisor then ends this run's processes.
        .env_remove(leftovers::TOKEN_VARIABLE)
        .before_spawn(|cmd| {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            Ok(())
        });
    // Registered as live: no sweep takes it for an orphan the runner adopted, nor reaps it.
    let pid = leftovers::register(SUBCOMMAND, || {
        let handle = expression.start()?;
        let pid = handle.pids().first().and_then(|&p| i32::try_from(p).ok());
        // Waited for by [`finish`], or not at all: it ends after the runner.
        std::mem::forget(handle);
        Ok((pid, pid))
    })
    .ok()??;
    Some((write, pid))
}

#[cfg(not(target_os = "linux"))]
fn start() -> Option<(std::os::fd::OwnedFd, i32)> {
    None
}

/// `exhibit __supervise PREFIX`: waits for EOF on stdin, then ends every process whose stage
/// token starts with `PREFIX.`, and their process groups.
pub fn main(prefix: &str) -> std::process::ExitCode {
    use std::io::Read;
    if prefix.is_empty() {
        return std::process::ExitCode::FAILURE;
    }
    // The runner's own group, read while the runner (this process's parent) still runs.
    let runner_group =
        nix::unistd::getpgid(Some(nix::unistd::getppid())).map_or(0, nix::unistd::Pid::as_raw);
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 64];
    loop {
        match stdin.read(&mut buffer) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    end_run(prefix, runner_group);
    std::process::ExitCode::SUCCESS
}

/// SIGKILL to every process of the run `prefix` names and to their groups, scanning again (a
/// process may have forked meanwhile) until a scan finds none, for two seconds at most.
fn end_run(prefix: &str, runner_group: i32) {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    let marked = format!("{prefix}.");
    let me = std::process::id() as i32;
    let my_group = nix::unistd::getpgrp().as_raw();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let found = leftovers::marked(&marked);
        if found.is_empty() || std::time::Instant::now() >= end {
            break;
        }
        for (pid, group) in found {
            if pid == me {
                continue;
            }
            // A group one of the run's processes belongs to, other than this one's, the
            // runner's (which may hold the shell that started it) or init's.
            if group > 1 && group != my_group && group != runner_group {
                let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            }
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
