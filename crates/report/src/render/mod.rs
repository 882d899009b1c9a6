//! The renderers: one module per output format. Each takes an [`crate::analysis::Analysis`] and the run,
//! and returns text; none reads anything else.

pub mod bisect_markdown;
pub mod diff_markdown;
pub mod explain;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod missing_markdown;
pub mod rules_markdown;
pub mod sarif;
pub mod svg;
pub mod timings_markdown;

use crate::run::Run;

/// Output formats for [`crate::render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Markdown,
    Json,
    Sarif,
    Junit,
}

/// The pipeline's directory relative to the repository root, with a trailing `/` (empty at the
/// root): a diagnosis's places are relative to it, a code-scanning URI to the root.
pub(crate) fn pipeline_dir(run: &Run) -> String {
    // A received manifest's pipeline may name any path: only one inside the repository is a
    // base for the places.
    match run.pipeline.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() && dir != "." => in_repository("", dir)
            .filter(|d| !d.is_empty())
            .map(|d| format!("{d}/"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// A place relative to the pipeline's directory as a path relative to the repository root, or
/// `None` for what no repository file can be: a toolkit header (`<toolkit>/...`), an absolute
/// path, a path that climbs out of the repository.
pub(crate) fn in_repository(base: &str, file: &str) -> Option<String> {
    if file.starts_with('<') || file.starts_with('/') || file.is_empty() {
        return None;
    }
    // A URI's scheme (`file:`, `https:`): a SARIF viewer would follow it, out of the repository.
    if file
        .split('/')
        .next()
        .is_some_and(|first| first.contains(':'))
    {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}
