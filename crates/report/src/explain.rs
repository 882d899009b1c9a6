//! `exhibit explain FILE...`: diagnosing logs with no run directory (a log pasted from another
//! machine). Each log's stage is inferred from its format; no config is known, so findings join
//! by kernel name alone.

use parsers::{ParsedLog, TestOutcome};
use serde::Serialize;

use crate::analysis::{Analysis, CoverageRow, Verdict, VerdictKind};
use crate::diagnosis::Diagnosis;
use crate::join::join_logs;
use crate::text::plural;

/// What `explain` found in a set of logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub verdict: Verdict,
    /// Ranked: most severe, most certain first.
    pub diagnoses: Vec<Diagnosis>,
    /// One row per log: its inferred stage, status, key figure and tests.
    pub logs: Vec<CoverageRow>,
}

impl Explanation {
    /// True when no log holds a problem and every log is complete. `exhibit explain` exits 0
    /// when clean, 1 otherwise.
    pub fn is_clean(&self) -> bool {
        self.verdict.kind == VerdictKind::Clean
    }
}

/// Every source file the logs' records name by an absolute path (a CMake build's nvcc is
/// given absolute paths, and its line table keeps them): the command that reads the logs
/// keeps those under its directory as the user's files.
pub fn named_files(logs: &[(String, ParsedLog)]) -> Vec<String> {
    let mut out: Vec<String> = logs
        .iter()
        .flat_map(|(_, log)| &log.findings)
        .flat_map(|f| {
            f.file
                .iter()
                .chain(f.device_frames.iter().filter_map(|l| l.file.as_ref()))
                .chain(f.related.iter().filter_map(|r| r.file.as_ref()))
        })
        .filter(|p| p.starts_with('/'))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Diagnoses loose logs, each given with the name it is reported under (its path as the user
/// typed it), and the user's files they name (`inputs`, relative to where the command ran; see
/// [`crate::named_files`]). A clean verdict over JUnit test cases says how many passed.
pub fn explain(logs: &[(String, ParsedLog)], inputs: Vec<String>) -> Explanation {
    let analysis = Analysis::from_joined(join_logs(logs, inputs));
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
    Explanation {
        verdict,
        diagnoses: analysis.diagnoses,
        logs: analysis.coverage,
    }
}
