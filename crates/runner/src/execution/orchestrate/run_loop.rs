//! The run loop: starts the units the schedule allows, each on its own thread, and takes their
//! endings as they come: a unit whose logs may be cut short is made inconclusive, and each
//! record is handed back in the order units end. The lines that say which units were skipped
//! are built here too.

use std::time::{Duration, Instant};

use report::{Stage, StageKind, StageStatus};

use crate::evidence::rundir::{self, RunDir};
use crate::planning::plan::{Blocked, Plan, Unit};
use crate::planning::schedule::{Limits, Scheduler};
use crate::process::progress::Event;

use super::executor::{Executor, FlagInput};
use super::{Context, RunError};

/// Runs the units of `plan` through `executor`, as many at once as `limits` allow, handing each
/// ended unit's record to `record` (with the flag input it hashed); returns the units skipped
/// once others ended (a failed build), with why, for [`skip_lines`].
#[allow(clippy::too_many_arguments)]
pub(super) fn execute(
    plan: &Plan,
    executor: &Executor,
    limits: Limits,
    devices: &[String],
    cx: &Context<'_>,
    dir: &RunDir,
    min_free_bytes: u64,
    mut record: impl FnMut(usize, Stage, FlagInput) -> Result<(), RunError>,
) -> Result<Vec<(usize, String)>, RunError> {
    let mut late_skips: Vec<(usize, String)> = Vec::new();
    let mut scheduler = Scheduler::new(plan, limits, |u| u.kind == StageKind::Report);
    let failure = std::thread::scope(|scope| -> Result<(), RunError> {
        let (done, ended) = std::sync::mpsc::channel();
        let mut failure = None;
        loop {
            if !cx.interrupt.is_set() && failure.is_none() {
                for (i, slot) in scheduler.start() {
                    let Some(unit) = plan.units.get(i) else {
                        continue;
                    };
                    cx.progress.event(Event::Started {
                        label: &unit.label(),
                    });
                    let done = done.clone();
                    let device = slot.and_then(|g| devices.get(g)).map(String::as_str);
                    scope.spawn(move || {
                        let clock = Instant::now();
                        // The receiver outlives every sender: sending cannot fail.
                        let release = || {
                            let _ = done.send(Message::Released(i));
                        };
                        let result = executor.unit(i, unit, device, &release);
                        let _ = done.send(Message::Ended(i, Box::new(result), clock.elapsed()));
                    });
                }
            }
            if !scheduler.busy() {
                break;
            }
            let (i, result, elapsed) = match ended.recv() {
                Ok(Message::Ended(i, result, elapsed)) => (i, result, elapsed),
                Ok(Message::Released(i)) => {
                    scheduler.released(i);
                    continue;
                }
                Err(_) => break,
            };
            scheduler.ended(i);
            let (mut stage, flags) = match *result {
                Ok(ended) => ended,
                Err(e) => {
                    failure.get_or_insert(e);
                    continue;
                }
            };
            // A unit that ran is judged on what it could write.
            if stage.status != StageStatus::Skipped
                && stage.cached_from.is_none()
                && let Some(why) = storage_problem(dir, &stage, min_free_bytes)
            {
                not_kept(&mut stage, &why);
            }
            let label = plan.units.get(i).map(Unit::label).unwrap_or_default();
            cx.progress.event(Event::Finished {
                label: &label,
                status: stage.status,
                elapsed,
                reason: stage.reason.as_deref(),
                cached_from: stage.cached_from.as_deref(),
            });
            if stage.status == StageStatus::Skipped
                && stage.cached_from.is_none()
                && !matches!(
                    plan.units.get(i).and_then(|u| u.blocked.as_ref()),
                    Some(Blocked::Skip(_))
                )
            {
                late_skips.push((i, stage.reason.clone().unwrap_or_default()));
            }
            executor.set_status(i, &stage);
            if let Err(e) = record(i, stage, flags) {
                failure.get_or_insert(e);
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    });
    failure?;
    Ok(late_skips)
}

/// One line per stage and reason for skipped units, in the order given (plan order): the
/// unit's label when it is the only one, else `stage (N units)`.
pub(super) fn skip_lines<'u>(
    units: impl Iterator<Item = (&'u Unit, &'u str)>,
) -> Vec<(String, String)> {
    let mut groups: Vec<(&str, &str, String, usize)> = Vec::new();
    for (unit, reason) in units {
        match groups
            .iter_mut()
            .find(|(stage, r, _, _)| *stage == unit.name && *r == reason)
        {
            Some((_, _, _, count)) => *count += 1,
            None => groups.push((&unit.name, reason, unit.label(), 1)),
        }
    }
    groups
        .into_iter()
        .map(|(stage, reason, first, count)| {
            let label = if count == 1 {
                first
            } else {
                format!("{stage} ({count} units)")
            };
            (label, reason.to_string())
        })
        .collect()
}

/// What a unit's thread tells the run loop.
enum Message {
    /// Unit `i` is done with the GPU; what it does next needs only the CPU.
    Released(usize),
    /// Unit `i` ended, with its record (or the error that stops the run) and its wall time.
    Ended(usize, Box<Result<(Stage, FlagInput), RunError>>, Duration),
}

/// Why a unit's logs may not hold what its processes wrote: a log that reached the file size
/// limit (`ulimit -f`: writes past it fail), or a run directory whose file system was (nearly)
/// full when the unit ended (writes may have failed with ENOSPC, which a program can ignore).
fn storage_problem(dir: &RunDir, stage: &Stage, min_free: u64) -> Option<String> {
    if let Some(limit) = rundir::file_size_limit()
        && let Some(log) = stage
            .logs
            .iter()
            .find(|l| std::fs::metadata(dir.path.join(&l.path)).is_ok_and(|m| m.len() >= limit))
    {
        return Some(format!(
            "writing {} stopped at the file size limit ({} bytes): the log is cut short",
            log.path, limit
        ));
    }
    match dir.free_bytes() {
        Ok(free) if free < min_free => Some(format!(
            "the run directory's file system had {} free after the unit (less than {}):              writes may have failed, its logs may be cut short",
            report::text::bytes(free),
            report::text::bytes(min_free)
        )),
        Ok(_) => None,
        Err(e) => Some(format!(
            "the free space of the run directory could not be read after the unit: {e}"
        )),
    }
}

/// Records that a unit's evidence may be incomplete: a unit that passed is inconclusive (a
/// clean log that was cut short proves nothing); what it found stands, with the reason added.
fn not_kept(stage: &mut Stage, why: &str) {
    if stage.status == StageStatus::Passed {
        stage.status = StageStatus::Inconclusive;
        stage.reason = Some(match stage.reason.take() {
            Some(r) => format!("{why} ({r})"),
            None => why.to_string(),
        });
    } else {
        stage.reason = Some(match stage.reason.take() {
            Some(r) => format!("{r}; {why}"),
            None => why.to_string(),
        });
    }
}
