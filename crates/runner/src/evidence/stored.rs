//! A stored run read back as [`report::Evidence`]: its manifest plus the parse of every log.
//!
//! This is all `exhibit report` needs, so a run directory renders on any machine, with no tools.

use std::collections::BTreeMap;
use std::path::Path;

use parsers::{Format, ParsedLog};
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
/// Logs compressed by `exhibit pack` (`.gz`) are read through a decompressor. A program's text
/// (`text-timings`) is read with the pattern its unit records, so the timings are the ones the
/// run read.
pub fn from_run(run: Run, run_dir: &Path) -> Evidence {
    from_run_with(run, run_dir, &mut Parsed::default())
}

/// The values failed programs printed beside those they expected, and the wrong elements
/// their standard comparisons listed, each by log path.
type ProgramOutput = (
    BTreeMap<String, Vec<(f64, f64)>>,
    BTreeMap<String, parsers::mismatch::ElementMismatch>,
);

/// What each failed program of the run printed that reads as its comparison: the values it
/// printed beside those it expected (stdout), and the wrong elements its standard comparison
/// listed (`numpy.testing`, `torch.testing`; stdout or stderr). At most 4 MiB of each log is
/// read.
fn program_output(run: &Run, run_dir: &Path) -> ProgramOutput {
    const MAX: u64 = 4 << 20;
    let mut pairs = BTreeMap::new();
    let mut mismatches = BTreeMap::new();
    for stage in &run.stages {
        if stage.unit.target != report::TargetKind::Program
            || stage.status != report::StageStatus::Findings
        {
            continue;
        }
        for log in &stage.logs {
            let stdout = log.path.ends_with("stdout.log");
            if !stdout && !log.path.ends_with("stderr.log") {
                continue;
            }
            let Ok(reader) = rundir::open_stored_log(run_dir, &log.path) else {
                continue;
            };
            let mut text = Vec::new();
            if std::io::Read::read_to_end(&mut std::io::Read::take(reader, MAX), &mut text).is_err()
            {
                continue;
            }
            let text = String::from_utf8_lossy(&text);
            if stdout {
                let got = parsers::program::got_expected_pairs(&text);
                if !got.is_empty() {
                    pairs.insert(log.path.clone(), got);
                }
            }
            if let Some(mut m) = parsers::mismatch::element_mismatch(&text) {
                // The values the program printed beside their references, where the
                // comparison listed none of its own.
                if m.values.is_empty() {
                    m.values = parsers::program::got_expected_pairs(&text)
                        .into_iter()
                        .map(|(got, want)| [got, want])
                        .collect();
                }
                mismatches.insert(log.path.clone(), m);
            }
        }
    }
    (pairs, mismatches)
}

/// The logs a run has parsed so far, by path: a run that gathers its evidence again (after its
/// experiments, for its report) parses only the logs written since. A log is written once, by
/// its unit, before any evidence lists it.
#[derive(Default)]
pub struct Parsed {
    logs: BTreeMap<String, ParsedLog>,
}

