//! `split: tests`: a compute-sanitizer stage that runs each test of its program alone under its
//! tool, so that an error is the test's that triggered it (as PyTorch's own
//! `run_cuda_memcheck.py` does). A pytest program's tests are listed with `--collect-only` and
//! each runs with its node id added; a GoogleTest binary's with `--gtest_list_tests`, each run
//! with `--gtest_filter=ID`. They run one after another; each run is judged as a unit would be
//! (`stages::decide`), and the stage takes the worst.

use std::ffi::OsString;
use std::path::Path;

use parsers::Format;
use report::{Log, StageKind, StageStatus, TestRun};

use crate::execution::stages::{self, Invocation, PROGRAM_OUT};
use crate::execution::steps::StepCx;
use crate::pipeline::config::{self, ExitCodes};

/// How a program's tests are listed and picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// `--collect-only --verbosity=-1` lists node ids; a run takes one as its last word (the
    /// verbosity set, not lowered: a program's own `-q` and another would print counts per
    /// file).
    Pytest,
    /// `--gtest_list_tests` lists suites and tests; a run takes `--gtest_filter=Suite.Test`.
    GoogleTest,
}

impl Framework {
    /// The framework of a program's argv (as written in pipeline.yaml): pytest's, else a
    /// GoogleTest binary's.
    pub fn of(argv: &[String]) -> Framework {
        if config::is_pytest(argv) {
            Framework::Pytest
        } else {
            Framework::GoogleTest
        }
    }

    fn list_words(self) -> &'static [&'static str] {
        match self {
            Framework::Pytest => &["--collect-only", "--verbosity=-1"],
            Framework::GoogleTest => &["--gtest_list_tests"],
        }
    }

    fn ids(self, listing: &str) -> Vec<String> {
        match self {
            Framework::Pytest => test_ids(listing),
            Framework::GoogleTest => gtest_ids(listing),
        }
    }
}

/// One split stage's run.
pub struct Split<'a> {
    pub kind: StageKind,
    pub framework: Framework,
    /// The unit's invocation: the tool, its options and the program.
    pub invocation: &'a Invocation,
    /// The program's argv alone, as run (its first word resolved).
    pub program: &'a [OsString],
    pub cwd: &'a Path,
    pub exits: &'a ExitCodes,
    /// The program's words and environment when its unit directory (`{out}`'s) is the given
    /// one, relative to the pipeline root: each test writes its own results.
    pub program_in: &'a (dyn Fn(&Path) -> Result<ProgramIn, String> + Sync),
    /// Tests at once: the shares of the GPU the unit holds (`--gpu-jobs`).
    pub width: usize,
}

/// A test's program: its words (the first resolved) and its environment.
pub struct ProgramIn {
    pub argv: Vec<OsString>,
    pub env: std::collections::BTreeMap<String, String>,
}

/// One test's run, as its unit records it.
struct One {
    run: TestRun,
    logs: Vec<Log>,
    errors: u64,
    /// Its process's ending, noted in the unit's record once every test ended; none when it
    /// could not start.
    ended: Option<crate::process::exec::Outcome>,
}

