//! Nsight Compute `--csv` output: the default details page (long form: one row per metric or
//! rule result) and `--page raw` (wide form: one column per metric, with a units row under the
//! header).
//!
//! ncu's own messages (`==PROF==`, `==WARNING==`, `==ERROR==`) and the profiled program's output
//! share the stream with the CSV rows. Rows are recognised by their leading quote and split with
//! the csv crate, so kernel names holding commas and template arguments stay whole; numbers lose
//! their thousands separators.

use crate::model::{FindingKind, Format, Metric, ParsedLog, Severity};
use crate::ncu_rule;
use crate::site::{Record, Site, Sites};
use crate::util::{note_unparsed, parse_f64, parse_u64, scrub_addresses};

/// Longest CSV record assembled from several lines (a quoted field holding newlines).
const MAX_RECORD: usize = 1 << 20;

/// Columns that identify a launch rather than measure it, in the raw page.
const IDENTITY: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// Parses Nsight Compute CSV line by line.
pub(crate) struct NcuParser {
    log: ParsedLog,
    sites: Sites,
    pending: String,
    layout: Option<Layout>,
    rows: u64,
    errors: u64,
    /// Launches with a `nan` metric: a launch that failed (`==ERROR== LaunchFailed`). Their
    /// values are no measurements, and the rule results computed from them say nothing.
    failed_launches: Vec<Option<u64>>,
    nan_values: u64,
    /// The reader of every record of the page.
    csv: crate::csv_line::CsvLine,
}

enum Layout {
    Details(Details),
    Raw {
        header: Vec<String>,
        units: Option<Vec<String>>,
        id: Option<usize>,
        kernel: Option<usize>,
    },
}

struct Details {
    id: Option<usize>,
    kernel: Option<usize>,
    section: Option<usize>,
    name: Option<usize>,
    unit: Option<usize>,
    value: Option<usize>,
    rule: Option<usize>,
    rule_type: Option<usize>,
    rule_text: Option<usize>,
    speedup_type: Option<usize>,
    speedup: Option<usize>,
}

