//! Running a pipeline on another machine over SSH, so that a dropped connection costs nothing.
//!
//! `runner PIPELINE --host user@box`:
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
//! `runner attach SESSION` picks up a session where it stopped (the session record is kept in
//! `artifacts/.remote/<session>.json`). Every remote command goes through the system's OpenSSH
//! client (users' keys, agents, jump hosts and `~/.ssh/config` work as in their shell), over
//! one master connection held open for the session (`ControlMaster`; a command falls back to a
//! connection of its own when the master is gone), quoted for the remote shell, under a timeout.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::exec::{self, Ending};
use crate::process::interrupt::Interrupt;

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
}

/// Why a remote run could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("{host}: {message}")]
    Host { host: String, message: String },
    #[error("{0}")]
    Local(String),
    #[error("interrupted; the remote run goes on: `runner attach {session}` collects it")]
    Detached { session: String },
}

/// The SSH client, its master connection, and a local scratch directory for what passes
/// through it.
pub struct Ssh<'a> {
    host: String,
    program: OsString,
    control: tempfile::TempDir,
    interrupt: &'a Interrupt,
    /// Ends the master connection when recorded.
    master_stop: Interrupt,
    master: Option<std::thread::JoinHandle<()>>,
    /// The only writer of the FIFO the master's remote command reads: when the runner ends, by
    /// any means, SIGKILL included, the kernel closes it, the remote `cat` reads its end, and
    /// the master connection ends with it.
    lifeline: Option<std::fs::File>,
}

impl Drop for Ssh<'_> {
    fn drop(&mut self) {
        self.lifeline = None;
        self.master_stop.record(signal_hook::consts::SIGTERM);
        if let Some(master) = self.master.take() {
            let _ = master.join();
        }
    }
}

/// What a remote command printed.
struct Answer {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl<'a> Ssh<'a> {
    /// A client for `host`: `EXHIBIT_SSH` names the program (default `ssh`).
    pub fn new(host: &str, interrupt: &'a Interrupt) -> Result<Ssh<'a>, RemoteError> {
        // A host is a name: one beginning with `-` would be read by ssh as an option
        // (`-oProxyCommand=...` runs a command here), and the host goes after `--` as well.
        if host.is_empty()
            || host.starts_with('-')
            || host.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(RemoteError::Local(format!(
                "`{host}` is not a host: a host is a name or user@name, never beginning with `-`"
            )));
        }
        let control = tempfile::Builder::new()
            .prefix("exhibit-ssh-")
            .tempdir()
            .map_err(|e| RemoteError::Local(format!("create a temporary directory: {e}")))?;
        let mut ssh = Ssh {
            host: host.to_string(),
            program: std::env::var_os("EXHIBIT_SSH").unwrap_or_else(|| "ssh".into()),
            control,
            interrupt,
            master_stop: Interrupt::new(),
            master: None,
            lifeline: None,
        };
        // The master connection, under exec, on a thread, until the session ends: its remote
        // command reads the lifeline until the runner closes it.
        let scratch = ssh.control.path();
        let fifo = scratch.join("lifeline");
        nix::unistd::mkfifo(
            &fifo,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .map_err(|e| RemoteError::Local(format!("create {}: {e}", fifo.display())))?;
        // Read and write: opening it does not wait for the reader.
        ssh.lifeline = Some(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo)
                .map_err(|e| RemoteError::Local(format!("open {}: {e}", fifo.display())))?,
        );
        let mut argv = ssh.options("yes");
        argv.extend([
            "--".into(),
            ssh.host.clone().into(),
            "cat > /dev/null".into(),
        ]);
        let mut command = exec::Command::new(argv, scratch, Duration::from_secs(7 * 24 * 3600));
        command.stdin = Some(fifo);
        command.stderr = Some(scratch.join("master.err"));
        let stop = ssh.master_stop.clone();
        let master = std::thread::spawn(move || {
            let _ = exec::run(&command, &stop);
        });
        // Until the master listens (or gave up): the first command then rides on it.
        let socket = ssh.control.path().join("master");
        let end = std::time::Instant::now() + Duration::from_secs(20);
        while !socket.exists() && !master.is_finished() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        ssh.master = Some(master);
        Ok(ssh)
    }

    /// The client and the options every connection of the session takes.
    fn options(&self, master: &str) -> Vec<OsString> {
        let socket = self.control.path().join("master");
        let mut argv = vec![self.program.clone()];
        for option in [
            "BatchMode=yes".to_string(),
            "ConnectTimeout=15".to_string(),
            "ServerAliveInterval=10".to_string(),
            "ServerAliveCountMax=3".to_string(),
            format!("ControlMaster={master}"),
            format!("ControlPath={}", socket.display()),
        ] {
            argv.extend(["-o".into(), option.into()]);
        }
        argv
    }

