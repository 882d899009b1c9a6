//! `--host` and `attach` through a stand-in ssh that hands each remote command to a stand-in
//! remote host: a daemon the test starts, which runs it in a fake remote home on this machine with
//! a fresh environment, as sshd would. The remote processes are then no descendants of the
//! runner (which would end them as leftovers of its own children, as it must), as on a real
//! remote. The stand-in ssh refuses connections while `<remote home>/down` exists.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{BIN, Project, code, stderr};

/// The stand-in ssh (hand-written): options, `--`, the host, then the remote command; an
/// option after the host's place is an option read as one, as OpenSSH's getopt does. A master
/// (`ControlMaster=yes`) marks its control path as a real one's socket would appear. With
/// `EVIL_RUN` set, it answers the command that packs the run with that file instead, and with
/// `EVIL_ID` set, with the run whose manifest names that id: a remote that sends back what it
/// likes.
const SSH: &str = r#"#!/bin/sh
host=""
master=""
path=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o)
      case "$2" in
        ControlMaster=yes) master=1 ;;
        ControlPath=*) path="${2#ControlPath=}" ;;
        ProxyCommand=*) sh -c "${2#ProxyCommand=}" ;;
      esac
      shift 2 ;;
    -oProxyCommand=*) sh -c "${1#-oProxyCommand=}"; shift ;;
    -p|-i|-l|-F) shift 2 ;;
    --) shift; [ -z "$host" ] && { host=$1; shift; }; break ;;
    -*) shift ;;
    *) host=$1; shift ;;
  esac
done
if [ -n "$EVIL_RUN" ]; then
  case "$1" in *"tar -czf - artifacts/"*) cat "$EVIL_RUN"; exit 0 ;; esac
