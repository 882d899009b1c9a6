//! `runner explain FILE...`: diagnosing logs with no run directory (a log pasted from another
//! machine). Each log's stage is inferred from its format; no config is known, so findings join
//! by kernel name alone.

use std::fmt::Write;

use parsers::{ParsedLog, TestOutcome};
use serde::Serialize;

use crate::analysis::{Analysis, CoverageRow, Verdict, VerdictKind};
use crate::diagnosis::Diagnosis;
use crate::join::join_logs;
use crate::render::markdown::verdict_icon;
use crate::text::plural;
use crate::{analysis::stage_status_word, render::OutputFormat};

/// What `explain` found in a set of logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub verdict: Verdict,
    /// Ranked: most severe, most certain first.
    pub diagnoses: Vec<Diagnosis>,
    /// One row per log: its inferred stage, status and key figure.
    pub logs: Vec<CoverageRow>,
    /// The test cases of each row's log (JUnit XML), by row: JUnit output lists them.
    pub tests: Vec<Vec<parsers::TestCase>>,
}

impl Explanation {
    /// True when no log holds a problem and every log is complete. `runner explain` exits 0
    /// when clean, 1 otherwise.
    pub fn is_clean(&self) -> bool {
        self.verdict.kind == VerdictKind::Clean
    }
}

/// Diagnoses loose logs, each given with the name it is reported under (its path as the user
/// typed it). A clean verdict over JUnit test cases says how many passed.
pub fn explain(logs: &[(String, ParsedLog)]) -> Explanation {
    let analysis = Analysis::from_joined(join_logs(logs));
    let mut verdict = analysis.verdict;
    if verdict.kind == VerdictKind::Clean {
        // A test framework's cases (JUnit XML): the count that passed is what clean rests on.
        let tests = || logs.iter().flat_map(|(_, log)| &log.tests);
        let count = |outcome: TestOutcome| tests().filter(|t| t.outcome == outcome).count() as u64;
        let passed = count(TestOutcome::Passed);
        if passed > 0 {
            let skipped = count(TestOutcome::Skipped);
            let rest = verdict
                .line
                .strip_prefix("Clean: ")
                .unwrap_or(&verdict.line)
                .to_string();
            verdict.line = format!(
                "Clean: {}{}; {rest}",
                plural(passed, "test passed", "tests passed"),
                if skipped > 0 {
                    format!(", {skipped} skipped")
                } else {
                    String::new()
                }
            );
        }
    }
    let tests = analysis
        .coverage
        .iter()
        .map(|row| {
            let paths: Vec<&str> = row.logs.iter().map(String::as_str).collect();
            analysis
                .joined
                .sources_at(&paths)
                .into_iter()
                .filter_map(|i| analysis.joined.source(i))
                .flat_map(|s| s.log.tests.iter().cloned())
                .collect()
        })
        .collect();
    Explanation {
        verdict,
        diagnoses: analysis.diagnoses,
        logs: analysis.coverage,
        tests,
    }
}

/// Renders an explanation: Markdown (also fine on a terminal), JSON, SARIF or JUnit.
pub fn render_explanation(e: &Explanation, format: OutputFormat) -> String {
    crate::text::without_controls(match format {
        OutputFormat::Markdown => markdown(e),
        OutputFormat::Json => {
            let value = crate::render::json::round(serde_json::json!({
                "schema": "exhibit.explain/1",
                "clean": e.is_clean(),
                "verdict": e.verdict,
                "diagnoses": e.diagnoses,
                "logs": e.logs,
            }));
            let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
            text.push('\n');
            text
        }
        OutputFormat::Sarif => {
            crate::render::sarif::render_diagnoses(&e.diagnoses, None, &Default::default())
        }
        OutputFormat::Junit => {
            let tests: Vec<Vec<&parsers::TestCase>> =
                e.tests.iter().map(|t| t.iter().collect()).collect();
            crate::render::junit::render_with_tests(&e.logs, &e.diagnoses, &tests, None)
        }
    })
}

fn markdown(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**Verdict:** {} {}\n",
        verdict_icon(e.verdict.kind),
        crate::text::md_text(&e.verdict.line)
    );
    let _ = writeln!(out, "| Log | Read as | Status | Key figure |");
    let _ = writeln!(out, "|---|---|---|---|");
    for l in &e.logs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            crate::text::md_cell(&crate::text::md_code(&l.stage)),
            crate::text::md_text(
                l.read_as
                    .as_deref()
                    .unwrap_or(crate::join::kind_name(l.kind))
            ),
            stage_status_word(l.status),
            crate::text::md_text(&l.figure)
        );
    }
    let _ = writeln!(out);
    for (i, d) in e.diagnoses.iter().enumerate() {
        let _ = writeln!(out, "## {}. {}\n", i + 1, d.title);
        let _ = writeln!(out, "{}\n", crate::render::markdown::diagnosis_meta(d));
        if let Some(sites) = crate::render::markdown::sites_line(d) {
            let _ = writeln!(out, "{sites}\n");
        }
        let _ = writeln!(out, "{}\n", d.explanation());
        if !d.fix().is_empty() {
            let _ = writeln!(out, "**Fix:** {}\n", d.fix());
        }
        for ev in &d.evidence {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                crate::text::md_text(&ev.stage),
                crate::text::md_code(&ev.log),
                ev.summary
            );
            if !ev.excerpt.is_empty() {
                let fence = crate::text::code_fence(&ev.excerpt);
                let _ = writeln!(out, "\n  {fence}text");
                for line in &ev.excerpt {
                    let _ = writeln!(out, "  {line}");
                }
                let _ = writeln!(out, "  {fence}\n");
            }
        }
        let _ = writeln!(out);
    }
    if e.diagnoses.is_empty() {
        let _ = writeln!(out, "No problems found in these logs.");
    }
    out
}
