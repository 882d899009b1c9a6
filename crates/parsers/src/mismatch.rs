//! Which elements a standard comparison found wrong, as `torch.testing` and `numpy.testing`
//! print it. A leaf: it imports nothing of the crate.

use serde::{Deserialize, Serialize};

/// Which elements a standard comparison found wrong, as it printed them: `torch.testing`'s
/// `assert_close` ("Mismatched elements: 2048 / 4096 (50.0%)", "Greatest absolute difference:
/// 0.5 at index (1, 0) (up to 1e-05 allowed)") and `numpy.testing`'s `assert_allclose`
/// ("Mismatched elements: 40 / 1000 (4%)", "First 5 mismatches are at indices:", " [960]:
/// 0.0 (ACTUAL), 1.96 (DESIRED)", "Max absolute difference among violations: 2."); pytest's
/// rewritten `assert got == expected` of two lists ("At index 37 diff: 0.0 != 18.5"), and
/// GoogleTest's `EXPECT_NEAR` ("The difference between got[i] and want[i] is 48, which exceeds
/// 1e-5, where / got[i] evaluates to 0, / want[i] evaluates to 48, ...", then the test's own
/// "at index 96"), whose compared count they do not say (`total` 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElementMismatch {
    /// Elements outside the tolerance, of all compared.
    pub mismatched: u64,
    pub total: u64,
    /// The greatest absolute difference, and the index torch gives it at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greatest_abs: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub greatest_at: Vec<u64>,
    /// The first mismatched indices numpy lists, in order (pytest's one, GoogleTest's where the
    /// test printed them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first: Vec<Vec<u64>>,
    /// The values of wrong elements as the comparison printed them, in order, each its
    /// left side (the value the test computed, as tests write it first) and its right: numpy's
    /// ACTUAL and DESIRED, pytest's two sides of `!=`, EXPECT_NEAR's two operands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<[f64; 2]>,
    /// Where a program recorded the comparison itself (`helpers/exhibit_compare.py` or `.h`,
    /// in its `exhibit.results/1` document): the compared tensor as rows x columns (leading
    /// dimensions folded into rows)...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shape: Vec<u64>,
    /// ... the runs of rows and of columns holding a wrong element, each `[first, end)`, in
    /// order, at most 16 (`more_rows`, `more_cols` when there were more) ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrong_rows: Vec<[u64; 2]>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_rows: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrong_cols: Vec<[u64; 2]>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_cols: bool,
    /// ... how many wrong elements hold exactly 0 where the reference does not, NaN, or an
    /// infinity ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zeros: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nan: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inf: Option<u64>,
    /// ... and the one ratio of result to reference every wrong element shares (within a
    /// thousandth), where they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

impl ElementMismatch {
    /// The rows and columns compared, where the program recorded its shape.
    pub fn rows_cols(&self) -> Option<(u64, u64)> {
        match self.shape.as_slice() {
            [rows, cols] => Some((*rows, *cols)),
            _ => None,
        }
    }

    /// The listed wrong elements' indices where each is a flat (one-dimensional) index.
    pub fn flat_first(&self) -> Option<Vec<u64>> {
        self.first
            .iter()
            .map(|i| match i.as_slice() {
                [one] => Some(*one),
                _ => None,
            })
            .collect()
    }

    /// The wrong elements' range where they are exactly the last ones: the first mismatch
    /// numpy lists, when the listed ones are consecutive flat indices and as many elements as
    /// are wrong run from it to the end (nothing else can be wrong). `(first, count)`.
    pub fn tail(&self) -> Option<(u64, u64)> {
        let flat = self.flat_first()?;
        let start = *flat.first()?;
        let consecutive = flat.windows(2).all(|w| w[1] == w[0] + 1);
        (consecutive && self.mismatched > 0 && start + self.mismatched == self.total)
            .then_some((start, self.mismatched))
    }
}

