//! A program's own words about how it failed: the line that explains a failure, and a numeric
//! comparison the program reports (`Max absolute diff: 0.529297 (threshold: 0.01)`,
//! `max_abs_err = 3.1e-2 > atol 1e-3`, `mismatch at 17: 2.5`).

use std::sync::LazyLock;

use regex::Regex;

/// A comparison the program printed: what it measured, the figure, and its limit when it
/// printed one.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The measure as the program named it (`Max absolute diff`).
    pub measure: String,
    pub value: f64,
    pub limit: Option<f64>,
}

const NUMBER: &str = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)";

/// The program's own comparison on this line, if it printed one: an error or difference measure
/// followed by its figure.
pub fn mismatch(line: &str) -> Option<Mismatch> {
    static MEASURE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\b((?:max(?:imum)?|mean|avg|average|rel(?:ative)?|abs(?:olute)?|l2|l_2|rms)[ _-]?(?:(?:abs(?:olute)?|rel(?:ative)?)[ _-]?)?(?:diff(?:erence)?|err(?:or)?|deviation)|mismatch(?:es)?|max[ _-]?(?:abs|rel))\b[^0-9a-zA-Z+\-.]{{0,6}}{NUMBER}"
        ))
        .expect("valid regex")
    });
    static LIMIT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\b(?:threshold|tol(?:erance)?|atol|rtol|limit|allowed|expected\s*<=?)\b[^0-9a-zA-Z+\-.]{{0,6}}{NUMBER}"
        ))
        .expect("valid regex")
    });
    let c = MEASURE.captures(line)?;
    let value: f64 = c.get(2)?.as_str().parse().ok()?;
    let limit = LIMIT
        .captures(line)
        .and_then(|l| l.get(1)?.as_str().parse().ok());
    Some(Mismatch {
        measure: c.get(1)?.as_str().to_string(),
        value,
        limit,
    })
}

/// The value the program got and the one it expected, where its line prints both:
/// `out[0] = 8.000000, expected 256.000000`, `got 3, expected 4`, `expected 4 but got 3`.
pub fn got_expected(line: &str) -> Option<(f64, f64)> {
    static GOT_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)(?:=|\bgot\b|\bactual\b|\bresult\b)\s*:?\s*{NUMBER}\s*[,;(]?\s*(?:but\s+|while\s+)?(?:the\s+)?(?:expected|reference|want(?:ed)?)\s*(?:=|:|is)?\s*{NUMBER}"
        ))
        .expect("valid regex")
    });
    static EXPECTED_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\bexpected\s*(?:=|:)?\s*{NUMBER}\s*[,;]?\s*(?:but\s+)?(?:got|actual|found)\s*(?:=|:)?\s*{NUMBER}"
        ))
        .expect("valid regex")
    });
    let number = |c: &regex::Captures, i: usize| c.get(i)?.as_str().parse::<f64>().ok();
    if let Some(c) = GOT_FIRST.captures(line) {
        return Some((number(&c, 1)?, number(&c, 2)?));
    }
    let c = EXPECTED_FIRST.captures(line)?;
    Some((number(&c, 2)?, number(&c, 1)?))
}

/// Every value a program printed beside the value it expected, in order: each line, and each
/// `;`-separated part of it, read as [`got_expected`] reads one, and also as a named value
/// followed by its expectation (`sum 160, expected 180`). At most 4,096 pairs.
pub fn got_expected_pairs(text: &str) -> Vec<(f64, f64)> {
    static NAMED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\b[a-z_][a-z0-9_.\[\]]*\s*[:=]?\s*{NUMBER}\s*[,;(]\s*(?:but\s+)?(?:expected|want(?:ed)?|reference)\s*(?:=|:|is)?\s*{NUMBER}"
        ))
        .expect("valid regex")
    });
    let mut out = Vec::new();
    for part in text.lines().flat_map(|l| l.split(';')) {
        let pair = got_expected(part).or_else(|| {
            let c = NAMED.captures(part)?;
            Some((
                c.get(1)?.as_str().parse().ok()?,
                c.get(2)?.as_str().parse().ok()?,
            ))
        });
        if let Some(pair) = pair {
            out.push(pair);
            if out.len() >= 4096 {
                break;
            }
        }
    }
    out
}

/// Whether a line is decoration (a banner of `=`, `-`, `*`, box-drawing or emoji), never an
/// explanation.
pub fn is_banner(line: &str) -> bool {
    !line.chars().any(char::is_alphanumeric)
}

