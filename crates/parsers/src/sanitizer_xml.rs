//! compute-sanitizer's `--xml --save` output.
//!
//! The document is a `<ComputeSanitizerOutput>` holding one `<record>` per report: `<kind>`
//! (Precise, Imprecise, Api, Analysis, Initcheck, Synccheck, ...), `<who>` (thread and block),
//! `<what>` (text, space, size, direction, error, exception, API fields, or a race's source and
//! destinations), `<where>` (func, path, line) and a `<hostStack>` that is skipped. It is read as a
//! stream of events, so memory grows with the number of distinct findings only. The XML has no
//! summary: it is complete when its root element closes.

use std::io::BufRead;

use crate::facts::{AccessError, ApiError};
use crate::memory_space::MemorySpace;
use crate::model::{
    Access, Finding, FindingKind, Format, Location, ParsedLog, RaceSide, Severity, Tool,
};
use crate::site::{Record, Site, Sites, file_key};
use crate::util::{parse_u32, parse_u64, scrub_addresses};
use quick_xml::Reader;
use quick_xml::events::Event;

/// Deepest element nesting followed; deeper elements are skipped.
const MAX_DEPTH: usize = 64;
/// Longest text kept for one element.
const MAX_TEXT: usize = 16 * 1024;

#[derive(Default)]
struct Side {
    direction: String,
    func: String,
    path: String,
    line: Option<u32>,
    count: Option<u64>,
}

#[derive(Default)]
struct XRec {
    kind: String,
    level: String,
    thread: [String; 3],
    block: [String; 3],
    text: String,
    space: String,
    size: Option<u32>,
    cta_rank: Option<u32>,
    direction: String,
    error: String,
    exception: String,
    kind_type: String,
    api: String,
    message: String,
    result: Option<u64>,
    func: String,
    path: String,
    line: Option<u32>,
    source: Side,
    destinations: Vec<Side>,
}

