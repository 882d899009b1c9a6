//! Root-cause reports from typed evidence.
//!
//! Brief overview: a [`Run`] (what the runner recorded) and the [`parsers::ParsedLog`] of each of
//! its logs make up the [`Evidence`]. The crate is pure: values in, values and text out; no I/O,
//! no clock.

mod evidence;
mod run;

pub use evidence::Evidence;
pub use run::*;

/// Output formats for [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Markdown,
    Json,
    Sarif,
    Junit,
}

/// Renders the report of a run.
pub fn render(evidence: &Evidence, format: OutputFormat) -> String {
    let _ = format;
    format!("# Exhibit report: {}\n", evidence.run.id)
}