/// The line of a failed program's output that says why it failed, as a kernel engineer would
/// pick it: a Python exception's last line (`RuntimeError: ...`), else the program's own
/// failing comparison with its figure, else a line that says it failed (`FAILED`, `assert`,
/// `mismatch`, `error`); never a banner. `None` when no line says so.
pub fn telling_line<'a>(
    lines: impl DoubleEndedIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Failure|Interrupt)\b(?::|$)")
            .expect("valid regex")
    });
    static FAILED: LazyLock<Regex> = LazyLock::new(|| {
        // `error` only as a label (`Error: ...`), never a count (`0 errors`).
        Regex::new(r"(?i)\b(?:failed|fail|failure|assert(?:ion)?|mismatch(?:es|ed)?)\b|\berror\s*:")
            .expect("valid regex")
    });
    let own = |l: &&str| {
        let t = l.trim();
        !t.is_empty() && !is_banner(t) && !t.starts_with("==")
    };
    static PASSED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(?:pass(?:ed)?|ok)\b|✓|✅").expect("valid regex"));
    let lines = lines.filter(own);
    // Of the comparisons the program printed, the one that failed: over its limit, or on a line
    // that says it failed; a comparison on a line that says it passed (`PASS ... max abs diff
    // 0`) or within its limit is what the check did not fail on.
    let failing = |l: &&str| {
        mismatch(l).is_some_and(|m| {
            m.limit.is_some_and(|limit| m.value > limit)
                || (FAILED.is_match(l) && !PASSED.is_match(l))
        })
    };
    let undecided = |l: &&str| {
        mismatch(l)
            .is_some_and(|m| m.limit.is_none_or(|limit| m.value > limit) && !PASSED.is_match(l))
    };
    lines
        .clone()
        .rev()
        .find(|l| EXCEPTION.is_match(l.trim()))
        .or_else(|| lines.clone().find(failing))
        .or_else(|| lines.clone().find(undecided))
        .or_else(|| lines.clone().rev().find(|l| FAILED.is_match(l)))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_programs_own_comparison_is_read_with_its_limit() {
        let m = mismatch("  Max absolute diff: 0.529297 (threshold: 0.01)").expect("a mismatch");
        assert_eq!(
            (m.measure.as_str(), m.value, m.limit),
            ("Max absolute diff", 0.529297, Some(0.01))
        );
        let m = mismatch("max_abs_err = 3.1e-2 > atol 1e-3").expect("a mismatch");
        assert_eq!((m.value, m.limit), (3.1e-2, Some(1e-3)));
        let m = mismatch("rel L2 error: 2.7e-4").expect("a mismatch");
        assert_eq!(m.value, 2.7e-4);
        assert_eq!(mismatch("Results saved to: out/v3_quick.json"), None);
        assert_eq!(mismatch("Running V3 kernel..."), None);
    }

    #[test]
    fn a_value_and_its_reference_are_read_in_either_order() {
        assert_eq!(
            got_expected(
                "FAIL row_sums: out[0] = 8.000000, expected 256.000000 (max abs diff 1736)"
            ),
            Some((8.0, 256.0))
        );
        assert_eq!(got_expected("expected 4 but got 3"), Some((3.0, 4.0)));
        assert_eq!(got_expected("max abs diff 0.5 (atol 0.01)"), None);
    }

    #[test]
    fn the_telling_line_is_the_exception_or_the_failing_comparison_never_a_banner() {
        let out = "====\nCorrectness Test: B=2\n  Max absolute diff: 0.529297 (threshold: 0.01)\n\n❌ FAILED\n====\nResults saved to: x.json\n";
        assert_eq!(
            telling_line(out.lines()),
            Some("Max absolute diff: 0.529297 (threshold: 0.01)")
        );
        let trace = "Traceback (most recent call last):\n  File \"o.py\", line 3\ntorch.AcceleratorError: CUDA error: an illegal memory access was encountered\n";
        assert_eq!(
            telling_line(trace.lines()),
            Some("torch.AcceleratorError: CUDA error: an illegal memory access was encountered")
        );
        assert_eq!(
            telling_line("[V3 DEBUG] Grid=(256,1,1)\n================\n".lines()),
            None
        );
        assert_eq!(
            telling_line("step 1\n❌ FAILED\nbye\n".lines()),
            Some("❌ FAILED")
        );
        // Several comparisons: the one that failed, not the first printed.
        let out = "PASS center_blocks blockDim 32 (16384 elements, max abs diff 0)\nFAIL center_blocks \
                   blockDim 64: out[1] = 4.609375, expected 2.125000 (max abs diff 2.765625 at \
                   out[3073], tolerance 0.0001)\n";
        assert!(
            telling_line(out.lines())
                .is_some_and(|l| l.starts_with("FAIL center_blocks blockDim 64")),
            "{:?}",
            telling_line(out.lines())
        );
        let out = "hidden 1024: max abs diff 0.0019 (tolerance 0.01)\nhidden 1536: max abs diff \
                   0.557 (tolerance 0.01)\n";
        assert_eq!(
            telling_line(out.lines()),
            Some("hidden 1536: max abs diff 0.557 (tolerance 0.01)")
        );
    }
}
