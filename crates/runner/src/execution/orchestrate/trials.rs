//! The experiments phase: after the run's own units and before the report, the trials the
//! run's root causes call for, each a config of its own, run through the same loop as the run's
//! units and recorded in `Run.experiments`.

use report::{Run, Stage};

use crate::evidence::rundir::{self, RunDir};
use crate::evidence::stored::Parsed;
use crate::execution::experiments as exp;
use crate::pipeline::config::Pipeline;
use crate::planning::plan;
use crate::planning::schedule::Limits;
use crate::process::progress::Event;
use crate::setup::preflight::Preflight;

use super::executor::Executor;
use super::run_loop::execute;
use super::{Context, Options, RunError, cache_index};

/// Runs the experiments the run's root causes call for ([`report::experiment::propose`]): each
/// trial a config of its own, planned, scheduled and cached like the run's units (the run's own
/// units serve their builds), recorded in `run.experiments`.
#[allow(clippy::too_many_arguments)]
pub(super) fn experiments(
    pipeline: &Pipeline,
    preflight: &Preflight,
    dir: &RunDir,
    run: &mut Run,
    options: &Options,
    limits: Limits,
    devices: &[String],
    cx: &Context<'_>,
    parsed: &mut Parsed,
) -> Result<(), RunError> {
    let evidence = crate::evidence::stored::from_run_with(run.clone(), &dir.path, parsed);
    let mut proposed = {
        let analysis = report::analyze(&evidence);
        report::experiment::propose(&analysis.diagnoses, run)
    };
    if proposed.is_empty() {
        return Ok(());
    }
    for e in &proposed {
        cx.progress.event(Event::Note(&format!(
            "experiment: {} on `{}`: {} runs",
            e.cause,
            e.config,
            e.trials.len()
        )));
    }
    let (derived, selection) = exp::derived(pipeline, &proposed);
    let plan = plan::plan(&derived, preflight, &selection)?;
    let mut index = cache_index(pipeline, options, &run.id, cx);
    // The run's own units (the builds the trials share) serve them too.
    index.add(&dir.path, run, &rundir::shown(&dir.path));
    let executor = Executor::new(
        &derived, preflight, &plan, dir, index, options, cx, &limits, run,
    );
    let mut records: Vec<Option<Stage>> = vec![None; plan.units.len()];
    let mut flags_seen = Vec::new();
    execute(
        &plan,
        &executor,
        limits,
        devices,
        cx,
        dir,
        options.min_free_bytes,
        |i, stage, flags| {
            flags_seen.extend(flags);
            if let Some(slot) = records.get_mut(i) {
                *slot = Some(stage);
            }
            Ok(())
        },
    )?;
    run.inputs.extend(flags_seen);
    exp::attach(&mut proposed, records.into_iter().flatten().collect());
    crate::evidence::trial_outputs::digest_outputs(&mut proposed, &dir.path);
    run.experiments = proposed;
    dir.write_manifest(run)?;
    Ok(())
}
