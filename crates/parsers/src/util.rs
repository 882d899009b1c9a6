//! Small text helpers shared by the parsers.

use crate::model::ParsedLog;

/// How many unparsed lines a log keeps as examples.
pub(crate) const MAX_UNPARSED_EXAMPLES: usize = 8;
/// How long an unparsed example may be.
pub(crate) const UNPARSED_EXAMPLE_LEN: usize = 240;

/// Parses an unsigned integer that may carry thousands separators (`8,393,728`).
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    let mut digits = 0;
    for b in s.bytes() {
        match b {
            b'0'..=b'9' => {
                value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                digits += 1;
            }
            b',' => {}
            _ => return None,
        }
    }
    (digits > 0).then_some(value)
}

pub(crate) fn parse_u32(s: &str) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// Parses a decimal number that may carry thousands separators (`3,176,262,626.26`).
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let cleaned: String = s.chars().filter(|&c| c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Replaces hexadecimal literals (`0x7fb728800fb0`) by `0x…`, so a message holds no address.
pub(crate) fn scrub_addresses(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find("0x") {
        let (head, tail) = rest.split_at(pos);
        out.push_str(head);
        let hex_len = tail
            .get(2..)
            .map(|t| t.bytes().take_while(u8::is_ascii_hexdigit).count())
            .unwrap_or(0);
        if hex_len == 0 {
            out.push_str("0x");
        } else {
            out.push_str("0x…");
        }
        rest = tail.get(2 + hex_len..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Counts a line that no rule of a parser recognised, keeping the first few (clipped) as
/// examples.
pub(crate) fn note_unparsed(log: &mut ParsedLog, line: &str) {
    log.unparsed_lines += 1;
    if log.unparsed_examples.len() < MAX_UNPARSED_EXAMPLES {
        log.unparsed_examples.push(clip(line, UNPARSED_EXAMPLE_LEN));
    }
}

/// XML errors after which the rest of a document is given up.
const MAX_XML_ERRORS: usize = 64;

/// The XML read errors of one document, each counted as an unparsed line: the reader resumes
/// after most, and a document that keeps failing is given up.
#[derive(Default)]
pub(crate) struct XmlErrors(usize);

impl XmlErrors {
    /// Notes `error` in `log`; false once the document should be given up.
    pub(crate) fn note(&mut self, log: &mut ParsedLog, error: &dyn std::fmt::Display) -> bool {
        note_unparsed(log, &format!("xml error: {error}"));
        self.0 += 1;
        self.0 < MAX_XML_ERRORS
    }

    /// Whether the document read without one.
    pub(crate) fn none(&self) -> bool {
        self.0 == 0
    }
}

/// Shortens a line for display in `unparsed_examples`.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s.get(..end).unwrap_or(""))
}

/// The character an XML entity reference (`&quot;`, `&#10;`, `&#x0A;`) stands for, by its name;
/// `None` for an entity XML does not predefine.
pub(crate) fn xml_entity(name: &str) -> Option<char> {
    match name {
        "quot" => Some('"'),
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "apos" => Some('\''),
        other => {
            let number = other.strip_prefix('#')?;
            let code = match number
                .strip_prefix('x')
                .or_else(|| number.strip_prefix('X'))
            {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_thousands_separators() {
        assert_eq!(parse_u64("8,393,728"), Some(8_393_728));
        assert_eq!(parse_u64("1"), Some(1));
        assert_eq!(parse_u64(""), None);
        assert_eq!(parse_u64("12a"), None);
        assert_eq!(parse_u64("99999999999999999999999"), None);
        assert_eq!(parse_f64("3,176,262,626.26"), Some(3_176_262_626.26));
        assert_eq!(parse_f64("n/a"), None);
        assert_eq!(parse_f64("inf"), None);
    }

    #[test]
    fn addresses_are_scrubbed() {
        assert_eq!(
            scrub_addresses("Leaked 1,024 bytes at 0x7f1626800000"),
            "Leaked 1,024 bytes at 0x…"
        );
        assert_eq!(scrub_addresses("0x"), "0x");
    }
}
