//! SASS listings from `cuobjdump -sass` and `nvdisasm`: per kernel, the instruction counts that
//! matter for diagnosis ([`SassCounts`]).
//!
//! cuobjdump opens each kernel with "Function : NAME" under a "code for sm_XX" heading; nvdisasm
//! opens it with a "//---- .text.NAME ----" banner after a ".target sm_XX" directive. Every
//! instruction line carries its offset as a `/*0a40*/` comment; the opcode is the first word
//! after an optional `@P0` predicate, and its base (before the first '.') is what is counted.
//!
//! With `-res-usage` cuobjdump also prints, per ELF image and before its SASS, a "Resource
//! usage" block: " Function NAME:" then "REG:40 STACK:256 SHARED:1024 LOCAL:0 ...". That gives
//! the registers, stack frame and static shared memory of kernels no ptxas log covers (JIT
//! builds). From sm_90 on its SHARED counts the 1 KiB the driver reserves per block, which
//! ptxas's "bytes smem" does not: it is taken off, so both read alike.

use std::collections::HashMap;

use crate::demangle::demangle;
use crate::model::{Format, Kernel, ParsedLog, SassCounts};
use crate::util::note_unparsed;

/// Parses a SASS listing line by line.
pub(crate) struct SassParser {
    log: ParsedLog,
    arch: Option<String>,
    current: Option<usize>,
    index: HashMap<(String, String), usize>,
    instructions: u64,
    /// The function a "Resource usage" block's next line describes.
    resources_of: Option<String>,
    /// (mangled, arch or "") -> its resource line, to join with the SASS after.
    resources: Vec<(String, String, Resources)>,
}

/// One "REG:.. STACK:.. SHARED:.." line of `cuobjdump -res-usage`.
#[derive(Debug, Clone, Copy, Default)]
struct Resources {
    registers: Option<u32>,
    stack: Option<u64>,
    shared: Option<u64>,
}

impl SassParser {
    pub(crate) fn new() -> SassParser {
        SassParser {
            log: ParsedLog::new(Format::Sass, None),
            arch: None,
            current: None,
            index: HashMap::new(),
            instructions: 0,
            resources_of: None,
            resources: Vec::new(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        if let Some(rest) = text.strip_prefix("/*") {
            self.instruction(rest, line);
            return;
        }
        if let Some(name) = self.resources_of.take()
            && text.starts_with("REG:")
        {
            self.resource_line(name, text);
            return;
        }
        if let Some(name) = text.strip_prefix("Function : ") {
            self.start(name.trim());
        } else if let Some(name) = text
            .strip_prefix("Function ")
            .and_then(|n| n.strip_suffix(':'))
        {
            // "Resource usage:" block: " Function _Z4axpbPKfPfi:".
            self.resources_of = Some(name.trim().to_string());
        } else if let Some(rest) = text.strip_prefix("//---------------------") {
            // nvdisasm: "//--------------------- .text.NAME --------------------------"
            let section = rest.trim().trim_end_matches('-').trim();
            match section.strip_prefix(".text.") {
                Some(name) => self.start(name),
                None => self.current = None,
            }
        } else if let Some(arch) = text.strip_prefix("code for ") {
            self.arch = Some(arch.trim().to_string());
        } else if let Some(arch) = text.strip_prefix(".target") {
            self.arch = Some(arch.trim().to_string());
        } else if let Some(arch) = text.strip_prefix("arch = ") {
            self.arch = Some(arch.trim().to_string());
        } else if text.starts_with('.')
            || text.starts_with("Fatbin ")
            || text.starts_with("====")
            || text.starts_with("code version")
            || text.starts_with("host =")
            || text.starts_with("compile_size")
            || text.starts_with("identifier")
            || text.starts_with("producer")
            || text.ends_with(':')
            || text.starts_with("//")
            || text == "......................"
            || text.bytes().all(|b| b == b'.')
        {
            // Headers, directives, labels and separators.
        } else {
            note_unparsed(&mut self.log, line);
        }
    }

    fn resource_line(&mut self, mangled: String, text: &str) {
        let mut r = Resources::default();
        for field in text.split_whitespace() {
            let Some((key, value)) = field.split_once(':') else {
                continue;
            };
            match key {
                "REG" => r.registers = value.parse().ok(),
                "STACK" => r.stack = value.parse().ok(),
                "SHARED" => r.shared = value.parse().ok(),
                _ => {}
            }
        }
        let arch = self.arch.clone().unwrap_or_default();
        self.resources.push((mangled, arch, r));
    }

    /// Joins each resource line to its kernel (same name, and arch where the block said it),
    /// adding kernels the listing had no SASS for.
    fn join_resources(&mut self) {
        for (mangled, arch, r) in std::mem::take(&mut self.resources) {
            let found = self.log.kernels.iter().position(|k| {
                k.mangled == mangled
                    && k.registers.is_none()
                    && (arch.is_empty() || k.arch.as_deref() == Some(arch.as_str()))
            });
            let i = match found {
                Some(i) => i,
                None => {
                    self.log.kernels.push(Kernel {
                        name: demangle(&mangled).0,
                        mangled: mangled.clone(),
                        arch: (!arch.is_empty()).then(|| arch.clone()),
                        ..Kernel::default()
                    });
                    self.log.kernels.len() - 1
                }
            };
            let Some(k) = self.log.kernels.get_mut(i) else {
                continue;
            };
            let reserved = k.arch.as_deref().is_some_and(reserves_shared);
            k.registers = r.registers;
            k.stack_frame_bytes = r.stack;
            k.shared_bytes = r
                .shared
                .map(|s| if reserved { s.saturating_sub(1024) } else { s });
        }
    }

    fn start(&mut self, mangled: &str) {
        let arch = self.arch.clone().unwrap_or_default();
        let key = (mangled.to_string(), arch.clone());
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.log.kernels.len();
                self.log.kernels.push(Kernel {
                    name: demangle(mangled).0,
                    mangled: mangled.to_string(),
                    arch: (!arch.is_empty()).then_some(arch),
                    sass: Some(SassCounts::default()),
                    ..Kernel::default()
                });
                self.index.insert(key, i);
                i
            }
        };
        self.current = Some(i);
    }

