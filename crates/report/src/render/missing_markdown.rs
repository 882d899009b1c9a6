//! Two lists of the Markdown report that say what a run did and did not cover: what the
//! machine lacked for the stages it skipped, with how to get each ("Missing here"), and the
//! tests each stage read from a test framework, by outcome ("Tests").

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::text::{md_code, md_text};

/// "Missing here:": each thing the skipped stages lacked, why, how to get it, what it kept
/// from running.
pub fn missing_here(out: &mut String, a: &Analysis) {
    let v = &a.verdict;
    if !v.missing.is_empty() {
        let _ = writeln!(out, "Missing here:\n");
        for m in &v.missing {
            // `how` is the report's own wording, its commands already in backticks.
            let get = match (&m.command, &m.how) {
                (Some(command), _) => md_code(command),
                (None, Some(how)) => how.clone(),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                out,
                "- **{}**{}: {get}. Kept from running: {}.",
                md_text(&m.what),
                m.reason
                    .as_deref()
                    .map(|r| format!(" ({})", md_text(r)))
                    .unwrap_or_default(),
                m.stages
                    .iter()
                    .map(|s| md_code(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(out);
    }
}

/// For each stage execution that read a test framework's report (JUnit XML), its tests by
/// outcome, each named: those that passed beside a failing one are evidence too.
pub fn test_lines(a: &Analysis) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &a.coverage {
        let tests = &r.tests;
        if tests.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        for (outcome, word) in [
            (parsers::TestOutcome::Passed, "passed"),
            (parsers::TestOutcome::Failed, "failed"),
            (parsers::TestOutcome::Error, "errored"),
            (parsers::TestOutcome::Skipped, "skipped"),
        ] {
            let mut ids: Vec<&str> = tests
                .iter()
                .filter(|t| t.outcome == outcome)
                .map(|t| t.id.as_str())
                .collect();
            ids.dedup();
            if ids.is_empty() {
                continue;
            }
            let shown: Vec<String> = ids.iter().take(20).map(|id| md_code(id)).collect();
            let more = if ids.len() > 20 {
                format!(" and {} more", ids.len() - 20)
            } else {
                String::new()
            };
            parts.push(format!("{} {word}: {}{more}", ids.len(), shown.join(", ")));
        }
        let line = format!(
            "- **{}**{}: {}",
            md_text(&r.stage),
            r.config
                .as_deref()
                .map(|c| format!(" ({})", md_code(c)))
                .unwrap_or_default(),
            parts.join(" · ")
        );
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}
