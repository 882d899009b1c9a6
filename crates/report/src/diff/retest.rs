//! Whether the second run re-tested what the first found: its stages indexed once, the stages
//! behind each root cause, and why a stage did not re-run to a verdict.

use std::collections::{HashMap, HashSet};

use crate::diagnosis::Diagnosis;
use crate::run::{Run, Stage, StageStatus};

/// A run's stages indexed once, so that placing every root cause and finding of a diff is linear
/// in stage records (a scan of every stage for each one made `exhibit diff` quadratic).
pub(super) struct StageIndex<'a> {
    /// By log path.
    by_log: HashMap<&'a str, Vec<&'a Stage>>,
    /// By stage name and config.
    by_name: HashMap<(&'a str, Option<&'a str>), Vec<&'a Stage>>,
    /// By what makes a unit the same unit: name, kind, config, arch and case.
    by_unit: HashMap<UnitKey<'a>, Vec<&'a Stage>>,
}

type UnitKey<'a> = (
    &'a str,
    crate::run::StageKind,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

fn unit_key(s: &Stage) -> UnitKey<'_> {
    (
        s.name.as_str(),
        s.kind,
        s.config.as_deref(),
        s.arch.as_deref(),
        s.unit.case.as_ref().map(|c| c.name.as_str()),
    )
}

impl<'a> StageIndex<'a> {
    pub(super) fn of(run: &'a Run) -> StageIndex<'a> {
        let mut index = StageIndex {
            by_log: HashMap::new(),
            by_name: HashMap::new(),
            by_unit: HashMap::new(),
        };
        for s in &run.stages {
            for l in &s.logs {
                let stages = index.by_log.entry(l.path.as_str()).or_default();
                // A stage listing one path twice is still one stage.
                if !stages.last().is_some_and(|o| std::ptr::eq(*o, s)) {
                    stages.push(s);
                }
            }
            index
                .by_name
                .entry((s.name.as_str(), s.config.as_deref()))
                .or_default()
                .push(s);
            index.by_unit.entry(unit_key(s)).or_default().push(s);
        }
        index
    }
}

/// The stages of a run (`index`) that found a root cause: those whose logs its evidence quotes,
/// and for evidence that names no log (a program's exit status), the stages of that name and
/// config. In the run's order.
pub(super) fn diagnosis_stages<'a>(d: &Diagnosis, index: &StageIndex<'a>) -> Vec<&'a Stage> {
    let mut out: Vec<&Stage> = Vec::new();
    let mut seen: HashSet<*const Stage> = HashSet::new();
    for e in &d.evidence {
        let found = if e.log.is_empty() {
            index.by_name.get(&(e.stage.as_str(), e.config.as_deref()))
        } else {
            index.by_log.get(e.log.as_str())
        };
        for s in found.into_iter().flatten() {
            if seen.insert(*s as *const Stage) {
                out.push(s);
            }
        }
    }
    out
}

/// Why `b` did not re-test what `stages` (of the other run) found: for each stage, unless `b`
/// (its index) ran the same stage on the same config, arch and case to a verdict. Empty when
/// all were re-tested; never empty when no stage is known to have found it.
pub(super) fn untested(stages: &[&Stage], b: &StageIndex) -> Vec<String> {
    if stages.is_empty() {
        return vec!["no stage of A is known to have found it".to_string()];
    }
    let mut why = Vec::new();
    for s in stages {
        let unit = s.unit();
        let case = unit.case.as_ref().map(|c| c.name.as_str());
        let same: &[&Stage] = b.by_unit.get(&unit_key(s)).map_or(&[], Vec::as_slice);
        let place = [s.config.as_deref(), s.arch.as_deref(), case]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        let on = if place.is_empty() {
            s.name.clone()
        } else {
            format!("{} on {place}", s.name)
        };
        if same.is_empty() {
            why.push(format!("{on}: not run in B"));
        }
        for t in same {
            let state = match t.status {
                StageStatus::Passed | StageStatus::Findings => continue,
                StageStatus::Failed => "failed",
                StageStatus::TimedOut => "timed out",
                StageStatus::Skipped => "skipped",
                StageStatus::Inconclusive => "inconclusive",
                StageStatus::Interrupted => "interrupted",
            };
            let reason = t
                .reason
                .as_deref()
                .map(|r| format!(" ({})", r.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            why.push(format!("{on}: {state} in B{reason}"));
        }
    }
    why.dedup();
    why
}