impl Split<'_> {
    /// Test `k` under the tool: the tool and its options, the program in the test's own
    /// directory (`test-K/`, so that its `{out}` is its own) without the paths the id already
    /// names (`tests`, `tests/test_x.py`), then the id.
    fn one(&self, k: usize, id: &str, tool: &str, dest: &Path, cx: StepCx<'_>) -> One {
        let inv = self.invocation;
        let log = format!("{tool}-{k}.log");
        let err = format!("stderr-{k}.log");
        let out = format!("results-{k}.json");
        let own = format!("test-{k}");
        let _ = std::fs::create_dir_all(dest.join(&own));
        let relative = cx.root.join(cx.run_dir);
        let unit_dir = dest.strip_prefix(&relative).unwrap_or(dest);
        let program = (self.program_in)(&cx.run_dir.join(unit_dir).join(&own));
        let ended = match program {
            Err(why) => {
                let _ = std::fs::write(dest.join(&err), format!("{why}\n"));
                None
            }
            Ok(program) => {
                let tool_words = inv.argv.len().saturating_sub(self.program.len());
                let mut argv: Vec<OsString> = inv.argv.iter().take(tool_words).cloned().collect();
                argv.extend(program.argv.iter().enumerate().filter_map(|(i, w)| {
                    let word = w.to_string_lossy();
                    let covered = self.framework == Framework::Pytest
                        && i > 0
                        && !word.starts_with('-')
                        && !word.is_empty()
                        && id.starts_with(word.trim_end_matches('/'));
                    (!covered).then(|| w.clone())
                }));
                argv.push(match self.framework {
                    Framework::Pytest => id.into(),
                    Framework::GoogleTest => format!("--gtest_filter={id}").into(),
                });
                let mut env = inv.env.clone();
                env.extend(program.env);
                cx.spawn(argv, self.cwd, &env, dest.join(&log), dest.join(&err))
                    .ok()
            }
        };
        let _ = std::fs::rename(dest.join(&own).join(PROGRAM_OUT), dest.join(&out));
        let _ = std::fs::remove_dir(dest.join(&own));
        let one = Invocation {
            stdout: log.clone(),
            stderr: err.clone(),
            logs: vec![
                (log.clone(), Some(Format::ComputeSanitizer)),
                (err.clone(), None),
            ],
            detect: vec![out],
            ..inv.clone()
        };
        let gathered = stages::gather(dest, &one);
        let status = match &ended {
            Some(o) => {
                stages::decide(
                    self.kind, &inv.tool, cx.timeout, o.ending, &gathered, self.exits,
                )
                .0
            }
            None => StageStatus::Failed,
        };
        let logs = cx.logs(dest, &gathered.present);
        let errors: u64 = gathered
            .parsed
            .iter()
            .filter(|(_, p)| p.format == Format::ComputeSanitizer)
            .filter_map(|(_, p)| p.reported_errors)
            .sum();
        One {
            run: TestRun {
                id: id.to_string(),
                log: cx.log_path(dest, &log),
                status,
            },
            logs,
            errors,
            ended,
        }
    }

    pub fn run(&self, record: &mut report::Stage, dest: &Path, cx: StepCx<'_>) {
        let inv = self.invocation;
        let mut argv = self.program.to_vec();
        argv.extend(self.framework.list_words().iter().map(OsString::from));
        let collected = cx.run(
            record,
            argv,
            self.cwd,
            &inv.env,
            dest.join("collect.log"),
            dest.join("collect.stderr.log"),
        );
        for name in ["collect.log", "collect.stderr.log"] {
            record.logs.push(Log {
                path: cx.log_path(dest, name),
                format: None,
            });
        }
        let _ = std::fs::remove_file(dest.join(PROGRAM_OUT));
        let listing =
            crate::evidence::rundir::read_lossy(&dest.join("collect.log")).unwrap_or_default();
        let ids = self.framework.ids(&listing);
        let mut display = inv.display.clone();
        display.push("<each test>".into());
        record.command = display;
        if ids.is_empty() {
            let why = match collected {
                Err(e) => format!("failed to {e}"),
                Ok(_) => crate::execution::target::failure_line(&listing, "")
                    .unwrap_or_else(|| "it printed no test id".into()),
            };
            record.status = StageStatus::Failed;
            record.reason = Some(format!(
                "the program's tests could not be listed (`{}`): {why}",
                self.framework.list_words().join(" ")
            ));
            return;
        }
        let tool = config::kind_name(self.kind);
        // Each test in its own process, `width` at once; recorded in the order listed.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let ended: std::sync::Mutex<Vec<Option<One>>> =
            std::sync::Mutex::new((0..ids.len()).map(|_| None).collect());
        let width = self.width.clamp(1, ids.len());
        std::thread::scope(|scope| {
            for _ in 0..width {
                scope.spawn(|| {
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(id) = ids.get(k) else { break };
                        if cx.interrupt.is_set() {
                            break;
                        }
                        let one = self.one(k, id, tool, dest, cx);
                        let mut ended = ended.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(slot) = ended.get_mut(k) {
                            *slot = Some(one);
                        }
                    }
                });
            }
        });
        if cx.interrupt.is_set() {
            record.status = StageStatus::Interrupted;
            record.reason = Some("interrupted".into());
            return;
        }
        let mut duration = std::time::Duration::ZERO;
        // The tests whose run the tool reported errors in.
        let mut with_errors: Vec<String> = Vec::new();
        let ended = ended.into_inner().unwrap_or_else(|e| e.into_inner());
        for one in ended.into_iter().flatten() {
            if let Some(ended) = &one.ended {
                duration += ended.duration;
                cx.note(record, ended);
            }
            record.logs.extend(one.logs);
            if one.errors > 0 {
                with_errors.push(one.run.id.clone());
            }
            record.split.push(one.run);
        }
        record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let worst = record
            .split
            .iter()
            .map(|t| t.status)
            .max_by_key(|s| severity(*s))
            .unwrap_or(StageStatus::Passed);
        let with = |status: StageStatus| -> Vec<&str> {
            record
                .split
                .iter()
                .filter(|t| t.status == status)
                .map(|t| t.id.as_str())
                .collect()
        };
        let n = record.split.len();
        let list = |ids: &[&str]| {
            let mut shown = ids.iter().take(5).copied().collect::<Vec<_>>().join(", ");
            if ids.len() > 5 {
                shown.push_str(&format!(" and {} more", ids.len() - 5));
            }
            shown
        };
        let mut parts = Vec::new();
        if !with_errors.is_empty() {
            let ids: Vec<&str> = with_errors.iter().map(String::as_str).collect();
            parts.push(format!(
                "{tool} found errors in {} of {n} tests, each run in a process of its own: {}",
                ids.len(),
                list(&ids)
            ));
        }
        // The other tests that did not pass: the program failed, the tool broke or hung.
        for status in [
            StageStatus::Findings,
            StageStatus::Failed,
            StageStatus::TimedOut,
            StageStatus::Inconclusive,
        ] {
            let ids: Vec<&str> = with(status)
                .into_iter()
                .filter(|id| !with_errors.iter().any(|e| e == id))
                .collect();
            if ids.is_empty() {
                continue;
            }
            let what = match status {
                StageStatus::Findings => format!("failed without a {tool} error"),
                other => crate::process::progress::status_word(other).replace('_', " "),
            };
            parts.push(format!("{} {what}: {}", plural(ids.len()), list(&ids)));
        }
        let reason = if parts.is_empty() {
            format!("{n} tests, each in a process of its own: {tool} found nothing")
        } else {
            parts.join("; ")
        };
        record.status = worst;
        record.reason = Some(reason);
    }
}

