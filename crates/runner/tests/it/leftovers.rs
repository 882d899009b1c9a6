//! Nothing of a stage survives the run, whichever way the stage ends: processes that stay in
//! its group, daemons that left it with `setsid`, and daemons that also cleared their
//! environment are all found through /proc after the runner exits.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::util::{Project, pipeline, stage};

/// How the stand-in compiler ends once its leftovers run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ending {
    Pass,
    Fail,
    /// Runs past the stage's 1 s timeout.
    Hang,
    /// Runs until the runner is interrupted; ignores SIGINT and SIGTERM, counting them.
    Stubborn,
}

/// A stand-in nvcc that starts three `leftover-sleep` processes, waits until each runs, then
/// ends as `ending` says:
/// - one in its own process group, in the background;
/// - one daemonised: `setsid`, and its parent exits at once;
/// - one in a new session with an empty environment (`env -i`).
fn nvcc(ending: Ending) -> String {
    let end = match ending {
        Ending::Pass => "printf '\\177ELF stand-in cubin\\n' > \"$out\"\nexit 0",
        Ending::Fail => "echo 'stand-in failure' >&2\nexit 1",
        Ending::Hang => "exec sleep 1000",
        Ending::Stubborn => {
            "trap 'echo signal >> \"$here/signals\"' INT TERM\nwhile :; do sleep 0.05; done"
        }
    };
    format!(
        r#"#!/bin/sh
# Stand-in for nvcc in tests (hand-written): leaves processes behind.
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
here="$(cd "$(dirname "$0")" && pwd)"
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
sh -c 'echo $$ > "$0/in-group.pid"; exec "$0/leftover-sleep" 1000' "$here" &
setsid sh -c 'sh -c '\''echo $$ > "$0/daemon.pid"; exec "$0/leftover-sleep" 1000'\'' "$0" &' "$here"
setsid env -i sh -c 'echo $$ > "$0/bare.pid"; exec "$0/leftover-sleep" 1000' "$here" &
for f in in-group daemon bare; do
  while [ ! -s "$here/$f.pid" ]; do sleep 0.01; done
done
sleep 0.2
echo ready > "$here/ready"
{end}
"#
    )
}

fn project(ending: Ending) -> Project {
    let project = Project::new();
    project.tool("nvcc", &nvcc(ending));
    std::os::unix::fs::symlink("/bin/sleep", project.root.join("bin/leftover-sleep"))
        .expect("link sleep");
    project.pipeline(
        &pipeline("")
            .replace(
                "  compile:\n    timeout: 30s",
                "  compile:\n    timeout: 1s",
            )
            .replace("grace: 1s", "grace: 2s"),
    );
    project
}

fn start(project: &Project) -> Child {
    Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the runner")
}

fn signal(runner: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(runner.id()).expect("a pid"));
    kill(pid, signal).expect("signal the runner");
}

