//! nvcc output with `-Xptxas -v`: per kernel and architecture resource usage, compiler warnings
//! and compile errors.
//!
//! ptxas reports one entry function at a time: "Compiling entry function 'K' for 'sm_90'", then
//! "Function properties for K", then an unprefixed "N bytes stack frame, N bytes spill stores, N
//! bytes spill loads" line, then "Used N registers, used N barriers, N bytes smem, ...". A kernel
//! without the stack frame line has unknown (`None`) spills, never zero. "N bytes gmem" applies to
//! the kernels compiled after it. Front-end diagnostics ("f.cu(3): error: ...") and the WMMA
//! warning ("cannot perform wmma load or store on local memory", capitalised "Cannot" since
//! CUDA 13.5) become findings with their file and line.

use std::collections::HashMap;

use crate::demangle::demangle;
use crate::facts::SpillFacts;
use crate::model::{FindingKind, Format, Kernel, ParsedLog, Severity};
use crate::site::{Record, Site, Sites};
use crate::util::{note_unparsed, parse_u32, parse_u64, scrub_addresses};

/// Parses ptxas and nvcc diagnostics line by line.
pub(crate) struct PtxasParser {
    log: ParsedLog,
    sites: Sites,
    index: HashMap<(String, String), usize>,
    /// The entry function being compiled, as an index into `log.kernels`.
    entry: Option<usize>,
    /// Whether the last "Function properties for" named the current entry (not a device function).
    props_for_entry: bool,
    /// Kernels whose "Used N registers" line has not come yet.
    awaiting_usage: Option<usize>,
    gmem: Option<u64>,
    overrides: HashMap<String, u32>,
    spill_warnings: Vec<(String, u64, u64, String)>,
    /// A "warning: PATH(LINE): " line whose message is on the next line.
    split_warning: Option<(String, Option<u32>, String)>,
    /// The finding a front-end diagnostic created, for its source echo lines.
    last_diagnostic: Option<usize>,
    recognised: u64,
}

