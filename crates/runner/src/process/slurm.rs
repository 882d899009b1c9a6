//! GPU units as Slurm jobs: `exhibit pipeline.yaml --slurm "SBATCH OPTIONS"`.
//!
//! The runner stays on the login node: it plans, compiles, schedules and judges as always, but a
//! GPU unit's process runs as a batch job (`sbatch`), with the options given (partition, GPUs,
//! account, time) and `--exclusive` for the units that run alone (bench, baseline, profile). The
//! job's script runs the unit's argv in its working directory with its environment, writes
//! stdout and stderr where a local run would, and its exit status beside them: the run
//! directory must be on a file system the compute nodes share. The job is followed with
//! `squeue` until it leaves the queue; `sacct` says how a job that wrote no exit status ended
//! (time limit, cancelled, node failure). An interrupt or the stage's timeout cancels it
//! (`scancel`). Slurm places the jobs (and sets `CUDA_VISIBLE_DEVICES`); the runner only bounds
//! how many are in flight (`-j`). Another engine (Kubernetes Jobs) would be another
//! [`Launcher`]: submit a unit's command, follow it, read how it ended.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::process::exec::{self, Ending, ExecError, Outcome};
use crate::process::interrupt::Interrupt;
use crate::process::remote::quote;

/// Where GPU units run: here, or as jobs of a cluster.
#[derive(Debug, Clone, Default)]
pub enum Launcher {
    #[default]
    Local,
    /// Slurm, with these `sbatch` options for every GPU job.
    Slurm(Vec<String>),
}

impl Launcher {
    /// Runs a unit's command here, or on the cluster when `gpu` and the launcher is one.
    pub fn run(
        &self,
        command: &exec::Command,
        name: &str,
        gpu: Option<bool>,
        interrupt: &Interrupt,
    ) -> Result<Outcome, ExecError> {
        match (self, gpu) {
            (Launcher::Slurm(options), Some(alone)) => {
                slurm(command, name, options, alone, interrupt)
            }
            _ => exec::run(command, interrupt),
        }
    }
}

