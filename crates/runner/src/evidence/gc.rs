//! `exhibit gc`: keeps a pipeline folder's newest runs and removes the others: each run
//! directory under `artifacts/` (with any directory named after it, `<id>-...`) and its
//! reports under `reports/`. A run still being written (its space reserve there, its manifest unfinished) is
//! never removed; nothing but run directories and their reports is touched.

use std::path::{Path, PathBuf};

use super::rundir::{ARTIFACTS, REPORTS, RESERVE};

/// What a collection did.
#[derive(Debug, Default)]
pub struct Collected {
    /// The run ids removed, oldest first.
    pub removed: Vec<String>,
    /// The bytes their directories and reports held.
    pub bytes: u64,
    /// Runs kept: the newest ones asked for.
    pub kept: usize,
    /// Older runs left in place because they are still being written (or were cut short).
    pub unfinished: Vec<String>,
}

/// The run id a directory name belongs to: `20261129T111642Z-217076f7` for itself and for a
/// directory named after it (`20261129T111642Z-217076f7-...`); `None` for a name that is no
/// run's.
fn run_of(name: &str) -> Option<&str> {
    let end = name
        .match_indices('-')
        .nth(1)
        .map_or(name.len(), |(i, _)| i);
    let id = &name[..end];
    let (time, hash) = id.split_once('-')?;
    let time_ok = time.len() == 16
        && time.ends_with('Z')
        && time.as_bytes().get(8) == Some(&b'T')
        && time
            .chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 8 | 15) || c.is_ascii_digit());
    let hash_ok = !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit());
    (time_ok && hash_ok).then_some(id)
}

/// Removes all but the `keep` newest runs under `root` (a pipeline's folder).
pub fn collect(root: &Path, keep: usize) -> std::io::Result<Collected> {
    let artifacts = root.join(ARTIFACTS);
    let mut runs: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    let entries = match std::fs::read_dir(&artifacts) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Collected::default()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        // A run directory is a directory, never a link to one elsewhere.
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = run_of(&name)
            && entry.path().join("manifest.json").is_file()
        {
            runs.entry(id.to_string()).or_default().push(entry.path());
        }
    }
    let mut out = Collected::default();
    let old = runs.len().saturating_sub(keep);
    for (n, (id, dirs)) in runs.into_iter().enumerate() {
        if n >= old {
            out.kept += 1;
            continue;
        }
        let own = artifacts.join(&id);
        let unfinished = own.join(RESERVE).exists()
            && super::rundir::read_manifest(&own).is_ok_and(|run| run.finished.is_none());
        if unfinished {
            out.unfinished.push(id);
            continue;
        }
        for dir in dirs {
            out.bytes += size(&dir);
            std::fs::remove_dir_all(&dir)?;
        }
        if let Ok(reports) = std::fs::read_dir(root.join(REPORTS)) {
            for report in reports.flatten() {
                let name = report.file_name().to_string_lossy().into_owned();
                let is_file = report.file_type().is_ok_and(|t| t.is_file());
                if is_file
                    && name
                        .strip_prefix(id.as_str())
                        .is_some_and(|r| r.starts_with('.'))
                {
                    out.bytes += report.metadata().map_or(0, |m| m.len());
                    std::fs::remove_file(report.path())?;
                }
            }
        }
        out.removed.push(id);
    }
    Ok(out)
}

/// The bytes of the regular files under `dir`, links not followed.
fn size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::run_of;

    #[test]
    fn a_run_and_its_trials_share_an_id_and_nothing_else_has_one() {
        assert_eq!(
            run_of("20261129T111642Z-217076f7"),
            Some("20261129T111642Z-217076f7")
        );
        assert_eq!(
            run_of("20261129T111642Z-217076f7-registers-64"),
            Some("20261129T111642Z-217076f7")
        );
        for other in [
            "latest",
            "notes",
            "2026-11-29",
            "20261129T111642Z",
            "x20261129T111642Z-ab",
        ] {
            assert_eq!(run_of(other), None, "{other}");
        }
    }
}