/// The mismatch summary of a standard comparison in `text`, if it printed one.
pub fn element_mismatch(text: &str) -> Option<ElementMismatch> {
    let mut out: Option<ElementMismatch> = None;
    let mut listing = false;
    // GoogleTest's operands still to come in a failure's "X evaluates to V" lines, and whether
    // the line after them may be the test's own message (an index).
    let mut operands: Vec<f64> = Vec::new();
    let mut near = false;
    let mut message_next = false;
    for raw in text.lines() {
        let line = raw.trim_start_matches(['E', ' ']).trim();
        if let Some(rest) = line.strip_prefix("Mismatched elements:") {
            let (m, rest) = rest.split_once('/')?;
            let total = rest.split_whitespace().next()?;
            out = Some(ElementMismatch {
                mismatched: number(m.trim())?,
                total: number(total)?,
                ..ElementMismatch::default()
            });
            continue;
        }
        // pytest: "At index 37 diff: 0.0 != 18.5".
        if let Some(rest) = line.strip_prefix("At index ")
            && let Some((at, diff)) = rest.split_once(" diff: ")
            && let Some((left, right)) = diff.split_once(" != ")
        {
            let m = out.get_or_insert_with(ElementMismatch::default);
            // A JUnit document says it twice, in the failure's message and in its text.
            if let (Some(at), Ok(l), Ok(r)) =
                (number(at), left.trim().parse(), right.trim().parse())
                && !m.first.contains(&vec![at])
            {
                m.first.push(vec![at]);
                m.values.push([l, r]);
            }
            continue;
        }
        // GoogleTest's EXPECT_NEAR: a failure's operands, then perhaps the test's own message.
        if raw.starts_with("The difference between ") && line.contains(", which exceeds ") {
            near = true;
            operands.clear();
            message_next = false;
            continue;
        }
        if near && let Some((_, v)) = line.rsplit_once(" evaluates to ") {
            let v = v.split(',').next().unwrap_or(v).trim_end_matches('.');
            operands.push(v.trim().parse().unwrap_or(f64::NAN));
            if operands.len() == 3 {
                let m = out.get_or_insert_with(ElementMismatch::default);
                m.mismatched += 1;
                m.values.push([operands[0], operands[1]]);
                near = false;
                message_next = true;
            }
            continue;
        }
        if message_next {
            message_next = false;
            if let Some(at) = printed_index(line)
                && let Some(m) = out.as_mut()
            {
                m.first.push(vec![at]);
            }
            continue;
        }
        let Some(m) = out.as_mut() else { continue };
        if let Some(rest) = line.strip_prefix("Greatest absolute difference:") {
            let (value, at) = rest.split_once(" at index ").unwrap_or((rest, ""));
            m.greatest_abs = value.trim().parse().ok();
            m.greatest_at = index(at.split(" (up to").next().unwrap_or(""));
        } else if let Some(rest) = line
            .strip_prefix("Max absolute difference among violations:")
            .or_else(|| line.strip_prefix("Max absolute difference:"))
        {
            m.greatest_abs = rest.trim().trim_end_matches('.').parse().ok();
        } else if line.starts_with("First ") && line.ends_with("are at indices:") {
            listing = true;
        } else if listing && line.starts_with('[') {
            if let Some((at, values)) = line.split_once("]:") {
                m.first.push(index(&format!("{at}]")));
                // " 0.0 (ACTUAL), 1.96 (DESIRED)"
                let mut v = values
                    .split(',')
                    .filter_map(|p| p.split_whitespace().next()?.parse::<f64>().ok());
                if let (Some(a), Some(b)) = (v.next(), v.next()) {
                    m.values.push([a, b]);
                }
            }
        } else {
            listing = false;
        }
    }
    out
}

/// The index a test's own failure message names: "at index 96", "index 96", "i = 96".
fn printed_index(line: &str) -> Option<u64> {
    let lower = line.to_ascii_lowercase();
    let after = lower
        .split_once("index ")
        .map(|(_, t)| t)
        .or_else(|| lower.split_once("i = ").map(|(_, t)| t))
        .or_else(|| lower.split_once("i=").map(|(_, t)| t))?;
    let digits: String = after
        .trim_start_matches([' ', ':', '='])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `(1, 0)`, `(255,)`, `[960]` as a list of indices.
fn index(text: &str) -> Vec<u64> {
    text.trim()
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']'])
        .split(',')
        .filter_map(|n| number(n.trim()))
        .collect()
}

/// A count as the comparisons print it (`2048`, `1,000`).
fn number(text: &str) -> Option<u64> {
    text.replace(',', "").trim().parse().ok()
}
