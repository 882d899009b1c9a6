//! The SSH connection a remote run goes through: the system's OpenSSH client over one master
//! connection, each command quoted for the remote shell and run under a timeout.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use crate::process::exec::{self, Ending};
use crate::process::interrupt::Interrupt;

use super::{RemoteError, shown};

/// The SSH client, its master connection, and a local scratch directory for what passes
/// through it.
pub struct Ssh<'a> {
    pub(super) host: String,
    pub(super) program: OsString,
    pub(super) control: tempfile::TempDir,
    pub(super) interrupt: &'a Interrupt,
    /// Ends the master connection when recorded.
    pub(super) master_stop: Interrupt,
    pub(super) master: Option<std::thread::JoinHandle<()>>,
    /// The only writer of the FIFO the master's remote command reads: when the runner ends, by
    /// any means, SIGKILL included, the kernel closes it, the remote `cat` reads its end, and
    /// the master connection ends with it.
    pub(super) lifeline: Option<std::fs::File>,
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
pub(super) struct Answer {
    pub(super) code: i32,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: String,
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
    pub(super) fn options(&self, master: &str) -> Vec<OsString> {
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

    pub(super) fn error(&self, message: impl Into<String>) -> RemoteError {
        RemoteError::Host {
            host: self.host.clone(),
            message: message.into(),
        }
    }

    /// Runs `script` in the remote's shell (in its home directory), with `stdin` from a file and
    /// stdout into a file when given.
    pub(super) fn run(
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
            Ending::OutputRunaway => {
                return Err(self.error(crate::process::exec::runaway_words()));
            }
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
    pub(super) fn must(
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
    pub(super) fn with_room(&self, error: RemoteError, base: &str) -> RemoteError {
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
