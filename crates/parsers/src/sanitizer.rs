//! compute-sanitizer's text output (memcheck, racecheck in both report forms, initcheck,
//! synccheck).
//!
//! Every line the tool prints starts with `=========`; anything else is the program's own output
//! and is counted as unparsed. A record opens with an unindented line ("Invalid __global__ read of
//! size 4 bytes", "Program hit ...", "Error: Race reported between ...") and runs until a bare
//! `=========` line or the next record; its indented lines carry the location (`at F+0x10 in
//! f.cu:12`), the thread and block, the address relation, `Device Frame:` and `Host Frame:` lines.
//! Lines are classified by a prefix check before any field is parsed, so the hot path (host frames,
//! repeated records) costs a few comparisons per line. Records fold into one finding per site.

use serde_json::{Value, json};

use crate::model::{
    Access, Finding, FindingKind, Format, Location, MemorySpace, ParsedLog, RaceSide, Severity,
    Tool,
};
use crate::site::{MAX_EXCERPT, Record, Site, Sites, file_key};
use crate::util::{note_unparsed, parse_u32, parse_u64, scrub_addresses};

/// The prefix compute-sanitizer puts on each line it prints.
const PREFIX: &str = "=========";

/// Parses compute-sanitizer text line by line.
pub(crate) struct SanitizerParser {
    log: ParsedLog,
    sites: Sites,
    rec: Rec,
    tools: ToolHints,
    saw_summary: bool,
    sides: SideCache,
    last: Option<LastSite>,
    /// What every record of a finding adds beyond its first: the spread of its accesses.
    spreads: Vec<Spread>,
    /// The program's own output lines, as many as [`MAX_OUTPUT`], for the line that says it
    /// failed; and how many it printed in all.
    output: Vec<String>,
    output_lines: u32,
}

/// The most lines of the program's own output kept to find its failure line; past them, the
/// order of its failure and the records is not told.
const MAX_OUTPUT: usize = 4096;

/// The spread of one finding's records: how far past (or before) its allocation each access
/// landed, and which threads and blocks made them. The first record alone says little (records
/// come in no particular order); the spread tells a tail overshoot from an index one step too
/// far or a pointer gone wild.
#[derive(Default, Clone)]
struct Spread {
    after: Option<(u64, u64)>,
    before: Option<(u64, u64)>,
    /// Distinct `(thread, block)` pairs and distinct blocks, up to [`Spread::MAX`] each.
    threads: std::collections::BTreeSet<([u32; 3], [u32; 3])>,
    blocks: std::collections::BTreeSet<[u32; 3]>,
    /// More distinct threads than were kept.
    more: bool,
}

impl Spread {
    const MAX: usize = 4096;

    fn add(&mut self, after: Option<u64>, before: Option<u64>, example: &str) {
        let widen = |range: &mut Option<(u64, u64)>, n: u64| {
            *range = Some(match *range {
                Some((lo, hi)) => (lo.min(n), hi.max(n)),
                None => (n, n),
            });
        };
        if let Some(n) = after {
            widen(&mut self.after, n);
        }
        if let Some(n) = before {
            widen(&mut self.before, n);
        }
        if let Some((thread, block)) = thread_and_block(example) {
            if self.threads.len() < Spread::MAX {
                self.threads.insert((thread, block));
                self.blocks.insert(block);
            } else {
                self.more = true;
            }
        }
    }

    /// Writes the spread into a finding's details (only what was seen).
    fn write(&self, f: &mut Finding) {
        if let Some((lo, hi)) = self.after {
            f.details.insert("bytes_after_min".into(), json!(lo));
            f.details.insert("bytes_after_max".into(), json!(hi));
        }
        if let Some((lo, hi)) = self.before {
            f.details.insert("bytes_before_min".into(), json!(lo));
            f.details.insert("bytes_before_max".into(), json!(hi));
        }
        if !self.threads.is_empty() {
            f.details
                .insert("distinct_threads".into(), json!(self.threads.len()));
            f.details
                .insert("distinct_blocks".into(), json!(self.blocks.len()));
            if self.more {
                f.details
                    .insert("distinct_threads_more".into(), json!(true));
            }
            let blocks: Vec<String> = self
                .blocks
                .iter()
                .take(8)
                .map(|b| format!("({},{},{})", b[0], b[1], b[2]))
                .collect();
            f.details.insert("blocks".into(), json!(blocks));
        }
    }
}

