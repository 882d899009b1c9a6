//! Nsight Compute's source page as CSV (`ncu --import R --csv --page source --print-source
//! cuda,sass`): for each profiled function, a `"File Path"` and a `"Function Name"` line, a header,
//! then one row per source line (its `Line No` set) followed by one row per SASS instruction of
//! that line (`Line No` empty). The source-line rows already sum their instructions' counters;
//! they are what is kept, as [`SourceLine`]s.

use std::collections::HashMap;

use crate::model::{Format, ParsedLog, SourceLine};
use crate::util::{note_unparsed, parse_u64};

/// The columns read, by their header names.
struct Columns {
    line: usize,
    text: usize,
    stalls: Option<usize>,
    instructions: Option<usize>,
    shared: Option<usize>,
    shared_excessive: Option<usize>,
    global: Option<usize>,
    global_excessive: Option<usize>,
    /// `stall_*` columns of all samples (not the `(Not Issued)` ones), with their names.
    reasons: Vec<(usize, String)>,
}

pub(crate) struct SourceParser {
    log: ParsedLog,
    file: String,
    function: String,
    columns: Option<Columns>,
    /// Index of a (file, function, line) already kept.
    seen: HashMap<(String, String, u32), usize>,
}

impl SourceParser {
    pub(crate) fn new() -> SourceParser {
        SourceParser {
            log: ParsedLog::new(Format::NcuSource, None),
            file: String::new(),
            function: String::new(),
            columns: None,
            seen: HashMap::new(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return;
        }
        let Some(cells) = split(line) else {
            note_unparsed(&mut self.log, line);
            return;
        };
        let first = cells.first().map(String::as_str).unwrap_or("");
        match first {
            "File Path" => {
                self.file = cells.get(1).cloned().unwrap_or_default();
                self.columns = None;
            }
            "Function Name" => {
                self.function = cells.get(1).cloned().unwrap_or_default();
                self.columns = None;
            }
            "Line No" => self.columns = Some(columns(&cells)),
            _ => self.row(&cells, line),
        }
    }

    fn row(&mut self, cells: &[String], raw: &str) {
        let Some(c) = &self.columns else {
            note_unparsed(&mut self.log, raw);
            return;
        };
        // A SASS instruction's row: counted in its source line's row already.
        let Some(line) = cells.get(c.line).and_then(|l| l.trim().parse::<u32>().ok()) else {
            return;
        };
        let get = |i: Option<usize>| {
            i.and_then(|i| cells.get(i))
                .and_then(|v| parse_u64(v))
                .unwrap_or(0)
        };
        let top_stall = c
            .reasons
            .iter()
            .map(|(i, name)| (get(Some(*i)), name))
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, _)| *n)
            .map(|(_, name)| name.clone());
        let row = SourceLine {
            file: self.file.clone(),
            function: self.function.clone(),
            line,
            text: cells
                .get(c.text)
                .map(|t| t.trim().chars().take(200).collect())
                .unwrap_or_default(),
            stall_samples: get(c.stalls),
            top_stall,
            instructions: get(c.instructions),
            shared_wavefronts: get(c.shared),
            shared_excessive: get(c.shared_excessive),
            global_sectors: get(c.global),
            global_excessive: get(c.global_excessive),
        };
        let key = (row.file.clone(), row.function.clone(), line);
        match self.seen.get(&key) {
            // The same line listed again (inlined into the function twice): add it up.
            Some(&i) => {
                if let Some(old) = self.log.source_lines.get_mut(i) {
                    old.stall_samples += row.stall_samples;
                    old.instructions += row.instructions;
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

    pub(crate) fn finish(mut self) -> ParsedLog {
        self.log.complete = !self.log.source_lines.is_empty();
        self.log
    }
}

fn columns(header: &[String]) -> Columns {
    let find = |name: &str| header.iter().position(|h| h == name);
    Columns {
        line: find("Line No").unwrap_or(0),
        // The first "Source" column is the CUDA text, the second the SASS.
        text: find("Source").unwrap_or(1),
        stalls: find("Warp Stall Sampling (All Samples)"),
        instructions: find("Instructions Executed"),
        shared: find("L1 Wavefronts Shared"),
        shared_excessive: find("L1 Wavefronts Shared Excessive"),
        global: find("L2 Theoretical Sectors Global"),
        global_excessive: find("L2 Theoretical Sectors Global Excessive"),
        reasons: header
            .iter()
            .enumerate()
            .filter(|(_, h)| h.starts_with("stall_") && !h.ends_with("(Not Issued)"))
            .map(|(i, h)| (i, h.clone()))
            .collect(),
    }
}

/// One CSV record's cells, or `None` when the line is not a record.
fn split(line: &str) -> Option<Vec<String>> {
    if !line.starts_with('"') {
        return None;
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(line.as_bytes());
    let record = reader.records().next()?.ok()?;
    Some(record.iter().map(str::to_string).collect())
}
