//! Reading a record's lines: its unindented header, the indented location, thread, address and
//! frame lines, race sides and hazards, and the summaries that close the log.

use crate::facts::{AccessError, ApiError, HazardType};
use crate::memory_space::MemorySpace;
use crate::model::{FindingKind, Severity, SyncScope};
use crate::records::parse_location;
use crate::util::{parse_u64, scrub_addresses};

use super::fields::{
    access_at, access_name, access_of, race_body, race_category, size_after, space_of,
    strip_hazard_count,
};
use super::{MAX_PYTHON_FRAMES, SanitizerParser};

impl SanitizerParser {
    pub(super) fn header(&mut self, text: &str, line: &str) {
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
                    self.rec
                        .memory
                        .allocation_size
                        .get_or_insert(u64::from(size));
                }
            }
            b'H' if text.starts_with("Host API memory access error") => {
                // "Host API memory access error at host access to 0x... of size 128 bytes": a
                // CUDA API call (a copy, a memset) touched device memory it should not; the
                // detail line says how. Until it does, an invalid access by the host.
                self.start(FindingKind::InvalidAccess, Severity::Error, text, line);
                self.rec.space = Some(MemorySpace::Global);
                self.rec.size = size_after(text, "of size ");
                self.rec.discriminator.push_str("host");
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
            b'W' | b'D' if text.ends_with(" assert") && self.last_assert.is_some() => {
                // "Warp assert": a device-side `assert` failed; its place is the assertion
                // line the program printed before the record.
                self.start(FindingKind::DeviceException, Severity::Error, text, line);
                self.tools.memcheck = true;
                if let Some(a) = self.last_assert.clone() {
                    self.rec.set_location(&crate::records::Loc {
                        function: &a.function,
                        clone_of: None,
                        file: Some(&a.file),
                        line: Some(a.line),
                    });
                    self.rec.discriminator.push_str("assert: ");
                    self.rec.discriminator.push_str(&a.condition);
                }
            }
            _ => {
                // Another device exception ("Illegal Instruction", "Warp Illegal Address", ...)
                // is confirmed by the location or thread lines that follow it.
                self.start(FindingKind::DeviceException, Severity::Error, text, line);
                self.rec.tentative = true;
                self.rec.discriminator.push_str(&scrub_addresses(text));
            }
        }
    }

    pub(super) fn detail(&mut self, text: &str, line: &str) {
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
                    // The runtime's `__assertfail` is where an assert traps, not the kernel.
                    if !loc.function.starts_with("__assertfail") {
                        r.outer_frame.clear();
                        r.outer_frame.push_str(loc.function);
                    }
                }
            }
            b'A' if text.starts_with("Access to ") || text.starts_with("Address ") => {
                self.rec.push_raw(line);
                if text.ends_with("is misaligned") {
                    if self.rec.kind == Some(FindingKind::InvalidAccess) {
                        self.rec.kind = Some(FindingKind::MisalignedAccess);
                    }
                    self.rec.access_error(AccessError::Misaligned);
                } else if text.ends_with("is out of bounds") {
                    self.rec.access_error(AccessError::OutOfBounds);
                    if matches!(
                        self.rec.space,
                        Some(MemorySpace::Shared | MemorySpace::RemoteShared)
                    ) {
                        let hex = text
                            .strip_prefix("Access to 0x")
                            .and_then(|t| t.split_whitespace().next());
                        if let Some(a) = hex.and_then(|h| u64::from_str_radix(h, 16).ok()) {
                            self.rec.memory.shared_address.get_or_insert(a);
                        }
                        // "Access to 0x400 in CTA 2 is out of bounds": the cluster's block.
                        let rank = text
                            .split_once(" in CTA ")
                            .and_then(|(_, t)| t.split_whitespace().next())
                            .and_then(crate::util::parse_u32);
                        if let Some(r) = rank {
                            self.rec.memory.cta_rank.get_or_insert(r);
                        }
                    }
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
            b'U' if text.starts_with("Uninitialized access to ") => {
                // "Uninitialized access to 0x... on access by cudaMemcpy source": initcheck's
                // detail of a host API access, device memory no kernel or copy wrote, read by
                // the call it names.
                self.rec.push_raw(line);
                self.tools.initcheck = true;
                self.rec.kind = Some(FindingKind::UninitializedRead);
                self.rec.access = Some(crate::model::Access::Read);
                if let Some((_, by)) = text.split_once(" on access by ") {
                    self.rec.discriminator.push(':');
                    self.rec.discriminator.push_str(by.trim());
                    self.rec.host_call = Some(by.trim().to_string());
                }
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
        r.api_error.get_or_insert_with(|| ApiError {
            name: name.to_string(),
            code,
            message: message.map(str::to_string),
            call: call.map(str::to_string),
        });
        r.discriminator.push_str(name);
        r.discriminator.push(':');
        r.discriminator.push_str(call.unwrap_or(""));
    }

    fn allocation_relation(&mut self, text: &str) {
        // "and is 13 bytes after the nearest allocation at 0x... of size 4,000 bytes"
        // "and is inside the nearest allocation at 0x... of size 4,096 bytes"
        let rest = text.get("and is ".len()..).unwrap_or("");
        let memory = &mut self.rec.memory;
        if rest.starts_with("inside") {
            memory.inside_allocation = true;
        } else {
            let mut words = rest.split_whitespace();
            let n = words.next().and_then(parse_u64);
            let _bytes = words.next();
            match (n, words.next()) {
                (Some(n), Some("after")) => {
                    memory.bytes_after.get_or_insert(n);
                }
                (Some(n), Some("before")) => {
                    memory.bytes_before.get_or_insert(n);
                }
                _ => {}
            }
        }
        if let Some(size) = rest
            .rsplit_once("of size ")
            .and_then(|(_, s)| s.split_whitespace().next())
            .and_then(parse_u64)
        {
            memory.allocation_size.get_or_insert(size);
        }
    }

    /// Opens a racecheck record: an error unless racecheck calls it a warning. Records whether
    /// the race is between threads of one warp ([`SyncScope::Warp`]) or of a block
    /// ([`SyncScope::Block`]) where the record says: the hazard report tags warp-level programming hazards "(Warp
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
        r.race_category = category.map(str::to_string);
        r.scope = warp.map(|warp| {
            if warp {
                SyncScope::Warp
            } else {
                SyncScope::Block
            }
        });
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
        r.hazard_type = HazardType::of_word(hazard_type);
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
}
