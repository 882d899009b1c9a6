//! The stage executions that could not support a verdict: failed, timed out, inconclusive,
//! interrupted, or a sanitizer log without its summary.

use std::collections::HashMap;

use parsers::Format;

use crate::run::StageStatus;

use super::Joined;

/// A stage execution that could not support a verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unconcluded {
    pub stage: String,
    pub config: Option<String>,
    /// `failed`, `timed out`, `inconclusive`, `interrupted` or `incomplete`.
    pub what: String,
    pub reason: Option<String>,
}

impl Joined<'_> {
    /// The stage executions that could not conclude: failed, timed out, inconclusive,
    /// interrupted, or a sanitizer log without its summary.
    pub fn unconcluded(&self) -> Vec<Unconcluded> {
        let mut out = Vec::new();
        if let Some(run) = self.run.filter(|r| r.interrupted) {
            out.push(Unconcluded {
                stage: "run".to_string(),
                config: None,
                what: "interrupted".to_string(),
                reason: Some(match &run.finished {
                    Some(_) => "the run was interrupted before every stage finished".to_string(),
                    None => "the run was interrupted and never finished".to_string(),
                }),
            });
        }
        for stage in self.stages() {
            let reason = match stage.status {
                StageStatus::Failed => Some("failed"),
                StageStatus::TimedOut => Some("timed out"),
                StageStatus::Inconclusive => Some("inconclusive"),
                StageStatus::Interrupted => Some("interrupted"),
                _ => None,
            };
            if let Some(what) = reason {
                out.push(Unconcluded {
                    stage: stage.name.clone(),
                    config: stage.config.clone(),
                    what: what.to_string(),
                    reason: stage.reason.clone(),
                });
            }
        }
        // A log the manifest lists whose stage concluded, but that is not there to read: that
        // stage's evidence is missing, whatever its recorded status says.
        let missing: HashMap<&str, &String> = self
            .missing
            .iter()
            .rev()
            .map(|(path, why)| (path.as_str(), why))
            .collect();
        for stage in self.stages() {
            if !matches!(stage.status, StageStatus::Passed | StageStatus::Findings) {
                continue;
            }
            for log in stage.logs.iter().filter(|l| l.format.is_some()) {
                let in_baseline = self
                    .baseline
                    .as_deref()
                    .is_some_and(|b| b.has_source_at(&log.path));
                if self.has_source_at(&log.path) || in_baseline {
                    continue;
                }
                let why = missing
                    .get(log.path.as_str())
                    .map_or("not read", |why| why.as_str());
                out.push(Unconcluded {
                    stage: stage.name.clone(),
                    config: stage.config.clone(),
                    what: "evidence missing".to_string(),
                    reason: Some(format!("{}: {why}", log.path)),
                });
            }
        }
        for source in &self.sources {
            let concluded_stage = source
                .stage
                .is_none_or(|s| matches!(s.status, StageStatus::Passed | StageStatus::Findings));
            if source.kind.is_sanitizer() && !source.log.complete && concluded_stage {
                let sanitizer_log = matches!(
                    source.log.format,
                    Format::ComputeSanitizer | Format::ComputeSanitizerXml
                );
                // The program's own results beside the sanitizer's log: what did not read.
                let reason = if sanitizer_log {
                    format!(
                        "{} has no summary line (the tool stopped early or the log was cut)",
                        source.path
                    )
                } else {
                    format!(
                        "{} does not read as {}{}",
                        source.path,
                        serde_json::to_value(source.log.format)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        source
                            .log
                            .unparsed_examples
                            .first()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    )
                };
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: source.config.map(str::to_string),
                    what: "incomplete".to_string(),
                    reason: Some(reason),
                });
            } else if source.stage.is_none() && source.log.holds_nothing() {
                // A loose log (`explain`) with nothing of its format in it.
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: None,
                    what: "unreadable".to_string(),
                    reason: Some(format!(
                        "nothing in {} reads as {}",
                        source.path,
                        serde_json::to_value(source.log.format)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    )),
                });
            } else if source.stage.is_none() && source.log.every_test_skipped() {
                // A loose JUnit file whose every test was skipped: nothing ran.
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: None,
                    what: "not run".to_string(),
                    reason: Some(format!("every test in {} was skipped", source.path)),
                });
            }
        }
        // As the report quotes them: without paths, addresses or pids.
        for u in &mut out {
            u.reason = u.reason.take().map(|r| self.scrub(&r));
        }
        out
    }
}
