//! A stored run read back as [`report::Evidence`]: its manifest plus the parse of every log.
//!
//! This is all `runner report` needs, so a run directory renders on any machine, with no tools.

use std::collections::BTreeMap;
use std::path::Path;

use parsers::ParsedLog;
use report::{Evidence, Run};

use crate::rundir::{self, ReadError};

/// Reads `<run_dir>/manifest.json` and parses the logs it lists.
pub fn load(run_dir: &Path) -> Result<Evidence, ReadError> {
    let run = rundir::read_manifest(run_dir)?;
    Ok(from_run(run, run_dir))
}

/// Parses the logs `run` lists under `run_dir`. Logs that are missing or have no format are
/// left out; the manifest still names them. Logs compressed by `runner pack` (`.gz`) are read
/// through a decompressor.
pub fn from_run(run: Run, run_dir: &Path) -> Evidence {
    let mut logs: BTreeMap<String, ParsedLog> = BTreeMap::new();
    for stage in &run.stages {
        for log in &stage.logs {
            let Some(format) = log.format else { continue };
            let Ok(reader) = rundir::open_log(&run_dir.join(&log.path)) else {
                continue;
            };
            if let Ok(parsed) = parsers::parse_reader(format, reader) {
                logs.insert(log.path.clone(), parsed);
            }
        }
    }
    Evidence { run, logs }
}
