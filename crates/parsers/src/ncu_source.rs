//! Nsight Compute's source page as CSV (`ncu --import R --csv --page source --print-source
//! cuda,sass`): for each profiled function, a `"File Path"` and a `"Function Name"` line, a header,
//! then one row per source line (its `Line No` set) followed by one row per SASS instruction of
//! that line (`Line No` empty). The source-line rows already sum their instructions' counters;
//! they are what is kept, as [`SourceLine`]s.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::{Format, InstructionMix, ParsedLog, SourceLine};
use crate::util::{note_unparsed, parse_u64};

/// What a WMMA fragment load or store moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WmmaFragment {
    LoadA,
    LoadB,
    LoadAccumulator,
    StoreAccumulator,
}

impl SourceLine {
    /// The toolkit's WMMA fragment intrinsic this line is, inlined from `crt/mma.hpp`
    /// (`__hmma_m16n16k16_ld_b`): what it moves.
    pub fn wmma_intrinsic(&self) -> Option<WmmaFragment> {
        let text = self.text.as_str();
        if !text.contains("__hmma_") {
            return None;
        }
        [
            ("_ld_a", WmmaFragment::LoadA),
            ("_ld_b", WmmaFragment::LoadB),
            ("_ld_c", WmmaFragment::LoadAccumulator),
            ("_st_c", WmmaFragment::StoreAccumulator),
        ]
        .into_iter()
        .find_map(|(mark, fragment)| text.contains(mark).then_some(fragment))
    }

    /// Whether this line calls the WMMA function that moves `fragment` (`load_matrix_sync`,
    /// `store_matrix_sync`).
    pub fn calls_wmma(&self, fragment: WmmaFragment) -> bool {
        self.text.contains(fragment.call())
    }
}

impl WmmaFragment {
    /// The WMMA function a kernel's own code calls for it (`load_matrix_sync`).
    pub fn call(self) -> &'static str {
        match self {
            WmmaFragment::StoreAccumulator => "store_matrix_sync",
            _ => "load_matrix_sync",
        }
    }
}

/// The columns read, by their header names.
struct Columns {
    /// How many cells a row has.
    width: usize,
    line: usize,
    text: usize,
    /// The SASS text (the second "Source" column).
    sass: usize,
    /// The instruction's address, which tells one instruction listed under two files apart
    /// from two instructions.
    address: Option<usize>,
    stalls: Option<usize>,
    instructions: Option<usize>,
    active_lanes: Option<usize>,
    shared: Option<usize>,
    shared_excessive: Option<usize>,
    shared_ideal: Option<usize>,
    global: Option<usize>,
    global_excessive: Option<usize>,
    global_ideal: Option<usize>,
    /// L1 tag requests to global memory (one per warp instruction and 128-byte line set).
    requests: Option<usize>,
    /// `stall_*` columns of all samples (not the `(Not Issued)` ones), with their names.
    reasons: Vec<(usize, String)>,
    /// A SASS-only page: no `Line No`, its one `Source` column the instruction.
    sass_only: bool,
}

pub(crate) struct SourceParser {
    log: ParsedLog,
    file: String,
    function: String,
    columns: Option<Columns>,
    /// Index of a (file, function, line) already kept.
    seen: HashMap<(String, String, u32), usize>,
    /// The (function, address) of each instruction counted: an instruction inlined from a
    /// header is listed under the header's file and again under its caller's.
    counted: HashSet<(String, String)>,
    /// The instruction mix of the function being read, and the FMA chain it is in.
    mix: Option<InstructionMix>,
    chain: u32,
    /// The reader of every record of the page.
    csv: crate::csv_line::CsvLine,
    last_fma_dest: Option<String>,
    /// The source line (index into the log's lines) whose instructions the rows now list.
    current: Option<usize>,
}

