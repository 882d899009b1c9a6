//! `--host` and `attach` through a real OpenSSH server on 127.0.0.1, started by each test with
//! a throwaway host key and user key in a temporary directory. Where no sshd is installed and
//! the tests run as root on Debian, the first of them installs Debian's openssh-server (as
//! `.ci/run` does); otherwise they fail saying what to install.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::remote::{report_of, slow_nvcc};
use crate::util::{BIN, Project, code, stderr};

/// What `id` prints with `args`: this user's uid or name.
fn id(args: &[&str]) -> String {
    let out = Command::new("id").args(args).output().expect("id");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// OpenSSH's server, installed once per test process when missing and allowed.
fn sshd_program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let installed = || {
            ["/usr/sbin/sshd", "/usr/local/sbin/sshd"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        };
        if let Some(path) = installed() {
            return path;
        }
        if id(&["-u"]) == "0" && Path::new("/usr/bin/apt-get").is_file() {
            let apt = |args: &[&str]| {
                Command::new("apt-get")
                    .args(args)
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let install = ["install", "-y", "--no-install-recommends", "openssh-server"];
            if !apt(&install) {
                apt(&["update"]);
                apt(&install);
            }
        }
        installed().unwrap_or_else(|| {
            panic!(
                "these tests need OpenSSH's sshd and ssh-keygen: install openssh-server \
                 (Debian: apt-get install openssh-server)"
            )
        })
    })
}

/// A real OpenSSH server on 127.0.0.1 and an ssh client configuration (`Host loopback`) that
/// reaches it as this user with a throwaway key.
struct Sshd {
    child: Child,
    dir: tempfile::TempDir,
    config: PathBuf,
    port: u16,
}

