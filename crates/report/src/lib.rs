//! Root-cause reports from typed evidence.
//!
//! Brief overview: a [`Run`] (what the runner recorded) and the [`parsers::ParsedLog`] of each of
//! its logs make up the [`Evidence`]. [`join::join`] places every log under the stage, config and
//! arch that produced it and indexes kernels (ptxas resources and SASS counts), findings, harness
//! results and Nsight Compute metrics by kernel, config and arch (each kernel's identity a
//! [`KernelId`], made once). The [`rules`] draft from the joined evidence, each rule declaring
//! its role in [`rules::RULES`]; the fold (`fold.rs`) alone turns the drafts into one ranked
//! [`Diagnosis`] per root cause, shaped like a compiler diagnostic: a primary message, labelled
//! [`Span`]s, notes, help and the raw lines it rests on; [`analyze`] adds the verdict and the
//! coverage receipt. The
//! renderers turn an analysis into Markdown, JSON, SARIF 2.1.0 or JUnit XML ([`render`]) and an
//! SVG bench chart ([`render_bench_svg`]). [`explain`] diagnoses loose logs with no run, and
//! [`diff()`] compares two runs.
//!
//! The crate is pure: values in, values and text out; no I/O, no clock. Rendered text is
//! deterministic: numbers are rounded, and addresses, pids, absolute paths and timestamps are
//! scrubbed from everything but the run's own header.
//!
//! Entry points for the runner:
//!
//! - `exhibit PIPELINE` (the run) and `exhibit report RUN`: [`render`] in any [`OutputFormat`];
//!   [`render_bench_svg`] for the chart the Markdown links as [`bench_svg_file_name`]; the
//!   verdict for the exit code from [`analyze`] (`analysis.verdict.is_clean()`, or its
//!   [`VerdictKind`]: clean, warnings, failing, inconclusive).
//! - `exhibit explain FILE...`: [`explain`] on the parsed logs, [`render_explanation`], and
//!   [`Explanation::is_clean`] for the exit code.
//! - `exhibit bisect GOOD BAD`: [`bisect::choose_cause`] or [`bisect::choose_slower`] for what
//!   makes a commit bad, [`bisect::judge`] for each step, [`render_bisect`] for the answer.
//! - `exhibit diff RUN_A RUN_B`: [`diff()`] with [`DiffOptions`], [`render_diff`], and
//!   [`Diff::has_regression`] for the exit code.
//!
//! Where things are: the rules in [`rules`] (one module each; [`rules::RULES`] lists them with
//! their files), the sm_90 occupancy arithmetic in [`occupancy`], the noise judgement in
//! [`noise`], the tables every renderer shares in [`tables`] and [`resources`].
//!
//! ```
//! use report::{Evidence, OutputFormat, Run, render};
//! # fn run() -> Run { serde_json::from_str(r#"{"schema":"exhibit.run/1","id":"r","pipeline":"pipeline.yaml",
//! #   "started":"2026-11-22T10:15:00Z","finished":null,"interrupted":false,"git":null,
//! #   "environment":{"os":"linux","tools":{},"toolchain_source":null,"driver":null,"gpus":[],
//! #   "gpu_unavailable":null,"counters_permitted":null},"inputs":{},"stages":[]}"#).unwrap() }
//! let evidence = Evidence { run: run(), logs: Default::default(), missing: Default::default(), source_maps: Vec::new(), program_pairs: Default::default(), program_mismatches: Default::default() };
//! let markdown = render(&evidence, OutputFormat::Markdown);
//! assert!(markdown.starts_with("# Exhibit report: r"));
//! ```

mod analysis;
pub mod bisect;
pub mod check_failure;
pub mod contrast;
mod diagnosis;
pub mod diff;
mod drafting;
mod evidence;
pub mod experiment;
mod explain;
mod fold;
pub mod hypothesis;
pub mod join;
mod kernel_id;
pub mod measure;
pub mod message;
pub mod missing;
pub mod model;
pub mod noise;
pub mod occupancy;
mod render;
pub mod resources;
pub mod roofline;
mod rule_id;
pub mod rules;
mod run;
mod run_v1;
pub mod significance;
mod source_line;
mod stage_kind;
pub mod tables;
pub mod text;
pub mod timings;

