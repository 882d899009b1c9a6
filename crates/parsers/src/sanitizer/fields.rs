//! The pieces of one line: access and memory-space words, race bodies and categories, hazard
//! counts and a tool line glued to the program's output.

use crate::memory_space::MemorySpace;
use crate::model::Access;
use crate::util::{parse_u32, parse_u64};

use super::PREFIX;

pub(super) fn space_of(word: &str) -> Option<MemorySpace> {
    match word {
        "__global__" => Some(MemorySpace::Global),
        "__shared__" => Some(MemorySpace::Shared),
        "__local__" => Some(MemorySpace::Local),
        "__remote_shared__" => Some(MemorySpace::RemoteShared),
        "__generic__" | "generic" => Some(MemorySpace::Generic),
        _ => None,
    }
}

pub(super) fn access_of(word: &str) -> Option<Access> {
    match word {
        "read" | "Read" => Some(Access::Read),
        "write" | "Write" => Some(Access::Write),
        _ => None,
    }
}

pub(super) fn access_name(a: Option<Access>) -> &'static str {
    match a {
        Some(Access::Read) => "read",
        Some(Access::Write) => "write",
        None => "",
    }
}

/// The number after `marker` in `text` ("of size 4 bytes" gives 4).
pub(super) fn size_after(text: &str, marker: &str) -> Option<u32> {
    text.split_once(marker)
        .and_then(|(_, t)| t.split_whitespace().next())
        .and_then(parse_u32)
}

/// A racecheck header's text after its severity ("Error: ", "Warning: ") and the category in
/// parentheses racecheck may put before it ("(Warp Level Programming) "); `None` for a header
/// with neither severity.
pub(super) fn race_body(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("Error: ")
        .or_else(|| text.strip_prefix("Warning: "))?;
    match rest.strip_prefix('(') {
        Some(inner) => inner.split_once(')').map(|(_, t)| t.trim_start()),
        None => Some(rest),
    }
}

/// The category racecheck names in parentheses after a record's severity: "Warp Level
/// Programming" in "Warning: (Warp Level Programming) Potential RAW hazard ...".
pub(super) fn race_category(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("Error: ")
        .or_else(|| text.strip_prefix("Warning: "))?;
    rest.strip_prefix('(')
        .and_then(|inner| inner.split_once(')'))
        .map(|(c, _)| c.trim())
        .filter(|c| !c.is_empty())
}

/// Splits "Write access at LOCATION" into the access and the location text.
pub(super) fn access_at(text: &str) -> (Option<Access>, &str) {
    match text.split_once(" access at ") {
        Some((a, loc)) => (access_of(a.trim()), loc),
        None => (None, text),
    }
}

/// Where the tool's marker (`========= ` followed by text) starts inside a line that the
/// program's own output began: after other text, or after a run of more `=` than the marker
/// has. `None` for a line that is the tool's from its first byte, or holds no marker.
///
/// Every line passes here, so the common case, a line that is the tool's from its first byte, is
/// decided by its prefix without a search, and the search itself is one `memmem` finder built
/// once (a `str::find` per line built a two-way searcher for every line: a fifth of the parse).
pub(super) fn glued_marker(line: &str) -> Option<usize> {
    static MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"========= "));
    if line.starts_with("========= ") {
        return None;
    }
    let at = MARKER.find(line.as_bytes())?;
    let rest = line.get(at + PREFIX.len()..)?;
    let tool_line = rest.trim_start().chars().next().is_some_and(|c| c != '=');
    (at > 0 && tool_line).then_some(at)
}

/// Removes a trailing " [512 hazards]" and returns the count.
pub(super) fn strip_hazard_count(text: &str) -> (&str, Option<u64>) {
    let t = text.trim_end();
    if let Some(open) = t.rfind(" [")
        && t.ends_with(']')
    {
        let inner = t.get(open + 2..t.len() - 1).unwrap_or("");
        if inner.contains("hazard") {
            let n = inner.split_whitespace().next().and_then(parse_u64);
            return (t.get(..open).unwrap_or(t), n);
        }
    }
    (t, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn race_headers_with_and_without_a_category() {
        let warp = "Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ \
                    0x440 in block (0,0,0) :";
        assert_eq!(
            race_body(warp).map(|b| b.starts_with("Potential RAW")),
            Some(true)
        );
        assert_eq!(race_category(warp), Some("Warp Level Programming"));
        let block = "Error: Potential RAW hazard detected at __shared__ 0x480 in block (0,0,0) :";
        assert_eq!(
            race_body(block).map(|b| b.starts_with("Potential ")),
            Some(true)
        );
        assert_eq!(race_category(block), None);
        assert_eq!(race_body("Error: (unclosed Potential"), None);
        assert_eq!(race_body("Barrier error detected."), None);
    }

    #[test]
    fn hazard_counts_are_split_off() {
        assert_eq!(
            strip_hazard_count("f()+0x160 in race.cu:14 [512 hazards]"),
            ("f()+0x160 in race.cu:14", Some(512))
        );
        assert_eq!(strip_hazard_count("f()+0x160"), ("f()+0x160", None));
    }
}
