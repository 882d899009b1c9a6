//! A stored run read back as [`report::Evidence`]: its manifest plus the parse of every log.
//!
//! This is all `runner report` needs, so a run directory renders on any machine, with no tools.

use std::collections::BTreeMap;
use std::path::Path;

use parsers::ParsedLog;
use report::{Evidence, Run};

use crate::evidence::rundir::{self, ReadError};

/// Reads `<run_dir>/manifest.json` and parses the logs it lists.
pub fn load(run_dir: &Path) -> Result<Evidence, ReadError> {
    let run = rundir::read_manifest(run_dir)?;
    Ok(from_run(run, run_dir))
}

/// Parses the logs `run` lists under `run_dir`. Logs without a format are left out; a log with
/// one that cannot be read (missing, a directory, a FIFO, a symbolic link anywhere on its path,
/// a path that leaves the run directory, unreadable) is listed in `missing` with why, and never
/// opened unless it is a regular file inside the run directory ([`rundir::open_stored_log`]).
/// Logs compressed by `runner pack` (`.gz`) are read through a decompressor.
pub fn from_run(run: Run, run_dir: &Path) -> Evidence {
    let mut logs: BTreeMap<String, ParsedLog> = BTreeMap::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for stage in &run.stages {
        for log in &stage.logs {
            let Some(format) = log.format else { continue };
            let read = rundir::open_stored_log(run_dir, &log.path)
                .map_err(|e| e.to_string())
                .and_then(|reader| {
                    parsers::parse_reader(format, reader).map_err(|e| format!("unreadable: {e}"))
                });
            match read {
                Ok(parsed) => {
                    logs.insert(log.path.clone(), parsed);
                }
                Err(why) => {
                    missing.insert(log.path.clone(), why);
                }
            }
        }
    }
    let source_maps = crate::evidence::inline_sources::maps(&run, run_dir);
    Evidence {
        run,
        logs,
        missing,
        source_maps,
    }
}
