//! `exhibit explain`'s output: an [`Explanation`] as Markdown (also fine on a terminal), JSON,
//! SARIF or JUnit.

use std::fmt::Write;

use crate::analysis::stage_status_word;
use crate::explain::Explanation;
use crate::render::OutputFormat;
use crate::render::markdown::causes::diagnosis_head;
use crate::render::markdown::verdict_icon;

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
        OutputFormat::Junit => crate::render::junit::render_parts(&e.logs, &e.diagnoses, None),
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
        diagnosis_head(&mut out, "##", i + 1, d);
        for ev in &d.evidence {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                crate::text::md_text(&ev.stage),
                crate::text::md_code(&ev.log),
                ev.summary.markdown()
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
