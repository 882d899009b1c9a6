//! The stress search of a target's program for the smallest failing launch count, and memcheck
//! at that count.

use std::path::Path;
use std::time::Duration;

use parsers::Format;
use report::{LaunchAttempt, LaunchSearch, Log, StageStatus};

use crate::execution::stages::{self, Paths, SANITIZER_ERROR_EXITCODE};
use crate::execution::target;
use crate::pipeline::config::{Pipeline, Stage, Target};
use crate::planning::plan::Unit;
use crate::process::exec::{self, Ending};
use crate::setup::preflight::Preflight;

use super::StepCx;

/// The stress search of a target's program: run it at the stage's `launches`; when it fails
/// there, at one launch and at counts spread over the range, then between the largest clean and
/// the smallest failing count, `width` counts at once ([`target::next_launch_counts`]); then
/// run memcheck at the failing count so the report can name the line.
pub struct Search<'a> {
    pub unit: &'a Unit,
    pub stage: &'a Stage,
    pub pipeline: &'a Pipeline,
    pub target: &'a Target,
    pub preflight: &'a Preflight,
    pub paths: &'a Paths,
    /// Launch counts probed at once: the GPU shares the unit holds.
    pub width: usize,
}

/// One run of the program at a launch count.
struct Probe {
    launches: u64,
    /// Its process's ending (noted in the unit's record once the round ended), or why it did
    /// not run.
    ended: Result<exec::Outcome, String>,
    /// Whether it passed, and its ending in words.
    passed: bool,
    ending: String,
    display: Vec<String>,
    failure_line: Option<String>,
    logs: Vec<Log>,
}