/// Submits `command` as a job and waits for it to leave the queue.
fn slurm(
    command: &exec::Command,
    name: &str,
    options: &[String],
    alone: bool,
    interrupt: &Interrupt,
) -> Result<Outcome, ExecError> {
    let started = Instant::now();
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let out = command.stdout.as_deref().map(absolute);
    let err = command.stderr.as_deref().map(absolute);
    // The job's files go beside the unit's stdout.
    let dir = out
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| absolute(&command.cwd), Path::to_path_buf);
    let script = dir.join("slurm-job.sh");
    let status = dir.join("slurm-job.exit");
    let _ = std::fs::remove_file(&status);
    // Every word is quoted: names and values are data, never shell text (`exhibit check`
    // refuses an environment name that is not a POSIX name besides).
    let mut text = format!(
        "#!/bin/sh\n# The job of {}, written by the runner.\ncd {} || exit 97\n",
        name.escape_default(),
        quote(&absolute(&command.cwd).to_string_lossy())
    );
    for (key, value) in &command.env {
        text.push_str(&format!(
            "export {}={}\n",
            quote(&key.to_string_lossy()),
            quote(&value.to_string_lossy())
        ));
    }
    let argv: Vec<String> = command
        .argv
        .iter()
        .map(|w| quote(&w.to_string_lossy()))
        .collect();
    let redirect = |p: &Option<std::path::PathBuf>| {
        p.as_deref()
            .map_or_else(|| "/dev/null".to_string(), |p| quote(&p.to_string_lossy()))
    };
    text.push_str(&format!(
        "{} > {} 2> {} < /dev/null\necho $? > {}\n",
        argv.join(" "),
        redirect(&out),
        redirect(&err),
        quote(&status.to_string_lossy())
    ));
    std::fs::write(&script, text).map_err(|source| ExecError::Output {
        path: script.clone(),
        source,
    })?;

    let minutes = command.timeout.as_secs().div_ceil(60).max(1);
    let mut submit: Vec<OsString> = vec![
        "sbatch".into(),
        "--parsable".into(),
        format!("--job-name=exhibit-{name}")
            .replace(' ', "-")
            .into(),
        format!("--output={}", dir.join("slurm-job.out").display()).into(),
        format!("--time={minutes}").into(),
    ];
    if alone {
        submit.push("--exclusive".into());
    }
    submit.extend(options.iter().map(OsString::from));
    submit.push(script.into_os_string());
    let spawn_error = |what: &str| ExecError::Spawn {
        program: "sbatch".into(),
        source: std::io::Error::other(what.to_string()),
    };
    let (code, stdout, stderr) = exec::probe(&submit, &dir, Duration::from_secs(120), interrupt)
        .map_err(|why| spawn_error(&why))?;
    let query = |argv: &[&str]| -> Result<(i32, String, String), String> {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        exec::probe(&argv, &dir, Duration::from_secs(60), &Interrupt::new())
    };
    let queued_id = stdout
        .trim()
        .split(';')
        .next()
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string);
    let said = stderr.lines().last().unwrap_or("no job id").to_string();
    let id = match (code, queued_id) {
        (0, Some(id)) => id,
        // It queued a job and said it failed: the job is cancelled, so that nothing the run
        // does not know of writes into its unit later.
        (_, Some(id)) => {
            let _ = query(&["scancel", &id]);
            return Err(spawn_error(&format!(
                "sbatch exited {code} though it queued job {id}, which was cancelled: {said}"
            )));
        }
        (_, None) => return Err(spawn_error(&format!("sbatch exited {code}: {said}"))),
    };

    // Until the job leaves the queue; cancelled at an interrupt or past the stage's timeout.
    let deadline = started + command.timeout + command.grace + Duration::from_secs(60);
    let stopped = follow(&id, deadline, interrupt, Waits::SLURM, query);
    let written = std::fs::read_to_string(&status)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    let ending = match (stopped, written) {
        (Some(ending), _) => ending,
        (None, Some(code)) => Ending::Exited(code),
        (None, None) => {
            // No status: the job was ended from outside; sacct says how.
            let state = query(&["sacct", "-n", "-P", "-X", "-o", "State", "-j", &id])
                .map(|(_, out, _)| out.trim().to_string())
                .unwrap_or_default();
            if state.starts_with("TIMEOUT") {
                Ending::TimedOut
            } else if state.starts_with("CANCELLED") {
                Ending::Interrupted
            } else {
                Ending::Signaled(9)
            }
        }
    };
    Ok(Outcome {
        ending,
        duration: started.elapsed(),
        raw_code: written,
        leftovers: Vec::new(),
        cut: crate::process::exec::cut_outputs(command),
    })
}

/// How often a job is asked after, and how long a cancelled one that stays in the queue is
/// waited for.
#[derive(Debug, Clone, Copy)]
struct Waits {
    poll: Duration,
    after_cancel: Duration,
}

impl Waits {
    /// A cancelled job leaves once Slurm's `KillWait` (30 s by default) has passed.
    const SLURM: Waits = Waits {
        poll: Duration::from_millis(500),
        after_cancel: Duration::from_secs(60),
    };
}

