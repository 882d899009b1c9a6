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

mod fields;
mod finding;
mod lines;

use crate::facts::{AccessError, ApiError, ByteRange, HazardType, MemoryFacts, RecordSpread};
use crate::memory_space::MemorySpace;
use crate::model::{
    Access, Finding, FindingKind, Format, OutputLine, ParsedLog, Severity, SyncScope, Tool,
};
use crate::records::{Loc, parse_location};
use crate::site::{MAX_EXCERPT, Site, Sites, file_key};
use crate::util::note_unparsed;
use fields::{access_name, glued_marker};
use finding::cross_check;

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
    /// The last device-side assertion the program's output printed (`f.cu:30: void k(int *):
    /// block: [0,0,0], thread: [0,0,0] Assertion `v >= 0` failed.`): the place of the
    /// `assert` record that follows it, which names only `__assertfail`.
    last_assert: Option<DeviceAssert>,
}

/// A device-side assertion as the CUDA runtime prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DeviceAssert {
    file: String,
    line: u32,
    function: String,
    condition: String,
}

impl DeviceAssert {
    /// Reads `FILE:LINE: FUNCTION: block: [..], thread: [..] Assertion `COND` failed.`.
    fn parse(line: &str) -> Option<DeviceAssert> {
        let (place, rest) = line.split_once(": block: [")?;
        let condition = rest
            .split_once("Assertion `")?
            .1
            .strip_suffix("` failed.")?
            .to_string();
        let (at, function) = place.split_once(": ")?;
        let (file, number) = at.rsplit_once(':')?;
        Some(DeviceAssert {
            file: file.to_string(),
            line: number.trim().parse().ok()?,
            function: function.trim().to_string(),
            condition,
        })
    }
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

    /// The spread as a finding's fact (only what was seen; nothing when nothing was).
    fn write(&self, f: &mut Finding) {
        let range = |r: Option<(u64, u64)>| r.map(|(min, max)| ByteRange { min, max });
        let seen = !self.threads.is_empty();
        let spread = RecordSpread {
            bytes_after: range(self.after),
            bytes_before: range(self.before),
            distinct_threads: seen.then_some(self.threads.len() as u64),
            more_threads: seen && self.more,
            distinct_blocks: seen.then_some(self.blocks.len() as u64),
            blocks: self.blocks.iter().take(8).copied().collect(),
        };
        if spread != RecordSpread::default() {
            f.facts.spread = Some(Box::new(spread));
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
    /// What the record's address lines say of the access and its allocation, or its header of
    /// an unused allocation.
    memory: MemoryFacts,
    /// A "Program hit ..." record's error and call.
    api_error: Option<ApiError>,
    /// A racecheck record's category, hazard type, and whether its threads share a warp.
    race_category: Option<String>,
    hazard_type: Option<HazardType>,
    scope: Option<SyncScope>,
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
    /// A host API access's call and operand ("cudaMemcpy source").
    host_call: Option<String>,
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
        self.memory = MemoryFacts::default();
        self.api_error = None;
        self.host_call = None;
        self.race_category = None;
        self.hazard_type = None;
        self.scope = None;
        self.related_len = 0;
        self.has_related_example = false;
        self.hazards = 0;
        self.leaked = 0;
        self.raw_len = 0;
        self.python_frames.clear();
    }

    /// Why the access was invalid, as its address line says (the first such line).
    fn access_error(&mut self, error: AccessError) {
        self.memory.access_error.get_or_insert(error);
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
            last_assert: None,
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
        if !line.starts_with(PREFIX)
            && let Some(assert) = DeviceAssert::parse(line.trim_end())
        {
            self.last_assert = Some(assert);
        }
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
                Some(OutputLine {
                    text: text.to_string(),
                    index: u32::try_from(index).ok()?,
                })
            });
        }
        cross_check(&mut self.log);
        self.log
    }
}
