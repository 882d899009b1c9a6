//! The pieces of one line: locations as the tool prints them, access and memory-space words,
//! race bodies and categories, hazard counts and a tool line glued to the program's output.

use crate::model::{Access, MemorySpace};
use crate::util::{parse_u32, parse_u64};

use super::PREFIX;

pub(super) fn space_of(word: &str) -> Option<MemorySpace> {
    match word {
        "__global__" => Some(MemorySpace::Global),
        "__shared__" => Some(MemorySpace::Shared),
        "__local__" => Some(MemorySpace::Local),
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

/// A location as compute-sanitizer prints it.
#[derive(Debug, PartialEq)]
pub(crate) struct Loc<'a> {
    pub function: &'a str,
    /// The kernel a `[clone K]` prefix names: the function was inlined or cloned into K.
    pub clone_of: Option<&'a str>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

/// Parses "F+0x10 in f.cu:12", "F+0x20" and "[clone K] F+0x10 in f.cu:12".
pub(crate) fn parse_location(text: &str) -> Loc<'_> {
    let text = text.trim();
    let (func_part, file, line) = match text.rsplit_once(" in ") {
        Some((f, place)) if looks_like_place(place) => {
            let place = place.trim();
            match place.rsplit_once(':') {
                Some((file, line)) if line.bytes().all(|b| b.is_ascii_digit()) => {
                    (f, Some(file), parse_u32(line))
                }
                _ => (f, Some(place), None),
            }
        }
        _ => (text, None, None),
    };
    let mut func = func_part.trim();
    let mut clone_of = None;
    if let Some(rest) = func.strip_prefix("[clone ")
        && let Some(close) = matching_bracket(rest)
    {
        clone_of = rest.get(..close).map(str::trim);
        func = rest.get(close + 1..).unwrap_or("").trim();
    }
    if let Some(plus) = func.rfind("+0x")
        && func
            .get(plus + 3..)
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        func = func.get(..plus).unwrap_or(func);
    }
    Loc {
        function: func,
        clone_of,
        file,
        line,
    }
}

/// A place is "file:line" or a file name: no spaces before the last colon part, no parentheses.
fn looks_like_place(place: &str) -> bool {
    let place = place.trim();
    !place.is_empty() && !place.contains('(') && !place.contains(' ')
}

/// The index of the `]` closing a bracket already opened, skipping nested ones.
fn matching_bracket(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Some(i),
            ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_in_every_printed_form() {
        assert_eq!(
            parse_location("read_past_end(const float *, float *, int, int)+0xc0 in oob.cu:11"),
            Loc {
                function: "read_past_end(const float *, float *, int, int)",
                clone_of: None,
                file: Some("oob.cu"),
                line: Some(11)
            }
        );
        assert_eq!(
            parse_location("wmma_from_local(const __half *, const __half *, float *)+0x20"),
            Loc {
                function: "wmma_from_local(const __half *, const __half *, float *)",
                clone_of: None,
                file: None,
                line: None
            }
        );
        let l = parse_location(
            "[clone void exhibit::faults::scale_tail<float, (int)4>(T1 *, int, T1)] void \
             exhibit::faults::scale_store<float, (int)4>(T1 *, int, T1)+0x2c0 in templ.cu:11",
        );
        assert_eq!(
            l.clone_of,
            Some("void exhibit::faults::scale_tail<float, (int)4>(T1 *, int, T1)")
        );
        assert_eq!(
            l.function,
            "void exhibit::faults::scale_store<float, (int)4>(T1 *, int, T1)"
        );
        assert_eq!((l.file, l.line), (Some("templ.cu"), Some(11)));
    }

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
