//! Reusing stage results from earlier runs.
//!
//! A unit's input hash covers everything its result depends on: the stage kind and name, its
//! command line (with the run directory abstracted away), the sha256 of the files it reads (the
//! kernel sources, or the cubin it consumes), the versions of the tools it needs, the GPU and
//! driver for GPU stages, and the harness executable. [`Index::load`] reads the manifests of the
//! runs under `artifacts/`; a unit whose hash matches a passed or findings result there is
//! served by copying that unit's directory, and records where it came from in `cached_from`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use report::{Run, Stage, StageStatus};
use serde_json::json;

use crate::rundir;

/// Earlier results by input hash, newest run first.
#[derive(Debug, Default)]
pub struct Index {
    entries: HashMap<String, Hit>,
}

/// An earlier result a unit can reuse.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The run whose directory holds the files.
    pub run_id: String,
    /// The run that first produced them (for `cached_from`).
    pub origin: String,
    pub stage: Stage,
    /// The unit's directory in that run.
    pub dir: PathBuf,
}

/// What a unit's result depends on, before hashing.
#[derive(Debug, Clone, Default)]
pub struct Key {
    pub kind: String,
    pub stage: String,
    /// The recorded command, with the run directory replaced by `<run>`.
    pub command: Vec<String>,
    /// Path to sha256 of each file the unit reads.
    pub files: BTreeMap<String, String>,
    /// Tool name to version line.
    pub tools: BTreeMap<String, String>,
    /// GPU name, UUID and driver, for GPU stages.
    pub gpu: Vec<String>,
}

impl Key {
    /// The hash recorded as `input_hash`.
    pub fn hash(&self) -> String {
        let value = json!({
            "schema": "exhibit.cache/1",
            "runner": env!("CARGO_PKG_VERSION"),
            "kind": self.kind,
            "stage": self.stage,
            "command": self.command,
            "files": self.files,
            "tools": self.tools,
            "gpu": self.gpu,
        });
        crate::hash::bytes(value.to_string().as_bytes())
    }
}

impl Index {
    /// Reads every manifest under `<root>/artifacts/` except the current run's. Manifests that
    /// do not read are ignored: the cache is an optimisation, never a reason to fail.
    pub fn load(root: &Path, current: &str) -> Index {
        let mut index = Index::default();
        let artifacts = root.join(rundir::ARTIFACTS);
        let Ok(entries) = std::fs::read_dir(&artifacts) else {
            return index;
        };
        let mut runs: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n != current))
            .map(|p| {
                let modified = std::fs::metadata(p.join(rundir::MANIFEST))
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (modified, p)
            })
            .collect();
        // Oldest first, so that newer runs' entries replace older ones.
        runs.sort();
        for (_, dir) in runs {
            let Ok(run) = rundir::read_manifest(&dir) else {
                continue;
            };
            index.add(&dir, &run);
        }
        index
    }

    fn add(&mut self, dir: &Path, run: &Run) {
        for stage in &run.stages {
            if !matches!(stage.status, StageStatus::Passed | StageStatus::Findings) {
                continue;
            }
            let Some(hash) = &stage.input_hash else {
                continue;
            };
            let Some(unit_dir) = unit_dir_of(stage) else {
                continue;
            };
            let unit_dir = dir.join(unit_dir);
            let complete = stage.logs.iter().all(|log| dir.join(&log.path).is_file());
            if !complete {
                continue;
            }
            self.entries.insert(
                hash.clone(),
                Hit {
                    run_id: run.id.clone(),
                    origin: stage.cached_from.clone().unwrap_or_else(|| run.id.clone()),
                    stage: stage.clone(),
                    dir: unit_dir,
                },
            );
        }
    }

    pub fn get(&self, hash: &str) -> Option<&Hit> {
        self.entries.get(hash)
    }
}

/// The unit directory of a stage: the common parent of its logs.
fn unit_dir_of(stage: &Stage) -> Option<PathBuf> {
    let first = stage.logs.first()?;
    let parent = Path::new(&first.path).parent()?.to_path_buf();
    stage
        .logs
        .iter()
        .all(|l| Path::new(&l.path).parent() == Some(parent.as_path()))
        .then_some(parent)
}

/// Copies an earlier unit's files into `dest` (hard links where the file system allows).
pub fn restore(hit: &Hit, dest: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dest)?;
    // The whole unit directory: its logs, and a build's products below it.
    for entry in walkdir::WalkDir::new(&hit.dir).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        let Ok(relative) = entry.path().strip_prefix(&hit.dir) else {
            continue;
        };
        let to = dest.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to)?;
        } else if entry.file_type().is_file() {
            if to.exists() {
                std::fs::remove_file(&to)?;
            }
            if std::fs::hard_link(entry.path(), &to).is_err() {
                std::fs::copy(entry.path(), &to)?;
            }
        }
    }
    Ok(())
}