/// Follows job `id` with `query` (`squeue`, `scancel`) until it leaves the queue, cancelling it
/// at an interrupt or past `deadline`: how it was stopped, if it was. A failed `squeue` says
/// nothing of the job, so it is asked again (the deadline still cancels it); a cancelled job
/// that stays in the queue (stuck `COMPLETING`, or `squeue` failing) is waited for
/// `waits.after_cancel` at most.
fn follow(
    id: &str,
    deadline: Instant,
    interrupt: &Interrupt,
    waits: Waits,
    mut query: impl FnMut(&[&str]) -> Result<(i32, String, String), String>,
) -> Option<Ending> {
    let mut stopped = None;
    let mut cancelled_at: Option<Instant> = None;
    loop {
        let queued = match query(&["squeue", "-h", "-j", id, "-o", "%T"]) {
            Ok((0, out, _)) => !out.trim().is_empty(),
            _ => true,
        };
        if !queued {
            return stopped;
        }
        if stopped.is_none() && (interrupt.is_set() || Instant::now() >= deadline) {
            let _ = query(&["scancel", id]);
            stopped = Some(if interrupt.is_set() {
                Ending::Interrupted
            } else {
                Ending::TimedOut
            });
            cancelled_at = Some(Instant::now());
        }
        if cancelled_at.is_some_and(|t| t.elapsed() >= waits.after_cancel) {
            return stopped;
        }
        std::thread::sleep(waits.poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Waits = Waits {
        poll: Duration::from_millis(1),
        after_cancel: Duration::from_millis(50),
    };

    /// The commands a stand-in cluster was asked, in order.
    type Calls = std::rc::Rc<std::cell::RefCell<Vec<String>>>;
    /// What `follow` asks: an argv, answered with an exit code, stdout and stderr.
    type Answer = Result<(i32, String, String), String>;

    /// A stand-in for `squeue` and `scancel`: each `squeue` call's answer in turn (`None`: the
    /// call fails), the job gone once they run out; every call kept.
    fn cluster(answers: Vec<Option<&'static str>>) -> (Calls, impl FnMut(&[&str]) -> Answer) {
        let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = calls.clone();
        let mut answers = answers.into_iter();
        let query = move |argv: &[&str]| {
            seen.borrow_mut().push(argv[0].to_string());
            match (argv[0], answers.next()) {
                ("squeue", Some(None)) => Err("squeue: error: slurm_load_jobs: timeout".into()),
                ("squeue", Some(Some(state))) => Ok((0, format!("{state}\n"), String::new())),
                ("squeue", None) => Ok((0, String::new(), String::new())),
                _ => Ok((0, String::new(), String::new())),
            }
        };
        (calls, query)
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[test]
    fn a_failed_squeue_is_asked_again_never_read_as_the_job_leaving() {
        let (calls, query) = cluster(vec![Some("RUNNING"), None, None, Some("RUNNING")]);
        let stopped = follow("7", later(), &Interrupt::new(), QUICK, query);
        assert_eq!(stopped, None, "the job was never cancelled");
        let calls = calls.borrow();
        assert_eq!(
            calls.iter().filter(|c| *c == "squeue").count(),
            5,
            "{calls:?}"
        );
        assert!(!calls.iter().any(|c| c == "scancel"), "{calls:?}");
    }

    #[test]
    fn a_cancelled_job_stuck_completing_is_waited_for_a_bounded_time() {
        // Past its deadline at once, and in the queue for 100,000 answers: far longer than
        // the wait after the cancel.
        let (calls, query) = cluster(vec![Some("COMPLETING"); 100_000]);
        let stopped = follow("7", Instant::now(), &Interrupt::new(), QUICK, query);
        assert_eq!(stopped, Some(Ending::TimedOut));
        let calls = calls.borrow();
        assert_eq!(calls.iter().filter(|c| *c == "scancel").count(), 1);
        assert!(
            calls.len() < 100_000,
            "followed until the job left on its own"
        );
    }

    #[test]
    fn an_interrupt_cancels_the_job_once() {
        let interrupt = Interrupt::new();
        interrupt.record(signal_hook::consts::SIGINT);
        let (calls, query) = cluster(vec![Some("RUNNING"), Some("RUNNING"), Some("COMPLETING")]);
        let stopped = follow("7", later(), &interrupt, QUICK, query);
        assert_eq!(stopped, Some(Ending::Interrupted));
        assert_eq!(calls.borrow().iter().filter(|c| *c == "scancel").count(), 1);
    }
}
