//! Processes a stage leaves behind, found and ended after it.
//!
//! A stage's child leads its own process group, but a descendant can leave the group (`setsid`,
//! a daemon's double fork) or outlive the child. Three marks find them all:
//! - the group: every member of the child's process group;
//! - the token: every process started by a stage carries `EXHIBIT_STAGE_TOKEN` in its
//!   environment, and its descendants inherit it (as Jenkins marks a build's processes);
//! - adoption: the runner is a child subreaper ([`become_subreaper`]), so an orphaned descendant
//!   is re-parented to the runner rather than to init, even one that cleared its environment.
//!
//! Each process found gets SIGTERM, then SIGKILL after the grace period, and the runner reaps
//! the ones it adopted. The caller records what was found as the stage's leftovers.
//!
//! A runner killed with SIGKILL sweeps nothing, and its stages' descendants are re-parented to
//! init. The token names the runner that started the stage (its pid and start time), so the next
//! run finds them ([`sweep_orphans`]): a process whose token names a runner no longer running is
//! ended. Before that, the supervisor the runner started ([`crate::process::supervisor`]) ends
//! them as soon as the runner dies.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// The environment variable that marks a stage's processes.
pub const TOKEN_VARIABLE: &str = "EXHIBIT_STAGE_TOKEN";

/// The children [`crate::process::exec`] is running now, with their tokens: never reaped here, and their
/// descendants not taken for another stage's leftovers.
static LIVE: Mutex<BTreeMap<i32, String>> = Mutex::new(BTreeMap::new());

/// Makes the runner the reaper of its orphaned descendants. Linux only; elsewhere (or when the
/// kernel refuses) the group and the token still find them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// A unique token for one child: `RUNNER_PID.RUNNER_START.N`, the runner's pid and its start
/// time (clock ticks since boot, as `/proc/PID/stat` gives it), so that a pid reused by another
/// process is never taken for the runner.
pub fn new_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}.{n}", run_prefix())
}

/// What every token of this runner starts with: `RUNNER_PID.RUNNER_START`.
pub fn run_prefix() -> String {
    let me = std::process::id();
    let start = start_time(me as i32).unwrap_or(0);
    format!("{me}.{start}")
}

/// The running processes whose token starts with `prefix`, with their process groups (for the
/// supervisor, [`crate::process::supervisor`], once the runner has died).
pub fn marked(prefix: &str) -> Vec<(i32, i32)> {
    processes()
        .into_iter()
        .filter(|p| !p.zombie)
        .filter(|p| token_of(p.pid).is_some_and(|t| t.starts_with(prefix)))
        .map(|p| (p.pid, p.pgrp))
        .collect()
}

/// Ends the processes that runners killed without a chance to sweep (SIGKILL, the OOM killer)
/// left behind: those whose token names a runner that no longer runs. Returns their command
/// lines, sorted.
pub fn sweep_orphans(grace: Duration) -> Vec<String> {
    let me = std::process::id() as i32;
    let found: BTreeMap<i32, String> = processes()
        .into_iter()
        .filter(|p| p.pid != me && !p.zombie)
        .filter(|p| token_of(p.pid).is_some_and(|t| runner_gone(&t)))
        .map(|p| (p.pid, command_line(p.pid)))
        .collect();
    end_all(found, None, grace)
}

/// Whether the runner a token names has ended: its pid is gone, or belongs to a process that
/// started at another time. A token that does not read as one names no runner, and is left alone.
fn runner_gone(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(pid), Some(start), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<i32>(), start.parse::<u64>()) else {
        return false;
    };
    start_time(pid) != Some(start)
}

/// When process `pid` started (field 22 of `/proc/PID/stat`), if it runs.
fn start_time(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Runs `spawn` and registers the child it returns as live, with no sweep in between.
pub fn register<T>(
    token: &str,
    spawn: impl FnOnce() -> std::io::Result<(T, Option<i32>)>,
) -> std::io::Result<T> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let (value, pid) = spawn()?;
    if let Some(pid) = pid {
        live.insert(pid, token.to_string());
    }
    Ok(value)
}

/// Forgets a child once it was reaped.
pub fn unregister(pid: i32) {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
}

/// Ends every process of the stage marked by `token` or `group`, and every orphan the runner
/// adopted that belongs to no live stage. Returns a description of each (its command line),
/// sorted.
pub fn sweep(token: &str, group: Option<Pid>, grace: Duration) -> Vec<String> {
    end_all(find(token, group), group, grace)
}

