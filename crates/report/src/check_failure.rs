//! Why a harness check failed when its error is within the tolerance: the check fails on more
//! than the error (NaN or Inf anywhere in the output, elements never written, guard regions
//! overwritten, a second launch on the same inputs that does not reproduce the first, elements
//! beyond their own error bound), and a report that shows an error under the tolerance beside
//! "failed" says which, from what the harness recorded and nothing else.

use parsers::harness::{Check, HarnessResult};

use crate::text::{join_words, plural};

/// Whether a check's error is within its tolerance: the relative L2 error, which the tolerance
/// bounds, is at most the tolerance.
pub fn within_tolerance(check: &Check) -> bool {
    check.rel_l2_err.is_finite() && check.rel_l2_err <= check.tolerance
}

/// What failed a check besides the error, as the harness recorded it in the result's fields
/// and figures: each with its figure, in a fixed order.
pub fn reasons(result: &HarnessResult) -> Vec<String> {
    let Some(check) = &result.check else {
        return Vec::new();
    };
    let figures = &result.figures;
    let mut out = Vec::new();
    if let Some(n) = second_launch_differs(result) {
        let of = figures
            .elements_total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        out.push(format!(
            "a second launch on the same inputs gave different output in {n}{of} elements"
        ));
    }
    if check.nan_count > 0 {
        out.push(plural(check.nan_count, "NaN element", "NaN elements"));
    }
    if let Some(n) = figures.inf_count.filter(|n| *n > 0) {
        out.push(plural(n, "Inf element", "Inf elements"));
    }
    if check.unwritten > 0 {
        out.push(format!(
            "{} never written",
            plural(check.unwritten, "element", "elements")
        ));
    }
    if !check.canaries_corrupted.is_empty() {
        out.push(format!(
            "guard regions overwritten ({})",
            check.canaries_corrupted.join(", ")
        ));
    }
    if let Some(n) = figures.elements_over_bound.filter(|n| *n > 0) {
        out.push(format!(
            "{} beyond their own error bound",
            plural(n, "element", "elements")
        ));
    }
    if figures.elements_compared == Some(0) {
        out.push("no element compared with the reference".to_string());
    }
    out
}

/// How many output elements a second launch on the same inputs changed, when it changed any
/// (the harness's `repeat_elements_differing`).
pub fn second_launch_differs(result: &HarnessResult) -> Option<u64> {
    result.figures.repeat_elements_differing.filter(|n| *n > 0)
}

/// For a failed check whose error is within its tolerance: what failed it, or that the
/// harness recorded nothing else. `None` for a passed check or one over its tolerance.
pub fn within_tolerance_failure(result: &HarnessResult) -> Option<String> {
    let check = result.check.as_ref()?;
    if check.passed || !within_tolerance(check) {
        return None;
    }
    let reasons = reasons(result);
    Some(if reasons.is_empty() {
        "the harness recorded no other reason".to_string()
    } else {
        join_words(&reasons)
    })
}