    fn error(&self, message: impl Into<String>) -> RemoteError {
        RemoteError::Host {
            host: self.host.clone(),
            message: message.into(),
        }
    }

    /// Runs `script` in the remote's shell (in its home directory), with `stdin` from a file and
    /// stdout into a file when given.
    fn run(
        &self,
        script: &str,
        stdin: Option<&Path>,
        stdout: Option<&Path>,
        timeout: Duration,
    ) -> Result<Answer, RemoteError> {
        let scratch = self.control.path();
        let out = stdout.map_or_else(|| scratch.join("stdout"), Path::to_path_buf);
        let err = scratch.join("stderr");
        let mut argv = self.options("no");
        argv.extend(["--".into(), self.host.clone().into(), script.into()]);
        let mut command = exec::Command::new(argv, scratch, timeout);
        command.stdin = stdin.map(Path::to_path_buf);
        command.stdout = Some(out.clone());
        command.stderr = Some(err.clone());
        let outcome = exec::run(&command, self.interrupt)
            .map_err(|e| RemoteError::Local(format!("failed to {e}")))?;
        let stderr = crate::evidence::rundir::read_lossy(&err).unwrap_or_default();
        let code = match outcome.ending {
            Ending::Exited(code) => code,
            Ending::TimedOut => {
                return Err(self.error(format!(
                    "no answer within {}",
                    humantime::format_duration(timeout)
                )));
            }
            Ending::Interrupted => return Err(self.error("interrupted")),
            Ending::Signaled(signal) => {
                return Err(self.error(format!("ssh killed by signal {signal}")));
            }
        };
        let stdout = if stdout.is_some() {
            Vec::new()
        } else {
            std::fs::read(&out).unwrap_or_default()
        };
        Ok(Answer {
            code,
            stdout,
            stderr,
        })
    }

    /// Runs `script` and fails with its last words when it fails (255: the connection).
    fn must(
        &self,
        what: &str,
        script: &str,
        stdin: Option<&Path>,
        stdout: Option<&Path>,
    ) -> Result<Answer, RemoteError> {
        let answer = self.run(script, stdin, stdout, Duration::from_secs(600))?;
        if answer.code != 0 {
            let last = answer
                .stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("no message")
                .to_string();
            return Err(self.error(format!("{what} failed (exit {}): {last}", answer.code)));
        }
        Ok(answer)
    }
}

impl Ssh<'_> {
    /// `error` with how much room the remote's file system under `base` has, when it says so:
    /// a full disk or quota reads as what it is.
    fn with_room(&self, error: RemoteError, base: &str) -> RemoteError {
        let RemoteError::Host { host, message } = error else {
            return error;
        };
        // The nearest existing directory at or above the base.
        let probe = format!(
            "d={}; while [ ! -d \"$d\" ] && [ \"$d\" != . ] && [ \"$d\" != / ]; do d=$(dirname \"$d\"); done; \
             df -Pk \"$d\" | tail -n 1",
            quote(base)
        );
        let room = self
            .run(&probe, None, None, Duration::from_secs(60))
            .ok()
            .filter(|a| a.code == 0)
            .and_then(|a| {
                let line = String::from_utf8_lossy(&a.stdout).into_owned();
                let fields: Vec<&str> = line.split_whitespace().collect();
                // Filesystem 1024-blocks Used Available Capacity Mounted-on
                let available: u64 = fields.get(3)?.parse().ok()?;
                let mount = fields.get(5)?.to_string();
                Some((available, mount))
            });
        let message = match room {
            Some((available, mount)) => format!(
                "{message} ({} free on {mount}, the file system holding {}; --remote-dir puts \
                 the work elsewhere)",
                human_kib(available),
                shown(base)
            ),
            None => message,
        };
        RemoteError::Host { host, message }
    }
}

/// A size given in KiB, for people.
fn human_kib(kib: u64) -> String {
    match kib {
        k if k >= 1 << 20 => format!("{:.1} GiB", k as f64 / f64::from(1u32 << 20)),
        k if k >= 1 << 10 => format!("{:.1} MiB", k as f64 / 1024.0),
        k => format!("{k} KiB"),
    }
}

