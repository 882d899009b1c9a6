//! The run's end: the report unit, which renders the report from the run's evidence and writes
//! it under `reports/`, and the report's judgement of that evidence, which the run's verdict
//! rests on.

use std::path::{Path, PathBuf};
use std::time::Instant;

use report::{OutputFormat, Run, Stage, StageKind, StageStatus};

use crate::evidence::rundir::{self, RunDir, slash};
use crate::evidence::stored::Parsed;
use crate::pipeline::config::Pipeline;
use crate::planning::plan::{Blocked, Unit};
use crate::process::progress::Event;

use super::{Context, unit_stage};

/// Unless the run was interrupted (`run.interrupted`): writes the report where the plan has a
/// report unit, its record added to `run.stages`, and judges the run's evidence. Returns the
/// report's path when it was written, and the report's judgement: what the exit code's
/// "findings" rests on.
pub(super) fn conclude(
    pipeline: &Pipeline,
    dir: &RunDir,
    run: &mut Run,
    report_unit: Option<&Unit>,
    cx: &Context<'_>,
    parsed: &mut Parsed,
) -> (Option<PathBuf>, Option<report::Verdict>) {
    let interrupted = run.interrupted;
    let mut report = None;
    let mut judged = None;
    if let Some(unit) = report_unit
        && !interrupted
    {
        let label = unit.label();
        cx.progress.event(Event::Started { label: &label });
        let clock = Instant::now();
        let (stage, written) = write_report(pipeline, dir, run, unit, parsed);
        // On the terminal, where the command ran from; the manifest keeps it under the
        // pipeline's directory.
        let shown = written
            .as_ref()
            .map(|(path, _)| format!("wrote {}", rundir::shown(&pipeline.root.join(path))));
        if let Some((path, verdict)) = written {
            report = Some(path);
            judged = Some(verdict);
        }
        cx.progress.event(Event::Finished {
            label: &label,
            status: stage.status,
            elapsed: clock.elapsed(),
            reason: shown.as_deref().or(stage.reason.as_deref()),
            cached_from: None,
        });
        run.stages.push(stage);
    }
    if judged.is_none() && !interrupted {
        let evidence = crate::evidence::stored::from_run_with(run.clone(), &dir.path, parsed);
        judged = Some(report::analyze(&evidence).verdict);
    }
    (report, judged)
}

/// Renders the report from the run's evidence and writes `reports/<id>.md` and
/// `reports/latest.md`; returns its stage record and, when written, its path and the report's
/// verdict.
fn write_report(
    pipeline: &Pipeline,
    dir: &RunDir,
    run: &Run,
    unit: &Unit,
    parsed: &mut Parsed,
) -> (Stage, Option<(PathBuf, report::Verdict)>) {
    let started = Instant::now();
    let mut record = Stage {
        kind: StageKind::Report,
        config: None,
        arch: None,
        status: StageStatus::Passed,
        ..unit_stage(unit, pipeline, None)
    };
    if let Some(Blocked::Skip(reason) | Blocked::Fail(reason)) = &unit.blocked {
        record.status = StageStatus::Skipped;
        record.reason = Some(reason.clone());
        return (record, None);
    }
    let mut with_report = run.clone();
    with_report.stages.push(record.clone());
    let evidence = crate::evidence::stored::from_run_with(with_report, &dir.path, parsed);
    // One analysis for the report, its charts and the verdict.
    let analysis = report::analyze(&evidence);
    let text = report::render_analysis(&analysis, &evidence.run, OutputFormat::Markdown);
    let judged = analysis.verdict.clone();
    let relative = Path::new(rundir::REPORTS).join(format!("{}.md", run.id));
    let reports = Path::new(rundir::REPORTS);
    // The chart first: the markdown links it.
    let chart = report::render_bench_svg(&analysis)
        .map_or(Ok(()), |svg| {
            let name = report::bench_svg_file_name(run);
            rundir::write_atomic(&pipeline.resolve(&reports.join(name)), svg.as_bytes())
        })
        .and_then(|()| {
            report::render_roofline_svg(&analysis).map_or(Ok(()), |svg| {
                let name = report::roofline_svg_file_name(run);
                rundir::write_atomic(&pipeline.resolve(&reports.join(name)), svg.as_bytes())
            })
        });
    let result = chart
        .and_then(|()| rundir::write_atomic(&pipeline.resolve(&relative), text.as_bytes()))
        .and_then(|()| {
            rundir::write_atomic(
                &pipeline.resolve(&reports.join("latest.md")),
                text.as_bytes(),
            )
        });
    record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ok(()) => {
            record.reason = Some(format!("wrote {}", slash(&relative)));
            (record, Some((relative, judged)))
        }
        Err(e) => {
            record.status = StageStatus::Failed;
            record.reason = Some(format!("failed to {e}"));
            (record, None)
        }
    }
}