impl Search<'_> {
    /// The program at `n` launches, its `{out}` in a directory of its own (`launches-N/`), kept
    /// as `launches-N.json`.
    fn probe(&self, n: u64, dest: &Path, cwd: &Path, cx: StepCx<'_>) -> Probe {
        let own = format!("launches-{n}");
        let _ = std::fs::create_dir_all(dest.join(&own));
        let paths = Paths {
            unit_dir: self.paths.unit_dir.join(&own),
            build_dir: self.paths.build_dir.clone(),
        };
        let line = stages::program_line(
            self.unit,
            self.stage,
            self.pipeline,
            self.preflight,
            self.target,
            &paths,
            Some(n),
        );
        let stdout = format!("launches-{n}.stdout.log");
        let stderr = format!("launches-{n}.stderr.log");
        let mut probe = Probe {
            launches: n,
            ended: Err(String::new()),
            passed: false,
            ending: String::new(),
            display: line.display.clone(),
            failure_line: None,
            logs: Vec::new(),
        };
        let argv = match stages::resolve_program(self.preflight, &line.argv) {
            Ok(argv) => argv,
            Err(reason) => {
                let _ = std::fs::remove_dir(dest.join(&own));
                probe.ending.clone_from(&reason);
                probe.ended = Err(reason);
                return probe;
            }
        };
        let ended = cx
            .spawn(argv, cwd, &line.env, dest.join(&stdout), dest.join(&stderr))
            .map_err(|e| format!("failed to {e}"));
        let results = format!("launches-{n}.json");
        let had_results = std::fs::rename(
            dest.join(&own).join(stages::PROGRAM_OUT),
            dest.join(&results),
        )
        .is_ok();
        let _ = std::fs::remove_dir(dest.join(&own));
        let read =
            |name: &str| crate::evidence::rundir::read_lossy(&dest.join(name)).unwrap_or_default();
        for name in [&stdout, &stderr] {
            probe.logs.push(Log {
                path: cx.log_path(dest, name),
                format: None,
            });
        }
        if had_results {
            probe.logs.push(Log {
                path: cx.log_path(dest, &results),
                format: parsers::detect(&read(&results)),
            });
        }
        (probe.passed, probe.ending) = match &ended {
            Ok(o) => {
                let failed_checks = had_results && {
                    let text = read(&results);
                    parsers::detect(&text).is_some_and(|f| {
                        parsers::parse(f, &text)
                            .findings
                            .iter()
                            .any(|f| f.severity == parsers::Severity::Error)
                    })
                };
                match o.ending {
                    Ending::Exited(0) if !failed_checks => (true, "exit 0".to_string()),
                    Ending::Exited(0) => (false, "exit 0 with failed checks".to_string()),
                    Ending::Exited(code) => (false, format!("exit {code}")),
                    Ending::Signaled(sig) => (false, stages::signal_name(sig)),
                    Ending::TimedOut => (false, "timed out".to_string()),
                    Ending::Interrupted => (false, "interrupted".to_string()),
                    Ending::OutputRunaway => (false, crate::process::exec::runaway_words()),
                }
            }
            Err(why) => (false, why.clone()),
        };
        probe.ended = ended;
        if !probe.passed {
            probe.failure_line = target::failure_line(&read(&stderr), &read(&stdout));
        }
        probe
    }

    pub fn run(&self, record: &mut report::Stage, dest: &Path, cx: StepCx<'_>) {
        let limit = self.stage.launches.unwrap_or(1);
        let cwd = self
            .target
            .program
            .cwd
            .as_ref()
            .map_or_else(|| cx.root.to_path_buf(), |c| self.pipeline.resolve(c));
        let mut search = LaunchSearch {
            limit,
            clean_at: None,
            fails_at: None,
            failure: None,
            attempts: Vec::new(),
            memcheck: None,
        };
        let mut duration = Duration::ZERO;
        let mut last_command = Vec::new();
        loop {
            let counts =
                target::next_launch_counts(search.clean_at, search.fails_at, limit, self.width);
            if counts.is_empty() || cx.interrupt.is_set() {
                break;
            }
            // The counts of a round at once, each in its own directory (its own `{out}`).
            let cwd: &Path = &cwd;
            let probes: Vec<Probe> = std::thread::scope(|scope| {
                let running: Vec<_> = counts
                    .iter()
                    .map(|&n| scope.spawn(move || self.probe(n, dest, cwd, cx)))
                    .collect();
                running.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            let mut interrupted = false;
            for probe in probes {
                let n = probe.launches;
                record.logs.extend(probe.logs);
                match &probe.ended {
                    Err(reason) if search.attempts.is_empty() => {
                        record.status = StageStatus::Failed;
                        record.reason = Some(reason.clone());
                        record.command = probe.display;
                        return;
                    }
                    Err(_) => {}
                    Ok(ended) => {
                        duration += ended.duration;
                        interrupted |= ended.ending == Ending::Interrupted;
                        cx.note(record, ended);
                    }
                }
                let (passed, ending) = (probe.passed, probe.ending);
                last_command.clone_from(&probe.display);
                search.attempts.push(LaunchAttempt {
                    launches: n,
                    passed,
                    ending: ending.clone(),
                });
                if !passed && search.fails_at.is_none_or(|f| n < f) {
                    search.fails_at = Some(n);
                    search.failure = Some(match probe.failure_line {
                        Some(line) => format!("{ending}: {line}"),
                        None => ending,
                    });
                }
            }
            // The largest clean count below the smallest failing one.
            search.clean_at = search
                .attempts
                .iter()
                .filter(|a| a.passed && search.fails_at.is_none_or(|f| a.launches < f))
                .map(|a| a.launches)
                .max();
            if interrupted {
                break;
            }
        }
        record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        record.command = last_command;
        if cx.interrupt.is_set() {
            record.status = StageStatus::Interrupted;
            record.reason = Some("interrupted".into());
            record.launch_search = Some(search);
            return;
        }
        match search.fails_at {
            None => {
                record.status = StageStatus::Passed;
                record.reason = Some(format!("clean at {limit} launches"));
                if let Some(found) = self.memcheck_search(limit, record, dest, &cwd, cx) {
                    if let Some(fail) = found.fails_at {
                        record.status = StageStatus::Findings;
                        record.reason = Some(format!(
                            "the program's own runs are clean at every count up to {limit}, but \
                             memcheck {} and finds errors from {fail} launch{}",
                            match found.clean_at {
                                Some(c) => format!(
                                    "is clean at {c} launch{}",
                                    if c == 1 { "" } else { "es" }
                                ),
                                None => "is never clean".to_string(),
                            },
                            if fail == 1 { "" } else { "es" }
                        ));
                    }
                    search.memcheck = Some(found);
                }
            }
            Some(fail) => {
                record.status = StageStatus::Findings;
                record.reason = Some(match search.clean_at {
                    Some(clean) => format!(
                        "clean at {clean} launch{}, fails at {fail} ({})",
                        if clean == 1 { "" } else { "es" },
                        search.failure.as_deref().unwrap_or("failed")
                    ),
                    None => format!(
                        "fails at the first launch ({})",
                        search.failure.as_deref().unwrap_or("failed")
                    ),
                });
                let _ = self.memcheck_at(fail, record, dest, &cwd, cx);
            }
        }
        record.unit.launches = search.fails_at.or(search.clean_at);
        record.launch_search = Some(search);
    }

    /// A fault the program cannot see (its runs stay clean at every count): when the pipeline
    /// runs memcheck, memcheck at the limit; when that finds errors, the same search under
    /// memcheck, so the report can say from which launch on state that survives launches goes
    /// wrong. `None` when memcheck did not run.
    fn memcheck_search(
        &self,
        limit: u64,
        record: &mut report::Stage,
        dest: &Path,
        cwd: &Path,
        cx: StepCx<'_>,
    ) -> Option<report::MemcheckSearch> {
        let wanted = self
            .pipeline
            .stages
            .iter()
            .any(|s| s.enabled && s.kind == report::StageKind::Memcheck);
        if !wanted || self.preflight.toolchain.get("compute-sanitizer").is_none() {
            return None;
        }
        let mut found = report::MemcheckSearch {
            clean_at: None,
            fails_at: None,
            attempts: Vec::new(),
        };
        let mut next = Some(limit);
        while let Some(n) = next {
            if cx.interrupt.is_set() {
                break;
            }
            let errors = self.memcheck_at(n, record, dest, cwd, cx)?;
            found.attempts.push(LaunchAttempt {
                launches: n,
                passed: !errors,
                ending: if errors {
                    "memcheck errors".to_string()
                } else {
                    "memcheck clean".to_string()
                },
            });
            if errors {
                found.fails_at = Some(n);
            } else {
                found.clean_at = Some(n);
            }
            next = match (found.clean_at, found.fails_at) {
                // Clean at the limit: nothing to look for.
                (Some(_), None) => None,
                // Wrong at the limit: most faults show at the first launch already.
                (None, Some(fail)) if fail > 1 && found.attempts.len() == 1 => Some(1),
                (clean, Some(fail)) => {
                    let low = clean.unwrap_or(0);
                    (fail > low + 1).then(|| low + (fail - low) / 2)
                }
                (None, None) => None,
            };
        }
        Some(found)
    }

    /// compute-sanitizer's memcheck on the program at `launches`, so the report names the line;
    /// skipped (and said so) when compute-sanitizer is missing here. Whether memcheck found
    /// errors (its error exit code), or `None` when it did not run.
    fn memcheck_at(
        &self,
        launches: u64,
        record: &mut report::Stage,
        dest: &Path,
        cwd: &Path,
        cx: StepCx<'_>,
    ) -> Option<bool> {
        let Some(sanitizer) = self.preflight.toolchain.get("compute-sanitizer") else {
            let note = format!(
                "; memcheck at {launches} launches not run: {}",
                self.preflight
                    .missing("compute-sanitizer")
                    .unwrap_or_else(|| "compute-sanitizer not found".into())
            );
            record
                .reason
                .get_or_insert_with(String::new)
                .push_str(&note);
            return None;
        };
        let mut line = stages::program_line(
            self.unit,
            self.stage,
            self.pipeline,
            self.preflight,
            self.target,
            self.paths,
            Some(launches),
        );
        if self.target.program.is_python() {
            line.env
                .insert("PYTORCH_NO_CUDA_MEMORY_CACHING".into(), "1".into());
        }
        let program = stages::resolve_program(self.preflight, &line.argv).ok()?;
        let mut argv: Vec<std::ffi::OsString> = vec![sanitizer.path.clone().into_os_string()];
        for word in [
            "--tool",
            "memcheck",
            "--target-processes",
            "all",
            "--error-exitcode",
        ] {
            argv.push(word.into());
        }
        argv.push(SANITIZER_ERROR_EXITCODE.to_string().into());
        argv.extend(["--print-limit".into(), "100".into()]);
        argv.extend(program);
        let log = format!("memcheck-{launches}.log");
        let outcome = cx.run(
            record,
            argv,
            cwd,
            &line.env,
            dest.join(&log),
            dest.join(format!("memcheck-{launches}.stderr.log")),
        );
        let _ = std::fs::remove_file(dest.join(stages::PROGRAM_OUT));
        record.logs.push(Log {
            path: cx.log_path(dest, &log),
            format: Some(Format::ComputeSanitizer),
        });
        let code = outcome.ok().map(|o| o.ending);
        Some(code == Some(Ending::Exited(SANITIZER_ERROR_EXITCODE)))
    }
}