impl PtxasParser {
    pub(crate) fn new() -> PtxasParser {
        PtxasParser {
            log: ParsedLog::new(Format::Ptxas, None),
            sites: Sites::default(),
            index: HashMap::new(),
            entry: None,
            props_for_entry: false,
            awaiting_usage: None,
            gmem: None,
            overrides: HashMap::new(),
            spill_warnings: Vec::new(),
            split_warning: None,
            last_diagnostic: None,
            recognised: 0,
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        let text = line.trim();
        if let Some((path, lineno, raw)) = self.split_warning.take() {
            if text.is_empty() {
                self.diagnostic_message("", Some(&path), lineno, &raw);
            } else {
                let joined = format!("{raw}\n{line}");
                self.diagnostic_message(text, Some(&path), lineno, &joined);
                return;
            }
        }
        if text.is_empty() {
            return;
        }
        if let Some(rest) = text.strip_prefix("ptxas ") {
            self.ptxas_line(rest, line);
        } else if text.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && text.contains("bytes stack frame")
        {
            self.stack_frame(text);
        } else if let Some(rest) = text.strip_prefix("warning: ") {
            self.tool_warning(rest, line);
        } else if let Some(rest) = text.strip_prefix("nvcc ") {
            self.nvcc_line(rest, line);
        } else if text.contains(" detected in the compilation of ")
            || text.starts_with("Remark: The warnings can be suppressed")
        {
            self.recognised += 1;
        } else if let Some((file, lineno, rest)) = front_end_location(text) {
            self.front_end(file, lineno, rest, line);
        } else if let Some(i) = self.last_diagnostic
            && (line.starts_with(' ') || text == "^")
        {
            // The source line and caret nvcc echoes under a diagnostic.
            self.recognised += 1;
            if let Some(f) = self.sites.get_mut(i)
                && f.count == 1
                && f.excerpt.len() < crate::site::MAX_EXCERPT
            {
                f.excerpt.push(line.to_string());
            }
        } else {
            self.unparsed(line);
        }
    }

    fn unparsed(&mut self, line: &str) {
        note_unparsed(&mut self.log, line);
    }

    fn ptxas_line(&mut self, rest: &str, line: &str) {
        let Some((level, message)) = rest.split_once(':') else {
            self.unparsed(line);
            return;
        };
        let message = message.trim();
        self.recognised += 1;
        self.last_diagnostic = None;
        match level.trim() {
            "info" => self.info(message, line),
            "warning" => self.warning(message, line),
            "error" | "fatal" => {
                let kernel = quoted(message).map(demangle);
                self.finding(
                    FindingKind::CompileError,
                    Severity::Error,
                    kernel.as_ref().map(|k| k.0.as_str()),
                    None,
                    None,
                    message,
                    line,
                );
            }
            _ => {
                self.recognised -= 1;
                self.unparsed(line);
            }
        }
    }

    fn info(&mut self, message: &str, line: &str) {
        if let Some(rest) = message.strip_prefix("Compiling entry function ") {
            let mut names = quoted_all(rest);
            let mangled = names.next().unwrap_or("").to_string();
            let arch = names.next().map(str::to_string);
            self.start_kernel(mangled, arch);
        } else if let Some(rest) = message.strip_prefix("Function properties for ") {
            let name = rest.trim();
            self.props_for_entry = self
                .entry
                .and_then(|i| self.log.kernels.get(i))
                .is_some_and(|k| k.mangled == name);
        } else if message.starts_with("Used ") {
            self.usage(message);
        } else if message.ends_with("bytes gmem") || message.contains("bytes gmem,") {
            self.gmem = message.split_whitespace().next().and_then(parse_u64);
            self.entry = None;
        } else if let Some(rest) = message.strip_prefix("Overriding maximum register limit") {
            // "Overriding maximum register limit 256 for 'K' with  32 of maxrregcount option"
            if let Some(name) = quoted(rest)
                && let Some(n) = rest
                    .split_once(" with ")
                    .and_then(|(_, t)| t.split_whitespace().next())
                    .and_then(parse_u32)
            {
                self.overrides.insert(name.to_string(), n);
                for k in &mut self.log.kernels {
                    if k.mangled == name {
                        k.max_registers_override = Some(n);
                    }
                }
            }
        } else if message.starts_with("Compile time")
            || message.starts_with("Overriding global maxrregcount")
        {
        } else {
            self.recognised -= 1;
            self.unparsed(line);
        }
    }

    fn start_kernel(&mut self, mangled: String, arch: Option<String>) {
        let key = (mangled.clone(), arch.clone().unwrap_or_default());
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.log.kernels.len();
                let (name, _) = demangle(&mangled);
                self.log.kernels.push(Kernel {
                    name,
                    max_registers_override: self.overrides.get(&mangled).copied(),
                    mangled,
                    arch,
                    global_bytes: self.gmem,
                    ..Kernel::default()
                });
                self.index.insert(key, i);
                i
            }
        };
        self.entry = Some(i);
        self.props_for_entry = false;
        self.awaiting_usage = Some(i);
    }

    fn stack_frame(&mut self, text: &str) {
        self.recognised += 1;
        if !self.props_for_entry {
            // A device function's properties: not a kernel of its own.
            return;
        }
        let Some(k) = self.entry.and_then(|i| self.log.kernels.get_mut(i)) else {
            return;
        };
        for part in text.split(',') {
            let part = part.trim();
            let n = part.split_whitespace().next().and_then(parse_u64);
            if part.ends_with("bytes stack frame") {
                k.stack_frame_bytes = n;
            } else if part.ends_with("bytes spill stores") {
                k.spill_store_bytes = n;
            } else if part.ends_with("bytes spill loads") {
                k.spill_load_bytes = n;
            }
        }
    }

    fn usage(&mut self, message: &str) {
        let Some(k) = self.entry.and_then(|i| self.log.kernels.get_mut(i)) else {
            return;
        };
        for part in message.split(',') {
            let part = part.trim();
            let lower = part.to_ascii_lowercase();
            let mut words = lower.split_whitespace();
            let first = words.next().unwrap_or("");
            let second = words.next().unwrap_or("");
            if first == "used" {
                let n = parse_u64(second);
                match words.next() {
                    Some(w) if w.starts_with("register") => {
                        k.registers = n.and_then(|n| u32::try_from(n).ok())
                    }
                    Some(w) if w.starts_with("barrier") => {
                        k.barriers = n.and_then(|n| u32::try_from(n).ok())
                    }
                    _ => {}
                }
            } else if let Some(n) = parse_u64(first) {
                if lower.ends_with("bytes smem") {
                    k.shared_bytes = Some(n);
                } else if lower.contains("bytes cmem") {
                    k.constant_bytes = Some(k.constant_bytes.unwrap_or(0).saturating_add(n));
                } else if lower.ends_with("cumulative stack size") {
                    k.cumulative_stack_bytes = Some(n);
                }
            }
        }
        if k.shared_bytes.is_none() {
            k.shared_bytes = Some(0);
        }
        self.awaiting_usage = None;
    }

    fn warning(&mut self, message: &str, line: &str) {
        if let Some(kind) = local_memory_kind(message) {
            self.finding(kind, Severity::Warning, None, None, None, message, line);
        } else if let Some(rest) = message.strip_prefix("Registers are spilled to local memory") {
            // "... in function 'K', 540 bytes spill stores, 564 bytes spill loads"
            let name = quoted(rest).unwrap_or("").to_string();
            let mut stores = 0;
            let mut loads = 0;
            for part in rest.split(',') {
                let part = part.trim();
                let n = part.split_whitespace().next().and_then(parse_u64);
                if part.ends_with("spill stores") {
                    stores = n.unwrap_or(0);
                } else if part.ends_with("spill loads") {
                    loads = n.unwrap_or(0);
                }
            }
            self.spill_warnings
                .push((name, stores, loads, line.to_string()));
        } else {
            let kernel = quoted(message).map(demangle);
            self.finding(
                FindingKind::CompilerWarning,
                Severity::Warning,
                kernel.as_ref().map(|k| k.0.as_str()),
                None,
                None,
                message,
                line,
            );
        }
    }

    /// "warning: <path>/mma.hpp(91): Warning: cannot perform wmma load or store on local memory",
    /// possibly with the message on the next line.
    fn tool_warning(&mut self, rest: &str, line: &str) {
        self.recognised += 1;
        match front_end_location(rest) {
            Some((file, lineno, message)) => {
                let message = message.trim();
                if message.is_empty() {
                    self.split_warning = Some((file.to_string(), lineno, line.to_string()));
                } else {
                    self.diagnostic_message(message, Some(file), lineno, line);
                }
            }
            None => self.diagnostic_message(rest, None, None, line),
        }
    }

    fn diagnostic_message(
        &mut self,
        message: &str,
        file: Option<&str>,
        lineno: Option<u32>,
        raw: &str,
    ) {
        self.recognised += 1;
        let message = message
            .strip_prefix("Warning: ")
            .or_else(|| message.strip_prefix("warning: "))
            .unwrap_or(message);
        let kind = local_memory_kind(message).unwrap_or(FindingKind::CompilerWarning);
        self.finding(kind, Severity::Warning, None, file, lineno, message, raw);
    }

    fn nvcc_line(&mut self, rest: &str, line: &str) {
        let Some((level, message)) = rest.split_once(':') else {
            self.unparsed(line);
            return;
        };
        self.recognised += 1;
        let message = message.trim();
        let (kind, severity) = match level.trim() {
            "warning" => (FindingKind::CompilerWarning, Severity::Warning),
            _ => (FindingKind::CompileError, Severity::Error),
        };
        self.finding(kind, severity, None, None, None, message, line);
    }

    /// "f.cu(3): error: identifier "x" is undefined", "f.cu(3): warning #177-D: ...".
    fn front_end(&mut self, file: &str, lineno: Option<u32>, rest: &str, line: &str) {
        let rest = rest.trim();
        let (kind, severity, message) = if let Some(m) = rest.strip_prefix("error:") {
            (FindingKind::CompileError, Severity::Error, m)
        } else if let Some(m) = rest.strip_prefix("catastrophic error:") {
            (FindingKind::CompileError, Severity::Error, m)
        } else if rest.starts_with("warning") {
            let m = rest.split_once(':').map(|(_, m)| m).unwrap_or(rest);
            let kind = local_memory_kind(m).unwrap_or(FindingKind::CompilerWarning);
            (kind, Severity::Warning, m)
        } else if rest.starts_with("remark") {
            let m = rest.split_once(':').map(|(_, m)| m).unwrap_or(rest);
            (FindingKind::CompilerWarning, Severity::Info, m)
        } else {
            self.unparsed(line);
            return;
        };
        self.recognised += 1;
        let i = self.finding(
            kind,
            severity,
            None,
            Some(file),
            lineno,
            message.trim(),
            line,
        );
        self.last_diagnostic = Some(i);
    }

    #[allow(clippy::too_many_arguments)]
    fn finding(
        &mut self,
        kind: FindingKind,
        severity: Severity,
        kernel: Option<&str>,
        file: Option<&str>,
        line: Option<u32>,
        message: &str,
        raw: &str,
    ) -> usize {
        let message = scrub_addresses(message);
        let kind = if kind == FindingKind::CompilerWarning
            && (message.contains("--device-debug (-G)")
                || message.contains("options --device-debug and"))
        {
            FindingKind::DebugBuild
        } else {
            kind
        };
        let discriminator = if matches!(
            kind,
            FindingKind::CompilerWarning | FindingKind::CompileError
        ) {
            message.clone()
        } else {
            String::new()
        };
        let excerpt: Vec<String> = raw.lines().map(str::to_string).collect();
        let (i, _) = self.sites.add(Record {
            site: Site {
                kind,
                kernel,
                file,
                line,
                space: None,
                size: None,
                discriminator: &discriminator,
            },
            severity,
            access: None,
            message: &message,
            example: None,
            excerpt: &excerpt,
            occurrences: 1,
        });
        i
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        if let Some((path, lineno, raw)) = self.split_warning.take() {
            self.diagnostic_message("", Some(&path), lineno, &raw);
        }
        // Spills, from the properties of each entry function, then from warnings about functions
        // that were never reported as entries.
        let kernels = std::mem::take(&mut self.log.kernels);
        for k in &kernels {
            let stores = k.spill_store_bytes.unwrap_or(0);
            let loads = k.spill_load_bytes.unwrap_or(0);
            if stores == 0 && loads == 0 {
                continue;
            }
            let warned = self.spill_warnings.iter().find(|w| w.0 == k.mangled);
            let raw = warned.map(|w| w.3.clone()).unwrap_or_else(|| {
                format!("{} bytes spill stores, {} bytes spill loads", stores, loads)
            });
            self.spill_finding(k, stores, loads, &raw);
        }
        let warnings = std::mem::take(&mut self.spill_warnings);
        for (name, stores, loads, raw) in warnings {
            if kernels.iter().any(|k| k.mangled == name) {
                continue;
            }
            let (demangled, _) = demangle(&name);
            let k = Kernel {
                name: demangled,
                mangled: name,
                ..Kernel::default()
            };
            self.spill_finding(&k, stores, loads, &raw);
        }
        self.log.kernels = kernels;
        self.log.complete = self.recognised > 0 && self.awaiting_usage.is_none();
        self.log.findings = self.sites.into_findings();
        self.log
    }

    fn spill_finding(&mut self, k: &Kernel, stores: u64, loads: u64, raw: &str) {
        let message = format!(
            "registers spilled to local memory: {stores} bytes spill stores, {loads} bytes spill loads"
        );
        let arch = k.arch.clone().unwrap_or_default();
        let (i, _) = self.sites.add(Record {
            site: Site {
                kind: FindingKind::RegisterSpill,
                kernel: Some(&k.name),
                file: None,
                line: None,
                space: Some(crate::memory_space::MemorySpace::Local),
                size: None,
                discriminator: &arch,
            },
            severity: Severity::Warning,
            access: None,
            message: &message,
            example: None,
            excerpt: &[raw.to_string()],
            occurrences: 1,
        });
        if let Some(f) = self.sites.get_mut(i) {
            f.facts.spill = Some(Box::new(SpillFacts {
                store_bytes: stores,
                load_bytes: loads,
                arch: k.arch.clone(),
                registers: k.registers,
                max_registers_override: k.max_registers_override,
                mangled: (!k.mangled.is_empty()).then(|| k.mangled.clone()),
            }));
        }
    }
}

