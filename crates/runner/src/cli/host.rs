//! `--host` and `attach`: a run on another machine, followed and brought back.

use super::*;

/// `exhibit PIPELINE --host HOST`: starts the run there, then follows and collects it.
pub(super) fn run_remote(
    pipeline: &Pipeline,
    path: &std::path::Path,
    remote_host: &str,
    base: &str,
    args: &[String],
) -> Result<Outcome, Error> {
    let interrupt = signals()?;
    let ssh = remote::Ssh::new(remote_host, &interrupt)?;
    let say = |line: &str| say!("{line}");
    let session = remote::start(&ssh, &pipeline.root, path, args, base, &say)?;
    finish_remote(&ssh, &pipeline.root, &session, &interrupt)
}

/// `exhibit attach SESSION`.
pub(super) fn attach(root: &std::path::Path, id: &str) -> Result<Outcome, Error> {
    let session = remote::load(root, id).map_err(|e| Error::Usage(e.to_string()))?;
    let interrupt = signals()?;
    let ssh = remote::Ssh::new(&session.host, &interrupt)?;
    finish_remote(&ssh, root, &session, &interrupt)
}

/// Follows a remote session to its end, collects its run and renders the report here.
pub(super) fn finish_remote(
    ssh: &remote::Ssh<'_>,
    root: &std::path::Path,
    session: &remote::Session,
    interrupt: &Interrupt,
) -> Result<Outcome, Error> {
    let say = |line: &str| say!("{line}");
    match remote::follow(ssh, session, &mut remote::to_stderr, &say) {
        Ok(_) => {}
        Err(remote::RemoteError::Detached { session: id }) => {
            if std::io::stdin().is_terminal() && ask("stop the remote run too? [y/N] ") {
                let quiet = Interrupt::new();
                let stopper = remote::Ssh::new(&session.host, &quiet)?;
                remote::stop(&stopper, session)?;
                say!("stopping it; `exhibit attach {id}` collects what it wrote");
            } else {
                say!("the remote run goes on; `exhibit attach {id}` collects it");
            }
            return Ok(Outcome::Interrupted(
                interrupt.first().unwrap_or(signal_hook::consts::SIGINT),
            ));
        }
        Err(e) => return Err(e.into()),
    }
    let Some(dir) = remote::collect(ssh, root, session)? else {
        return Err(Error::Io(format!(
            "{}: the remote run ended before it created its run directory; its log is {}/.exhibit-remote/{}.log there",
            session.host,
            remote::shown(&session.dir),
            session.id
        )));
    };
    // The report, rendered here from the evidence that came back, as a local run's: from a
    // real directory (not a link the archive held), every file through `rundir`.
    crate::evidence::rundir::directory(&root.join(&dir))
        .map_err(|why| Error::Io(format!("{}: {why}", dir.display())))?;
    let evidence = crate::evidence::stored::load(&root.join(&dir))?;
    // The report is named by the run id the run came back under (checked when it was
    // received), never by what its manifest says.
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if evidence.run.id != id {
        return Err(Error::Io(format!(
            "{}: its manifest names run `{}`, not `{id}`: refused",
            dir.display(),
            report::text::scrub(&evidence.run.id, &[])
        )));
    }
    let analysis = report::analyze(&evidence);
    let text = terminated(report::render_analysis(
        &analysis,
        &evidence.run,
        report::OutputFormat::Markdown,
    ));
    let reports = root.join(crate::evidence::rundir::REPORTS);
    let name = reports.join(format!("{id}.md"));
    for path in [&name, &reports.join("latest.md")] {
        crate::evidence::rundir::write_atomic(path, text.as_bytes())
            .map_err(|e| Error::Io(e.to_string()))?;
    }
    let shown = crate::evidence::rundir::shown;
    say!("artifacts: {}", shown(&root.join(&dir)));
    print(&format!(
        "verdict: {}\nreport: {}\n",
        analysis.verdict.line,
        shown(&name)
    ))?;
    let verdict = crate::execution::orchestrate::verdict(&evidence.run, Some(&analysis.verdict));
    Ok(
        match required(session.require_gpu, Some(analysis.verdict.kind), verdict) {
            Verdict::Clean => Outcome::Clean,
            Verdict::Findings => Outcome::Findings,
            Verdict::Incomplete => Outcome::Incomplete,
            Verdict::Interrupted => Outcome::Interrupted(signal_hook::consts::SIGINT),
        },
    )
}