/// `thread (x,y,z) in block (x,y,z)` as two triples.
fn thread_and_block(example: &str) -> Option<([u32; 3], [u32; 3])> {
    // Once per record: one finder built once, and the triples read without a searcher each.
    static IN_BLOCK: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b" in block"));
    let triple = |text: &str| -> Option<[u32; 3]> {
        let inner = text.trim().strip_prefix('(')?;
        let inner = inner.get(..memchr::memchr(b')', inner.as_bytes())?)?;
        let mut out = [0u32; 3];
        let mut parts = inner.as_bytes().split(|b| *b == b',');
        for slot in &mut out {
            let part = std::str::from_utf8(parts.next()?).ok()?;
            *slot = part.trim().parse().ok()?;
        }
        Some(out)
    };
    let rest = example.trim().strip_prefix("thread")?;
    let at = IN_BLOCK.find(rest.as_bytes())?;
    let thread = rest.get(..at)?;
    let block = rest.get(at + " in block".len()..)?;
    Some((triple(thread)?, triple(block)?))
}

/// The discriminator fragments ("|read@race.cu:12") of the last few race sides seen, so that
/// repeated hazard records do not parse the same location text again.
#[derive(Default)]
struct SideCache {
    entries: Vec<(Option<Access>, String, String)>,
    next: usize,
}

impl SideCache {
    const SIZE: usize = 8;

    fn fragment(&mut self, access: Option<Access>, text: &str) -> &str {
        let hit = self
            .entries
            .iter()
            .position(|(a, t, _)| *a == access && t == text);
        let i = match hit {
            Some(i) => i,
            None => {
                let loc = parse_location(text);
                let fragment = format!(
                    "|{}@{}:{}",
                    access_name(access),
                    loc.file.map(file_key).unwrap_or(loc.function),
                    loc.line.map(|l| l.to_string()).unwrap_or_default()
                );
                let entry = (access, text.to_string(), fragment);
                let i = self.next % Self::SIZE;
                self.next = self.next.wrapping_add(1);
                match self.entries.get_mut(i) {
                    Some(slot) => *slot = entry,
                    None => self.entries.push(entry),
                }
                i.min(self.entries.len().saturating_sub(1))
            }
        };
        self.entries.get(i).map(|e| e.2.as_str()).unwrap_or("")
    }
}

/// The site of the previous record and its finding: consecutive records of one site (the
/// common case in a long log) are counted without hashing.
struct LastSite {
    index: usize,
    kind: FindingKind,
    kernel: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    space: Option<MemorySpace>,
    size: Option<u32>,
    discriminator: String,
}

impl LastSite {
    fn matches(&self, s: &Site<'_>) -> bool {
        self.kind == s.kind
            && self.line == s.line
            && self.space == s.space
            && self.size == s.size
            && self.kernel.as_deref() == s.kernel
            && self.file.as_deref() == s.file
            && self.discriminator == s.discriminator
    }
}

#[derive(Default)]
struct ToolHints {
    memcheck: bool,
    racecheck: bool,
    initcheck: bool,
    synccheck: bool,
}

/// The record being read. Its buffers are reused from record to record.
#[derive(Default)]
struct Rec {
    active: bool,
    /// Unknown headers stay tentative until a location or thread line confirms a record.
    tentative: bool,
    kind: Option<FindingKind>,
    severity: Option<Severity>,
    space: Option<MemorySpace>,
    access: Option<Access>,
    size: Option<u32>,
    header: String,
    /// The location fields survive `reset`: the next record usually repeats the same `at` and
    /// `Device Frame:` lines, and then they are not parsed again.
    at_text: String,
    function: String,
    clone_of: String,
    file: String,
    line: Option<u32>,
    has_location: bool,
    frame_text: String,
    outer_frame: String,
    has_frame: bool,
    example: String,
    discriminator: String,
    details: Vec<(&'static str, Value)>,
    /// The other sides of a race as (access, location text); parsed into [`Location`]s only
    /// for the first record of a finding.
    related: Vec<(Option<Access>, String, Option<u64>)>,
    related_len: usize,
    has_related_example: bool,
    hazards: u64,
    leaked: u64,
    raw: Vec<String>,
    raw_len: usize,
    /// The host backtrace's Python frames (`<module> in oracle.py:49`), innermost first: they
    /// often come after more native frames than an excerpt keeps.
    python_frames: Vec<String>,
}

/// The most Python frames a record keeps.
const MAX_PYTHON_FRAMES: usize = 16;

impl Rec {
    fn reset(&mut self) {
        self.active = false;
        self.tentative = false;
        self.kind = None;
        self.severity = None;
        self.space = None;
        self.access = None;
        self.size = None;
        self.header.clear();
        self.has_location = false;
        self.has_frame = false;
        self.example.clear();
        self.discriminator.clear();
        self.details.clear();
        self.related_len = 0;
        self.has_related_example = false;
        self.hazards = 0;
        self.leaked = 0;
        self.raw_len = 0;
        self.python_frames.clear();
    }

    fn push_raw(&mut self, line: &str) {
        if self.raw_len >= MAX_EXCERPT {
            return;
        }
        match self.raw.get_mut(self.raw_len) {
            Some(slot) => {
                slot.clear();
                slot.push_str(line);
            }
            None => self.raw.push(line.to_string()),
        }
        self.raw_len += 1;
    }