/// Splits "path(12): rest" into the path, the line and the rest.
fn front_end_location(text: &str) -> Option<(&str, Option<u32>, &str)> {
    let close = text
        .find("): ")
        .or_else(|| text.strip_suffix("):").map(|t| t.len()))?;
    let head = text.get(..close)?;
    let open = head.rfind('(')?;
    let file = head.get(..open)?;
    let number = head.get(open + 1..)?;
    if file.is_empty() || file.contains(' ') && !file.contains('/') {
        return None;
    }
    let line = parse_u32(number)?;
    let rest = text.get(close + 2..).unwrap_or("").trim_start();
    Some((file, Some(line), rest))
}

/// The first '...'-quoted name in `text`.
fn quoted(text: &str) -> Option<&str> {
    quoted_all(text).next()
}

fn quoted_all(text: &str) -> impl Iterator<Item = &str> {
    text.split('\'').skip(1).step_by(2)
}

/// The operation a "cannot ... on local memory" warning names: `atomic` in "Cannot do atomic on
/// local memory", `wmma load or store` in "cannot perform wmma load or store on local memory".
pub fn local_memory_operation(message: &str) -> Option<&str> {
    let lower = message.to_ascii_lowercase();
    let end = lower.find(" on local memory")?;
    let start = ["cannot perform ", "cannot do "]
        .iter()
        .find_map(|p| lower[..end].find(p).map(|i| i + p.len()))?;
    message.get(start..end).map(str::trim)
}

/// The compiler's word that it replaced an operation on a thread-local address with a trap:
/// "cannot perform wmma load or store on local memory" (13.0; "Cannot perform" in 13.5), "Cannot
/// do atomic on local memory" and their kin. WMMA has a kind of its own; any other operation is
/// [`FindingKind::LocalMemoryOperation`].
fn local_memory_kind(message: &str) -> Option<FindingKind> {
    let lower = message.to_ascii_lowercase();
    if !lower.contains("on local memory")
        || !(lower.contains("cannot perform") || lower.contains("cannot do"))
    {
        return None;
    }
    Some(if lower.contains("wmma") {
        FindingKind::WmmaLocalMemory
    } else {
        FindingKind::LocalMemoryOperation
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_end_locations() {
        assert_eq!(
            front_end_location("compile_error.cu(3): error: identifier \"x\" is undefined"),
            Some((
                "compile_error.cu",
                Some(3),
                "error: identifier \"x\" is undefined"
            ))
        );
        assert_eq!(
            front_end_location("/usr/local/cuda/include/crt/mma.hpp(91): "),
            Some(("/usr/local/cuda/include/crt/mma.hpp", Some(91), ""))
        );
        assert_eq!(front_end_location("no location here"), None);
    }
}
