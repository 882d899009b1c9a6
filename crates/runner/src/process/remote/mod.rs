//! Running a pipeline on another machine over SSH, so that a dropped connection costs nothing.
//!
//! `exhibit PIPELINE --host user@box`:
//! 1. syncs the pipeline's directory (without `artifacts/`, `reports/`, `.git/` and `target/`)
//!    into a work directory on the remote, `<base>/remote/<hash>`, keyed by the local directory
//!    and kept between runs, so the remote's own cache serves unchanged units. The base is
//!    `~/.cache/exhibit` unless `--remote-dir` names another (a scratch file system where home
//!    directories are small); a failure to write there says how much room its file system has;
//! 2. uploads this runner binary to `<base>/bin/runner-<sha>` when the remote lacks that
//!    version;
//! 3. starts the run there in its own session (`setsid`), its output in
//!    `.exhibit-remote/<session>.log`, its exit status in `<session>.exit`: the run goes on
//!    whatever happens to the connection;
//! 4. follows the log, reconnecting with backoff when the connection drops;
//! 5. pulls the run directory and its report back and renders the report here, as a local run
//!    would.
//!
//! `exhibit attach SESSION` picks up a session where it stopped (the session record is kept in
//! `artifacts/.remote/<session>.json`). Every remote command goes through the system's OpenSSH
//! client (users' keys, agents, jump hosts and `~/.ssh/config` work as in their shell), over
//! one master connection held open for the session (`ControlMaster`; a command falls back to a
//! connection of its own when the master is gone), quoted for the remote shell, under a timeout.

mod receive;
mod ssh;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::exec::{self, Ending};
use crate::process::interrupt::Interrupt;
pub use receive::receive;
pub use ssh::{Ssh, quote};

/// The environment variable that tells a remote runner the name the user gave its machine, for
/// its manifest.
pub const HOST_VARIABLE: &str = "EXHIBIT_HOST";

/// Where a session is recorded locally, under the pipeline's directory.
pub const SESSIONS: &str = "artifacts/.remote";

/// A remote run, as recorded when it started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub host: String,
    /// The work directory on the remote: absolute, or relative to the home directory.
    pub dir: String,
    /// The pipeline file, relative to the work directory.
    pub pipeline: String,
    /// Started with `--require-gpu`: a run that ran nothing on a GPU is no pass.
    #[serde(default)]
    pub require_gpu: bool,
}

/// Why a remote run could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("{host}: {message}")]
    Host { host: String, message: String },
    #[error("{0}")]
    Local(String),
    #[error("interrupted; the remote run goes on: `exhibit attach {session}` collects it")]
    Detached { session: String },
}

/// Where Exhibit keeps work directories and runner binaries on a remote unless told otherwise,
/// relative to the home directory.
pub const DEFAULT_BASE: &str = ".cache/exhibit";

/// A remote path as people read it: `~/` before one relative to the home directory.
pub fn shown(path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("~/{path}")
    }
}

/// The base directory `--remote-dir` names, as the remote shell will find it from the home
/// directory: `~/x` and `x` are relative to home, `/x` is absolute.
pub fn base(dir: Option<&str>) -> Result<String, RemoteError> {
    let Some(dir) = dir else {
        return Ok(DEFAULT_BASE.to_string());
    };
    let trimmed = dir.strip_prefix("~/").unwrap_or(dir).trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "~" || trimmed.chars().any(char::is_control) {
        return Err(RemoteError::Local(format!(
            "--remote-dir {dir:?}: expected a directory on the remote, absolute or relative to its home"
        )));
    }
    Ok(trimmed.to_string())
}