    fn push_related(&mut self, access: Option<Access>, text: &str, hazards: Option<u64>) {
        match self.related.get_mut(self.related_len) {
            Some(slot) => {
                slot.0 = access;
                slot.1.clear();
                slot.1.push_str(text);
                slot.2 = hazards;
            }
            None => self.related.push((access, text.to_string(), hazards)),
        }
        self.related_len += 1;
    }

    /// Takes the location from an `at` line, parsing it only when it differs from the last one.
    fn set_location_text(&mut self, text: &str) {
        self.has_location = true;
        if self.at_text != text {
            self.at_text.clear();
            self.at_text.push_str(text);
            let loc = parse_location(text);
            self.store_location(&loc);
        }
    }

    fn set_location(&mut self, loc: &Loc<'_>) {
        self.has_location = true;
        // A location that did not come from an `at` line: forget the cached text.
        self.at_text.clear();
        self.store_location(loc);
    }

    fn store_location(&mut self, loc: &Loc<'_>) {
        self.function.clear();
        self.function.push_str(loc.function);
        self.clone_of.clear();
        self.clone_of.push_str(loc.clone_of.unwrap_or(""));
        self.file.clear();
        self.file.push_str(loc.file.unwrap_or(""));
        self.line = loc.line;
    }
}

impl SanitizerParser {
    pub(crate) fn new() -> SanitizerParser {
        SanitizerParser {
            log: ParsedLog::new(Format::ComputeSanitizer, None),
            sites: Sites::default(),
            rec: Rec::default(),
            tools: ToolHints::default(),
            saw_summary: false,
            sides: SideCache::default(),
            last: None,
            spreads: Vec::new(),
            output: Vec::new(),
            output_lines: 0,
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        // A program that prints without a trailing newline (or prints a literal `\n`, or a
        // banner of `=`) leaves the tool's next line glued to its own: the tool's line starts
        // at its marker, wherever that is, and what comes before it is the program's.
        if let Some(at) = glued_marker(line) {
            self.unparsed(&line[..at]);
            self.line(&line[at..]);
            return;
        }
        let Some(body) = line.strip_prefix(PREFIX) else {
            self.unparsed(line);
            return;
        };
        // Bodies start with one space; the indentation after it tells record lines apart.
        let body = body.strip_prefix(' ').unwrap_or(body);
        let text = body.trim_start_matches(' ');
        let indent = body.len() - text.len();
        if text.trim_end().is_empty() {
            self.end_record();
            return;
        }
        if indent == 0 {
            self.header(text, line);
        } else {
            self.detail(text, line);
        }
    }

    fn unparsed(&mut self, line: &str) {
        if !line.starts_with(PREFIX) && !line.trim().is_empty() {
            self.output_lines = self.output_lines.saturating_add(1);
            if self.output.len() < MAX_OUTPUT {
                self.output.push(crate::util::clip(line, 512));
            }
        }
        note_unparsed(&mut self.log, line);
    }

    fn start(&mut self, kind: FindingKind, severity: Severity, header: &str, line: &str) {
        self.end_record();
        let r = &mut self.rec;
        r.active = true;
        r.kind = Some(kind);
        r.severity = Some(severity);
        r.header.push_str(header);
        r.push_raw(line);
    }

    fn header(&mut self, text: &str, line: &str) {
        let first = text.as_bytes().first().copied().unwrap_or(b' ');
        match first {
            b'I' if text.starts_with("Invalid ") => {
                self.start(FindingKind::InvalidAccess, Severity::Error, text, line);
                self.tools.memcheck = true;
                // "Invalid __global__ read of size 4 bytes"
                let mut words = text.split_whitespace().skip(1);
                self.rec.space = words.next().and_then(space_of);
                self.rec.access = words.next().and_then(access_of);
                self.rec.size = size_after(text, "of size ");
                self.rec
                    .discriminator
                    .push_str(access_name(self.rec.access));
            }
            b'I' if text.starts_with("Internal") => {
                self.start(FindingKind::ToolError, Severity::Error, text, line);
            }
            b'U' if text.starts_with("Uninitialized ") => {
                self.start(FindingKind::UninitializedRead, Severity::Error, text, line);
                self.tools.initcheck = true;
                // "Uninitialized __global__ memory read of size 4 bytes"
                let mut words = text.split_whitespace().skip(1);
                self.rec.space = words.next().and_then(space_of);
                self.rec.access = words.nth(1).and_then(access_of);
                self.rec.size = size_after(text, "of size ");
            }
            b'U' if text.starts_with("Unused memory") => {
                self.start(FindingKind::UnusedMemory, Severity::Warning, text, line);
                self.tools.initcheck = true;
                if let Some(size) = size_after(text, "of size ") {
                    self.rec.details.push(("allocation_size", json!(size)));
                }
            }
            b'P' if text.starts_with("Program hit ") => {
                self.start(FindingKind::HostApiError, Severity::Error, text, line);
                self.host_api(text);
            }
            b'L' if text.starts_with("Leaked ") => {
                self.start(FindingKind::MemoryLeak, Severity::Error, text, line);
                self.tools.memcheck = true;
                // "Leaked 1,024 bytes at 0x7f1626800000"
                self.rec.leaked = text
                    .split_whitespace()
                    .nth(1)
                    .and_then(parse_u64)
                    .unwrap_or(0);
            }
            b'L' if text.starts_with("LEAK SUMMARY:") => {
                self.end_record();
                self.tools.memcheck = true;
            }
            b'M' if text.starts_with("Malloc/Free") => {
                self.start(FindingKind::AllocationError, Severity::Error, text, line);
                self.tools.memcheck = true;
                self.rec.discriminator.push_str(&scrub_addresses(text));
            }
            b'M' if text.starts_with("Misaligned") => {
                self.start(FindingKind::MisalignedAccess, Severity::Error, text, line);
                self.tools.memcheck = true;
                self.rec.discriminator.push_str(&scrub_addresses(text));
            }
            b'B' if text.starts_with("Barrier error") => {
                self.start(FindingKind::BarrierError, Severity::Error, text, line);
                self.tools.synccheck = true;
                // "Barrier error detected. Divergent thread(s) in warp." keeps what follows the
                // first sentence, the words the XML form puts in <type>.
                let kind = text.split_once(". ").map(|(_, t)| t).unwrap_or(text);
                self.rec
                    .discriminator
                    .push_str(kind.trim().trim_end_matches('.'));
            }
            b'T' if text.starts_with("Trace/breakpoint trap") => {
                self.start(FindingKind::Trap, Severity::Error, text, line);
                self.tools.memcheck = true;
            }
            b'T' if text.starts_with("Target application") => self.end_record(),
            b'E' if text.starts_with("ERROR SUMMARY:") => self.error_summary(text),
            b'E' | b'W'
                if race_body(text).is_some_and(|b| b.starts_with("Race reported between ")) =>
            {
                self.race(text, line)
            }
            b'E' | b'W' if race_body(text).is_some_and(|b| b.starts_with("Potential ")) => {
                self.hazard(text, line)
            }
            b'E' if text.starts_with("Error:") => {
                self.start(FindingKind::ToolError, Severity::Error, text, line);
                self.rec.discriminator.push_str(&scrub_addresses(text));
            }
            b'R' if text.starts_with("RACECHECK SUMMARY:") => self.racecheck_summary(text),
            b'C' if text.starts_with("COMPUTE-SANITIZER") => self.end_record(),
            _ => {
                // Another device exception ("Illegal Instruction", "Warp Illegal Address", ...)
                // is confirmed by the location or thread lines that follow it.
                self.start(FindingKind::DeviceException, Severity::Error, text, line);
                self.rec.tentative = true;
                self.rec.discriminator.push_str(&scrub_addresses(text));
            }
        }
    }

    fn detail(&mut self, text: &str, line: &str) {
        if !self.rec.active {
            self.unparsed(line);
            return;
        }
        let first = text.as_bytes().first().copied().unwrap_or(b' ');
        match first {
            b'H' if text.starts_with("Host Frame:") => {
                self.rec.push_raw(line);
                let frame = text.get("Host Frame:".len()..).unwrap_or("").trim();
                if frame.contains(".py:") && self.rec.python_frames.len() < MAX_PYTHON_FRAMES {
                    self.rec.python_frames.push(frame.to_string());
                }
            }
            b'S' if text.starts_with("Saved host backtrace") => self.rec.push_raw(line),
            b'a' if text.starts_with("at ") => {
                self.rec.push_raw(line);
                if !self.rec.has_location {
                    self.rec.set_location_text(text.get(3..).unwrap_or(""));
                }
                self.rec.tentative = false;
            }
            b'b' if text.starts_with("by thread ") => {
                self.rec.push_raw(line);
                if self.rec.example.is_empty() {
                    self.rec.example.push_str(text.get(3..).unwrap_or(text));
                }
                self.rec.tentative = false;
            }
            b'D' if text.starts_with("Device Frame:") => {
                self.rec.push_raw(line);
                let r = &mut self.rec;
                r.has_frame = true;
                if r.frame_text != text {
                    r.frame_text.clear();
                    r.frame_text.push_str(text);
                    let loc =
                        parse_location(text.get("Device Frame:".len()..).unwrap_or("").trim());
                    r.outer_frame.clear();
                    r.outer_frame.push_str(loc.function);
                }
            }
            b'A' if text.starts_with("Access to ") || text.starts_with("Address ") => {
                self.rec.push_raw(line);
                if text.ends_with("is misaligned") {
                    if self.rec.kind == Some(FindingKind::InvalidAccess) {
                        self.rec.kind = Some(FindingKind::MisalignedAccess);
                    }
                    self.rec.details.push(("error", json!("misaligned")));
                } else if text.ends_with("is out of bounds") {
                    self.rec.details.push(("error", json!("out of bounds")));
                }
            }
            b'a' if text.starts_with("and is ") => {
                self.rec.push_raw(line);
                self.allocation_relation(text);
            }
            b'a' if text.starts_with("and ") && text.contains(" access at ") => {
                self.rec.push_raw(line);
                self.race_other_side(text.get(4..).unwrap_or(""));
            }
            b'W' | b'R'
                if text.starts_with("Write Thread (") || text.starts_with("Read Thread (") =>
            {
                self.rec.push_raw(line);
                self.hazard_thread(text);
            }
            b'C' | b'I'
                if text.starts_with("Current Value") || text.starts_with("Incoming Value") =>
            {
                self.rec.push_raw(line);
            }
            _ if self.rec.kind == Some(FindingKind::UnusedMemory)
                || self.rec.kind == Some(FindingKind::ToolError) =>
            {
                self.rec.push_raw(line);
            }
            _ => {
                self.rec.push_raw(line);
                self.unparsed(line);
            }
        }
    }

    fn host_api(&mut self, text: &str) {
        // Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on
        // CUDA API call to cudaDeviceSynchronize.
        let rest = text.get("Program hit ".len()..).unwrap_or("");
        let name = rest.split_whitespace().next().unwrap_or("");
        let code = rest
            .split_once("(error ")
            .and_then(|(_, t)| t.split_once(')'))
            .and_then(|(n, _)| parse_u64(n));
        let message = rest
            .split_once("due to \"")
            .and_then(|(_, t)| t.split_once('"'))
            .map(|(m, _)| m);
        let call = rest
            .rsplit_once("API call to ")
            .map(|(_, c)| c.trim_end_matches('.').trim());
        let r = &mut self.rec;
        r.details.push(("error_name", json!(name)));
        if let Some(code) = code {
            r.details.push(("error_code", json!(code)));
        }
        if let Some(message) = message {
            r.details.push(("error_message", json!(message)));
        }
        if let Some(call) = call {
            r.details.push(("api_call", json!(call)));
        }
        r.discriminator.push_str(name);
        r.discriminator.push(':');
        r.discriminator.push_str(call.unwrap_or(""));
    }

    fn allocation_relation(&mut self, text: &str) {
        // "and is 13 bytes after the nearest allocation at 0x... of size 4,000 bytes"
        // "and is inside the nearest allocation at 0x... of size 4,096 bytes"
        let rest = text.get("and is ".len()..).unwrap_or("");
        let r = &mut self.rec;
        if rest.starts_with("inside") {
            r.details.push(("inside_allocation", json!(true)));
        } else {
            let mut words = rest.split_whitespace();
            let n = words.next().and_then(parse_u64);
            let _bytes = words.next();
            match (n, words.next()) {
                (Some(n), Some("after")) => r.details.push(("bytes_after", json!(n))),
                (Some(n), Some("before")) => r.details.push(("bytes_before", json!(n))),
                _ => {}
            }
        }
        if let Some(size) = rest
            .rsplit_once("of size ")
            .and_then(|(_, s)| s.split_whitespace().next())
            .and_then(parse_u64)
        {
            r.details.push(("allocation_size", json!(size)));
        }
    }

    /// Opens a racecheck record: an error unless racecheck calls it a warning. Records whether
    /// the race is between threads of one warp (`"scope": "warp"`) or of a block (`"block"`)
    /// where the record says: the hazard report tags warp-level programming hazards "(Warp
    /// Level Programming)", and an error is a race between warps. The analysis report's
    /// warnings say neither: racecheck gives them to hazards between lanes of one warp and to
    /// some between warps (a block's total written by thread 0 and read by every thread of a
    /// 64-thread block, seen on an H100), so their scope is left unknown.
    fn start_race(&mut self, text: &str, line: &str) {
        let severity = if text.starts_with("Warning") {
            Severity::Warning
        } else {
            Severity::Error
        };
        self.start(FindingKind::Race, severity, text, line);
        self.tools.racecheck = true;
        let category = race_category(text);
        let warp = match category {
            Some(c) => Some(c.to_ascii_lowercase().contains("warp")),
            None => (severity == Severity::Error).then_some(false),
        };
        let r = &mut self.rec;
        if let Some(c) = category {
            r.details.push(("category", json!(c)));
        }
        if let Some(warp) = warp {
            r.details
                .push(("scope", json!(if warp { "warp" } else { "block" })));
        }
        // Two records of one pair of lines at two severities are two facts: the stronger one
        // sets the fix.
        if severity == Severity::Warning {
            r.discriminator.push_str("warning|");
        }
    }

    /// racecheck's default report: "Error: Race reported between Read access at F+0x130 in
    /// race.cu:12", followed by "and Write access at ... [512 hazards]" lines.
    fn race(&mut self, text: &str, line: &str) {
        self.start_race(text, line);
        let rest = text
            .split_once("Race reported between ")
            .map(|(_, r)| r)
            .unwrap_or("");
        let (access, loc) = access_at(rest);
        self.rec.access = access;
        self.rec.space = Some(MemorySpace::Shared);
        let loc = parse_location(strip_hazard_count(loc).0);
        self.rec.set_location(&loc);
        self.rec.discriminator.push_str(access_name(access));
    }

    fn race_other_side(&mut self, text: &str) {
        let (access, loc) = access_at(text);
        let (loc, hazards) = strip_hazard_count(loc);
        self.rec.hazards = self.rec.hazards.saturating_add(hazards.unwrap_or(1));
        let fragment = self.sides.fragment(access, loc);
        self.rec.discriminator.push_str(fragment);
        self.rec.push_related(access, loc, hazards);
    }

    /// racecheck's `--racecheck-report hazard` (and `all`) form: "Error: Potential RAW hazard
    /// detected at __shared__ 0x47c in block (0,0,0) :" (a warp-level one reads "Warning: (Warp
    /// Level Programming) Potential RAW hazard ..."), then a "Write Thread (31,0,0) at ..." line
    /// and a "Read Thread (32,0,0) at ..." line.
    fn hazard(&mut self, text: &str, line: &str) {
        self.start_race(text, line);
        // Words after "Potential": TYPE "hazard" "detected" "at" SPACE ADDRESS "in" "block" IDX ":"
        let body = race_body(text).unwrap_or("");
        let mut words = body.split_whitespace().skip(1);
        let hazard_type = words.next().unwrap_or("");
        let space = words.nth(3).and_then(space_of);
        let block = words.nth(2).zip(words.next());
        let r = &mut self.rec;
        r.hazards = 1;
        r.details.push(("hazard_type", json!(hazard_type)));
        r.discriminator.push_str(hazard_type);
        r.space = space.or(Some(MemorySpace::Shared));
        if let Some((word, index)) = block {
            r.example.push_str(word);
            r.example.push(' ');
            r.example.push_str(index);
        }
    }

    fn hazard_thread(&mut self, text: &str) {
        // "Write Thread (31,0,0) at reverse_tile(const int *, int *)+0x120 in race.cu:10"
        let Some((who, at)) = text.split_once(") at ") else {
            return;
        };
        let access = who.split_whitespace().next().and_then(access_of);
        let fragment = self.sides.fragment(access, at);
        let r = &mut self.rec;
        r.discriminator.push_str(fragment);
        if !r.has_location {
            r.set_location_text(at);
            r.access = access;
        } else {
            r.push_related(access, at, None);
        }
        if !r.example.is_empty() && r.example.len() < 160 {
            r.example
                .push_str(if r.has_related_example { ", " } else { ": " });
            r.has_related_example = true;
            r.example.push_str(who);
            r.example.push(')');
        }
    }

    fn error_summary(&mut self, text: &str) {
        self.end_record();
        // "ERROR SUMMARY: 11 errors", "ERROR SUMMARY: 1 error",
        // "ERROR SUMMARY: 8096 errors were not printed. Use --print-limit ..."
        let rest = text.get("ERROR SUMMARY:".len()..).unwrap_or("").trim();
        let n = rest.split_whitespace().next().and_then(parse_u64);
        if rest.contains("were not printed") {
            self.log.unprinted_errors = self.log.unprinted_errors.saturating_add(n.unwrap_or(0));
        } else if let Some(n) = n {
            self.log.reported_errors =
                Some(self.log.reported_errors.unwrap_or(0).saturating_add(n));
            self.saw_summary = true;
        } else {
            self.unparsed(text);
        }
    }

    fn racecheck_summary(&mut self, text: &str) {
        self.end_record();
        self.tools.racecheck = true;
        // "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
        let rest = text.get("RACECHECK SUMMARY:".len()..).unwrap_or("");
        let displayed = rest.split_whitespace().next().and_then(parse_u64);
        let inner = rest
            .split_once('(')
            .and_then(|(_, t)| t.split_once(')'))
            .map(|(t, _)| t)
            .unwrap_or("");
        for part in inner.split(',') {
            let mut words = part.split_whitespace();
            let n = words.next().and_then(parse_u64);
            match (n, words.next()) {
                (Some(n), Some(w)) if w.starts_with("error") => self.log.reported_errors = Some(n),
                (Some(n), Some(w)) if w.starts_with("warning") => {
                    self.log.reported_warnings = Some(n)
                }
                _ => {}
            }
        }
        if let (Some(displayed), Some(errors), Some(warnings)) = (
            displayed,
            self.log.reported_errors,
            self.log.reported_warnings,
        ) {
            self.log.unprinted_errors = (errors + warnings).saturating_sub(displayed);
        }
        self.saw_summary = true;
    }

    fn end_record(&mut self) {
        if !self.rec.active {
            return;
        }
        if self.rec.tentative {
            // An unknown unindented line that no location followed: not a record after all.
            let n = self.rec.raw_len;
            for i in 0..n {
                let line = self.rec.raw.get(i).cloned().unwrap_or_default();
                self.unparsed(&line);
            }
            self.rec.reset();
            return;
        }
        let r = &self.rec;
        let Some(kind) = r.kind else {
            self.rec.reset();
            return;
        };
        if kind == FindingKind::DeviceException {
            self.tools.memcheck = true;
        }
        let function = if r.has_location {
            r.function.as_str()
        } else {
            ""
        };
        let clone_of = if r.has_location {
            r.clone_of.as_str()
        } else {
            ""
        };
        let file = if r.has_location { r.file.as_str() } else { "" };
        let line = if r.has_location { r.line } else { None };
        let kernel = if r.has_frame && !r.outer_frame.is_empty() {
            Some(r.outer_frame.as_str())
        } else if !clone_of.is_empty() {
            Some(clone_of)
        } else if !function.is_empty() {
            Some(function)
        } else {
            None
        };
        let site = Site {
            kind,
            kernel,
            file: (!file.is_empty()).then_some(file),
            line,
            space: r.space,
            size: r.size,
            discriminator: &r.discriminator,
        };
        let example = (!r.example.is_empty()).then_some(r.example.as_str());
        let last = self
            .last
            .as_ref()
            .filter(|l| l.matches(&site))
            .map(|l| l.index);
        let (i, new) = match last.or_else(|| self.sites.find(&site)) {
            Some(i) => {
                self.sites.bump(i, 1, example);
                (i, false)
            }
            None => {
                let message = scrub_addresses(r.header.trim_end_matches([':', ' ']));
                self.sites.add(Record {
                    site,
                    severity: r.severity.unwrap_or(Severity::Error),
                    access: r.access,
                    message: &message,
                    example,
                    excerpt: r.raw.get(..r.raw_len).unwrap_or(&[]),
                    occurrences: 1,
                })
            }
        };
        if last.is_none() {
            self.last = Some(LastSite {
                index: i,
                kind: site.kind,
                kernel: site.kernel.map(str::to_string),
                file: site.file.map(str::to_string),
                line: site.line,
                space: site.space,
                size: site.size,
                discriminator: site.discriminator.to_string(),
            });
        }
        let detail = |key: &str| {
            self.rec
                .details
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.as_u64())
        };
        let (after, before) = (detail("bytes_after"), detail("bytes_before"));
        if self.spreads.len() <= i {
            self.spreads.resize(i + 1, Spread::default());
        }
        if let Some(spread) = self.spreads.get_mut(i) {
            spread.add(after, before, &self.rec.example);
        }
        let r = &self.rec;
        let hazards = r.hazards;
        let leaked = r.leaked;
        if let Some(f) = self.sites.get_mut(i) {
            if new {
                f.output_before = Some(self.output_lines);
                for (k, v) in &self.rec.details {
                    f.details.entry(k.to_string()).or_insert_with(|| v.clone());
                }
                if !self.rec.python_frames.is_empty() {
                    f.details
                        .insert("python_frames".into(), json!(self.rec.python_frames));
                }
                let sides = self.rec.related.iter().take(self.rec.related_len);
                f.related = sides
                    .clone()
                    .map(|(access, text, _)| {
                        let loc = parse_location(text);
                        Location {
                            function: Some(format!("{} {}", access_name(*access), loc.function)),
                            file: loc.file.map(str::to_string),
                            line: loc.line,
                        }
                    })
                    .collect();
                f.sides = sides
                    .map(|(access, text, hazards)| {
                        let loc = parse_location(text);
                        RaceSide {
                            access: *access,
                            location: Location {
                                function: Some(loc.function.to_string()),
                                file: loc.file.map(str::to_string),
                                line: loc.line,
                            },
                            hazards: *hazards,
                        }
                    })
                    .collect();
                let r = &self.rec;
                if r.has_location && !r.function.is_empty() && kernel != Some(r.function.as_str()) {
                    f.details
                        .insert("function".to_string(), json!(r.function.clone()));
                }
            }
            if hazards > 0 {
                add_u64(f, "hazards", hazards);
            }
            if leaked > 0 {
                add_u64(f, "leaked_bytes", leaked);
            }
        }
        self.rec.reset();
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        if !self.saw_summary && self.rec.active {
            // A log cut off inside a record: what is left of it (a header without its location,
            // one side of a race) would be a finding the whole log does not have. It is kept
            // as unparsed lines, and the log is incomplete.
            let n = self.rec.raw_len;
            for i in 0..n {
                let line = self.rec.raw.get(i).cloned().unwrap_or_default();
                self.unparsed(&line);
            }
            self.rec.reset();
        }
        self.end_record();
        let t = &self.tools;
        self.log.tool = if t.racecheck {
            Some(Tool::Racecheck)
        } else if t.initcheck {
            Some(Tool::Initcheck)
        } else if t.synccheck {
            Some(Tool::Synccheck)
        } else if t.memcheck {
            Some(Tool::Memcheck)
        } else {
            None
        };
        self.log.complete = self.saw_summary;
        self.log.findings = std::mem::take(&mut self.sites).into_findings();
        for (f, spread) in self.log.findings.iter_mut().zip(&self.spreads) {
            spread.write(f);
        }
        for f in &mut self.log.findings {
            crate::records::type_payload(f);
        }
        if self.output.len() as u64 == u64::from(self.output_lines) {
            let lines = self.output.iter().map(String::as_str);
            self.log.failure_output = crate::program::telling_line(lines).and_then(|text| {
                let index = self.output.iter().position(|l| l.trim() == text)?;
                Some(crate::OutputLine {
                    text: text.to_string(),
                    index: u32::try_from(index).ok()?,
                })
            });
        }
        cross_check(&mut self.log);
        self.log
    }
}

/// Never a false clean: when the summary counts errors (or racecheck hazards) and no record was
/// read as a finding, a finding says how many could not be read and quotes the lines that were
/// not understood.
fn cross_check(log: &mut ParsedLog) {
    let reported = log
        .reported_errors
        .unwrap_or(0)
        .saturating_add(log.reported_warnings.unwrap_or(0));
    let read = log
        .findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Error | Severity::Warning));
    if reported == 0 || read {
        return;
    }
    let tool = log.tool.map_or("compute-sanitizer", |t| match t {
        Tool::Memcheck => "memcheck",
        Tool::Racecheck => "racecheck",
        Tool::Initcheck => "initcheck",
        Tool::Synccheck => "synccheck",
    });
    let mut details = serde_json::Map::new();
    details.insert("reported".into(), json!(reported));
    log.findings.push(Finding {
        kind: FindingKind::UnreadErrors,
        severity: Severity::Error,
        count: reported,
        fingerprint: crate::site::fingerprint(&Site {
            kind: FindingKind::UnreadErrors,
            kernel: None,
            file: None,
            line: None,
            space: None,
            size: None,
            discriminator: tool,
        }),
        kernel: None,
        file: None,
        line: None,
        space: None,
        access: None,
        size: None,
        message: format!(
            "{tool}'s summary reports {reported} error{} that could not be read as records",
            if reported == 1 { "" } else { "s" }
        ),
        excerpt: log.unparsed_examples.clone(),
        examples: Vec::new(),
        related: Vec::new(),
        sides: Vec::new(),
        race_accesses: None,
        sync_scope: None,
        invalid_arguments: false,
        threads: Vec::new(),
        device_frames: Vec::new(),
        host_frames: Vec::new(),
        details,
        output_before: None,
        profiler_rule: None,
    });
}