/// Parses a compute-sanitizer XML document from a reader.
pub(crate) fn parse<R: BufRead>(reader: R) -> ParsedLog {
    let mut log = ParsedLog::new(Format::ComputeSanitizerXml, None);
    let mut sites = Sites::default();
    let mut xml = Reader::from_reader(reader);
    let mut buf = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut skipped_depth = 0usize;
    let mut text = String::new();
    let mut rec = XRec::default();
    let mut in_record = false;
    let mut tools = [false; 4];
    let mut errors = crate::util::XmlErrors::default();
    loop {
        buf.clear();
        let event = match xml.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) if errors.note(&mut log, &e) => continue,
            Err(_) => {
                log.complete = false;
                break;
            }
        };
        match event {
            Event::Start(e) => {
                if path.len() >= MAX_DEPTH || skipped_depth > 0 {
                    skipped_depth += 1;
                    continue;
                }
                let name = e.name().0.to_string();
                if name == "record" {
                    rec = XRec::default();
                    in_record = true;
                } else if name == "destination" && in_record {
                    rec.destinations.push(Side::default());
                }
                path.push(name);
                text.clear();
            }
            // `<ComputeSanitizerOutput/>`: a run with nothing to report.
            Event::Empty(e) if path.is_empty() && e.name().0 == "ComputeSanitizerOutput" => {
                log.complete = errors.none();
            }
            Event::End(_) => {
                if skipped_depth > 0 {
                    skipped_depth -= 1;
                    continue;
                }
                let Some(name) = path.last() else {
                    continue;
                };
                if name == "record" && in_record {
                    in_record = false;
                    finish_record(&rec, &mut sites, &mut tools, &mut log);
                } else if name == "ComputeSanitizerOutput" {
                    log.complete = errors.none();
                } else if in_record {
                    assign(&mut rec, &path, text.trim());
                }
                path.pop();
                text.clear();
            }
            Event::Text(t) if text.len() < MAX_TEXT => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => {
                if let Some(c) = crate::util::xml_entity(&r.into_inner())
                    && text.len() < MAX_TEXT
                {
                    text.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    log.tool = if tools[1] {
        Some(Tool::Racecheck)
    } else if tools[2] {
        Some(Tool::Initcheck)
    } else if tools[3] {
        Some(Tool::Synccheck)
    } else if tools[0] {
        Some(Tool::Memcheck)
    } else {
        None
    };
    log.findings = sites.into_findings();
    for f in &mut log.findings {
        crate::records::type_payload(f);
    }
    log
}

/// Stores the text of an element that just closed, by its path under `<record>`.
fn assign(rec: &mut XRec, path: &[String], text: &str) {
    let Some(start) = path.iter().position(|p| p == "record") else {
        return;
    };
    let rel: Vec<&str> = path.iter().skip(start + 1).map(String::as_str).collect();
    let set = |s: &mut String| {
        s.clear();
        s.push_str(text);
    };
    let axis = |a: &str| match a {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    match rel.as_slice() {
        ["kind"] => set(&mut rec.kind),
        ["level"] => set(&mut rec.level),
        ["who", "threadIdx", a] => {
            if let Some(i) = axis(a)
                && let Some(s) = rec.thread.get_mut(i)
            {
                set(s)
            }
        }
        ["who", "blockIdx", a] => {
            if let Some(i) = axis(a)
                && let Some(s) = rec.block.get_mut(i)
            {
                set(s)
            }
        }
        ["what", "text"] => set(&mut rec.text),
        ["what", "space"] => set(&mut rec.space),
        ["what", "size"] => rec.size = parse_u32(text),
        ["what", "ctaRank"] => rec.cta_rank = parse_u32(text),
        ["what", "direction"] => set(&mut rec.direction),
        ["what", "error"] => set(&mut rec.error),
        ["what", "exception"] => set(&mut rec.exception),
        ["what", "type"] => set(&mut rec.kind_type),
        ["what", "api"] => set(&mut rec.api),
        ["what", "message"] => set(&mut rec.message),
        ["what", "result"] => rec.result = parse_u64(text),
        ["what", "source", rest @ ..] => side(&mut rec.source, rest, text),
        ["what", "destination", rest @ ..] => {
            if let Some(d) = rec.destinations.last_mut() {
                side(d, rest, text);
            }
        }
        ["where", "func"] => set(&mut rec.func),
        ["where", "path"] => set(&mut rec.path),
        ["where", "line"] => rec.line = parse_u32(text),
        _ => {}
    }
}

fn side(s: &mut Side, rel: &[&str], text: &str) {
    match rel {
        ["direction"] => s.direction = text.to_string(),
        ["where", "func"] => s.func = text.to_string(),
        ["where", "path"] => s.path = text.to_string(),
        ["where", "line"] => s.line = parse_u32(text),
        ["count"] => s.count = parse_u64(text),
        _ => {}
    }
}

/// Files a closed `<record>` as a finding of its site: its kind (or an unparsed example, for a
/// kind not known), severity, memory space, access and message, then its facts.
fn finish_record(rec: &XRec, sites: &mut Sites, tools: &mut [bool; 4], log: &mut ParsedLog) {
    let Some((kind, tool)) = classify(rec) else {
        log.unparsed_lines += 1;
        if log.unparsed_examples.len() < crate::util::MAX_UNPARSED_EXAMPLES {
            log.unparsed_examples.push(format!(
                "unrecognised record kind {:?}: {}",
                rec.kind, rec.text
            ));
        }
        return;
    };
    if let Some(t) = tool
        && let Some(slot) = tools.get_mut(t)
    {
        *slot = true;
    }
    let severity = match rec.level.as_str() {
        "Warning" => Severity::Warning,
        "Info" => Severity::Info,
        _ if kind == FindingKind::UnusedMemory => Severity::Warning,
        _ => Severity::Error,
    };
    // A race is located at its source side; any other record at its `<where>`.
    let (func, path, line, primary_access) = if kind == FindingKind::Race {
        (
            &rec.source.func,
            &rec.source.path,
            rec.source.line,
            direction(&rec.source.direction),
        )
    } else {
        (&rec.func, &rec.path, rec.line, direction(&rec.direction))
    };
    let (message, discriminator) = message_and_discriminator(rec, kind, primary_access);
    let example = (!rec.thread[0].is_empty()).then(|| {
        format!(
            "thread ({},{},{}) in block ({},{},{})",
            rec.thread[0], rec.thread[1], rec.thread[2], rec.block[0], rec.block[1], rec.block[2]
        )
    });
    let excerpt = [excerpt_line(rec, path, line)];
    let (i, new) = sites.add(Record {
        site: Site {
            kind,
            kernel: (!func.is_empty()).then_some(func.as_str()),
            file: (!path.is_empty()).then_some(path.as_str()),
            line,
            space: space(rec, kind),
            size: rec.size,
            discriminator: &discriminator,
        },
        severity,
        access: primary_access,
        message: &message,
        example: example.as_deref(),
        excerpt: &excerpt,
        occurrences: 1,
    });
    if let Some(f) = sites.get_mut(i) {
        add_facts(f, rec, kind, new);
    }
}

/// A record's finding kind, and the tool it tells (the index into `tools`: memcheck,
/// racecheck, initcheck, synccheck); `None` for a kind not known.
fn classify(rec: &XRec) -> Option<(FindingKind, Option<usize>)> {
    let text = rec.text.to_ascii_lowercase();
    Some(match rec.kind.as_str() {
        "Api" => (FindingKind::HostApiError, None),
        "Analysis" | "Hazard" => (FindingKind::Race, Some(1)),
        "Initcheck" if text.starts_with("unused") => (FindingKind::UnusedMemory, Some(2)),
        "Initcheck" => (FindingKind::UninitializedRead, Some(2)),
        "Synccheck" => (FindingKind::BarrierError, Some(3)),
        _ if text.contains("race") || text.contains("hazard") => (FindingKind::Race, Some(1)),
        _ if text.starts_with("leaked") || rec.kind == "Leak" => (FindingKind::MemoryLeak, Some(0)),
        _ if text.contains("malloc/free") => (FindingKind::AllocationError, Some(0)),
        _ if rec.exception.contains("Trace/breakpoint trap") => (FindingKind::Trap, Some(0)),
        _ if !rec.exception.is_empty() => (FindingKind::DeviceException, Some(0)),
        _ if rec.error.contains("misaligned") => (FindingKind::MisalignedAccess, Some(0)),
        _ if text.starts_with("invalid") || !rec.space.is_empty() => {
            (FindingKind::InvalidAccess, Some(0))
        }
        _ => return None,
    })
}

/// The memory space a record names: its `<space>`, else (initcheck names it only in its text,
/// "Uninitialized __global__ memory read") the space its text names; a race's is shared.
fn space(rec: &XRec, kind: FindingKind) -> Option<MemorySpace> {
    let named = if rec.space.is_empty() {
        ["__global__", "__shared__", "__local__"]
            .into_iter()
            .find(|s| rec.text.contains(s))
            .unwrap_or("")
    } else {
        rec.space.as_str()
    };
    match named {
        "__global__" => Some(MemorySpace::Global),
        "__shared__" => Some(MemorySpace::Shared),
        "__local__" => Some(MemorySpace::Local),
        "__remote_shared__" => Some(MemorySpace::RemoteShared),
        "" if kind == FindingKind::Race => Some(MemorySpace::Shared),
        "" => None,
        _ => Some(MemorySpace::Generic),
    }
}

/// An access as a `<direction>` names it.
fn direction(d: &str) -> Option<Access> {
    match d.to_ascii_lowercase().as_str() {
        "read" => Some(Access::Read),
        "write" => Some(Access::Write),
        _ => None,
    }
}

fn access_name(a: Option<Access>) -> &'static str {
    match a {
        Some(Access::Read) => "read",
        Some(Access::Write) => "write",
        None => "",
    }
}

/// A record's message (its text, addresses scrubbed; a barrier error's with its `<type>`), and
/// what tells its site from another at the same place: the same words the text parser keys the
/// same record on.
fn message_and_discriminator(
    rec: &XRec,
    kind: FindingKind,
    primary_access: Option<Access>,
) -> (String, String) {
    let mut discriminator = String::new();
    let mut message = if rec.text.is_empty() {
        rec.exception.clone()
    } else {
        scrub_addresses(&rec.text)
    };
    match kind {
        FindingKind::InvalidAccess | FindingKind::MisalignedAccess => {
            discriminator.push_str(access_name(primary_access))
        }
        FindingKind::HostApiError => {
            let name = rec.text.split_whitespace().nth(2).unwrap_or("");
            discriminator = format!("{name}:{}", rec.api);
        }
        FindingKind::Race => {
            discriminator.push_str(access_name(primary_access));
            for d in &rec.destinations {
                discriminator.push_str(&format!(
                    "|{}@{}:{}",
                    access_name(direction(&d.direction)),
                    if d.path.is_empty() {
                        d.func.as_str()
                    } else {
                        file_key(&d.path)
                    },
                    d.line.map(|l| l.to_string()).unwrap_or_default()
                ));
            }
        }
        FindingKind::BarrierError => {
            if !rec.kind_type.is_empty() {
                message = format!("{}: {}", rec.text, rec.kind_type);
            }
            // The same words the text form prints after "Barrier error detected.".
            discriminator.push_str(rec.kind_type.trim().trim_end_matches('.'));
        }
        FindingKind::DeviceException | FindingKind::AllocationError => {
            discriminator.push_str(&message)
        }
        _ => {}
    }
    (message, discriminator)
}

/// The one line a record is quoted by: `<record> kind=K TEXT at PATH:LINE`.
fn excerpt_line(rec: &XRec, path: &str, line: Option<u32>) -> String {
    format!(
        "<record> kind={} {}{}",
        rec.kind,
        if rec.text.is_empty() {
            &rec.exception
        } else {
            &rec.text
        },
        if path.is_empty() {
            String::new()
        } else {
            format!(
                " at {}:{}",
                path,
                line.map(|l| l.to_string()).unwrap_or_default()
            )
        }
    )
}

/// What a record adds to its finding: a race's hazards (every record's); and from the first
/// record of a finding, a race's other sides, the access error and the API call's error.
fn add_facts(f: &mut Finding, rec: &XRec, kind: FindingKind, new: bool) {
    if kind == FindingKind::Race {
        let hazards: u64 = rec.destinations.iter().map(|d| d.count.unwrap_or(1)).sum();
        let race = f.facts.race.get_or_insert_default();
        race.hazards = Some(race.hazards.unwrap_or(0).saturating_add(hazards.max(1)));
    }
    if !new {
        return;
    }
    if kind == FindingKind::Race {
        f.related = rec
            .destinations
            .iter()
            .map(|d| Location {
                function: Some(format!(
                    "{} {}",
                    access_name(direction(&d.direction)),
                    d.func
                )),
                file: (!d.path.is_empty()).then(|| d.path.clone()),
                line: d.line,
            })
            .collect();
        f.sides = rec
            .destinations
            .iter()
            .map(|d| RaceSide {
                access: direction(&d.direction),
                location: Location {
                    function: Some(d.func.clone()),
                    file: (!d.path.is_empty()).then(|| d.path.clone()),
                    line: d.line,
                },
                hazards: d.count,
            })
            .collect();
    }
    // An `Api` record's `<error>` is the error's name, read below; any other's says why the
    // access was invalid.
    if kind != FindingKind::HostApiError
        && let Some(error) = AccessError::of_words(&rec.error)
    {
        f.facts.memory.get_or_insert_default().access_error = Some(error);
    }
    if let Some(rank) = rec.cta_rank {
        f.facts.memory.get_or_insert_default().cta_rank = Some(rank);
    }
    if kind == FindingKind::HostApiError {
        f.facts.api_error = Some(Box::new(ApiError {
            name: rec
                .text
                .split_whitespace()
                .nth(2)
                .unwrap_or_default()
                .to_string(),
            code: rec.result,
            message: (!rec.message.is_empty()).then(|| rec.message.clone()),
            call: (!rec.api.is_empty()).then(|| rec.api.clone()),
        }));
    }
}