/// [`from_run`], reading through `parsed`: a log already in it is not read again, and each log
/// read is added to it.
pub fn from_run_with(mut run: Run, run_dir: &Path, parsed: &mut Parsed) -> Evidence {
    // The race trials' outputs compared as this runner compares them.
    crate::evidence::trial_outputs::digest_outputs(&mut run.experiments, run_dir);
    let mut logs: BTreeMap<String, ParsedLog> = BTreeMap::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for stage in run.stages.iter().chain(run.trial_units()) {
        for log in &stage.logs {
            let Some(format) = log.format else { continue };
            // A log listed again (by another stage, or a manifest that repeats it) is parsed
            // once: the first listing's reading stands.
            if logs.contains_key(&log.path) || missing.contains_key(&log.path) {
                continue;
            }
            if let Some(known) = parsed.logs.get(&log.path) {
                logs.insert(log.path.clone(), known.clone());
                continue;
            }
            let pattern = match (format, &stage.unit.timing_pattern) {
                (Format::TextTimings, Some(pattern)) => match pattern.compile() {
                    Ok(matcher) => Some(matcher),
                    Err(e) => {
                        missing.insert(log.path.clone(), format!("its recorded pattern: {e}"));
                        continue;
                    }
                },
                (Format::TextTimings, None) => {
                    missing.insert(
                        log.path.clone(),
                        "text timings, and the stage records no pattern to read them with".into(),
                    );
                    continue;
                }
                _ => None,
            };
            let read = rundir::open_stored_log(run_dir, &log.path)
                .map_err(|e| e.to_string())
                .and_then(|reader| {
                    match &pattern {
                        Some(matcher) => parsers::text_timings::parse_reader(reader, matcher),
                        None => parsers::parse_reader(format, reader),
                    }
                    .map_err(|e| format!("unreadable: {e}"))
                });
            match read {
                Ok(read) => {
                    parsed.logs.insert(log.path.clone(), read.clone());
                    logs.insert(log.path.clone(), read);
                }
                Err(why) => {
                    missing.insert(log.path.clone(), why);
                }
            }
        }
    }
    // The maps the run recorded when it ended, else (a run from before they were recorded)
    // the ones its directory still gives.
    let source_maps = if run.source_maps.is_empty() {
        crate::evidence::inline_sources::maps(&run, run_dir)
    } else {
        run.source_maps.clone()
    };
    let (program_pairs, program_mismatches) = program_output(&run, run_dir);
    Evidence {
        run,
        logs,
        missing,
        source_maps,
        program_pairs,
        program_mismatches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes this process has read so far (`rchar` of /proc/self/io).
    fn read_so_far() -> u64 {
        std::fs::read_to_string("/proc/self/io")
            .ok()
            .and_then(|io| {
                io.lines()
                    .find_map(|l| l.strip_prefix("rchar: ")?.trim().parse().ok())
            })
            .expect("/proc/self/io")
    }

    /// A log that 300 stage records list is read once: the bytes the process reads grow by
    /// about one log, not three hundred (other tests running beside this one read little).
    #[test]
    fn a_log_listed_by_many_records_is_parsed_once() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // A 1 MiB memcheck log of real records (the fixture, repeated).
        let fixture = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../parsers/fixtures/compute-sanitizer/memcheck_oob_write.log"
        ))
        .expect("the fixture");
        let mut log = String::new();
        while log.len() < 1 << 20 {
            log.push_str(&fixture);
        }
        std::fs::write(dir.path().join("memcheck.log"), &log).expect("write the log");
        // A real run's manifest (the program-model reference), its stages replaced by one
        // memcheck record listing the log, 300 times.
        let reference = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/program-model/reference/artifacts/20261127T083705Z-5fb5cca6"
        );
        let mut manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(Path::new(reference).join(rundir::MANIFEST)).expect("the manifest"),
        )
        .expect("JSON");
        let mut stage = manifest["stages"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["kind"] == "memcheck"))
            .cloned()
            .expect("a memcheck stage");
        stage["logs"] = serde_json::json!([
            { "path": "memcheck.log", "format": "compute-sanitizer" }
        ]);
        manifest["stages"] = serde_json::Value::from(vec![stage; 300]);
        manifest["experiments"] = serde_json::json!([]);
        std::fs::write(
            dir.path().join(rundir::MANIFEST),
            serde_json::to_vec(&manifest).expect("JSON"),
        )
        .expect("write the manifest");
        let before = read_so_far();
        let evidence = load(dir.path()).expect("the run loads");
        let read = read_so_far() - before;
        assert_eq!(evidence.run.stages.len(), 300);
        assert_eq!(evidence.logs.len(), 1, "{:?}", evidence.missing);
        assert!(
            read < 100 << 20,
            "read {read} bytes for a 1 MiB log listed 300 times"
        );
        // Gathered again through the logs a first gathering parsed (as a run does for its
        // report after its experiments), the log is not read again, and reads the same.
        let mut parsed = Parsed::default();
        let first = from_run_with(evidence.run.clone(), dir.path(), &mut parsed);
        let before = read_so_far();
        let again = from_run_with(evidence.run.clone(), dir.path(), &mut parsed);
        let read = read_so_far() - before;
        assert_eq!(again.logs, first.logs);
        assert_eq!(again.logs, evidence.logs);
        assert!(
            read < 1 << 20,
            "read {read} bytes gathering again a run whose 1 MiB log was parsed"
        );
    }
}
