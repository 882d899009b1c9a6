//! Reusing stage results from earlier runs.
//!
//! A unit's input hash covers everything its result depends on: the stage kind and name, its
//! command line (with the run directory abstracted away), the sha256 of the files it reads (the
//! kernel sources, or the cubin it consumes), the versions of the tools it needs, the GPU and
//! driver for GPU stages, and the harness executable. [`Index::load`] reads the manifests of the
//! runs under `artifacts/`; a unit whose hash matches a passed or findings result there is
//! served by copying the files that unit left (its `outputs`), and records where it came from in
//! `cached_from`.
//!
//! The invariant: a cached result is served only when every input it read is byte-identical,
//! and every file it left is still there, unchanged. A served unit's files are checked against
//! the hashes recorded when it ran; one missing or changed file and the unit runs again.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use report::{Run, Stage, StageStatus};
use serde_json::json;

use crate::evidence::rundir;

/// Earlier results by input hash, newest run first.
#[derive(Debug, Default)]
pub struct Index {
    entries: HashMap<String, Vec<Hit>>,
    /// This user's seal: units are served only under it, and new ones are sealed with it.
    seal: Option<Seal>,
}

/// The user's key for sealing units: 32 random bytes in `cache.key` under the user's cache
/// directory (created once, readable by the user alone). A unit's seal is an HMAC-SHA256 of
/// its input hash, its ending and its files' hashes: a manifest written elsewhere (a CI
/// artifact unzipped at the project root, a received run) carries no seal of this key, and the
/// cache never serves, so never executes, what it lists.
#[derive(Clone)]
pub struct Seal {
    key: [u8; 32],
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(..)")
    }
}

/// The seal key's file name under the user's cache directory.
pub const SEAL_KEY: &str = "cache.key";

impl Seal {
    /// The key under `cache_home`, made when there is none. `None` (and nothing served from
    /// the cache) where it cannot be read or made, or is not the user's own.
    pub fn of_user(cache_home: &Path) -> Option<Seal> {
        use std::io::{Read, Write};
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let path = cache_home.join(SEAL_KEY);
        let read = |path: &Path| -> Option<Seal> {
            let meta = std::fs::symlink_metadata(path).ok()?;
            let own = meta.is_file()
                && meta.uid() == nix::unistd::getuid().as_raw()
                && meta.mode() & 0o077 == 0;
            if !own {
                warn(
                    &path.display().to_string(),
                    "not a file of this user's alone: no unit is served from the cache",
                );
                return None;
            }
            let bytes = std::fs::read(path).ok()?;
            Some(Seal {
                key: bytes.try_into().ok()?,
            })
        };
        if std::fs::symlink_metadata(&path).is_ok() {
            return read(&path);
        }
        std::fs::create_dir_all(cache_home).ok()?;
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .ok()?;
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(&key));
        match made {
            Ok(()) => Some(Seal { key }),
            // Another runner made it first: read that one.
            Err(_) => read(&path),
        }
    }

    /// The seal of a unit's record: its input hash, status, exit code and files.
    pub fn sign(&self, stage: &Stage) -> Option<String> {
        let hash = stage.input_hash.as_ref()?;
        let mut message = format!(
            "exhibit.seal/1\n{hash}\n{:?}\n{:?}\n",
            stage.status, stage.exit_code
        );
        for (path, sha) in &stage.outputs {
            message.push_str(&format!("{path}\0{sha}\n"));
        }
        Some(hmac_sha256(&self.key, message.as_bytes()))
    }

    /// Whether a record carries this key's seal.
    pub fn verifies(&self, stage: &Stage) -> bool {
        match (&stage.seal, self.sign(stage)) {
            (Some(seal), Some(want)) => {
                // Compared in full, whatever differs first.
                seal.len() == want.len()
                    && seal
                        .bytes()
                        .zip(want.bytes())
                        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                        == 0
            }
            _ => false,
        }
    }
}

/// HMAC-SHA256 (RFC 2104) of `message` under a 32-byte key, in hex.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

