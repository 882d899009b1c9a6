//! `--slurm`: GPU units run as batch jobs. Stand-ins for sbatch, squeue, sacct and scancel
//! (hand-written) talk to a queue directory; a thread of this test plays the cluster, running
//! each submitted job script outside the runner's process tree, as slurmd would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::util::{BIN, Project, code, pipeline, stage, stderr};

const SBATCH: &str = r#"#!/bin/sh
q="$(cd "$(dirname "$0")" && pwd)/queue"
mkdir -p "$q"
printf '%s\n' "$*" >> "$q/../sbatch.log"
for script; do :; done
# A job id of its own even when two submissions race: mkdir is atomic.
id=1000
while ! mkdir "$q/../id.$id" 2>/dev/null; do id=$((id + 1)); done
# Written aside and renamed: the cluster must never read a half-written job.
printf '%s\n' "$script" > "$q/$id.tmp"
mv "$q/$id.tmp" "$q/$id.job"
echo "$id"
"#;

const SQUEUE: &str = r#"#!/bin/sh
q="$(cd "$(dirname "$0")" && pwd)/queue"
id=""; while [ $# -gt 0 ]; do [ "$1" = "-j" ] && id="$2"; shift; done
if [ -e "$q/$id.job" ]; then echo PENDING; elif [ -e "$q/$id.running" ]; then echo RUNNING; fi
"#;

const SACCT: &str = "#!/bin/sh\necho COMPLETED\n";

const SCANCEL: &str = r#"#!/bin/sh
q="$(cd "$(dirname "$0")" && pwd)/queue"
touch "$q/$1.cancel"
"#;

/// Runs queued job scripts until `stop`, each on its own thread; returns the jobs it ran.
fn cluster(queue: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut ran = 0;
        let mut running = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            for entry in std::fs::read_dir(&queue).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "job") {
                    let script = std::fs::read_to_string(&path).unwrap_or_default();
                    let running_mark = path.with_extension("running");
                    // Marked running before it stops being pending: `squeue` must never see a
                    // job that is neither (it would read as ended before it ran).
                    std::fs::write(&running_mark, &script).expect("mark running");
                    std::fs::remove_file(&path).expect("leave the queue");
                    ran += 1;
                    running.push(std::thread::spawn(move || {
                        let _ = std::process::Command::new("sh")
                            .arg(script.trim())
                            .env_remove("EXHIBIT_STAGE_TOKEN")
                            .status();
                        let _ = std::fs::remove_file(&running_mark);
                    }));
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for job in running {
            let _ = job.join();
        }
        ran
    })
}