    /// `rest` follows the opening "/*": "0a40*/   @!P0 HMMA.16816.F32 R4, ... ;   /* 0x... */".
    fn instruction(&mut self, rest: &str, line: &str) {
        let Some((offset, body)) = rest.split_once("*/") else {
            return;
        };
        // Encoding-only lines hold a hex word inside the comment: "/* 0x000fe400078e00ff */".
        if !offset.bytes().all(|b| b.is_ascii_hexdigit()) || offset.is_empty() {
            return;
        }
        let Some(counts) = self
            .current
            .and_then(|i| self.log.kernels.get_mut(i))
            .and_then(|k| k.sass.as_mut())
        else {
            note_unparsed(&mut self.log, line);
            return;
        };
        let mut words = body.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        let op = op.trim_start_matches('{').trim_end_matches(';');
        if op.is_empty() {
            return;
        }
        self.instructions += 1;
        counts.total += 1;
        let base = op.split('.').next().unwrap_or(op);
        match base {
            "HMMA" => counts.hmma += 1,
            "HGMMA" => counts.hgmma += 1,
            "IMMA" => counts.imma += 1,
            "LDL" => counts.ldl += 1,
            "STL" => counts.stl += 1,
            "BPT" if op.contains("TRAP") => counts.bpt_trap += 1,
            "BAR" => counts.bar += 1,
            "LDGSTS" => counts.ldgsts += 1,
            "LDSM" => counts.ldsm += 1,
            "LDS" => counts.lds += 1,
            "STS" => counts.sts += 1,
            "UTMALDG" | "UTMASTG" | "UBLKCP" => counts.tma += 1,
            _ => {}
        }
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        let resources = !self.resources.is_empty();
        self.join_resources();
        self.log.complete = self.instructions > 0 || resources;
        self.log
    }
}

/// Whether `cuobjdump -res-usage` counts the driver's 1 KiB per block in SHARED for this arch
/// (`sm_90`, `sm_90a`, `sm_100`, ...; measured against ptxas on sm_75 to sm_120, nvcc 13.0).
fn reserves_shared(arch: &str) -> bool {
    let digits: String = arch
        .trim_start_matches("sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u32>().is_ok_and(|n| n >= 90)
}
