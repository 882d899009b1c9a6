//! `check-failed`: a user's program said one of its checks failed (`exhibit.results/1`
//! `"passed": false`), or one of its Google Benchmark benchmarks stopped with an error. The
//! program's own verdict is the evidence; the diagnosis names the test and quotes its message.

use parsers::{FindingKind, Format};
use serde_json::json;

use super::Ctx;
use crate::diagnosis::{Confidence, Draft, Level};
use crate::text::{md_code, md_text, scrub};

/// One draft per failed check or benchmark error (the same test in several configs merges).
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for (index, f) in j.findings.iter().enumerate() {
        let finding = f.finding;
        if finding.kind != FindingKind::CheckFailed || ctx.explained(index) {
            continue;
        }
        let detail = |key: &str| finding.details.get(key).and_then(|v| v.as_str());
        let benchmark = j
            .source(f.source)
            .is_some_and(|s| s.log.format == Format::GoogleBenchmark);
        let test = detail("test")
            .or_else(|| detail("benchmark"))
            .unwrap_or("?")
            .to_string();
        let said = detail("message")
            .or_else(|| detail("error_message"))
            .map(|m| md_text(&scrub(m, &j.repo_files)));
        let program = detail("program");
        let name = md_code(&test);
        let mut d = Draft::new(
            "check-failed",
            Level::Error,
            match (&said, benchmark) {
                (Some(m), false) => format!("Check {name} failed: {m}"),
                (None, false) => format!("Check {name} failed"),
                (Some(m), true) => format!("Benchmark {name} stopped with an error: {m}"),
                (None, true) => format!("Benchmark {name} stopped with an error"),
            },
        );
        d.config = f.config.clone();
        // A failed check in a config whose fault a tool located is that fault's symptom.
        d.attach_to = ctx.root_cause_of_config(f.config.as_deref());
        d.key = finding.fingerprint.clone();
        d.confidence = Confidence::High;
        d.evidence.push(ctx.finding_evidence(f));
        d.explains.push(index);
        d.figures.insert("test".into(), json!(test));
        if let Some(err) = finding.details.get("max_abs_err") {
            d.figures.insert("max_abs_err".into(), err.clone());
        }
        let by = program.map(md_code).unwrap_or_else(|| "The program".into());
        (d.explanation, d.fix) = if benchmark {
            (
                format!(
                    "The benchmark {name} stopped itself with SkipWithError{}: it measured \
                     nothing, and whatever it guards did not hold.",
                    said.as_deref()
                        .map(|m| format!(" (\"{m}\")"))
                        .unwrap_or_default()
                ),
                "Run the benchmark alone and fix what its error message names; its timing is \
                 missing from the table until it runs."
                    .to_string(),
            )
        } else {
            (
                format!(
                    "{by} compared its output for {name} with its reference and reported a \
                     failure{}{}. Exhibit did not re-check it: the program's own verdict is the \
                     evidence.",
                    finding
                        .details
                        .get("max_abs_err")
                        .map(|e| format!(" (max abs error {e})"))
                        .unwrap_or_default(),
                    said.as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                format!(
                    "Run {name} alone and compare the output with the reference where the \
                     message points; a kernel that fails only some cases often mishandles a tail \
                     or a mask."
                ),
            )
        };
        out.push(d);
    }
    out
}
