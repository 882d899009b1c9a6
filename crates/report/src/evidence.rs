//! The evidence a report is built from: a run plus the parsed form of each of its logs.

use std::collections::BTreeMap;

use parsers::ParsedLog;
use serde::{Deserialize, Serialize};

use crate::run::Run;
pub use crate::run::SourceMap;

/// A run and its parsed logs, keyed by each log's path relative to the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub run: Run,
    pub logs: BTreeMap<String, ParsedLog>,
    /// Logs the manifest lists that could not be read, with why (missing, a directory, outside
    /// the run directory, ...): their stage's evidence is missing, never clean.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub missing: BTreeMap<String, String>,
    /// Files a build wrote from the user's own text (torch's `load_inline` writes its source
    /// strings to `cuda.cu` and `main.cpp`), mapped back to the file and lines that hold it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_maps: Vec<SourceMap>,
    /// The values a failed program printed beside the values it expected
    /// (`parsers::program::got_expected_pairs`), by the path of the stdout log they came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub program_pairs: BTreeMap<String, Vec<(f64, f64)>>,
    /// The wrong elements a failed program's standard comparison printed
    /// (`numpy.testing`, `torch.testing`: `parsers::mismatch::element_mismatch`), by the path
    /// of the stdout or stderr log it came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub program_mismatches: BTreeMap<String, parsers::mismatch::ElementMismatch>,
}