fn wait(runner: &mut Child, limit: Duration) -> i32 {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = runner.try_wait().expect("wait for the runner") {
            return status.code().expect("an exit code");
        }
        assert!(Instant::now() < end, "the runner did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every running process whose command line names a file under `root`, through /proc.
fn survivors(root: &Path) -> Vec<String> {
    let root = root.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&root) && crate::util::alive(pid) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// Runs the stand-in to its end, interrupting the runner `signals` times once the leftovers
/// run, and checks that nothing of the stage survives; returns the exit code and manifest.
fn run(ending: Ending, signals: &[Signal]) -> (i32, serde_json::Value, Project) {
    let project = project(ending);
    let mut runner = start(&project);
    project.wait_for("bin/ready", Duration::from_secs(20));
    for (i, &s) in signals.iter().enumerate() {
        if i > 0 {
            // The stubborn tool records each signal the runner forwarded.
            let want = i;
            let end = Instant::now() + Duration::from_secs(5);
            while std::fs::read_to_string(project.root.join("bin/signals"))
                .map_or(0, |t| t.lines().count())
                < want
            {
                assert!(Instant::now() < end, "signal {i} was not forwarded");
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                runner.try_wait().expect("wait").is_none(),
                "the runner exited before its stage's processes ended"
            );
        }
        signal(&runner, s);
    }
    let code = wait(&mut runner, Duration::from_secs(30));
    let left = survivors(&project.root);
    assert!(left.is_empty(), "{ending:?}: still running: {left:#?}");
    let manifest = project.manifest();
    (code, manifest, project)
}

fn leftovers(manifest: &serde_json::Value) -> Vec<String> {
    stage(manifest, "compile")["leftovers"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().expect("a command line").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The three leftovers are named when the tool exits on its own; after a kill of the group only
/// the two that left it remain to be found.
fn assert_recorded(manifest: &serde_json::Value, expected: usize) {
    let found = leftovers(manifest);
    assert_eq!(found.len(), expected, "{found:#?}");
    assert!(
        found
            .iter()
            .all(|c| c.contains("leftover-sleep") && c.ends_with(" 1000")),
        "{found:#?}"
    );
}

#[test]
fn a_passing_stage_leaves_nothing_running_and_names_what_it_left() {
    let (code, manifest, _project) = run(Ending::Pass, &[]);
    assert_eq!(code, 0);
    assert_eq!(stage(&manifest, "compile")["status"], "passed");
    assert_recorded(&manifest, 3);
}

#[test]
fn a_failing_stage_leaves_nothing_running() {
    let (code, manifest, _project) = run(Ending::Fail, &[]);
    assert_eq!(code, 3);
    assert_eq!(stage(&manifest, "compile")["status"], "failed");
    assert_recorded(&manifest, 3);
}

#[test]
fn a_timed_out_stage_leaves_nothing_running() {
    let (code, manifest, _project) = run(Ending::Hang, &[]);
    assert_eq!(code, 3);
    assert_eq!(stage(&manifest, "compile")["status"], "timed_out");
    assert_recorded(&manifest, 2);
}

#[test]
fn one_signal_leaves_nothing_running_and_exits_128_plus_its_number() {
    let (code, manifest, _project) = run(Ending::Hang, &[Signal::SIGTERM]);
    assert_eq!(code, 128 + 15);
    assert_eq!(manifest["interrupted"], true);
    assert_eq!(stage(&manifest, "compile")["status"], "interrupted");
    assert_recorded(&manifest, 2);
}

#[test]
fn a_second_signal_is_forwarded_and_the_runner_still_waits_for_its_stage() {
    let started = Instant::now();
    let (code, manifest, project) = run(Ending::Stubborn, &[Signal::SIGINT, Signal::SIGINT]);
    // The first signal decides the exit code: 128 + SIGINT.
    assert_eq!(code, 130);
    assert_eq!(manifest["interrupted"], true);
    assert!(manifest["finished"].is_string());
    assert_eq!(stage(&manifest, "compile")["status"], "interrupted");
    // Both reached the stubborn tool, which ignored them until SIGKILL.
    let signals = std::fs::read_to_string(project.root.join("bin/signals")).unwrap_or_default();
    assert_eq!(signals.lines().count(), 2, "{signals}");
    assert_recorded(&manifest, 2);
    // SIGKILL came only after the 2 s grace period.
    assert!(started.elapsed() >= Duration::from_secs(2));
}

/// A runner killed with SIGKILL sweeps nothing: its stage's shell dies with it, but a process that
/// shell started lives on. The next run ends it, and says so.
#[test]
fn what_a_killed_runner_left_running_is_ended_by_the_next_run() {
    let project = Project::new();
    project.tool(
        "nvcc",
        r#"#!/bin/sh
# Stand-in for nvcc in tests (hand-written): starts a sleep under its shell, then waits.
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
here="$(cd "$(dirname "$0")" && pwd)"
sh -c 'echo $$ > "$0/grandchild.pid"; exec "$0/leftover-sleep" 1000' "$here" &
wait
"#,
    );
    std::os::unix::fs::symlink("/bin/sleep", project.root.join("bin/leftover-sleep"))
        .expect("link sleep");
    let mut runner = start(&project);
    let pid = project.wait_for("bin/grandchild.pid", Duration::from_secs(30));
    let pid: i32 = pid.trim().parse().expect("a pid");
    signal(&runner, Signal::SIGKILL);
    let _ = runner.wait();
    std::thread::sleep(Duration::from_millis(300));
    // Another runner starting meanwhile (tests run in parallel) may end it first: the sweep is
    // of every runner's orphans. When it still runs, the next run here ends it and says so.
    let orphaned = crate::util::alive(pid);

    project.tool("nvcc", crate::util::NVCC);
    let out = project.run(&["pipeline.yaml"]);
    let end = Instant::now() + Duration::from_secs(5);
    while crate::util::alive(pid) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!crate::util::alive(pid), "{}", crate::util::stderr(&out));
    assert!(
        !orphaned || crate::util::stderr(&out).contains("that a killed run left running"),
        "{}",
        crate::util::stderr(&out)
    );
    assert!(survivors(&project.root).is_empty());
}

/// The runner's supervisors (`exhibit __supervise PREFIX`) for the runner `pid`, still running.
fn supervisors_of(pid: i32) -> Vec<i32> {
    let mark = format!("__supervise\0{pid}.");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark))
                && crate::util::alive(p)
        })
        .collect()
}

