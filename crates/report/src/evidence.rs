//! The evidence a report is built from: a run plus the parsed form of each of its logs.

use std::collections::BTreeMap;

use parsers::ParsedLog;
use serde::{Deserialize, Serialize};

use crate::Run;

/// A run and its parsed logs, keyed by each log's path relative to the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub run: Run,
    pub logs: BTreeMap<String, ParsedLog>,
    /// Logs the manifest lists that could not be read, with why (missing, a directory, outside
    /// the run directory, ...): their stage's evidence is missing, never clean.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub missing: BTreeMap<String, String>,
}
