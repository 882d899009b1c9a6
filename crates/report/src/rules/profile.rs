//! The profile as the performance rules read it: a kernel's metrics, duration and source-page
//! lines within one config's profile (and one profiling run's log, where a cause came from one).

use parsers::SourceLine;

use super::Ctx;
use crate::diagnosis::SourceLocation;
use crate::join::{MetricRef, Source};
use crate::kernel_id::KernelId;
use crate::text::relative_path;

/// Where a cause's figures come from: its config's profile and, within it, the log of the
/// profiling run (one case) whose rule made the cause, so that a tiny launch's figures never
/// speak for a large one's.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'s> {
    pub(crate) config: Option<&'s str>,
    pub(crate) log: Option<usize>,
}

impl Scope<'_> {
    pub(crate) fn holds(&self, m: &MetricRef) -> bool {
        m.config.as_deref() == self.config && self.log.is_none_or(|l| m.source == l)
    }
}

/// A metric's value for a kernel in a scope.
pub(crate) fn metric(
    ctx: &Ctx,
    scope: Scope,
    kernel: Option<&KernelId>,
    name: &str,
) -> Option<f64> {
    ctx.joined
        .metrics
        .iter()
        .find(|m| m.metric.name == name && scope.holds(m) && kernel.is_none_or(|k| m.kernel == *k))
        .map(|m| m.metric.value)
}

/// A kernel's profiled duration in microseconds, whatever unit ncu printed it in.
pub(crate) fn duration_us(ctx: &Ctx, scope: Scope, kernel: Option<&KernelId>) -> Option<f64> {
    let m = ctx.joined.metrics.iter().find(|m| {
        m.metric.name == "Duration" && scope.holds(m) && kernel.is_none_or(|k| m.kernel == *k)
    })?;
    microseconds(m.metric)
}

/// A duration metric in microseconds, whatever unit ncu printed it in.
pub(crate) fn microseconds(metric: &parsers::Metric) -> Option<f64> {
    let scale = match metric.unit.as_deref().unwrap_or("") {
        "ns" | "nsecond" => 1e-3,
        "us" | "usecond" => 1.0,
        "ms" | "msecond" => 1e3,
        "s" | "second" => 1e6,
        _ => return None,
    };
    Some(metric.value * scale)
}

/// The source-page lines of a kernel in a scope: the source page its profiling run exported
/// beside the log (else every source page of the config; any page without a config).
pub(crate) fn source_lines<'j>(
    ctx: &Ctx<'j, '_>,
    scope: Scope,
    kernel: Option<&KernelId>,
) -> Vec<&'j SourceLine> {
    let j = ctx.joined;
    let dir = |path: &str| std::path::Path::new(path).parent().map(|p| p.to_path_buf());
    let log_dir = scope
        .log
        .and_then(|i| j.source(i))
        .and_then(|s| dir(s.path));
    let pages: Vec<&Source> = j
        .sources
        .iter()
        .filter(|s| scope.config.is_none() || s.config == scope.config)
        .filter(|s| !s.log.source_lines.is_empty())
        .collect();
    let beside = log_dir.is_some() && pages.iter().any(|s| dir(s.path) == log_dir);
    pages
        .into_iter()
        .filter(|s| !beside || dir(s.path) == log_dir)
        .flat_map(|s| &s.log.source_lines)
        // The source page's functions: tool strings the join does not index.
        .filter(|l| kernel.is_none_or(|k| KernelId::of(&l.function) == *k))
        .collect()
}

/// The line with the most of `by` (the last of those tied), where any has some.
pub(crate) fn most<'j>(
    lines: &[&'j SourceLine],
    by: impl Fn(&SourceLine) -> u64,
) -> Option<&'j SourceLine> {
    lines
        .iter()
        .copied()
        .filter(|l| by(l) > 0)
        .max_by_key(|l| by(l))
}

/// A source line's place, in the run's terms.
pub(crate) fn place(ctx: &Ctx, l: &SourceLine) -> SourceLocation {
    SourceLocation {
        file: relative_path(&l.file, &ctx.joined.repo_files),
        line: Some(l.line),
    }
}

/// `part` in percent of `all`.
pub(crate) fn share(part: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        part as f64 * 100.0 / all as f64
    }
}

/// Words of the project's own with no argument (code between backticks), as [`msg!`] makes
/// them from a literal: for a table of wordings.
///
/// [`msg!`]: crate::message::msg
pub(crate) fn own_words(template: &str) -> crate::message::Message {
    crate::message::Message::template(template, Vec::new())
}

/// A figure rounded to a `by`th (`by` 1000.0: three decimals), as the report's JSON holds it.
pub(crate) fn rounded(x: f64, by: f64) -> serde_json::Value {
    serde_json::json!((x * by).round() / by)
}