impl NcuParser {
    pub(crate) fn new() -> NcuParser {
        NcuParser {
            log: ParsedLog::new(Format::NcuCsv, None),
            sites: Sites::default(),
            pending: String::new(),
            layout: None,
            rows: 0,
            errors: 0,
            failed_launches: Vec::new(),
            nan_values: 0,
            csv: crate::csv_line::CsvLine::new(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) {
        if !self.pending.is_empty() {
            if self.pending.len() < MAX_RECORD {
                self.pending.push('\n');
                self.pending.push_str(line);
            }
            if quotes_balanced(&self.pending) || self.pending.len() >= MAX_RECORD {
                let record = std::mem::take(&mut self.pending);
                self.record(&record);
            }
            return;
        }
        if line.starts_with('"') {
            if quotes_balanced(line) {
                self.record(line);
            } else {
                self.pending.push_str(line);
            }
        } else if let Some(rest) = line.strip_prefix("==ERROR==") {
            self.errors += 1;
            self.tool_error(rest.trim(), line);
        } else if line.starts_with("==PROF==")
            || line.starts_with("==WARNING==")
            || line.trim().is_empty()
        {
        } else {
            self.unparsed(line);
        }
    }

    fn unparsed(&mut self, line: &str) {
        note_unparsed(&mut self.log, line);
    }

    fn tool_error(&mut self, message: &str, raw: &str) {
        let message = scrub_addresses(message);
        self.sites.add(Record {
            site: Site {
                kind: FindingKind::ToolError,
                kernel: None,
                file: None,
                line: None,
                space: None,
                size: None,
                discriminator: &message,
            },
            severity: Severity::Error,
            access: None,
            message: &message,
            example: None,
            excerpt: &[raw.to_string()],
            occurrences: 1,
        });
    }

    fn record(&mut self, text: &str) {
        let Some(row) = self.csv.cells(text) else {
            self.unparsed(text);
            return;
        };
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        if cells.first() == Some(&"ID") {
            self.header(&cells);
            return;
        }
        match &mut self.layout {
            None => self.unparsed(text),
            Some(Layout::Raw { units, id, .. })
                if units.is_none()
                    && id.and_then(|i| cells.get(i)).is_some_and(|c| c.is_empty()) =>
            {
                *units = Some(cells.iter().map(|c| c.to_string()).collect());
            }
            Some(Layout::Raw { .. }) => {
                self.rows += 1;
                self.raw_row(&cells);
            }
            Some(Layout::Details(_)) => {
                self.rows += 1;
                self.details_row(&cells, text);
            }
        }
    }

    fn header(&mut self, cells: &[&str]) {
        let find = |name: &str| cells.iter().position(|c| *c == name);
        self.layout = Some(if find("Metric Name").is_some() {
            Layout::Details(Details {
                id: find("ID"),
                kernel: find("Kernel Name"),
                section: find("Section Name"),
                name: find("Metric Name"),
                unit: find("Metric Unit"),
                value: find("Metric Value"),
                rule: find("Rule Name"),
                rule_type: find("Rule Type"),
                rule_text: find("Rule Description"),
                speedup_type: find("Estimated Speedup Type"),
                speedup: find("Estimated Speedup"),
            })
        } else {
            Layout::Raw {
                header: cells.iter().map(|c| c.to_string()).collect(),
                units: None,
                id: find("ID"),
                kernel: find("Kernel Name"),
            }
        });
    }

    fn details_row(&mut self, cells: &[&str], raw: &str) {
        let Some(Layout::Details(d)) = &self.layout else {
            return;
        };
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).copied().unwrap_or("");
        let kernel = cell(d.kernel);
        let launch = parse_u64(cell(d.id));
        let section = cell(d.section);
        let name = cell(d.name);
        let rule = cell(d.rule);
        if !name.is_empty() {
            // Text values ("PolicySpread", "CachePreferNone") are not metrics, and `nan` is
            // what ncu prints for a launch that failed.
            let raw_value = cell(d.value).trim();
            let value = parse_f64(raw_value);
            if raw_value.eq_ignore_ascii_case("nan") || raw_value.eq_ignore_ascii_case("inf") {
                self.nan_values += 1;
                if !self.failed_launches.contains(&launch) {
                    self.failed_launches.push(launch);
                }
            }
            if let Some(value) = value {
                let unit = cell(d.unit);
                self.log.metrics.push(Metric {
                    kernel: kernel.to_string(),
                    launch,
                    section: (!section.is_empty()).then(|| section.to_string()),
                    name: name.to_string(),
                    unit: (!unit.is_empty()).then(|| unit.to_string()),
                    value,
                });
            }
        }
        if !rule.is_empty() && !self.failed_launches.contains(&launch) {
            let rule_type = cell(d.rule_type);
            let text = cell(d.rule_text);
            let speedup_type = cell(d.speedup_type);
            let speedup = parse_f64(cell(d.speedup));
            let severity = match rule_type {
                "ERR" | "ERROR" => Severity::Error,
                "WRN" | "WARNING" => Severity::Warning,
                _ => Severity::Info,
            };
            let message = format!("{rule}: {text}");
            let discriminator = rule.to_string();
            let (i, new) = self.sites.add(Record {
                site: Site {
                    kind: FindingKind::ProfilerRule,
                    kernel: Some(kernel),
                    file: None,
                    line: None,
                    space: None,
                    size: None,
                    discriminator: &discriminator,
                },
                severity,
                access: None,
                message: &message,
                example: launch.map(|l| format!("launch {l}")).as_deref(),
                excerpt: &[raw.to_string()],
                occurrences: 1,
            });
            if new && let Some(f) = self.sites.get_mut(i) {
                let mut read = ncu_rule::read(rule, rule_type, text, speedup_type, speedup);
                read.section = (!section.is_empty()).then(|| section.to_string());
                f.profiler_rule = Some(Box::new(read));
            }
        }
    }

    fn raw_row(&mut self, cells: &[&str]) {
        let Some(Layout::Raw {
            header,
            units,
            id,
            kernel,
        }) = &self.layout
        else {
            return;
        };
        let kernel_name = kernel.and_then(|i| cells.get(i)).copied().unwrap_or("");
        let launch = id.and_then(|i| cells.get(i)).and_then(|c| parse_u64(c));
        for (i, name) in header.iter().enumerate() {
            if IDENTITY.contains(&name.as_str()) {
                continue;
            }
            let cell = cells.get(i).map_or("", |c| c.trim());
            if cell.eq_ignore_ascii_case("nan") {
                self.nan_values += 1;
                continue;
            }
            let Some(value) = parse_f64(cell) else {
                continue;
            };
            let unit = units
                .as_ref()
                .and_then(|u| u.get(i))
                .filter(|u| !u.is_empty())
                .cloned();
            self.log.metrics.push(Metric {
                kernel: kernel_name.to_string(),
                launch,
                section: None,
                name: name.clone(),
                unit,
                value,
            });
        }
    }

    pub(crate) fn finish(mut self) -> ParsedLog {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.unparsed(&pending);
        }
        self.log.complete = self.layout.is_some() && self.rows > 0 && self.errors == 0;
        self.log.findings = self.sites.into_findings();
        if self.nan_values > 0 {
            // Say on the failure itself how much of the page is no measurement.
            for f in &mut self.log.findings {
                if f.kind == FindingKind::ToolError && f.message.contains("LaunchFailed") {
                    f.facts.nan_metrics = Some(self.nan_values);
                }
            }
        }
        self.log
    }
}

fn quotes_balanced(s: &str) -> bool {
    memchr::memchr_iter(b'"', s.as_bytes())
        .count()
        .is_multiple_of(2)
}