/// Ends the processes `found` (and `group`): SIGTERM, the grace period, SIGKILL; reaps the ones
/// the runner adopted. Returns their command lines, sorted.
fn end_all(found: BTreeMap<i32, String>, group: Option<Pid>, grace: Duration) -> Vec<String> {
    if found.is_empty() {
        return Vec::new();
    }
    let pids: Vec<Pid> = found.keys().map(|&p| Pid::from_raw(p)).collect();
    signal_all(&pids, group, Signal::SIGTERM);
    let grace_end = Instant::now() + grace;
    while Instant::now() < grace_end && pids.iter().any(|&p| running(p)) {
        reap_adopted();
        std::thread::sleep(Duration::from_millis(10));
    }
    signal_all(&pids, group, Signal::SIGKILL);
    // SIGKILL is delivered at once; the adopted ones become zombies to reap.
    let reap_end = Instant::now() + Duration::from_secs(1);
    loop {
        reap_adopted();
        if Instant::now() >= reap_end || !pids.iter().any(|&p| running(p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut descriptions: Vec<String> = found.into_values().collect();
    descriptions.sort();
    descriptions
}

/// Waits (at most `limit`) until no member of `group` runs, after SIGKILL went to it: a member
/// still dying must not be counted as a leftover.
pub fn settle(group: Pid, limit: Duration) {
    let end = Instant::now() + limit;
    while Instant::now() < end
        && processes()
            .iter()
            .any(|p| p.pgrp == group.as_raw() && !p.zombie)
    {
        reap_adopted();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a process of `group` still runs: its zombies, orphans the runner adopted as child
/// subreaper (a compiler's driver killed before its children), are reaped first, so that they
/// never hold a stopped stage for its whole grace period.
pub fn group_running(group: Pid) -> bool {
    reap_adopted();
    processes()
        .iter()
        .any(|p| p.pgrp == group.as_raw() && !p.zombie)
}

fn signal_all(pids: &[Pid], group: Option<Pid>, signal: Signal) {
    if let Some(group) = group {
        let _ = killpg(group, signal);
    }
    for &pid in pids {
        // ESRCH: it ended meanwhile, which is what we want.
        let _ = kill(pid, signal);
    }
}

/// The live processes of this stage, by pid, with their command lines.
fn find(token: &str, group: Option<Pid>) -> BTreeMap<i32, String> {
    let me = std::process::id() as i32;
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let live_tokens: BTreeSet<&str> = live.values().map(String::as_str).collect();
    let mut found = BTreeMap::new();
    for process in processes() {
        if process.pid == me || live.contains_key(&process.pid) || process.zombie {
            continue;
        }
        let in_group = group.is_some_and(|g| g.as_raw() == process.pgrp);
        let theirs = token_of(process.pid);
        let marked = theirs.as_deref() == Some(token);
        // An adopted orphan of a stage still running is that stage's business.
        let adopted = process.ppid == me
            && !theirs
                .as_deref()
                .is_some_and(|t| t != token && live_tokens.contains(t));
        if in_group || marked || adopted {
            found.insert(process.pid, command_line(process.pid));
        }
    }
    drop(live);
    reap_adopted();
    found
}

/// Reaps the runner's zombie children that no live stage waits for.
fn reap_adopted() {
    let me = std::process::id() as i32;
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    for process in processes() {
        if process.ppid == me && process.zombie && !live.contains_key(&process.pid) {
            let _ = waitpid(Pid::from_raw(process.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

struct Process {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    zombie: bool,
}

/// Every process in `/proc` (empty where there is none).
fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// `/proc/PID/stat`: state, parent and group follow the command name in parentheses, which
/// may itself hold spaces and parentheses.
fn stat(pid: i32) -> Option<Process> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Process {
        pid,
        ppid,
        pgrp,
        zombie: matches!(state, "Z" | "X"),
    })
}

fn running(pid: Pid) -> bool {
    stat(pid.as_raw()).is_some_and(|p| !p.zombie)
}

/// The stage token in a process's environment, when it can be read.
fn token_of(pid: i32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{TOKEN_VARIABLE}=");
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// A process's argv joined by spaces (at most 200 characters), or its name.
fn command_line(pid: i32) -> String {
    let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = argv
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let line = if words.is_empty() {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| format!("[{}]", c.trim()))
            .unwrap_or_else(|_| "[unknown]".to_string())
    } else {
        words.join(" ")
    };
    line.chars().take(200).collect()
}