pub use analysis::{
    Analysis, CoverageRow, NotRun, Verdict, VerdictKind, analyze, stage_status_word,
};
pub use diagnosis::{Confidence, Diagnosis, EvidenceItem, Helper, Level, SourceLocation, Span};
pub use diff::{Diff, DiffOptions, DiffVerdict, NotRetested, diff, unrelated};
pub use evidence::{Evidence, SourceMap};
pub use explain::{Explanation, explain, named_files};
pub use kernel_id::KernelId;
pub use missing::Missing;
pub use render::OutputFormat;
pub use render::explain::render_explanation;
pub use render::sarif::Home;
pub use render::svg::{bench_svg_file_name, roofline_svg_file_name};
pub use run::*;
pub use stage_kind::{KINDS, KindRow, Placement};

/// Rendered text without terminal escape sequences or control characters: every renderer's
/// output passes through here (JSON formats strip each string before they are escaped).
fn safe(text: String) -> String {
    text::without_controls(text)
}

/// Renders the report of a run.
pub fn render(evidence: &Evidence, format: OutputFormat) -> String {
    let analysis = analyze(evidence);
    render_analysis(&analysis, &evidence.run, format)
}

/// The short Markdown form of a run's report, for a pull-request comment or a CI job summary.
pub fn render_summary(evidence: &Evidence) -> String {
    let analysis = analyze(evidence);
    safe(render::markdown::render_summary(&analysis, &evidence.run))
}

/// Renders an analysis already made (to render several formats from one analysis).
pub fn render_analysis(analysis: &Analysis, run: &Run, format: OutputFormat) -> String {
    safe(match format {
        OutputFormat::Markdown => render::markdown::render(analysis, run),
        OutputFormat::Json => render::json::render(analysis, Some(run)),
        OutputFormat::Sarif => render::sarif::render(analysis, Some(run), &Home::default()),
        OutputFormat::Junit => render::junit::render(analysis, Some(run)),
    })
}

/// Renders a run's SARIF with links to Exhibit's documentation where `home` gives them.
pub fn render_sarif(analysis: &Analysis, run: &Run, home: &Home) -> String {
    safe(render::sarif::render(analysis, Some(run), home))
}

/// The rules, one section each under its id, for `docs/rules.md` (a SARIF rule's `helpUri`
/// points at its section).
pub fn render_rules() -> String {
    render::rules_markdown::render()
}

/// Every rule's id, in the order the rules run.
pub fn rule_ids() -> Vec<&'static str> {
    rules::RULES.iter().map(|r| r.id.as_str()).collect()
}

/// The section of `docs/rules.md` of the rule with this id, or `None` for no rule's id.
pub fn render_rule(id: &str) -> Option<String> {
    rules::RULES
        .iter()
        .find(|r| r.id.as_str() == id)
        .map(|r| render::rules_markdown::section(r))
}

/// The bench chart the Markdown report links to, or `None` when the run holds no timings.
/// The runner writes it next to the report as [`bench_svg_file_name`].
pub fn render_bench_svg(analysis: &Analysis) -> Option<String> {
    render::svg::bench_svg(analysis).map(safe)
}

/// The roofline the Markdown report links to: every profiled kernel against the roofs of its
/// precision, the baseline's marked; `None` when no kernel was placed. The runner writes it next
/// to the report as [`roofline_svg_file_name`].
pub fn render_roofline_svg(analysis: &Analysis) -> Option<String> {
    render::svg::roofline_svg(analysis).map(safe)
}

/// Renders a bisection as Markdown (or its short form, for a pull-request comment) or JSON.
pub fn render_bisect(bisection: &bisect::Bisection, format: OutputFormat, summary: bool) -> String {
    safe(match format {
        OutputFormat::Json => {
            let mut text = serde_json::to_string_pretty(bisection).unwrap_or_default();
            text.push('\n');
            text
        }
        _ if summary => render::bisect_markdown::summary(bisection),
        _ => render::bisect_markdown::render(bisection),
    })
}

/// Renders a diff of two runs as Markdown or JSON (SARIF and JUnit render the new root causes).
pub fn render_diff(diff: &Diff, format: OutputFormat) -> String {
    safe(match format {
        OutputFormat::Markdown => render::diff_markdown::render(diff),
        OutputFormat::Json => {
            let value = render::json::round(serde_json::json!({
                "schema": "exhibit.diff/1",
                "regression": diff.has_regression(),
                "diff": diff,
            }));
            let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
            text.push('\n');
            text
        }
        OutputFormat::Sarif => {
            let mut all = diff.new.clone();
            all.extend(diff.perf_diagnoses.iter().cloned());
            render::sarif::render_diagnoses(&all, None, &Home::default())
        }
        OutputFormat::Junit => {
            let mut all = diff.new.clone();
            all.extend(diff.perf_diagnoses.iter().cloned());
            render::junit::render_parts(&[], &all, None)
        }
    })
}