/// Starts a remote run of `pipeline` (a file under `root`) with `args` (the run's own options)
/// and returns its session, recorded under `root`. `base` is where the remote's work
/// directories and runner binaries go (see [`base`]).
pub fn start(
    ssh: &Ssh<'_>,
    root: &Path,
    pipeline: &Path,
    args: &[String],
    base: &str,
    say: &dyn Fn(&str),
) -> Result<Session, RemoteError> {
    ssh.must("connect", "true", None, None)?;
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let key = crate::evidence::hash::bytes(absolute.to_string_lossy().as_bytes());
    let dir = format!("{base}/remote/{}", &key[..16]);
    let scratch = ssh.control.path();

    // The inputs: the pipeline's directory, without what runs write.
    let tarball = scratch.join("inputs.tgz");
    let mut tar = exec::Command::new(
        [
            OsString::from("tar"),
            "-czf".into(),
            tarball.clone().into(),
            "--exclude=./artifacts".into(),
            "--exclude=./reports".into(),
            "--exclude=./.git".into(),
            "--exclude=./target".into(),
            "-C".into(),
            absolute.clone().into(),
            ".".into(),
        ],
        scratch,
        Duration::from_secs(600),
    );
    tar.stderr = Some(scratch.join("tar.err"));
    local(&tar, ssh.interrupt, "pack the pipeline's directory")?;
    let size = std::fs::metadata(&tarball).map_or(0, |m| m.len());
    say(&format!(
        "remote {}: syncing {} KiB of inputs into {}",
        ssh.host,
        size / 1024,
        shown(&dir)
    ));
    // What an earlier sync left and the pipeline's directory no longer has goes first (a
    // deleted source must not be built there): everything but the runs and the sessions.
    ssh.must(
        "unpack the inputs",
        &format!(
            "mkdir -p {d} && find {d} -mindepth 1 -maxdepth 1 ! -name artifacts ! -name reports \
             ! -name .exhibit-remote -exec rm -rf {{}} + && tar -xzf - -C {d}",
            d = quote(&dir)
        ),
        Some(&tarball),
        None,
    )
    .map_err(|e| ssh.with_room(e, base))?;

    // This runner, unless the remote has the same build.
    let exe = std::env::current_exe()
        .map_err(|e| RemoteError::Local(format!("locate the runner executable: {e}")))?;
    let sha = crate::evidence::hash::file(&exe)
        .map_err(|e| RemoteError::Local(format!("hash {}: {e}", exe.display())))?;
    let bin = format!("{base}/bin/runner-{}", &sha[..16]);
    if ssh
        .run(
            &format!("test -x {}", quote(&bin)),
            None,
            None,
            Duration::from_secs(60),
        )?
        .code
        != 0
    {
        say(&format!(
            "remote {}: uploading the runner to {}",
            ssh.host,
            shown(&bin)
        ));
        ssh.must(
            "upload the runner",
            &format!(
                "mkdir -p {d} && cat > {b}.part && chmod +x {b}.part && mv {b}.part {b}",
                d = quote(&format!("{base}/bin")),
                b = quote(&bin)
            ),
            Some(&exe),
            None,
        )
        .map_err(|e| ssh.with_room(e, base))?;
    }

    let relative = pipeline
        .strip_prefix(root)
        .unwrap_or(pipeline)
        .to_string_lossy()
        .into_owned();
    let id = session_id();
    // The run starts in its work directory: a relative binary is found from home.
    let exe_path = if bin.starts_with('/') {
        quote(&bin)
    } else {
        format!("\"$HOME\"/{}", quote(&bin))
    };
    let mut run = format!(
        "{HOST_VARIABLE}={} {exe_path} run {}",
        quote(&ssh.host),
        quote(&relative)
    );
    for arg in args {
        run.push(' ');
        run.push_str(&quote(arg));
    }
    // The exit status is written aside and renamed into place: whoever sees the file sees it
    // whole (a watcher that finds it created and still empty would read no status).
    let inner = format!(
        "echo $$ > .exhibit-remote/{id}.pid; {run} > .exhibit-remote/{id}.log 2>&1 < /dev/null; \
         echo $? > .exhibit-remote/{id}.exit.new; \
         mv .exhibit-remote/{id}.exit.new .exhibit-remote/{id}.exit"
    );
    ssh.must(
        "start the run",
        &format!(
            "cd {} && mkdir -p .exhibit-remote && (setsid sh -c {} > /dev/null 2>&1 < /dev/null &)",
            quote(&dir),
            quote(&inner)
        ),
        None,
        None,
    )?;
    let session = Session {
        id,
        host: ssh.host.clone(),
        dir,
        pipeline: relative,
        require_gpu: args.iter().any(|a| a == "--require-gpu"),
    };
    save(root, &session)?;
    say(&format!(
        "remote {}: session {} started (`exhibit attach {}` picks it up)",
        ssh.host, session.id, session.id
    ));
    Ok(session)
}