/// Quotes `word` for a POSIX shell.
pub fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
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
    };
    save(root, &session)?;
    say(&format!(
        "remote {}: session {} started (`runner attach {}` picks it up)",
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

/// Unpacks a run a remote sent back into a fresh directory, then moves its run directory and
/// report into the project: nothing else. Only regular files and directories under
/// `artifacts/<id>/` and `reports/<id>.*` are taken; a link, a device, an absolute or `..`
/// member, or any other path refuses the whole run, naming the member, before anything reaches
/// the project. An `<id>` that is no run id, or a run the project already holds, is refused.
pub fn receive(tarball: &Path, root: &Path, id: &str, scratch: &Path) -> Result<(), String> {
    if !is_run_id(id) {
        return Err(format!(
            "`{id}` is not a run id (like 20261123T045414Z-1a2b3c4d)"
        ));
    }
    let open = || -> Result<tar::Archive<flate2::read::GzDecoder<std::fs::File>>, String> {
        let file = std::fs::File::open(tarball).map_err(|e| format!("open it: {e}"))?;
        Ok(tar::Archive::new(flate2::read::GzDecoder::new(file)))
    };
    // Every member checked before one is written.
    let mut archive = open()?;
    for entry in archive.entries().map_err(|e| format!("read it: {e}"))? {
        let entry = entry.map_err(|e| format!("read it: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("read a member's name: {e}"))?;
        let shown = path.display().to_string();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(format!(
                "member `{shown}` is a {}, not a file or a directory: refused",
                kind_name(kind)
            ));
        }
        if !member_allowed(&path, id) {
            return Err(format!(
                "member `{shown}` lies outside artifacts/{id}/ and reports/{id}.*: refused"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).map_err(|e| format!("create {}: {e}", scratch.display()))?;
    let mut archive = open()?;
    archive.set_preserve_permissions(false);
    archive.set_overwrite(false);
    archive
        .unpack(scratch)
        .map_err(|e| format!("unpack it: {e}"))?;
    let run = Path::new("artifacts").join(id);
    let target = root.join(&run);
    if target.exists() {
        return Err(format!("{} is there already: refused", run.display()));
    }
    if !scratch.join(&run).is_dir() {
        return Err(format!("it holds no {}", run.display()));
    }
    std::fs::create_dir_all(root.join("artifacts"))
        .map_err(|e| format!("create artifacts/: {e}"))?;
    move_into(&scratch.join(&run), &target)?;
    let reports = scratch.join("reports");
    if reports.is_dir() {
        std::fs::create_dir_all(root.join("reports"))
            .map_err(|e| format!("create reports/: {e}"))?;
        for entry in std::fs::read_dir(&reports).map_err(|e| format!("read reports/: {e}"))? {
            let entry = entry.map_err(|e| format!("read reports/: {e}"))?;
            move_into(&entry.path(), &root.join("reports").join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Whether a received member's path is one of the run's: `artifacts/<id>` and below, or
/// `reports/<id>.<ext>`, every component a plain name.
fn member_allowed(path: &Path, id: &str) -> bool {
    use std::path::Component;
    let parts: Option<Vec<&std::ffi::OsStr>> = path
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let Some(parts) = parts else {
        return false;
    };
    let name = |i: usize| parts.get(i).and_then(|p| p.to_str());
    match (name(0), name(1), parts.len()) {
        // The archive's own top directory (`./`).
        (None, None, 0) => true,
        (Some("artifacts"), None, 1) | (Some("reports"), None, 1) => true,
        (Some("artifacts"), Some(run), _) => run == id,
        (Some("reports"), Some(file), 2) => file
            .strip_prefix(id)
            .is_some_and(|ext| ext.starts_with('.') && !ext[1..].contains(['/', '.'])),
        _ => false,
    }
}

/// A run id as the runner makes them: `20261123T045414Z-1a2b3c4d` (an experiment's trials and
/// older runs may add `-` and letters), never a path.
fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().next().is_some_and(|c| c.is_ascii_digit())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn kind_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "FIFO",
        _ => "special member",
    }
}

/// Moves a received file or directory into the project: a rename, or a copy where the scratch
/// directory is on another file system.
fn move_into(from: &Path, to: &Path) -> Result<(), String> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)
                .map_err(|e| format!("create {}: {e}", dest.display()))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest)
                .map_err(|e| format!("copy to {}: {e}", dest.display()))?;
        }
    }
    Ok(())
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

/// Writes remote output to stderr as it arrives.
pub fn to_stderr(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::{is_run_id, member_allowed};
    use std::path::Path;

    #[test]
    fn only_the_runs_own_members_are_received() {
        let id = "20261127T061006Z-840fa248";
        for ok in [
            "artifacts",
            "artifacts/20261127T061006Z-840fa248",
            "artifacts/20261127T061006Z-840fa248/manifest.json",
            "./artifacts/20261127T061006Z-840fa248/check/a/stdout.log",
            "reports/20261127T061006Z-840fa248.md",
        ] {
            assert!(member_allowed(Path::new(ok), id), "{ok}");
        }
        for refused in [
            "pipeline.yaml",
            ".git/hooks/pre-commit",
            "artifacts/other-run/manifest.json",
            "artifacts/20261127T061006Z-840fa248/../../pipeline.yaml",
            "/etc/passwd",
            "reports/latest.md",
            "reports/20261127T061006Z-840fa248.md/x",
            "reports/20261127T061006Z-840fa248.tar.gz",
        ] {
            assert!(!member_allowed(Path::new(refused), id), "{refused}");
        }
        assert!(is_run_id(id));
        assert!(!is_run_id("../../x"));
        assert!(!is_run_id(""));
    }
}