impl SourceParser {
    pub(crate) fn new() -> SourceParser {
        SourceParser {
            log: ParsedLog::new(Format::NcuSource, None),
            file: String::new(),
            function: String::new(),
            columns: None,
            seen: HashMap::new(),
            counted: HashSet::new(),
            mix: None,
            chain: 0,
            last_fma_dest: None,
            current: None,
            csv: crate::csv_line::CsvLine::new(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return;
        }
        let cells = if line.starts_with('"') {
            self.csv.cells(line)
        } else {
            None
        };
        let Some(cells) = cells else {
            note_unparsed(&mut self.log, line);
            return;
        };
        let first = cells.first().map(String::as_str).unwrap_or("");
        match first {
            "File Path" => {
                self.file = cells.get(1).cloned().unwrap_or_default();
                self.columns = None;
                self.current = None;
            }
            // A SASS-only page (`--print-source sass`, for code without line information)
            // names each kernel this way, with no file.
            "Function Name" | "Kernel Name" => {
                if first == "Kernel Name" {
                    self.file.clear();
                }
                self.end_function();
                self.current = None;
                self.function = cells.get(1).cloned().unwrap_or_default();
                self.mix = Some(InstructionMix {
                    function: self.function.clone(),
                    ..InstructionMix::default()
                });
                self.columns = None;
            }
            "Line No" | "Address" => self.columns = Some(columns(&cells)),
            _ => self.row(&cells, line),
        }
    }

    fn row(&mut self, cells: &[String], raw: &str) {
        let Some(c) = &self.columns else {
            note_unparsed(&mut self.log, raw);
            return;
        };
        // ncu does not escape the double quotes of a source line's text (inline asm, string
        // literals): such a row splits into too many cells. Every other cell is a plain quoted
        // value, so the row is split around the text instead.
        let resplit;
        let cells = if cells.len() != c.width {
            match split_around(raw, c.width, c.text) {
                Some(fixed) => {
                    resplit = fixed;
                    &resplit[..]
                }
                None => {
                    note_unparsed(&mut self.log, raw);
                    return;
                }
            }
        } else {
            cells
        };
        // A SASS instruction's row: its counters are in its source line's row already; its
        // opcode goes into the function's instruction mix. On a SASS-only page every row is
        // one.
        let line = (!c.sass_only)
            .then(|| cells.get(c.line).and_then(|l| l.trim().parse::<u32>().ok()))
            .flatten();
        let get = |i: Option<usize>| {
            i.and_then(|i| cells.get(i))
                .and_then(|v| parse_u64(v))
                .unwrap_or(0)
        };
        let stalls: BTreeMap<String, u64> = c
            .reasons
            .iter()
            .map(|(i, name)| (name.clone(), get(Some(*i))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let Some(line) = line else {
            let sass = cells.get(c.sass).map(String::as_str).unwrap_or("");
            // Every line that lists a global atomic counts it: the toolkit header's
            // `atomicAdd` and the user's line it was inlined into alike.
            if is_global_atomic(sass)
                && let Some(line) = self.current.and_then(|i| self.log.source_lines.get_mut(i))
            {
                line.atomics += get(c.instructions);
            }
            let address = c.address.and_then(|i| cells.get(i)).map(|a| a.trim());
            if let Some(address) = address.filter(|a| !a.is_empty()) {
                let key = (self.function.clone(), address.to_string());
                if !self.counted.insert(key) {
                    return;
                }
            }
            let counts = Counts {
                executed: get(c.instructions),
                lanes: get(c.active_lanes),
                requests: get(c.requests),
                sectors: get(c.global),
                ideal_sectors: get(c.global_ideal),
                wavefronts: get(c.shared),
                ideal: get(c.shared_ideal),
            };
            self.instruction(sass, counts, stalls);
            return;
        };
        let top_stall = stalls
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(name, _)| name.clone());
        let row = SourceLine {
            file: self.file.clone(),
            function: self.function.clone(),
            line,
            // ncu's placeholder where it could not read the file (a JIT compiler's source it
            // was not given) is no text of the line.
            text: cells
                .get(c.text)
                .map(|t| t.trim())
                .filter(|t| *t != "<Unable to open source file>")
                .map(|t| t.chars().take(200).collect())
                .unwrap_or_default(),
            stall_samples: get(c.stalls),
            top_stall,
            stalls,
            instructions: get(c.instructions),
            active_lanes: get(c.active_lanes),
            shared_wavefronts: get(c.shared),
            shared_excessive: get(c.shared_excessive),
            global_sectors: get(c.global),
            global_excessive: get(c.global_excessive),
            atomics: 0,
        };
        let key = (row.file.clone(), row.function.clone(), line);
        self.current = Some(match self.seen.get(&key) {
            Some(&i) => i,
            None => self.log.source_lines.len(),
        });
        match self.seen.get(&key) {
            // The same line listed again (inlined into the function twice): add it up.
            Some(&i) => {
                if let Some(old) = self.log.source_lines.get_mut(i) {
                    old.stall_samples += row.stall_samples;
                    for (reason, n) in row.stalls {
                        *old.stalls.entry(reason).or_default() += n;
                    }
                    old.instructions += row.instructions;
                    old.active_lanes += row.active_lanes;
                    old.shared_wavefronts += row.shared_wavefronts;
                    old.shared_excessive += row.shared_excessive;
                    old.global_sectors += row.global_sectors;
                    old.global_excessive += row.global_excessive;
                }
            }
            None => {
                self.seen.insert(key, self.log.source_lines.len());
                self.log.source_lines.push(row);
            }
        }
    }

    /// Counts one SASS instruction (`@P0 FFMA R1, R2, R3, R1`) with what its row counted, and
    /// its warp-stall samples.
    fn instruction(&mut self, sass: &str, counts: Counts, stalls: BTreeMap<String, u64>) {
        let Counts {
            executed, lanes, ..
        } = counts;
        let Some(mix) = &mut self.mix else { return };
        for (reason, n) in stalls {
            *mix.stalls.entry(reason).or_default() += n;
        }
        let mut words = sass.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        // "R1, R2, R3, R1" -> ["R1", "R2", "R3", "R1"] (modifiers such as `.reuse` dropped).
        let rest = words.collect::<Vec<_>>().join(" ");
        let operands: Vec<String> = rest
            .trim_end_matches(';')
            .split(',')
            .map(|o| {
                let o = o.trim();
                o.split('.').next().unwrap_or(o).to_string()
            })
            .collect();
        let base = op.split('.').next().unwrap_or(op);
        mix.executed += executed;
        match base {
            "HMMA" | "HGMMA" | "IMMA" => {
                mix.mma += executed;
                let per_warp = match base {
                    "HMMA" => hmma_flops(op),
                    "HGMMA" => hgmma_flops(op),
                    _ => None,
                };
                let flops = per_warp.unwrap_or(0).saturating_mul(executed);
                mix.tensor_flops = mix.tensor_flops.saturating_add(flops);
                if op.contains("TF32") {
                    mix.tensor_tf32_flops = mix.tensor_tf32_flops.saturating_add(flops);
                }
            }
            "FFMA" | "HFMA2" | "DFMA" => {
                mix.fma += executed;
                match base {
                    "FFMA" => mix.ffma += executed,
                    "HFMA2" => mix.hfma2 += executed,
                    _ => mix.dfma += executed,
                }
                // Accumulating into the previous multiply-add's result: one longer chain.
                let addend = operands.get(3).map(String::as_str).unwrap_or("");
                if self.last_fma_dest.as_deref() == Some(addend) && !addend.is_empty() {
                    self.chain += 1;
                } else {
                    self.chain = 1;
                }
                mix.fma_chain = mix.fma_chain.max(self.chain);
                self.last_fma_dest = operands.first().cloned();
            }
            "MUFU" => mix.mufu += executed,
            "HADD2" if op.contains("F32") => mix.half_to_float += executed,
            "F2F" if op.contains("F32.F16") => mix.half_to_float += executed,
            "LDG" | "LDGSTS" => {
                mix.global_load_bytes = mix
                    .global_load_bytes
                    .saturating_add(lanes.saturating_mul(access_bytes(op)));
                mix.memory.global_load_requests += counts.requests_or_executed();
                mix.memory.global_load_sectors += counts.sectors;
                mix.memory.global_load_ideal += counts.ideal_sectors;
            }
            "STG" => {
                mix.memory.global_store_requests += counts.requests_or_executed();
                mix.memory.global_store_sectors += counts.sectors;
                mix.memory.global_store_ideal += counts.ideal_sectors;
            }
            "RED" | "REDG" | "ATOM" | "ATOMG" => {
                mix.memory.global_atomics += executed;
                mix.memory.global_atomic_lanes += lanes;
            }
            "LDL" | "STL" => {
                mix.memory.local_instructions += executed;
                mix.memory.local_bytes = mix
                    .memory
                    .local_bytes
                    .saturating_add(lanes.saturating_mul(access_bytes(op)));
            }
            "LDS" | "STS" | "LDSM" | "ATOMS" => {
                mix.memory.shared_requests += executed;
                mix.memory.shared_wavefronts += counts.wavefronts;
                mix.memory.shared_ideal += counts.ideal;
            }
            _ => {}
        }
        // Conversions and loads between the multiply-adds do not break a chain; other
        // arithmetic on the accumulator would have to write it, which the next FMA shows.
    }

    fn end_function(&mut self) {
        if let Some(mix) = self.mix.take()
            && mix.executed > 0
        {
            // One function listed once per source file its code comes from (its own, an
            // inlined header's): one mix.
            match self
                .log
                .instruction_mix
                .iter_mut()
                .find(|m| m.function == mix.function)
            {
                Some(m) => {
                    m.executed += mix.executed;
                    m.mma += mix.mma;
                    m.fma += mix.fma;
                    m.ffma += mix.ffma;
                    m.hfma2 += mix.hfma2;
                    m.dfma += mix.dfma;
                    m.tensor_flops += mix.tensor_flops;
                    m.tensor_tf32_flops += mix.tensor_tf32_flops;
                    m.half_to_float += mix.half_to_float;
                    m.mufu += mix.mufu;
                    m.global_load_bytes += mix.global_load_bytes;
                    m.fma_chain = m.fma_chain.max(mix.fma_chain);
                    m.memory.add(&mix.memory);
                    for (reason, n) in mix.stalls {
                        *m.stalls.entry(reason).or_default() += n;
                    }
                }
                None => self.log.instruction_mix.push(mix),
            }
        }
        self.chain = 0;
        self.last_fma_dest = None;
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        self.end_function();
        self.log.complete =
            !self.log.source_lines.is_empty() || !self.log.instruction_mix.is_empty();
        self.log
    }
}

/// Whether a SASS instruction (`@P0 REDG.E.ADD.STRONG.GPU ...`) is an atomic or a reduction on
/// global memory.
fn is_global_atomic(sass: &str) -> bool {
    let op = sass
        .split_whitespace()
        .find(|w| !w.starts_with('@'))
        .unwrap_or("");
    matches!(
        op.split('.').next().unwrap_or(""),
        "RED" | "REDG" | "ATOM" | "ATOMG"
    )
}

/// What one SASS row counted of its instruction.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// Warp-level executions, and thread-level ones with the predicate on.
    executed: u64,
    lanes: u64,
    /// L1 tag requests to global memory, L2 sectors of global memory, shared wavefronts and
    /// the ideal number of them.
    requests: u64,
    sectors: u64,
    ideal_sectors: u64,
    wavefronts: u64,
    ideal: u64,
}

impl Counts {
    /// The requests of a global access: ncu's count, else one per warp instruction executed.
    fn requests_or_executed(&self) -> u64 {
        if self.requests > 0 {
            self.requests
        } else {
            self.executed
        }
    }
}

/// The bytes one thread's global load moves, by the width its opcode names: `LDG.E` 4,
/// `LDG.E.64` 8, `LDG.E.128` 16, `LDG.E.U8` 1, `LDGSTS.E.BYPASS.128` 16.
fn access_bytes(op: &str) -> u64 {
    op.split('.')
        .skip(1)
        .find_map(|m| match m {
            "U8" | "S8" => Some(1),
            "U16" | "S16" => Some(2),
            "64" => Some(8),
            "128" => Some(16),
            _ => None,
        })
        .unwrap_or(4)
}

/// The floating-point operations of one warp-level `HMMA` by the shape its opcode names
/// (`HMMA.16816.F32` is m16n8k16: 2 x 16 x 8 x 16); `None` for a shape not named that way.
fn hmma_flops(op: &str) -> Option<u64> {
    let shape = op.split('.').nth(1)?;
    let (m, n, k) = match shape {
        "16816" => (16, 8, 16),
        "1688" => (16, 8, 8),
        _ => return None,
    };
    Some(2 * m * n * k)
}

/// The floating-point operations of one warp's execution of an `HGMMA` by the shape its opcode
/// names (`HGMMA.64x128x16.F32`): a warpgroup's 2 x M x N x K, shared by its four warps. On an
/// H100, SDPA's cuDNN kernel at 2 x 8 x 512 x 64 executed 8192 `HGMMA.64x128x16` and 16384
/// `HGMMA.64x64x16` warp instructions: 1,073,741,824 FLOP this way, exactly the 4 B H S^2 D of
/// attention (`fixtures/ncu-source/sdpa_cudnn_sass_only_source.log`).
fn hgmma_flops(op: &str) -> Option<u64> {
    let shape = op.split('.').nth(1)?;
    let mut dims = shape.split('x').map(|d| d.parse::<u64>().ok());
    let (m, n, k) = (dims.next()??, dims.next()??, dims.next()??);
    Some(2 * m * n * k / 4)
}

fn columns(header: &[String]) -> Columns {
    let find = |name: &str| header.iter().position(|h| h == name);
    let sass_only = find("Line No").is_none();
    Columns {
        sass_only,
        width: header.len(),
        line: find("Line No").unwrap_or(0),
        // The first "Source" column is the CUDA text, the second the SASS.
        text: find("Source").unwrap_or(1),
        sass: header
            .iter()
            .enumerate()
            .filter(|(_, h)| *h == "Source")
            .nth(usize::from(!sass_only))
            .map_or(3, |(i, _)| i),
        address: find("Address"),
        stalls: find("Warp Stall Sampling (All Samples)"),
        instructions: find("Instructions Executed"),
        active_lanes: find("Predicated-On Thread Instructions Executed"),
        shared: find("L1 Wavefronts Shared"),
        shared_excessive: find("L1 Wavefronts Shared Excessive"),
        shared_ideal: find("L1 Wavefronts Shared Ideal"),
        global: find("L2 Theoretical Sectors Global"),
        global_excessive: find("L2 Theoretical Sectors Global Excessive"),
        requests: find("L1 Tag Requests Global"),
        global_ideal: find("L2 Theoretical Sectors Global Ideal"),
        reasons: header
            .iter()
            .enumerate()
            .filter(|(_, h)| h.starts_with("stall_") && !h.ends_with("(Not Issued)"))
            .map(|(i, h)| (i, h.clone()))
            .collect(),
    }
}

/// A row of `width` quoted cells whose cell `free` may hold unescaped quotes and commas: the
/// cells before it split from the left, those after it from the right, the rest is its text.
fn split_around(line: &str, width: usize, free: usize) -> Option<Vec<String>> {
    let inner = line.trim_end().strip_prefix('"')?.strip_suffix('"')?;
    let after = width.checked_sub(free + 1)?;
    let mut left = inner.splitn(free + 1, "\",\"");
    let mut cells: Vec<String> = left.by_ref().take(free).map(str::to_string).collect();
    let rest = left.next()?;
    let mut right: Vec<&str> = rest.rsplitn(after + 1, "\",\"").collect();
    if cells.len() != free || right.len() != after + 1 {
        return None;
    }
    right.reverse();
    cells.extend(right.into_iter().map(str::to_string));
    Some(cells)
}