fi
if [ -n "$EVIL_ID" ]; then
  case "$1" in *"tar -czf - artifacts/"*)
    t=$(mktemp -d)
    (cd "$REMOTE_HOME" && sh -c "$1") | tar -xzf - -C "$t"
    m=$(ls "$t"/artifacts/*/manifest.json)
    sed -i '0,/"id": *"[^"]*"/s||"id": "'"$EVIL_ID"'"|' "$m"
    (cd "$t" && tar -czf - .)
    exit 0 ;;
  esac
fi
if [ -e "$REMOTE_HOME/down" ]; then
  echo "ssh: connect to host $host port 22: Connection refused" >&2
  exit 255
fi
[ -n "$master" ] && [ -n "$path" ] && : > "$path"
printf '%s\n' "$1" >> "$REMOTE_HOME.ssh.log"
if [ -n "$master" ]; then
  cd "$REMOTE_HOME" && exec env -i HOME="$REMOTE_HOME" PATH="/usr/bin:/bin" sh -c "$1"
fi
# Any other command goes to the remote host's daemon, as sshd would run it: not a descendant
# of this client, so nothing the runner does to its own children touches it.
spool="$REMOTE_HOME.spool"
id="$$.$(date +%s%N)"
cat > "$spool/$id.in"
printf '%s' "$1" > "$spool/$id.tmp" && mv "$spool/$id.tmp" "$spool/$id.cmd"
while [ ! -e "$spool/$id.rc" ]; do sleep 0.02; done
cat "$spool/$id.out"
cat "$spool/$id.err" >&2
exit "$(cat "$spool/$id.rc")"
"#;

/// The stand-in remote host (hand-written): runs each command the stand-in ssh spools, in the
/// remote home with a fresh environment, until `stop` appears.
const HOST: &str = r#"#!/bin/sh
spool="$1"; home="$2"
while [ ! -e "$spool/stop" ]; do
  for f in "$spool"/*.cmd; do
    [ -e "$f" ] || continue
    id="${f%.cmd}"
    mv "$f" "$id.run"
    ( cd "$home" && env -i HOME="$home" PATH="/usr/bin:/bin" sh -c "$(cat "$id.run")" \
        < "$id.in" > "$id.out" 2> "$id.err"; echo $? > "$id.rtmp"; mv "$id.rtmp" "$id.rc" ) &
  done
  sleep 0.02
done
"#;

struct Remote {
    project: Project,
    home: PathBuf,
    /// The remote host's daemon, leading its own process group.
    host: Child,
}

impl Remote {
    fn new() -> Remote {
        use std::os::unix::process::CommandExt;
        let project = Project::new();
        project.tool("ssh", SSH);
        project.tool("remote-host", HOST);
        let home = project.root.join("remote-home");
        std::fs::create_dir_all(&home).expect("a remote home");
        let spool = home.with_extension("spool");
        std::fs::create_dir_all(&spool).expect("a spool");
        let host = Command::new(project.root.join("bin/remote-host"))
            .arg(&spool)
            .arg(&home)
            .process_group(0)
            .spawn()
            .expect("start the remote host");
        Remote {
            project,
            home,
            host,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(&self.project.root)
            .env("EXHIBIT_SSH", self.project.root.join("bin/ssh"))
            .env("REMOTE_HOME", &self.home)
            .env("XDG_CACHE_HOME", self.project.root.join("local-cache"));
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("start the runner")
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the runner")
    }

    fn ssh_log(&self) -> String {
        std::fs::read_to_string(self.home.with_extension("ssh.log")).unwrap_or_default()
    }

    /// The one session recorded locally.
    fn session(&self, limit: Duration) -> String {
        let dir = self.project.root.join("artifacts/.remote");
        let end = Instant::now() + limit;
        loop {
            if let Some(name) = std::fs::read_dir(&dir).ok().and_then(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .find(|n| n.ends_with(".json"))
            }) {
                return name.trim_end_matches(".json").to_string();
            }
            assert!(Instant::now() < end, "no session recorded");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The remote work directory's file, e.g. `.exhibit-remote/<id>.exit`, once it exists.
    fn wait_remote(&self, name: &str, limit: Duration) -> PathBuf {
        let end = Instant::now() + limit;
        loop {
            let found = walk(&self.home).into_iter().find(|p| p.ends_with(name));
            if let Some(path) = found {
                return path;
            }
            assert!(Instant::now() < end, "{name} did not appear on the remote");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        // The daemon and whatever it still runs (a remote run the test left going).
        let _ = std::fs::write(self.home.with_extension("spool").join("stop"), "");
        let group = nix::unistd::Pid::from_raw(self.host.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.host.wait();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// The stand-in nvcc, taking 2 s per compilation: long enough to act on a run in flight.
pub fn slow_nvcc() -> String {
    crate::util::NVCC.replace("out=\"\"", "sleep 2\nout=\"\"")
}

/// The `report:` line's path and the run id it names.
pub fn report_of(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no report line in {stdout}"))
        .to_string();
    let id = report
        .trim_start_matches("reports/")
        .trim_end_matches(".md")
        .to_string();
    (report, id)
}

#[test]
fn a_remote_run_comes_back_with_its_run_directory_and_report() {
    let remote = Remote::new();
    let out = remote.run(&["pipeline.yaml", "--host", "gpu-box"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (report, id) = report_of(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("verdict: Clean: no problems found by compile and sass"),
        "{stdout}"
    );
    let root = &remote.project.root;
    assert!(root.join(&report).is_file());
    assert!(root.join("reports/latest.md").is_file());
    let manifest = root.join(format!("artifacts/{id}/manifest.json"));
    assert!(manifest.is_file(), "the run directory came back");
    // The machine, as the user named it, in the manifest and the report.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(json["environment"]["host"], "gpu-box");
    let md = std::fs::read_to_string(root.join(&report)).unwrap();
    assert!(md.contains("| Host | `gpu-box` (`--host`) |"), "{md}");
    // The runner was uploaded once, to a path named by its hash.
    let bins: Vec<PathBuf> = walk(&remote.home.join(".cache/exhibit/bin"))
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(bins.len(), 1, "{bins:?}");
    assert!(
        bins[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("runner-")
    );
    let uploads = |log: &str| log.lines().filter(|l| l.contains(".part")).count();
    assert_eq!(uploads(&remote.ssh_log()), 1);
    // A second run: no upload, and the remote's cache serves the unchanged units.
    let again = remote.run(&["pipeline.yaml", "--host", "gpu-box"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(uploads(&remote.ssh_log()), 1);
    let (_, second) = report_of(&again);
    let text = std::fs::read_to_string(root.join(format!("artifacts/{second}/manifest.json")))
        .expect("the second run came back");
    assert!(text.contains("\"cached_from\""), "{text}");
}

#[test]
fn a_dropped_connection_is_retried_and_the_run_goes_on() {
    let remote = Remote::new();
    remote.project.tool("nvcc", &slow_nvcc());
    let child = remote.spawn(&["pipeline.yaml", "--host", "gpu-box"]);
    remote.session(Duration::from_secs(30));
    std::fs::write(remote.home.join("down"), "").expect("drop the connection");
    std::thread::sleep(Duration::from_secs(3));
    std::fs::remove_file(remote.home.join("down")).expect("bring it back");
    let out = child.wait_with_output().expect("wait for the runner");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(
        err.contains("remote gpu-box: connection lost; the run goes on there; retrying in"),
        "{err}"
    );
    let (_, id) = report_of(&out);
    assert!(
        remote
            .project
            .root
            .join(format!("artifacts/{id}/manifest.json"))
            .is_file()
    );
}

#[test]
fn attach_collects_a_run_whose_client_was_killed() {
    let remote = Remote::new();
    remote.project.tool("nvcc", &slow_nvcc());
    let mut child = remote.spawn(&["pipeline.yaml", "--host", "gpu-box"]);
    let session = remote.session(Duration::from_secs(30));
    child.kill().expect("kill the client");
    let _ = child.wait();
    // The run goes on without its client, and ends.
    let exit = remote.wait_remote(&format!("{session}.exit"), Duration::from_secs(60));
    assert_eq!(std::fs::read_to_string(exit).unwrap().trim(), "0");
    assert!(!remote.project.root.join("reports/latest.md").exists());
    let out = remote.run(&["attach", &session]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (report, id) = report_of(&out);
    assert!(remote.project.root.join(report).is_file());
    assert!(
        remote
            .project
            .root
            .join(format!("artifacts/{id}/manifest.json"))
            .is_file()
    );
    // An unknown session is a usage error.
    let out = remote.run(&["attach", "no-such-session"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("artifacts/.remote/no-such-session.json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unreachable_host_is_a_clear_error() {
    let remote = Remote::new();
    std::fs::write(remote.home.join("down"), "").expect("no connection");
    let out = remote.run(&["pipeline.yaml", "--host", "gpu-box"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "error: gpu-box: connect failed (exit 255): ssh: connect to host gpu-box port 22: Connection refused\n"
    );
}

/// Ctrl-C on a terminal while following asks whether to stop the remote run; "y" stops it. The
/// exhibit runs under `script`, which gives it a pseudo-terminal: ^C written there is turned into
/// SIGINT by the terminal, as a user's would be, and the answer is read from it.
#[test]
fn ctrl_c_on_a_terminal_asks_and_stops_the_remote_run() {
    use std::io::{Read, Write};
    let remote = Remote::new();
    remote.project.tool("nvcc", &slow_nvcc());
    let line = format!("exec '{BIN}' pipeline.yaml --host gpu-box");
    // The environment `Remote::command` gives the runner: the stand-in ssh and its remote home.
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = remote
        .command(&[])
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let mut child = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(&remote.project.root)
        .envs(envs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start script (util-linux)");
    // The terminal's output, collected as it comes.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        let mut out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .expect("lock")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let wait_for = |text: &str| {
        let end = Instant::now() + Duration::from_secs(30);
        while !seen.lock().expect("lock").contains(text) {
            assert!(
                Instant::now() < end,
                "no {text:?} in {}",
                seen.lock().expect("lock")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let session = remote.session(Duration::from_secs(30));
    wait_for("picks it up");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"\x03").expect("^C");
    wait_for("stop the remote run too? [y/N]");
    stdin.write_all(b"y\n").expect("the answer");
    let status = child.wait().expect("script");
    reader.join().expect("the reader");
    let text = seen.lock().expect("lock").clone();
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(
        text.contains(&format!(
            "stopping it; `exhibit attach {session}` collects what it wrote"
        )),
        "{text}"
    );
    // The remote run got the SIGINT and ended as an interrupted run does.
    let exit = remote.wait_remote(&format!("{session}.exit"), Duration::from_secs(60));
    assert_eq!(std::fs::read_to_string(exit).expect("exit").trim(), "130");
}

/// A remote run killed without a chance to write its exit status (the OOM killer, a reboot):
/// the client says so instead of following it forever.
#[test]
fn a_remote_run_that_vanished_is_an_error_not_a_wait() {
    let remote = Remote::new();
    remote.project.tool("nvcc", &slow_nvcc());
    let child = remote.spawn(&["pipeline.yaml", "--host", "gpu-box"]);
    let session = remote.session(Duration::from_secs(30));
    let pid_file = remote.wait_remote(&format!("{session}.pid"), Duration::from_secs(30));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the pid")
        .trim()
        .parse()
        .expect("a pid");
    // The run's whole session, as the kernel's OOM killer or a restart would end it.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    // Bounded: before the fix the client followed the vanished run forever.
    let mut child = child;
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("the client").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("the client still follows a run that vanished");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("the client");
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.lines().last().unwrap_or_default().starts_with(
            "error: gpu-box: the remote run ended without an exit status (killed, or the machine restarted)"
        ),
        "{err}"
    );
}

/// Members of a tarball: (path, content) for files, (path, target) for links.
type Members<'a> = &'a [(&'a str, &'a str)];

/// A gzipped tarball of `files` (path, content) and `links` (path, target), made by tar.
fn tarball(dir: &Path, files: &[(&str, &str)], links: &[(&str, &str)]) -> PathBuf {
    let src = dir.join("evil-src");
    for (path, content) in files {
        let at = src.join(path);
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("a directory");
        std::fs::write(&at, content).expect("a member");
    }
    for (path, target) in links {
        let at = src.join(path);
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("a directory");
        std::os::unix::fs::symlink(target, &at).expect("a link");
    }
    let out = dir.join("evil.tgz");
    let mut names: Vec<&str> = files.iter().chain(links).map(|(p, _)| *p).collect();
    names.sort_unstable();
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(&src)
        .args(names)
        .status()
        .expect("run tar");
    assert!(status.success());
    out
}

/// What a remote sends back is unpacked apart and only the run's own directory and report are
/// moved in: a tarball that would overwrite the pipeline, plant a git hook or link its way out
/// is refused whole, naming the member, and the project is as it was.
#[test]
fn a_remote_that_sends_back_more_than_its_run_writes_nothing_into_the_project() {
    let remote = Remote::new();
    let root = remote.project.root.clone();
    let pipeline = std::fs::read_to_string(root.join("pipeline.yaml")).expect("pipeline.yaml");
    let cases: [(Members, Members, &str); 3] = [
        (
            &[("pipeline.yaml", "evil: true\n")],
            &[],
            "member `pipeline.yaml`",
        ),
        (
            &[(".git/hooks/pre-commit", "#!/bin/sh\ntouch PWNED\n")],
            &[],
            "member `.git",
        ),
        (
            &[],
            &[("artifacts", "..")],
            "member `artifacts` is a symbolic link",
        ),
    ];
    for (i, (files, links, named)) in cases.into_iter().enumerate() {
        let dir = root.join(format!("evil-{i}"));
        std::fs::create_dir_all(&dir).expect("a directory");
        let evil = tarball(&dir, files, links);
        let out = remote
            .command(&["pipeline.yaml", "--host", "gpu-box"])
            .env("EVIL_RUN", &evil)
            .output()
            .expect("start the runner");
        let err = stderr(&out);
        assert_ne!(code(&out), 0, "case {i}: {err}");
        assert!(
            err.contains(named) && err.contains("refused"),
            "case {i}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("pipeline.yaml")).expect("pipeline.yaml"),
            pipeline,
            "case {i}"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists(), "case {i}");
        assert!(!root.join("PWNED").exists(), "case {i}");
    }
}

/// A host that begins with `-` would be an option to ssh (`-oProxyCommand=` runs a command on
/// this machine): it is refused before any connection, and the host goes after `--`.
#[test]
fn a_host_that_is_an_option_is_refused() {
    let remote = Remote::new();
    let root = remote.project.root.clone();
    let out = remote.run(&["pipeline.yaml", "--host=-oProxyCommand=touch PWNED"]);
    let err = stderr(&out);
    assert_ne!(code(&out), 0, "{err}");
    assert!(err.contains("is not a host"), "{err}");
    assert!(!root.join("PWNED").exists());
    assert!(!remote.home.join("PWNED").exists());
    // A host that is a name still runs.
    let ok = remote.run(&["pipeline.yaml", "--host", "gpu-box"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
}

/// A run that comes back with a manifest naming another run id (`../../x`) is refused: the
/// report is named by the id the run came back under, never by what its manifest says.
#[test]
fn a_received_manifest_naming_another_run_is_refused() {
    let remote = Remote::new();
    let root = remote.project.root.clone();
    let out = remote
        .command(&["pipeline.yaml", "--host", "gpu-box"])
        .env("EVIL_ID", "../../x")
        .output()
        .expect("start the runner");
    let err = stderr(&out);
    assert_ne!(code(&out), 0, "{err}");
    assert!(
        err.contains("its manifest names run `../../x`") && err.contains("refused"),
        "{err}"
    );
    assert!(!root.join("x.md").exists());
    assert!(!root.parent().expect("a parent").join("x.md").exists());
}