/// Follows the session's log until the run ends, printing it with `print`; reconnects with
/// backoff when the connection drops. Returns the run's exit status.
pub fn follow(
    ssh: &Ssh<'_>,
    session: &Session,
    print: &mut dyn FnMut(&[u8]),
    say: &dyn Fn(&str),
) -> Result<i32, RemoteError> {
    let mut offset: u64 = 0;
    let mut failures = 0u32;
    loop {
        if ssh.interrupt.is_set() {
            return Err(RemoteError::Detached {
                session: session.id.clone(),
            });
        }
        // The exit status is read before the log: a log read after it is complete.
        // The exit status when there is one; else whether the run is still alive: `gone` when
        // its process ended without writing a status (killed, the machine restarted). The
        // status is read again after the liveness check, which it may have raced.
        let script = format!(
            "cd {}/.exhibit-remote || exit 3; \
             if [ -f {id}.exit ]; then echo \"exit $(cat {id}.exit)\" >&2; \
             elif [ -f {id}.pid ] && ! kill -0 \"$(cat {id}.pid)\" 2>/dev/null; then \
             if [ -f {id}.exit ]; then echo \"exit $(cat {id}.exit)\" >&2; else echo gone >&2; fi; fi; \
             tail -c +{} {id}.log 2>/dev/null || true",
            quote(&session.dir),
            offset + 1,
            id = session.id
        );
        match ssh.run(&script, None, None, Duration::from_secs(60)) {
            Ok(answer) if answer.code == 0 => {
                failures = 0;
                if !answer.stdout.is_empty() {
                    print(&answer.stdout);
                    offset += answer.stdout.len() as u64;
                }
                if let Some(code) = answer
                    .stderr
                    .lines()
                    .find_map(|l| l.strip_prefix("exit "))
                    .and_then(|c| c.trim().parse().ok())
                {
                    return Ok(code);
                }
                if answer.stderr.lines().any(|l| l.trim() == "gone") {
                    return Err(ssh.error(format!(
                        "the remote run ended without an exit status (killed, or the machine \
                         restarted); its log is {}/.exhibit-remote/{}.log there",
                        shown(&session.dir),
                        session.id
                    )));
                }
                pause(ssh.interrupt, Duration::from_secs(1));
            }
            Ok(answer) if answer.code == 3 => {
                return Err(ssh.error(format!(
                    "no session {} in {}",
                    session.id,
                    shown(&session.dir)
                )));
            }
            Ok(_) | Err(RemoteError::Host { .. }) => {
                failures += 1;
                let wait = Duration::from_secs(1u64 << failures.min(5));
                say(&format!(
                    "remote {}: connection lost; the run goes on there; retrying in {}s",
                    ssh.host,
                    wait.as_secs()
                ));
                pause(ssh.interrupt, wait);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Copies the run the session's log names, and its report, back under `root`; returns the run
/// directory, relative to `root`.
pub fn collect(
    ssh: &Ssh<'_>,
    root: &Path,
    session: &Session,
) -> Result<Option<PathBuf>, RemoteError> {
    let log = ssh.must(
        "read the log",
        &format!(
            "cat {}/.exhibit-remote/{}.log",
            quote(&session.dir),
            session.id
        ),
        None,
        None,
    )?;
    let text = String::from_utf8_lossy(&log.stdout);
    let Some(id) = text.lines().find_map(run_id) else {
        return Ok(None);
    };
    let tarball = ssh.control.path().join("run.tgz");
    ssh.must(
        "pack the run",
        &format!(
            "cd {} && tar -czf - artifacts/{id} $(ls reports/{id}.* 2>/dev/null)",
            quote(&session.dir)
        ),
        None,
        Some(&tarball),
    )?;
    receive(&tarball, root, &id, &ssh.control.path().join("received"))
        .map_err(|e| ssh.error(format!("the run it sent back: {e}")))?;
    Ok(Some(Path::new("artifacts").join(id)))
}

/// Sends SIGINT to the session's process group on the remote (the runner then stops its units
/// as it does on a Ctrl-C).
pub fn stop(ssh: &Ssh<'_>, session: &Session) -> Result<(), RemoteError> {
    ssh.must(
        "stop the run",
        &format!(
            // `kill -INT -PGID`: dash (Debian's sh) takes no `--` here, and bash, zsh and
            // busybox read a negative number after the signal as a process group.
            "cd {}/.exhibit-remote && kill -INT -$(cat {}.pid)",
            quote(&session.dir),
            session.id
        ),
        None,
        None,
    )
    .map(|_| ())
}

/// The session recorded under `root`.
pub fn load(root: &Path, id: &str) -> Result<Session, RemoteError> {
    let safe = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !safe(id) {
        return Err(RemoteError::Local(format!(
            "`{id}` is not a session: sessions are named like 20261123T045414Z-1a2b3c4d"
        )));
    }
    let path = root.join(SESSIONS).join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| RemoteError::Local(format!("read {}: {e}", path.display())))?;
    let session: Session = serde_json::from_str(&text)
        .map_err(|e| RemoteError::Local(format!("read {}: {e}", path.display())))?;
    if session.id != id || !session.dir.chars().all(|c| !c.is_control() && c != '\'') {
        return Err(RemoteError::Local(format!(
            "{}: a record of another session",
            path.display()
        )));
    }
    Ok(session)
}

fn save(root: &Path, session: &Session) -> Result<(), RemoteError> {
    let path = root.join(SESSIONS).join(format!("{}.json", session.id));
    let text = serde_json::to_string_pretty(session).unwrap_or_default();
    crate::evidence::rundir::write_atomic(&path, text.as_bytes())
        .map_err(|e| RemoteError::Local(format!("record the session: {e}")))
}

/// `run <id>: artifacts/<id>`, as the runner says when a run starts.
fn run_id(line: &str) -> Option<String> {
    let rest = line.strip_prefix("run ")?;
    let (id, dir) = rest.split_once(": ")?;
    (dir.trim_end().ends_with(&format!("artifacts/{id}"))
        && !id.is_empty()
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    .then(|| id.to_string())
}

fn session_id() -> String {
    let now = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let salt = crate::evidence::hash::bytes(
        format!("{now}{}{:?}", std::process::id(), std::time::Instant::now()).as_bytes(),
    );
    format!("{now}-{}", &salt[..8])
}

fn local(command: &exec::Command, interrupt: &Interrupt, what: &str) -> Result<(), RemoteError> {
    match exec::run(command, interrupt) {
        Ok(o) if o.ending == Ending::Exited(0) => Ok(()),
        Ok(o) => {
            let err = command
                .stderr
                .as_ref()
                .and_then(|p| crate::evidence::rundir::read_lossy(p).ok())
                .unwrap_or_default();
            Err(RemoteError::Local(format!(
                "{what}: {:?}{}",
                o.ending,
                err.lines()
                    .last()
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default()
            )))
        }
        Err(e) => Err(RemoteError::Local(format!("{what}: failed to {e}"))),
    }
}

/// Sleeps up to `wait`, waking early on an interrupt.
fn pause(interrupt: &Interrupt, wait: Duration) {
    let end = std::time::Instant::now() + wait;
    while std::time::Instant::now() < end && !interrupt.is_set() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes remote output to stderr as it arrives, without the terminal escape sequences and
/// control characters a remote log may hold (one that sets the clipboard or the title, or
/// erases lines): the remote's text is shown, never obeyed.
pub fn to_stderr(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(terminal_text(bytes).as_bytes());
    let _ = err.flush();
}

/// Remote output as the terminal shows it: text, its escape sequences and control characters
/// removed (`report::text::strip_controls`).
fn terminal_text(bytes: &[u8]) -> String {
    report::text::strip_controls(&String::from_utf8_lossy(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    /// A remote log that sets the clipboard (OSC 52), the title, or erases the line reaches the
    /// terminal as its text only.
    #[test]
    fn a_remote_logs_escapes_never_reach_the_terminal() {
        let log = b"build ok\n\x1b]52;c;aGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Kdone\r\n";
        let shown = super::terminal_text(log);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(!shown.contains('\r'), "{shown:?}");
        assert!(
            shown.contains("build ok\n") && shown.contains("done"),
            "{shown:?}"
        );
    }
}