/// An earlier result a unit can reuse.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The run whose directory holds the files.
    pub run_id: String,
    /// The run that first produced them (for `cached_from`).
    pub origin: String,
    pub stage: Stage,
    /// That run's directory.
    pub run_dir: PathBuf,
    /// The unit's directory in that run, relative to `run_dir`.
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
        crate::evidence::hash::bytes(value.to_string().as_bytes())
    }
}

impl Index {
    /// Reads every manifest under `<root>/artifacts/` except the current run's. Manifests that
    /// do not read are skipped: the cache is an optimisation, never a reason to fail. What is
    /// skipped for being unsafe to follow (a symbolic link, a FIFO, a manifest past its size
    /// bound, a unit whose paths leave its run directory) is said on stderr; a directory with no
    /// manifest (`artifacts/reference`) is skipped silently.
    pub fn load(root: &Path, current: &str, seal: Option<Seal>) -> Index {
        let mut index = Index {
            seal,
            ..Index::default()
        };
        let artifacts = root.join(rundir::ARTIFACTS);
        let Ok(entries) = std::fs::read_dir(&artifacts) else {
            return index;
        };
        let shown = |p: &Path| crate::evidence::rundir::shown(p);
        let mut runs: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let dir = entry.path();
            if dir.file_name().is_some_and(|n| n == current) {
                continue;
            }
            if let Err(why) = rundir::directory(&dir) {
                if !entry.file_type().is_ok_and(|t| t.is_file()) {
                    warn(&shown(&dir), &why.to_string());
                }
                continue;
            }
            let manifest = dir.join(rundir::MANIFEST);
            match rundir::regular_file(&manifest) {
                Ok(_) => {}
                Err(rundir::Refused::Missing) => continue,
                Err(why) => {
                    warn(&shown(&manifest), &why.to_string());
                    continue;
                }
            }
            let modified = std::fs::symlink_metadata(&manifest)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            runs.push((modified, dir));
        }
        // Oldest first, so that newer runs' entries replace older ones.
        runs.sort();
        for (_, dir) in runs {
            match rundir::read_manifest(&dir) {
                Ok(run) => index.add(&dir, &run, &shown(&dir)),
                Err(rundir::ReadError::Refused { path, source }) => {
                    warn(&shown(&path), &source.to_string());
                }
                Err(rundir::ReadError::Json { .. }) => {}
            }
        }
        index
    }

    /// Adds the reusable units of `run`, stored in `dir`: each needs its unit directory and
    /// every log inside `dir` ([`rundir::inside`]), the logs regular files.
    pub fn add(&mut self, dir: &Path, run: &Run, shown: &str) {
        // The experiments' trials are units like the run's own.
        for stage in run.stages.iter().chain(run.trial_units()) {
            if !matches!(stage.status, StageStatus::Passed | StageStatus::Findings) {
                continue;
            }
            let Some(hash) = &stage.input_hash else {
                continue;
            };
            let Some(unit_dir) = unit_dir_of(stage) else {
                continue;
            };
            let checked = rundir::inside(dir, &unit_dir.to_string_lossy())
                .and_then(|unit| rundir::directory(&unit))
                .map_err(|why| (unit_dir.to_string_lossy().into_owned(), why))
                .and_then(|()| {
                    for log in &stage.logs {
                        rundir::inside(dir, &log.path)
                            .and_then(|path| rundir::regular_file(&path))
                            .map_err(|why| (log.path.clone(), why))?;
                    }
                    Ok(())
                });
            match checked {
                Ok(()) => {}
                // An incomplete unit (an interrupted run, a deleted log) is simply not reused.
                Err((_, rundir::Refused::Missing)) => continue,
                Err((path, why)) => {
                    warn(
                        shown,
                        &format!("stage `{}` lists `{path}`: {why}", stage.name),
                    );
                    continue;
                }
            }
            // A unit that recorded no files cannot be checked, and is never served.
            if stage.outputs.is_empty() {
                continue;
            }
            // Nor one that this user's runner did not seal: a run made elsewhere is evidence
            // to read, never a build to serve.
            if !self.seal.as_ref().is_some_and(|seal| seal.verifies(stage)) {
                continue;
            }
            // Newest first.
            self.entries.entry(hash.clone()).or_default().insert(
                0,
                Hit {
                    run_id: run.id.clone(),
                    origin: stage.cached_from.clone().unwrap_or_else(|| run.id.clone()),
                    stage: stage.clone(),
                    run_dir: dir.to_path_buf(),
                    dir: unit_dir,
                },
            );
        }
    }

    /// The seal of a unit's record under this user's key, when there is one.
    pub fn seal(&self, stage: &Stage) -> Option<String> {
        self.seal.as_ref()?.sign(stage)
    }

    /// The newest earlier result with this input hash whose files are all still there,
    /// byte-identical to what it recorded.
    pub fn get(&self, hash: &str) -> Option<&Hit> {
        self.entries.get(hash)?.iter().find(|hit| hit.intact())
    }
}

