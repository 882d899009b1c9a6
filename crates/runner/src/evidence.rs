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

/// Parses the logs `run` lists under `run_dir`. Logs without a format are left out; a log with
/// one that cannot be read (missing, a directory, a FIFO, a symbolic link, a path that leaves the
/// run directory, unreadable) is listed in `missing` with why, and never opened unless it is a
/// regular file inside the run directory. Logs compressed by `runner pack` (`.gz`) are read
/// through a decompressor.
pub fn from_run(run: Run, run_dir: &Path) -> Evidence {
    let mut logs: BTreeMap<String, ParsedLog> = BTreeMap::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for stage in &run.stages {
        for log in &stage.logs {
            let Some(format) = log.format else { continue };
            let read = readable(run_dir, &log.path).and_then(|path| {
                let reader = rundir::open_log(&path).map_err(|e| format!("unreadable: {e}"))?;
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
    let source_maps = crate::inline_sources::maps(&run, run_dir);
    Evidence {
        run,
        logs,
        missing,
        source_maps,
    }
}

/// The path of a log the manifest names, when it is a regular file inside the run directory;
/// else why not. Nothing is opened here: a FIFO never blocks the report.
fn readable(run_dir: &Path, relative: &str) -> Result<std::path::PathBuf, String> {
    let inside = Path::new(relative).components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if !inside {
        return Err("outside the run directory".to_string());
    }
    let path = run_dir.join(relative);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "missing".to_string(),
        _ => format!("unreadable: {e}"),
    })?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        Err("a symbolic link, not a log the run wrote".to_string())
    } else if kind.is_dir() {
        Err("a directory, not a log".to_string())
    } else if !kind.is_file() {
        Err("not a regular file (a FIFO or device)".to_string())
    } else {
        Ok(path)
    }
}
