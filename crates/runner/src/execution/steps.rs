//! Units of a target that run several processes: the SASS inventory of every build product,
//! and the stress search for the smallest failing launch count.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parsers::Format;
use report::{LaunchAttempt, LaunchSearch, Log, StageStatus};

use crate::evidence::rundir::slash;
use crate::execution::stages::{self, Invocation, Paths, SANITIZER_ERROR_EXITCODE};
use crate::execution::target;
use crate::pipeline::config::{ExitCodes, Pipeline, Stage, Target};
use crate::planning::plan::Unit;
use crate::process::exec::{self, Ending};
use crate::process::interrupt::Interrupt;
use crate::setup::preflight::Preflight;

/// What every step of a unit shares.
#[derive(Clone, Copy)]
pub struct StepCx<'a> {
    pub root: &'a Path,
    /// `artifacts/<run-id>`, relative to the root.
    pub run_dir: &'a Path,
    pub timeout: Duration,
    pub grace: Duration,
    pub interrupt: &'a Interrupt,
    /// The unit's GPU (`CUDA_VISIBLE_DEVICES`), when the run spreads over GPUs.
    pub device: Option<&'a str>,
}

impl StepCx<'_> {
    /// Runs one step; what it left running is added to the unit's leftovers, and the logs cut
    /// at the output limit to its `cut`.
    pub(crate) fn run(
        &self,
        record: &mut report::Stage,
        argv: Vec<std::ffi::OsString>,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        stdout: PathBuf,
        stderr: PathBuf,
    ) -> Result<exec::Outcome, exec::ExecError> {
        let outcome = self.spawn(argv, cwd, env, stdout, stderr)?;
        self.note(record, &outcome);
        Ok(outcome)
    }

    /// Runs one step of several running at once: the caller notes its outcome in the unit's
    /// record ([`StepCx::note`]) once they all ended.
    pub(crate) fn spawn(
        &self,
        argv: Vec<std::ffi::OsString>,
        cwd: &Path,
        env: &std::collections::BTreeMap<String, String>,
        stdout: PathBuf,
        stderr: PathBuf,
    ) -> Result<exec::Outcome, exec::ExecError> {
        let mut command = exec::Command::new(argv, cwd, self.timeout);
        command.grace = self.grace;
        command.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        command
            .env
            .extend(crate::process::exec::device_env(self.device));
        command.stdout = Some(stdout);
        command.stderr = Some(stderr);
        exec::run(&command, self.interrupt)
    }

    /// Records what a step left ([`note_outcome`]) in the unit's record.
    pub(crate) fn note(&self, record: &mut report::Stage, outcome: &exec::Outcome) {
        note_outcome(record, &self.root.join(self.run_dir), outcome);
    }

    /// The records of the logs a step left in `dest` (their names and formats).
    pub(crate) fn logs(&self, dest: &Path, present: &[(String, Option<Format>)]) -> Vec<Log> {
        present
            .iter()
            .map(|(name, format)| Log {
                path: self.log_path(dest, name),
                format: *format,
            })
            .collect()
    }

    pub(crate) fn log_path(&self, dest: &Path, name: &str) -> String {
        let unit_dir = dest
            .strip_prefix(self.root.join(self.run_dir))
            .unwrap_or(dest);
        slash(&unit_dir.join(name))
    }
}

/// Records in a unit's stage what one of its processes left: the processes still running when
/// it ended (its leftovers) and the logs cut at the output limit, by path relative to
/// `run_dir`.
pub fn note_outcome(record: &mut report::Stage, run_dir: &Path, outcome: &exec::Outcome) {
    record.leftovers.extend(outcome.leftovers.iter().cloned());
    for (path, size) in &outcome.cut {
        let path = path.strip_prefix(run_dir).unwrap_or(path);
        record.cut.insert(slash(path), *size);
    }
}

