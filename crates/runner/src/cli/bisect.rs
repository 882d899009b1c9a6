//! `exhibit bisect`: the search over a history, each step run here or on another machine.

use super::*;

/// `exhibit bisect GOOD BAD [PIPELINE]`.
pub(super) fn bisect(args: BisectArgs, host: Host) -> Result<Outcome, Error> {
    if args.summary && args.format != BisectFormat::Md {
        return Err(Error::Usage(
            "--summary is a Markdown form: drop --format or give --format md".into(),
        ));
    }
    let interrupt = signals()?;
    args.options.color.apply();
    let terminal = Terminal::new().quiet(args.options.quiet);
    let say = |line: &str| say!("{}", report::text::strip_controls(line));
    let request = crate::bisect::Request {
        good: args.good.clone(),
        bad: args.bad.clone(),
        pipeline: args.pipeline.clone(),
        cause: args.cause.map(usize::from),
        slower: args.slower.clone(),
        selection: Selection {
            stages: args.options.only.clone(),
            configs: args.options.configs.clone(),
        },
    };
    let here = Here {
        options: &args.options,
        harness: host.harness,
        terminal: &terminal,
        interrupt: interrupt.clone(),
    };
    let remote;
    let launch: &dyn crate::bisect::Launch = match &args.options.host {
        Some(name) => {
            remote = Remote {
                host: name.clone(),
                base: remote::base(args.options.remote_dir.as_deref())?,
                options: &args.options,
                interrupt: interrupt.clone(),
            };
            &remote
        }
        None => &here,
    };
    let finished = match crate::bisect::bisect(&request, launch, &interrupt, &say) {
        Ok(finished) => finished,
        // Interrupted before its first step: nothing ran, nothing is left.
        Err(crate::bisect::BisectError::Interrupted(_)) => {
            return Ok(Outcome::Interrupted(
                interrupt.first().unwrap_or(signal_hook::consts::SIGINT),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let b = &finished.bisection;
    let here = std::env::current_dir().unwrap_or_default();
    say!(
        "bisect: {} pipeline run{}; kept in {}",
        b.runs,
        plural(b.runs),
        finished
            .dir
            .strip_prefix(&here)
            .unwrap_or(&finished.dir)
            .display()
    );
    print(&terminated(report::render_bisect(
        b,
        ReportFormat::from(args.format).into(),
        args.summary,
    )))?;
    Ok(if finished.interrupted {
        Outcome::Interrupted(interrupt.first().unwrap_or(signal_hook::consts::SIGINT))
    } else if b.answered() {
        Outcome::Clean
    } else {
        Outcome::Incomplete
    })
}

/// A bisection's runs, here (or under `--slurm`).
struct Here<'a> {
    options: &'a RunOptions,
    harness: BuiltinHarness,
    terminal: &'a Terminal,
    interrupt: Interrupt,
}

impl crate::bisect::Launch for Here<'_> {
    fn launch(
        &self,
        path: &Path,
        selection: &Selection,
        force: bool,
    ) -> Result<crate::bisect::Launched, String> {
        let pipeline =
            Pipeline::load(path).map_err(|e| format!("the pipeline does not load: {e}"))?;
        prepare(&pipeline);
        let cx = Context {
            env: Env {
                reuse_facts: !force,
                stages: selection.stages.clone(),
                ..Env::from_process()
            },
            harness: self.harness.clone(),
            progress: self.terminal,
            interrupt: self.interrupt.clone(),
        };
        let options = run_options(self.options, selection.clone(), force || self.options.force)
            .map_err(|e| e.to_string())?;
        let finished = orchestrate::run(&pipeline, &options, &cx).map_err(|e| e.to_string())?;
        Ok(crate::bisect::Launched {
            dir: pipeline.root.join(&finished.dir),
            interrupted: finished.verdict == Verdict::Interrupted,
        })
    }
}

/// A bisection's runs on a `--host`.
struct Remote<'a> {
    host: String,
    base: String,
    options: &'a RunOptions,
    interrupt: Interrupt,
}

impl crate::bisect::Launch for Remote<'_> {
    fn launch(
        &self,
        path: &Path,
        selection: &Selection,
        force: bool,
    ) -> Result<crate::bisect::Launched, String> {
        let pipeline =
            Pipeline::load(path).map_err(|e| format!("the pipeline does not load: {e}"))?;
        let options = RunOptions {
            force: force || self.options.force,
            only: selection.stages.clone(),
            configs: selection.configs.clone(),
            host: None,
            ..self.options.clone()
        };
        let ssh = remote::Ssh::new(&self.host, &self.interrupt).map_err(|e| e.to_string())?;
        let say = |line: &str| say!("{line}");
        let session = remote::start(
            &ssh,
            &pipeline.root,
            path,
            &options.forwarded(),
            &self.base,
            &say,
        )
        .map_err(|e| e.to_string())?;
        let interrupted = match remote::follow(&ssh, &session, &mut remote::to_stderr, &say) {
            Ok(_) => false,
            Err(remote::RemoteError::Detached { .. }) => {
                // A bisection interrupted stops its remote run too, and keeps what it wrote.
                let quiet = Interrupt::new();
                let stopper = remote::Ssh::new(&self.host, &quiet).map_err(|e| e.to_string())?;
                remote::stop(&stopper, &session).map_err(|e| e.to_string())?;
                let _ = remote::follow(&stopper, &session, &mut |_| {}, &say);
                true
            }
            Err(e) => return Err(e.to_string()),
        };
        let quiet = Interrupt::new();
        let collector = remote::Ssh::new(&self.host, &quiet).map_err(|e| e.to_string())?;
        match remote::collect(&collector, &pipeline.root, &session).map_err(|e| e.to_string())? {
            Some(dir) => Ok(crate::bisect::Launched {
                dir: pipeline.root.join(dir),
                interrupted,
            }),
            None => Err(format!(
                "{}: the remote run ended before it created its run directory",
                self.host
            )),
        }
    }
}