fn add_u64(f: &mut Finding, key: &str, n: u64) {
    let old = f.details.get(key).and_then(Value::as_u64).unwrap_or(0);
    f.details
        .insert(key.to_string(), json!(old.saturating_add(n)));
}

fn space_of(word: &str) -> Option<MemorySpace> {
    match word {
        "__global__" => Some(MemorySpace::Global),
        "__shared__" => Some(MemorySpace::Shared),
        "__local__" => Some(MemorySpace::Local),
        "__generic__" | "generic" => Some(MemorySpace::Generic),
        _ => None,
    }
}

fn access_of(word: &str) -> Option<Access> {
    match word {
        "read" | "Read" => Some(Access::Read),
        "write" | "Write" => Some(Access::Write),
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

/// The number after `marker` in `text` ("of size 4 bytes" gives 4).
fn size_after(text: &str, marker: &str) -> Option<u32> {
    text.split_once(marker)
        .and_then(|(_, t)| t.split_whitespace().next())
        .and_then(parse_u32)
}

/// A racecheck header's text after its severity ("Error: ", "Warning: ") and the category in
/// parentheses racecheck may put before it ("(Warp Level Programming) "); `None` for a header
/// with neither severity.
fn race_body(text: &str) -> Option<&str> {
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
fn race_category(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("Error: ")
        .or_else(|| text.strip_prefix("Warning: "))?;
    rest.strip_prefix('(')
        .and_then(|inner| inner.split_once(')'))
        .map(|(c, _)| c.trim())
        .filter(|c| !c.is_empty())
}

/// Splits "Write access at LOCATION" into the access and the location text.
fn access_at(text: &str) -> (Option<Access>, &str) {
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
fn glued_marker(line: &str) -> Option<usize> {
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
fn strip_hazard_count(text: &str) -> (&str, Option<u64>) {
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