/// The line table of a product's device code, for the call sites a `-G` build keeps: its
/// cubins extracted (`cuobjdump -xelf all`, in a scratch directory removed after) and each
/// disassembled with `nvdisasm -gi -c` (lines, with one level of inlining each) into `lines`
/// under `dest`. Returns how many cubins.
fn line_table(
    record: &mut report::Stage,
    invocation: &Invocation,
    product: &Path,
    nvdisasm: &Path,
    dest: &Path,
    lines: &str,
    cx: &StepCx<'_>,
) -> Result<usize, String> {
    // Absolute: the tools run inside it and are handed paths from it.
    let scratch = dest.join(format!(".{lines}.cubins"));
    let scratch = std::path::absolute(&scratch).unwrap_or(scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("create a scratch directory: {e}"))?;
    let cuobjdump = invocation.argv.first().cloned().unwrap_or_default();
    let product = std::path::absolute(product).unwrap_or_else(|_| product.to_path_buf());
    let extract = vec![
        cuobjdump,
        "-xelf".into(),
        "all".into(),
        product.clone().into_os_string(),
    ];
    let is_cubin = product.extension().is_some_and(|x| x == "cubin");
    let result = (|| {
        if is_cubin {
            // A cubin (a JIT cache's) is disassembled as it is.
            std::fs::copy(&product, scratch.join("product.cubin")).map_err(|e| e.to_string())?;
        } else {
            cx.run(
                record,
                extract,
                &scratch,
                &invocation.env,
                scratch.join("xelf.log"),
                scratch.join("xelf.err"),
            )
            .map_err(|e| format!("cuobjdump -xelf failed to {e}"))?;
        }
        let mut cubins: Vec<PathBuf> = std::fs::read_dir(&scratch)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "cubin"))
            .collect();
        cubins.sort();
        let mut table = Vec::new();
        for cubin in &cubins {
            let out = scratch.join("nvdisasm.out");
            cx.run(
                record,
                vec![
                    nvdisasm.as_os_str().to_owned(),
                    "-gi".into(),
                    "-c".into(),
                    cubin.clone().into_os_string(),
                ],
                &scratch,
                &invocation.env,
                out.clone(),
                scratch.join("nvdisasm.err"),
            )
            .map_err(|e| format!("nvdisasm failed to {e}"))?;
            let text = std::fs::read(&out).unwrap_or_default();
            if text.is_empty() {
                // Say what the disassembler said instead.
                let said =
                    std::fs::read_to_string(scratch.join("nvdisasm.err")).unwrap_or_default();
                let said = said
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("nothing");
                return Err(format!("nvdisasm printed no listing; it said: {said}"));
            }
            table.extend(text);
        }
        if cubins.is_empty() {
            return Err("cuobjdump extracted no cubin".to_string());
        }
        std::fs::write(dest.join(lines), &table).map_err(|e| e.to_string())?;
        Ok(cubins.len())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The source page of the kernels without line information, SASS only.
const SASS_PAGE: &str = "source.sass.csv";

/// `cuobjdump -sass` on every product of a target's build (executables, shared libraries,
/// objects, cubins, JIT caches), one log per product that holds device code, listed in
/// `products.log`. No product with device code makes the unit inconclusive.
pub fn sass(
    record: &mut report::Stage,
    invocation: &Invocation,
    dirs: &[PathBuf],
    dest: &Path,
    nvdisasm: Option<&Path>,
    cx: StepCx<'_>,
) {
    let products = target::products(dirs);
    let run_dir = cx.root.join(cx.run_dir);
    let run_dir = std::path::absolute(&run_dir).unwrap_or(run_dir);
    let mut listing = String::new();
    let mut with_code = 0usize;
    // The first words of a listing with no function in it, for saying what the tool printed.
    let mut silent: Option<String> = None;
    let mut duration = Duration::ZERO;
    for (product, _) in &products {
        if cx.interrupt.is_set() {
            record.status = StageStatus::Interrupted;
            record.reason = Some("interrupted".into());
            break;
        }
        let base = dirs
            .iter()
            .find(|d| product.starts_with(d))
            .map_or(cx.root, PathBuf::as_path);
        let name = target::product_log_name(product, base);
        let mut argv = invocation.argv.clone();
        argv.push(product.clone().into_os_string());
        let shown = product
            .strip_prefix(&run_dir)
            .map_or_else(|_| slash(product), |p| format!("<run>/{}", slash(p)));
        let outcome = cx.run(
            record,
            argv,
            cx.root,
            &invocation.env,
            dest.join(&name),
            dest.join("stderr.log"),
        );
        let text = crate::evidence::rundir::read_lossy(&dest.join(&name)).unwrap_or_default();
        let kernels = text.matches("Function : ").count();
        match outcome {
            Ok(o) => duration += o.duration,
            Err(e) => {
                listing.push_str(&format!("{shown}: failed to {e}\n"));
                continue;
            }
        }
        if kernels == 0 {
            if silent.is_none() {
                silent = text
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(|l| l.chars().take(120).collect::<String>());
            }
            let _ = std::fs::remove_file(dest.join(&name));
            listing.push_str(&format!("{shown}: no device code\n"));
            continue;
        }
        with_code += 1;
        listing.push_str(&format!("{shown}: {kernels} kernels -> {name}\n"));
        record.logs.push(Log {
            path: cx.log_path(dest, &name),
            format: Some(Format::Sass),
        });
        if let Some(nvdisasm) = nvdisasm {
            let lines = format!("{name}.lines");
            match line_table(record, invocation, product, nvdisasm, dest, &lines, &cx) {
                Ok(cubins) => {
                    listing.push_str(&format!(
                        "{shown}: line table of {cubins} cubins -> {lines}\n"
                    ));
                    record.logs.push(Log {
                        path: cx.log_path(dest, &lines),
                        format: Some(Format::SassLines),
                    });
                }
                Err(why) => listing.push_str(&format!("{shown}: no line table: {why}\n")),
            }
        }
    }
    let _ = std::fs::write(dest.join(&invocation.stdout), &listing);
    record.logs.push(Log {
        path: cx.log_path(dest, &invocation.stdout),
        format: None,
    });
    record.duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if record.status == StageStatus::Interrupted {
        return;
    }
    if with_code == 0 {
        record.status = StageStatus::Inconclusive;
        let n = products.len();
        let files = if n == 1 { "file" } else { "files" };
        record.reason = Some(match &silent {
            Some(first) => format!(
                "{} printed no SASS function (no `Function :` section) for {n} {files}: nothing \
                 to inspect; its output begins `{first}`",
                invocation.tool
            ),
            None => format!("no build product holds device code ({n} {files} looked at)"),
        });
        return;
    }
    let parsed: Vec<parsers::ParsedLog> = record
        .logs
        .iter()
        .filter(|l| l.format == Some(Format::Sass))
        .filter_map(|l| {
            crate::evidence::rundir::read_lossy(&cx.root.join(cx.run_dir).join(&l.path)).ok()
        })
        .map(|text| parsers::parse(Format::Sass, &text))
        .collect();
    let traps: u64 = parsed
        .iter()
        .flat_map(|p| &p.kernels)
        .filter_map(|k| k.sass.as_ref())
        .map(|s| s.bpt_trap)
        .sum();
    record.status = StageStatus::Passed;
    record.reason = Some(format!(
        "{with_code} of {} products hold device code{}",
        products.len(),
        if traps > 0 {
            format!("; {traps} BPT.TRAP")
        } else {
            String::new()
        }
    ));
}

/// A profile unit (a target's or the built-in kernel's), once ncu ran the program (`profiled`: how that ended, run by the
/// orchestrator's launcher, here or as a cluster job) and wrote its report into the unit
/// directory (kept for the Nsight Compute GUI): its details page and its source page are
/// exported from the report as CSV (`ncu.csv`, `source.csv`). The unit's status is decided
/// from the profiling run's ending and all three logs; its reason says what the profiling cost.
pub fn profile(
    record: &mut report::Stage,
    invocation: &Invocation,
    dest: &Path,
    profiled: Result<exec::Outcome, String>,
    exits: &ExitCodes,
    cx: StepCx<'_>,
) {
    let outcome = match profiled {
        Ok(o) => o,
        Err(e) => {
            record.status = StageStatus::Failed;
            record.reason = Some(format!("failed to {e}"));
            return;
        }
    };
    note_outcome(record, &cx.root.join(cx.run_dir), &outcome);
    record.duration_ms = u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX);
    if let Ending::Exited(code) = outcome.ending {
        record.exit_code = Some(code);
    }
    let report = dest.join(format!("{}.ncu-rep", stages::PROFILE_REPORT));
    // Absolute: the exports run in the pipeline's directory, not the runner's.
    let report = std::path::absolute(&report).unwrap_or(report);
    if let Some(ncu) = invocation.argv.first()
        && report.is_file()
    {
        for (page, out, extra) in [
            ("details", "ncu.csv", &[][..]),
            ("source", "source.csv", &["--print-source", "cuda,sass"][..]),
        ] {
            let mut argv: Vec<std::ffi::OsString> = vec![ncu.clone(), "--import".into()];
            argv.push(report.clone().into_os_string());
            argv.extend(["--csv", "--page", page].map(Into::into));
            argv.extend(extra.iter().map(Into::into));
            let _ = cx.run(
                record,
                argv,
                cx.root,
                &invocation.env,
                dest.join(out),
                dest.join(format!("{page}.stderr.log")),
            );
        }
        // A kernel built without line information (a framework's, a library's) has no CUDA
        // source page: ncu only warns. Its SASS page alone still gives its instruction mix.
        let source =
            crate::evidence::rundir::read_lossy(&dest.join("source.csv")).unwrap_or_default();
        if source.contains("No lineinfo available") {
            let mut argv: Vec<std::ffi::OsString> = vec![ncu.clone(), "--import".into()];
            argv.push(report.clone().into_os_string());
            argv.extend(["--csv", "--page", "source", "--print-source", "sass"].map(Into::into));
            let _ = cx.run(
                record,
                argv,
                cx.root,
                &invocation.env,
                dest.join(SASS_PAGE),
                dest.join("source.stderr.log"),
            );
        }
    }
    let gathered = stages::gather(dest, invocation);
    let (status, reason) = stages::decide(
        report::StageKind::Profile,
        &invocation.tool,
        cx.timeout,
        outcome.ending,
        &gathered,
        exits,
    );
    let cost = format!("profiling took {:.1} s", outcome.duration.as_secs_f64());
    record.status = status;
    record.reason = Some(match reason {
        Some(r) => format!("{r}; {cost}"),
        None => cost,
    });
    record.logs = cx.logs(dest, &gathered.present);
    if dest.join(SASS_PAGE).is_file() {
        record.logs.push(Log {
            path: cx.log_path(dest, SASS_PAGE),
            format: Some(Format::NcuSource),
        });
    }
    if report.is_file() {
        record.logs.push(Log {
            path: cx.log_path(dest, &format!("{}.ncu-rep", stages::PROFILE_REPORT)),
            format: None,
        });
    }
}

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