impl Sshd {
    fn start() -> Sshd {
        let dir = tempfile::tempdir().expect("a key directory");
        let d = dir.path();
        let keygen = |name: &str| {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(name))
                .status()
                .expect("ssh-keygen");
            assert!(status.success());
        };
        keygen("host_key");
        keygen("user_key");
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).expect("keys");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let sshd_config = d.join("sshd_config");
        std::fs::write(
            &sshd_config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nPidFile {d}/sshd.pid\nLogLevel DEBUG1\n",
                d = d.display()
            ),
        )
        .expect("sshd_config");
        let child = Sshd::listen(d, port);
        let user = id(&["-un"]);
        let config = d.join("ssh_config");
        std::fs::write(
            &config,
            format!(
                "Host loopback\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/user_key\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  LogLevel ERROR\n",
                d = d.display()
            ),
        )
        .expect("ssh_config");
        Sshd {
            child,
            dir,
            config,
            port,
        }
    }

    /// Starts the listener with the configuration in `d`, and waits until it accepts.
    fn listen(d: &Path, port: u16) -> Child {
        // Its privilege-separation directory, which a package install creates at boot.
        std::fs::create_dir_all("/run/sshd").ok();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("sshd.log"))
            .expect("sshd.log");
        let child = Command::new(sshd_program())
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
            assert!(Instant::now() < end, "sshd did not start: {log}");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// Drops every connection: the listener and its session processes are killed, as when the
    /// remote machine's network goes; after `outage` it listens again on the same port.
    fn outage(&mut self, outage: Duration) {
        let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                // pid (comm) state ppid ...: the fields after the last ')'.
                let ppid = stat
                    .rsplit_once(')')?
                    .1
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                Some((pid, ppid))
            })
            .collect();
        let mut tree = vec![self.child.id() as i32];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            tree.extend(
                parents
                    .iter()
                    .filter(|(_, pp)| *pp == parent)
                    .map(|(p, _)| *p),
            );
            i += 1;
        }
        for pid in &tree {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
        std::thread::sleep(outage);
        self.child = Sshd::listen(self.dir.path(), self.port);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// A runner command in `project` whose ssh is the system's, configured for this server.
    fn runner(&self, project: &Project, args: &[&str]) -> Command {
        let mut c = self.runner_in(&project.root, &project.root.join("bin"), args);
        c.env("XDG_CACHE_HOME", project.root.join("local-cache"));
        c
    }

    /// A runner command in `dir`, its ssh wrapper written to `bin`.
    fn runner_in(&self, dir: &Path, bin: &Path, args: &[&str]) -> Command {
        use std::os::unix::fs::PermissionsExt;
        let wrapper = bin.join("ssh-loopback");
        if !wrapper.exists() {
            std::fs::create_dir_all(bin).expect("a bin directory");
            std::fs::write(
                &wrapper,
                format!(
                    "#!/bin/sh\nexec ssh -F '{}' \"$@\"\n",
                    self.config.display()
                ),
            )
            .expect("the ssh wrapper");
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let mut c = Command::new(BIN);
        c.args(args).current_dir(dir).env("EXHIBIT_SSH", wrapper);
        c
    }

    /// `exhibit pipeline.yaml --host loopback --remote-dir DIR` in `project`, to its end.
    fn run_under(&self, project: &Project, dir: &str) -> std::process::Output {
        self.runner(
            project,
            &["pipeline.yaml", "--host", "loopback", "--remote-dir", dir],
        )
        .output()
        .expect("run")
    }

    /// The ssh client processes of this server's sessions still running.
    fn clients(&self) -> Vec<String> {
        let config = self.config.to_string_lossy().into_owned();
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.starts_with("ssh ") && c.contains(&config))
            .collect()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A remote base directory for one test, removed at the end (the "remote" is this user).
struct RemoteBase(tempfile::TempDir);

impl RemoteBase {
    fn new() -> RemoteBase {
        RemoteBase(tempfile::tempdir().expect("a remote base"))
    }

    fn arg(&self) -> String {
        self.0.path().display().to_string()
    }
}

/// A run end to end; a second run, under `--remote-dir`, whose client is killed mid-run and
/// which `attach` collects; one login per session; no ssh outlives its session.
#[test]
fn a_run_and_an_attach_through_a_real_sshd() {
    let sshd = Sshd::start();
    let project = Project::new();
    // The default base, relative to the remote home.
    let out = sshd
        .runner(&project, &["pipeline.yaml", "--host", "loopback"])
        .output()
        .expect("run");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("uploading the runner to ~/.cache/exhibit/bin/runner-")
            || stderr(&out).contains("syncing"),
        "{}",
        stderr(&out)
    );
    let (report, id) = report_of(&out);
    assert!(project.root.join(report).is_file());
    assert!(
        project
            .root
            .join(format!("artifacts/{id}/manifest.json"))
            .is_file()
    );
    let first_dir = session_record(&project, None)["dir"]
        .as_str()
        .expect("dir")
        .to_string();
    assert!(
        first_dir.starts_with(".cache/exhibit/remote/"),
        "{first_dir}"
    );

    // The client killed mid-run; attach collects the run. A fresh base: the runner is uploaded.
    let base = RemoteBase::new();
    project.tool("nvcc", &slow_nvcc());
    let mut child = sshd
        .runner(
            &project,
            &[
                "pipeline.yaml",
                "--host",
                "loopback",
                "--force",
                "--remote-dir",
                &base.arg(),
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run");
    let first = newest_session(&project);
    let end = Instant::now() + Duration::from_secs(30);
    let session = loop {
        if let Some(name) = newest_session(&project)
            && Some(&name) != first.as_ref()
        {
            break name;
        }
        assert!(Instant::now() < end, "no second session");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().expect("kill the client");
    let _ = child.wait();
    let out = sshd
        .runner(&project, &["attach", &session])
        .output()
        .expect("attach");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (_, second) = report_of(&out);
    assert_ne!(second, id);
    let record = session_record(&project, Some(&session));
    let dir = record["dir"].as_str().expect("dir");
    assert!(dir.starts_with(&base.arg()), "{dir}");
    let binaries: Vec<_> = std::fs::read_dir(base.0.path().join("bin"))
        .expect("the uploaded runner")
        .flatten()
        .collect();
    assert_eq!(binaries.len(), 1, "{binaries:?}");

    // Every command of a session went over its one master connection: three sessions (two
    // runs and the attach), three logins, not one per command.
    assert_eq!(
        sshd.log().matches("Accepted publickey").count(),
        3,
        "{}",
        sshd.log()
    );
    // No ssh of any session outlives it, not even the master of the client killed by SIGKILL:
    // its remote command read the runner's lifeline to its end.
    let end = Instant::now() + Duration::from_secs(10);
    while !sshd.clients().is_empty() {
        assert!(Instant::now() < end, "still running: {:?}", sshd.clients());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The first run's work directory is under this user's home: remove it.
    let home = std::env::var("HOME").expect("HOME");
    let _ = std::fs::remove_dir_all(Path::new(&home).join(first_dir));
}

/// Every connection dropped mid-run for 3 s: the run goes on there, the client retries with
/// backoff, logs in again and collects the finished run.
#[test]
fn a_dropped_connection_through_a_real_sshd_costs_nothing() {
    let mut sshd = Sshd::start();
    let project = Project::new();
    project.tool("nvcc", &slow_nvcc());
    let base = RemoteBase::new();
    let child = sshd
        .runner(
            &project,
            &[
                "pipeline.yaml",
                "--host",
                "loopback",
                "--remote-dir",
                &base.arg(),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let end = Instant::now() + Duration::from_secs(60);
    while newest_session(&project).is_none() {
        assert!(Instant::now() < end, "no session");
        std::thread::sleep(Duration::from_millis(20));
    }
    sshd.outage(Duration::from_secs(3));
    let out = child.wait_with_output().expect("the client");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}\n{}", sshd.log());
    assert!(
        err.contains("remote loopback: connection lost; the run goes on there; retrying in"),
        "{err}"
    );
    let (report, _) = report_of(&out);
    assert!(project.root.join(report).is_file());
    // The first login, then at least one after the outage.
    assert!(
        sshd.log().matches("Accepted publickey").count() >= 2,
        "{}",
        sshd.log()
    );
}

/// A remote whose disk is full: the error names the step, the remote's message and the room
/// left on its file system.
#[test]
fn a_full_remote_disk_is_a_clear_error() {
    let sshd = Sshd::start();
    let project = Project::new();
    let full = Tmpfs::mount(256);
    let out = sshd.run_under(&project, &full.path());
    let err = stderr(&out);
    // Infrastructure: exit 3.
    assert_eq!(code(&out), 3, "{err}");
    // The inputs fit in 256 KiB; the runner binary does not.
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: loopback: upload the runner failed (exit 1): ")
            && last.contains("No space left on device")
            && last.contains(&format!(
                " free on {}, the file system holding {}; --remote-dir puts the work elsewhere)",
                full.path(),
                full.path()
            )),
        "{err}"
    );
    // Nothing half-written passes for the runner: the upload went to a `.part` file.
    let bin = Path::new(&full.path()).join("bin");
    let names: Vec<String> = std::fs::read_dir(&bin)
        .expect("bin")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".part")), "{names:?}");
}

/// A tool the pipeline names that the remote lacks: the remote run goes on as a local one would,
/// its stage fails naming the tool, and the run and report come back saying so.
#[test]
fn a_tool_missing_on_the_remote_is_named() {
    let sshd = Sshd::start();
    let project = Project::new();
    // `target/` stays here: a tool built there exists here and not on the remote.
    std::fs::create_dir_all(project.root.join("target")).expect("target");
    std::fs::copy(
        project.root.join("bin/cuobjdump"),
        project.root.join("target/cuobjdump"),
    )
    .expect("a local tool");
    let yaml = std::fs::read_to_string(project.root.join("pipeline.yaml")).expect("pipeline");
    project.pipeline(&yaml.replace("cuobjdump: bin/cuobjdump", "cuobjdump: target/cuobjdump"));
    let local = Command::new(BIN)
        .args(["check", "pipeline.yaml"])
        .current_dir(&project.root)
        .output()
        .expect("check");
    assert_eq!(code(&local), 0, "{}", stderr(&local));
    let base = RemoteBase::new();
    let out = sshd.run_under(&project, &base.arg());
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    let why = "cuobjdump not found at target/cuobjdump (toolchain.tools.cuobjdump)";
    assert!(
        err.lines()
            .any(|l| l.starts_with("sass small sm_90") && l.contains("failed") && l.ends_with(why)),
        "{err}"
    );
    let (report, _) = report_of(&out);
    let text = std::fs::read_to_string(project.root.join(report)).expect("the report");
    assert!(text.contains("Inconclusive"), "{text}");
    assert!(text.contains("not found at target/cuobjdump"), "{text}");
}

/// The newest session recorded under the project.
fn newest_session(project: &Project) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(project.root.join("artifacts/.remote"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.pop()
}

/// A session's record: the one named, or the newest.
fn session_record(project: &Project, id: Option<&str>) -> serde_json::Value {
    let id = id
        .map(str::to_string)
        .or_else(|| newest_session(project))
        .expect("a session");
    let path = project.root.join(format!("artifacts/.remote/{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("a record")).expect("JSON")
}

/// A small tmpfs, as a full disk; unmounted at the end. Mounting needs root (CAP_SYS_ADMIN).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(kib: u32) -> Tmpfs {
        let dir = tempfile::tempdir().expect("a mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("mount");
        assert!(
            out.status.success(),
            "mounting a {kib} KiB tmpfs as the full remote disk needs root: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir)
    }

    fn path(&self) -> String {
        self.0.path().display().to_string()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// `exhibit bisect --host`: each step runs on the host (synced from the bisection's worktree) and
/// comes back; the answer is the planting commit, and no ssh outlives the bisection.
#[test]
fn a_bisection_runs_each_step_on_the_host() {
    let sshd = Sshd::start();
    let (repo, planting) = crate::bisect::planted(6, 4, false);
    let base = RemoteBase::new();
    let bin = tempfile::tempdir().expect("a bin directory");
    let good = repo.commits[0].clone();
    let out = sshd
        .runner_in(
            &repo.root,
            bin.path(),
            &[
                "bisect",
                &good,
                "HEAD",
                "--host",
                "loopback",
                "--remote-dir",
                &base.arg(),
            ],
        )
        .env("XDG_CACHE_HOME", &repo.cache)
        .output()
        .expect("run");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}\n{}", sshd.log());
    assert!(err.contains("remote loopback: syncing"), "{err}");
    let answer = repo.kept();
    assert_eq!(
        answer["answer"]["first_bad"]["hash"],
        planting.as_str(),
        "{err}"
    );
    // Every step's run came back and was kept.
    for step in answer["steps"].as_array().expect("steps") {
        let run = repo
            .root
            .join(step["run"].as_str().expect("a run directory"));
        assert!(run.join("manifest.json").is_file(), "{step:#}");
    }
    assert!(sshd.clients().is_empty(), "{:?}", sshd.clients());
}

/// A file deleted here is gone there at the next sync (a deleted source must not be built on
/// the host); the runs kept there stay, for the cache.
#[test]
fn a_file_deleted_here_is_gone_from_the_host_at_the_next_sync() {
    let sshd = Sshd::start();
    let project = Project::new();
    project.write("kernel/extra.cuh", "// a header the next commit deletes\n");
    let base = RemoteBase::new();
    let run = |project: &Project| {
        sshd.runner(
            project,
            &[
                "pipeline.yaml",
                "--host",
                "loopback",
                "--remote-dir",
                &base.arg(),
            ],
        )
        .output()
        .expect("run")
    };
    let out = run(&project);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = PathBuf::from(
        session_record(&project, None)["dir"]
            .as_str()
            .expect("the session's directory"),
    );
    assert!(dir.join("kernel/extra.cuh").is_file(), "{}", dir.display());
    std::fs::remove_file(project.root.join("kernel/extra.cuh")).expect("delete");
    let out = run(&project);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !dir.join("kernel/extra.cuh").exists(),
        "the deleted file stayed there"
    );
    assert!(dir.join("kernel/attention.cu").is_file());
    let runs = std::fs::read_dir(dir.join("artifacts"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(runs >= 2, "the host's runs stay: {runs}");
}