/// `1 test`, `3 tests`.
fn plural(n: usize) -> String {
    format!("{n} test{}", if n == 1 { "" } else { "s" })
}

/// How bad a test's status is, for the stage's: findings first.
fn severity(status: StageStatus) -> u8 {
    match status {
        StageStatus::Findings => 6,
        StageStatus::Failed => 5,
        StageStatus::TimedOut => 4,
        StageStatus::Interrupted => 3,
        StageStatus::Inconclusive => 2,
        StageStatus::Passed => 1,
        StageStatus::Skipped => 0,
    }
}

/// The node ids `pytest --collect-only --verbosity=-1` printed: one per line,
/// `path::name[params]`, before its summary.
fn test_ids(listing: &str) -> Vec<String> {
    listing
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.starts_with(' ') && l.contains("::") && !l.starts_with("ERROR"))
        .map(str::to_string)
        .collect()
}

/// The tests `--gtest_list_tests` printed: a suite per unindented line ending in `.`, its tests
/// indented under it, a parameter's value after `#`.
fn gtest_ids(listing: &str) -> Vec<String> {
    let mut suite: Option<&str> = None;
    let mut ids = Vec::new();
    for line in listing.lines() {
        let text = line.split('#').next().unwrap_or("").trim_end();
        if text.is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            suite = text.strip_suffix('.');
        } else if let Some(suite) = suite {
            ids.push(format!("{suite}.{}", text.trim()));
        }
    }
    ids
}
