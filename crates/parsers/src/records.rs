//! The typed payload of a compute-sanitizer finding, read once from the lines its parser kept:
//! the example threads as coordinates, the device and host call stacks as locations, and for a
//! race the accesses of both sides and the hazard type where the record's own lines did not
//! give them. Both sanitizer parsers (text and XML) end with [`type_payload`], so the report
//! reads typed fields and never the tool's wording. A location as the tool prints it
//! (`F+0x10 in f.cu:12`) is read here too ([`parse_location`]): the frames of both parsers and
//! the text parser's record lines.

use std::sync::LazyLock;

use regex::Regex;

use crate::facts::HazardType;
use crate::model::{Access, Finding, FindingKind, Location, Severity, SyncScope, ThreadIndex};
use crate::util::parse_u32;

/// Fills what a finding's parser left of its typed payload from its examples and excerpt.
pub(crate) fn type_payload(f: &mut Finding) {
    if f.threads.is_empty() {
        f.threads = f
            .examples
            .iter()
            .filter_map(|e| ThreadIndex::parse(e))
            .collect();
    }
    if f.device_frames.is_empty() {
        f.device_frames = frames(&f.excerpt, "Device Frame:");
    }
    if f.host_frames.is_empty() {
        f.host_frames = host_frames(&f.excerpt, &[]);
    }
    if f.kind == FindingKind::Race {
        race_accesses(f);
        // The scope where the record says it (the text parser reads it from the record's
        // category and severity); an analysis report's warning says none.
        if f.sync_scope.is_none() {
            f.sync_scope = if f.message.contains("Warp Level Programming") {
                Some(SyncScope::Warp)
            } else if f.severity == Severity::Error {
                Some(SyncScope::Block)
            } else {
                None
            };
        }
    }
    if f.kind == FindingKind::BarrierError {
        let message = f.message.to_lowercase();
        f.invalid_arguments = message.contains("invalid argument");
        f.sync_scope = Some(if message.contains("warp") {
            SyncScope::Warp
        } else {
            SyncScope::Block
        });
    }
}

/// A record's host backtrace: the `Host Frame:` lines of its excerpt, then the Python frames
/// (`<module> in oracle.py:49`) its parser kept past the excerpt's end, innermost first.
pub(crate) fn host_frames(excerpt: &[String], python: &[String]) -> Vec<Location> {
    let mut host = frames(excerpt, "Host Frame:");
    for frame in python {
        let frame = frame_location(frame);
        if !host.contains(&frame) {
            host.push(frame);
        }
    }
    host
}

/// The frames printed on lines carrying `marker` (`Device Frame:`), innermost first.
fn frames(excerpt: &[String], marker: &str) -> Vec<Location> {
    excerpt
        .iter()
        .filter_map(|l| l.split_once(marker).map(|(_, frame)| frame_location(frame)))
        .collect()
}

/// A frame as compute-sanitizer prints it: `f+0x60 in file.cu:26`, `<module> in oracle.py:49`,
/// `cuLaunchKernel [0x2f3a1b] in libcuda.so.1`, or a function alone.
fn frame_location(frame: &str) -> Location {
    let loc = parse_location(frame.trim());
    // A native frame's offset (`cuLaunchKernel [0x2f3a1b]`) is an address, not its name.
    let function = match loc.function.rsplit_once(" [0x") {
        Some((name, offset)) if offset.ends_with(']') => name,
        _ => loc.function,
    };
    Location {
        function: Some(function.trim().to_string())
            .filter(|f| !f.is_empty() && !f.starts_with("[0x")),
        file: loc.file.map(str::to_string),
        line: loc.line,
    }
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

fn access(word: &str) -> Option<Access> {
    if word.eq_ignore_ascii_case("write") {
        Some(Access::Write)
    } else if word.eq_ignore_ascii_case("read") {
        Some(Access::Read)
    } else {
        None
    }
}

/// The accesses of a race's two sides where its lines did not name them: from the tool's
/// wording ("Read access ... and Write access"), else from the hazard type (RAW: a write then
/// a read; WAR: a read then a write; WAW: two writes), which is kept in the race's facts
/// where the record's own lines did not give it.
fn race_accesses(f: &mut Finding) {
    static PAIR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?is)\b(write|read)\s+access\b.*?\band\s+(write|read)\s+access\b")
            .expect("valid regex")
    });
    static TYPE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(RAW|WAR|WAW)\b").expect("valid regex"));
    let stated = f.facts.race.as_deref().and_then(|r| r.hazard_type);
    let hazard_type = stated.or_else(|| {
        let word = TYPE.captures(&f.message)?;
        HazardType::of_word(word.get(1)?.as_str())
    });
    if stated.is_none()
        && let Some(t) = hazard_type
    {
        f.facts.race.get_or_insert_default().hazard_type = Some(t);
    }
    let other = f.sides.iter().find_map(|s| s.access);
    if f.access.is_some() && other.is_some() {
        return;
    }
    let text = std::iter::once(f.message.as_str())
        .chain(f.excerpt.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let pair = if let Some(c) = PAIR.captures(&text) {
        Some((access(&c[1]), access(&c[2])))
    } else {
        hazard_type.map(|t| match t {
            HazardType::Raw => (Some(Access::Write), Some(Access::Read)),
            HazardType::War => (Some(Access::Read), Some(Access::Write)),
            HazardType::Waw => (Some(Access::Write), Some(Access::Write)),
        })
    };
    f.race_accesses = pair.map(|(first, second)| [first, second]);
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
}
