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
}