impl Hit {
    /// Whether every file the unit left is a regular file inside its unit directory, with the
    /// recorded sha256, and every log it lists is one of them.
    fn intact(&self) -> bool {
        let files_match = self.stage.outputs.iter().all(|(path, sha)| {
            let Some(relative) = self.inside(path) else {
                return false;
            };
            // Every component inside the run directory, none a link, the file a regular one.
            let Ok(file) = rundir::inside(
                &self.run_dir,
                &crate::evidence::rundir::slash(&self.dir.join(relative)),
            ) else {
                return false;
            };
            rundir::regular_file(&file).is_ok()
                && crate::evidence::hash::file(&file).is_ok_and(|actual| actual == *sha)
        });
        files_match
            && self
                .stage
                .logs
                .iter()
                .all(|log| self.stage.outputs.contains_key(&log.path))
    }

    /// A recorded path, relative to the unit directory; `None` when it is not plainly inside it
    /// (absolute, `..`, another unit's).
    fn inside<'p>(&self, path: &'p str) -> Option<&'p Path> {
        let relative = Path::new(path).strip_prefix(&self.dir).ok()?;
        relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
            .then_some(relative)
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

/// Says on stderr what the cache skipped, and why.
fn warn(what: &str, why: &str) {
    // A stored manifest's paths are data: no control sequence reaches the terminal.
    say!(
        "{}",
        report::text::strip_controls(&format!("runner: cache: {what}: {why}; not reused"))
    );
}

/// Copies the files an earlier unit left (its logs, a build's products) into `dest`, the same
/// unit's directory in this run, whose path relative to this run's directory is `relative`.
/// Returns their hashes under their new paths.
pub fn restore(
    hit: &Hit,
    dest: &Path,
    relative: &Path,
) -> std::io::Result<BTreeMap<String, String>> {
    std::fs::create_dir_all(dest)?;
    let mut outputs = BTreeMap::new();
    for (path, sha) in &hit.stage.outputs {
        let inside = hit
            .inside(path)
            .ok_or_else(|| std::io::Error::other(format!("{path} is outside its unit")))?;
        let from = rundir::inside(
            &hit.run_dir,
            &crate::evidence::rundir::slash(&hit.dir.join(inside)),
        )
        .map_err(std::io::Error::other)?;
        let to = dest.join(inside);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // A unit served from its own directory (an experiment's build that is the run's own):
        // its files are already there.
        let same = match (std::fs::canonicalize(&from), std::fs::canonicalize(&to)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            outputs.insert(
                crate::evidence::rundir::slash(&relative.join(inside)),
                sha.clone(),
            );
            continue;
        }
        if std::fs::symlink_metadata(&to).is_ok() {
            std::fs::remove_file(&to)?;
        }
        // A copy, never a hard link: a program that updates a restored file in place must not
        // change the earlier run's stored evidence.
        std::fs::copy(&from, &to)?;
        outputs.insert(
            crate::evidence::rundir::slash(&relative.join(inside)),
            sha.clone(),
        );
    }
    Ok(outputs)
}