/// A runner killed with SIGKILL takes its stage's descendants with it within a second: a
/// grandchild that left for its own session (`setsid`), one that ignores hangups (`nohup`), and
/// one that stayed in the stage's group, although only the stage's own process gets a death
/// signal. Its supervisor ends them, then ends itself.
#[test]
fn a_runner_killed_with_sigkill_takes_every_descendant_of_its_stage_with_it() {
    use std::os::unix::process::CommandExt;
    let project = Project::new();
    project.tool(
        "nvcc",
        r#"#!/bin/sh
# Stand-in for nvcc in tests (hand-written): forks grandchildren under setsid and nohup, sleeps.
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
here="$(cd "$(dirname "$0")" && pwd)"
setsid sh -c 'echo $$ > "$0/setsid.pid"; exec "$0/leftover-sleep" 60' "$here" &
nohup sh -c 'echo $$ > "$0/nohup.pid"; exec "$0/leftover-sleep" 60' "$here" > /dev/null 2>&1 &
"$here/leftover-sleep" 60
"#,
    );
    std::os::unix::fs::symlink("/bin/sleep", project.root.join("bin/leftover-sleep"))
        .expect("link sleep");
    // In a group of its own: the SIGKILL and whatever follows it leave the test's group alone.
    let mut runner = Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start the runner");
    let runner_pid = i32::try_from(runner.id()).expect("a pid");
    let pids: Vec<i32> = ["bin/setsid.pid", "bin/nohup.pid"]
        .iter()
        .map(|f| {
            let text = project.wait_for(f, Duration::from_secs(30));
            text.trim().parse().expect("a pid")
        })
        .collect();
    assert!(pids.iter().all(|&p| crate::util::alive(p)));
    // The stage's shell, its sleep and the two grandchildren: the shell writes the pid files
    // before it starts its own sleep, so wait for all four.
    let started = Instant::now();
    let mut before = survivors(&project.root);
    while before.len() < 4 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        before = survivors(&project.root);
    }
    assert!(before.len() >= 4, "{before:#?}");

    signal(&runner, Signal::SIGKILL);
    let killed = Instant::now();
    let _ = runner.wait();
    let end = killed + Duration::from_secs(1);
    while Instant::now() < end
        && (!survivors(&project.root).is_empty() || !supervisors_of(runner_pid).is_empty())
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Read before anything here kills what is left.
    let left = survivors(&project.root);
    let outlived: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&p| crate::util::alive(p))
        .collect();
    let supervisors = supervisors_of(runner_pid);
    println!(
        "{} ms after SIGKILL: grandchildren {pids:?} still running {outlived:?}, processes of \
         the stage {left:?}, supervisors {supervisors:?}",
        killed.elapsed().as_millis()
    );
    // Whatever the outcome, nothing of this test keeps running.
    for line in &left {
        if let Some(pid) = line.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    assert!(
        outlived.is_empty(),
        "grandchildren {outlived:?} outlived the killed runner by a second: {left:#?}"
    );
    assert!(left.is_empty(), "still running: {left:#?}");
    assert!(supervisors.is_empty(), "the supervisor outlived the run");
}
