//! A finished record folded into its site's finding, and the cross-check of the findings read
//! against the counts the tool's summary printed.

use crate::facts::{MemoryFacts, RaceFacts};
use crate::model::{Finding, FindingKind, Location, ParsedLog, RaceSide, Severity, Tool};
use crate::records::parse_location;
use crate::site::{Record, Site};
use crate::util::scrub_addresses;

use super::fields::access_name;
use super::{LastSite, Rec, SanitizerParser, Spread};

impl SanitizerParser {
    pub(super) fn end_record(&mut self) {
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
        let Some(kind) = self.rec.kind else {
            self.rec.reset();
            return;
        };
        if kind == FindingKind::DeviceException {
            self.tools.memcheck = true;
        }
        let (i, new) = self.file_record(kind);
        self.spread_record(i);
        let r = &self.rec;
        let hazards = r.hazards;
        let leaked = r.leaked;
        if let Some(f) = self.sites.get_mut(i) {
            if new {
                first_record(f, r, self.output_lines);
            }
            if hazards > 0 {
                let race = f.facts.race.get_or_insert_default();
                race.hazards = Some(race.hazards.unwrap_or(0).saturating_add(hazards));
            }
            if leaked > 0 {
                let memory = f.facts.memory.get_or_insert_default();
                memory.leaked_bytes = Some(memory.leaked_bytes.unwrap_or(0).saturating_add(leaked));
            }
        }
        self.rec.reset();
    }

    /// Files the record under its site: a repeat of the last record's site (or of an earlier
    /// one) counts towards that finding, else the record opens a new one. Returns the
    /// finding's index and whether it is new.
    fn file_record(&mut self, kind: FindingKind) -> (usize, bool) {
        let r = &self.rec;
        let file = if r.has_location { r.file.as_str() } else { "" };
        let line = if r.has_location { r.line } else { None };
        let site = Site {
            kind,
            kernel: r.kernel(),
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
        (i, new)
    }

    /// Adds the record's distance past (or before) its allocation, and its thread and block, to
    /// the spread of finding `i`.
    fn spread_record(&mut self, i: usize) {
        let memory = &self.rec.memory;
        let (after, before) = (memory.bytes_after, memory.bytes_before);
        if self.spreads.len() <= i {
            self.spreads.resize(i + 1, Spread::default());
        }
        if let Some(spread) = self.spreads.get_mut(i) {
            spread.add(after, before, &self.rec.example);
        }
    }
}

impl Rec {
    /// The kernel the record names: its outermost device frame, else (where a location line
    /// confirmed it) the `[clone K]` kernel of its location, else the location's function.
    fn kernel(&self) -> Option<&str> {
        let function = if self.has_location {
            self.function.as_str()
        } else {
            ""
        };
        let clone_of = if self.has_location {
            self.clone_of.as_str()
        } else {
            ""
        };
        if self.has_frame && !self.outer_frame.is_empty() {
            Some(self.outer_frame.as_str())
        } else if !clone_of.is_empty() {
            Some(clone_of)
        } else if !function.is_empty() {
            Some(function)
        } else {
            None
        }
    }
}

/// What the first record of a finding gives it: where it came in the program's output, the
/// facts its lines state, its host frames with the Python frames past the excerpt's end, the
/// other sides of a race, and the function the record is in when that is not the kernel.
fn first_record(f: &mut Finding, r: &Rec, output_lines: u32) {
    f.output_before = Some(output_lines);
    if r.memory != MemoryFacts::default() {
        f.facts.memory = Some(Box::new(r.memory.clone()));
    }
    f.facts.api_error = r.api_error.clone().map(Box::new);
    f.facts.host_call.clone_from(&r.host_call);
    if r.race_category.is_some() || r.hazard_type.is_some() {
        f.facts.race = Some(Box::new(RaceFacts {
            hazards: None,
            hazard_type: r.hazard_type,
            category: r.race_category.clone(),
        }));
    }
    f.sync_scope = r.scope;
    f.host_frames = crate::records::host_frames(&f.excerpt, &r.python_frames);
    let sides = r.related.iter().take(r.related_len);
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
    if r.has_location && !r.function.is_empty() && r.kernel() != Some(r.function.as_str()) {
        f.facts.function = Some(r.function.clone());
    }
}

/// Never a false clean: when the summary counts errors (or racecheck hazards) and no record was
/// read as a finding, a finding says how many could not be read and quotes the lines that were
/// not understood.
pub(super) fn cross_check(log: &mut ParsedLog) {
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
    let tool = log.tool.map_or("compute-sanitizer", Tool::name);
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
        facts: Default::default(),
        output_before: None,
        profiler_rule: None,
    });
}