/// A stand-in harness (hand-written): logs its mode and what Slurm gave it, writes no JSON.
const HARNESS: &str = r#"#!/bin/sh
if [ "$1" = "--probe" ]; then echo "harness: no GPU (stand-in)" >&2; exit 4; fi
mode=unknown
while [ $# -gt 0 ]; do [ "$1" = "--mode" ] && mode="$2"; shift; done
echo "harness $mode ran in $(pwd)"
echo "$mode" >> "$(dirname "$0")/modes.log"
"#;

fn run_with(project: &Project, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        project.root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new(BIN)
        .args(args)
        .current_dir(&project.root)
        .env("PATH", path)
        .env("XDG_CACHE_HOME", project.root.join("cache"))
        .output()
        .expect("start the runner")
}

#[test]
fn gpu_units_run_as_slurm_jobs_and_alone_ones_exclusive() {
    let project = Project::new();
    for (name, script) in [
        ("sbatch", SBATCH),
        ("squeue", SQUEUE),
        ("sacct", SACCT),
        ("scancel", SCANCEL),
        ("harness", HARNESS),
    ] {
        project.tool(name, script);
    }
    let gpu = "needs: { gpu: true, tools: [harness] }";
    project.pipeline(
        &pipeline(&format!(
            "  check:\n    timeout: 30s\n    {gpu}\n    cases: [seed]\n  bench:\n    timeout: 30s\n    {gpu}\n    cases: [seed]\n"
        ))
        .replace(
            "    cuobjdump: bin/cuobjdump\n",
            "    cuobjdump: bin/cuobjdump\n    harness: bin/harness\n",
        ),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let queue = project.root.join("bin/queue");
    std::fs::create_dir_all(&queue).expect("the queue");
    let cluster = cluster(queue, Arc::clone(&stop));
    let out = run_with(&project, &["pipeline.yaml", "--slurm", "--partition=debug"]);
    stop.store(true, Ordering::SeqCst);
    let jobs = cluster.join().expect("the cluster");
    let err = stderr(&out);
    assert!(
        err.contains("gpu: on the Slurm compute nodes (--slurm)"),
        "{err}"
    );
    // Compile and SASS ran here; the check and the bench, GPU stages on a machine without a GPU,
    // ran as jobs.
    assert_eq!(jobs, 2, "{err}");
    let submitted = std::fs::read_to_string(project.root.join("bin/sbatch.log")).unwrap();
    let lines: Vec<&str> = submitted.lines().collect();
    assert_eq!(lines.len(), 2, "{submitted}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("--partition=debug") && l.contains("--time=1"))
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("--exclusive")).count(),
        1,
        "{submitted}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("--exclusive") && l.contains("exhibit-bench"))
    );
    let modes = std::fs::read_to_string(project.root.join("bin/modes.log")).unwrap();
    assert_eq!(modes.lines().count(), 2, "{modes}");
    // The job wrote the unit's stdout where a local run would, and its exit status.
    let manifest = project.manifest();
    let check = stage(&manifest, "check");
    assert_eq!(check["exit_code"], 0, "{check:#}");
    let run = project.runs().pop().expect("a run");
    let unit: &Path = Path::new(check["logs"][0]["path"].as_str().expect("a log"));
    let dir = run.join(unit.parent().expect("the unit dir"));
    assert_eq!(
        std::fs::read_to_string(dir.join("slurm-job.exit"))
            .unwrap()
            .trim(),
        "0"
    );
    assert!(code(&out) <= 3, "{err}");
}

/// A target pipeline whose check runs `bin/show` (which writes `$HOSTILE` to `bin/seen`) with
/// `env` as the program's environment.
fn env_project(env: &str) -> Project {
    let project = Project::new();
    for (name, script) in [
        ("sbatch", SBATCH),
        ("squeue", SQUEUE),
        ("sacct", SACCT),
        ("scancel", SCANCEL),
        (
            "show",
            "#!/bin/sh\n# Stand-in program (hand-written).\nprintf '%s' \"$HOSTILE\" > \"$(dirname \"$0\")/seen\"\n",
        ),
    ] {
        project.tool(name, script);
    }
    project.pipeline(&format!(
        r#"target:
  program:
    command: [bin/show]
    env:
{env}
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
matrix:
  arch: [sm_90]
  configs:
    plain: {{}}
grace: 1s
stages:
  check:
    timeout: 30s
    needs: {{ gpu: true, tools: [] }}
"#
    ));
    project
}

/// Runs the pipeline with `--slurm` and the test's cluster.
fn run_on_cluster(project: &Project) -> std::process::Output {
    let stop = Arc::new(AtomicBool::new(false));
    let queue = project.root.join("bin/queue");
    std::fs::create_dir_all(&queue).expect("the queue");
    let cluster = cluster(queue, Arc::clone(&stop));
    let out = run_with(project, &["pipeline.yaml", "--slurm", "--partition=debug"]);
    stop.store(true, Ordering::SeqCst);
    cluster.join().expect("the cluster");
    out
}

#[test]
fn a_hostile_environment_name_is_refused_before_any_job_script() {
    let project = env_project("      \"A;touch pwned;B\": v\n      HOSTILE: x");
    let out = run_on_cluster(&project);
    let err = stderr(&out);
    assert!(
        !project.root.join("pwned").exists(),
        "the name ran a command"
    );
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("pipeline.yaml:4:5: target.program.env: `A;touch pwned;B` is not an environment variable name"),
        "{err}"
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn a_hostile_environment_value_reaches_the_job_as_data() {
    let value = r#"it's "quoted" $(touch pwned-dollar) `touch pwned-tick`; touch pwned-semi
next line \ $HOME"#;
    let yaml = serde_json::to_string(value).expect("a JSON string is a YAML scalar");
    let project = env_project(&format!("      HOSTILE: {yaml}"));
    let out = run_on_cluster(&project);
    let err = stderr(&out);
    assert!(code(&out) <= 3, "{err}");
    let seen = std::fs::read_to_string(project.root.join("bin/seen")).expect("the job ran");
    assert_eq!(seen, value);
    for marker in ["pwned-dollar", "pwned-tick", "pwned-semi"] {
        assert!(!project.root.join(marker).exists(), "{marker}");
        assert!(!project.root.join("bin").join(marker).exists(), "{marker}");
    }
}

/// `exhibit bisect --slurm`: every step's GPU unit is a job of the cluster, as in a pipeline run.
#[test]
fn a_bisection_runs_its_gpu_units_as_slurm_jobs() {
    let (repo, planting) = crate::bisect::planted(8, 5, true);
    let tools = tempfile::tempdir().expect("a directory for the stand-ins");
    for (name, script) in [
        ("sbatch", SBATCH),
        ("squeue", SQUEUE),
        ("sacct", SACCT),
        ("scancel", SCANCEL),
    ] {
        use std::os::unix::fs::PermissionsExt;
        let path = tools.path().join(name);
        std::fs::write(&path, script).expect("a stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let queue = tools.path().join("queue");
    std::fs::create_dir_all(&queue).expect("the queue");
    let stop = Arc::new(AtomicBool::new(false));
    let cluster = cluster(queue, Arc::clone(&stop));
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let good = repo.commits[0].clone();
    let out = std::process::Command::new(BIN)
        .args(["bisect", &good, "HEAD", "--slurm", "--partition=debug"])
        .current_dir(&repo.root)
        .env("PATH", path)
        .env("XDG_CACHE_HOME", &repo.cache)
        .output()
        .expect("start the runner");
    stop.store(true, Ordering::SeqCst);
    let jobs = cluster.join().expect("the cluster");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    let answer = repo.kept();
    assert_eq!(
        answer["answer"]["first_bad"]["hash"],
        planting.as_str(),
        "{err}"
    );
    // One check job per pipeline run (BAD's whole run adds its bench), each submitted with the
    // run's sbatch options.
    let runs = answer["runs"].as_u64().expect("runs");
    let submitted = std::fs::read_to_string(tools.path().join("sbatch.log")).expect("sbatch.log");
    assert_eq!(submitted.lines().count(), jobs, "{submitted}");
    let checks = submitted
        .lines()
        .filter(|l| l.contains("exhibit-check"))
        .count();
    assert_eq!(checks as u64, runs, "{submitted}");
    assert!(
        submitted.lines().all(|l| l.contains("--partition=debug")),
        "{submitted}"
    );
}

/// An `sbatch` that queued its job and still exited 1 (a site's wrapper failing after the
/// submission): the job is cancelled at once, so nothing the run does not know of writes into
/// its unit later, and the stage says so.
#[test]
fn a_job_sbatch_queued_while_it_failed_is_cancelled() {
    let project = Project::new();
    for (name, script) in [
        // The job id printed, then a failing exit.
        ("sbatch", format!("{SBATCH}exit 1\n")),
        ("squeue", SQUEUE.to_string()),
        ("sacct", SACCT.to_string()),
        ("scancel", SCANCEL.to_string()),
        ("harness", HARNESS.to_string()),
    ] {
        project.tool(name, &script);
    }
    let gpu = "needs: { gpu: true, tools: [harness] }";
    project.pipeline(
        &pipeline(&format!(
            "  check:\n    timeout: 30s\n    {gpu}\n    cases: [seed]\n"
        ))
        .replace(
            "    cuobjdump: bin/cuobjdump\n",
            "    cuobjdump: bin/cuobjdump\n    harness: bin/harness\n",
        ),
    );
    let queue = project.root.join("bin/queue");
    std::fs::create_dir_all(&queue).expect("the queue");
    // No cluster runs the job: it stays queued unless cancelled.
    let out = run_with(&project, &["pipeline.yaml", "--slurm", "--partition=debug"]);
    assert!(!project.runs().is_empty(), "{}", stderr(&out));
    let manifest = project.manifest();
    let check = stage(&manifest, "check");
    assert!(
        check["reason"]
            .as_str()
            .is_some_and(|r| r.contains("which was cancelled")),
        "{check:#}"
    );
    let cancelled = std::fs::read_dir(&queue)
        .unwrap()
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "cancel"));
    assert!(cancelled, "the queued job was not cancelled");
}
