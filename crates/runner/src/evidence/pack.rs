//! `exhibit pack RUN_DIR`: compresses a stored run's large logs so that it can be committed.
//!
//! Each log at or above the size threshold is gzip-compressed beside itself (`sass.log` becomes
//! `sass.log.gz`, byte for byte the tool's output once decompressed), the manifest is rewritten
//! to name the compressed file, and only then is the original removed. A run that is packed twice
//! is left as it is; `exhibit report` reads packed and unpacked logs alike.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::evidence::rundir::{self, ReadError, Refused, WriteError};

/// What [`pack`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Packed {
    /// Logs compressed.
    pub files: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Why a run could not be packed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{manifest}: stage `{stage}` lists `{log}`: {source}; nothing was packed")]
    Refused {
        manifest: PathBuf,
        stage: String,
        log: String,
        #[source]
        source: Refused,
    },
    #[error(
        "{manifest}: the run records no end: it is still running (or was killed); nothing was packed"
    )]
    InProgress { manifest: PathBuf },
    #[error("compress {path}: {source}")]
    Compress {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Compresses every parsed log of the run in `run_dir` of at least `min_bytes`. Every path the
/// manifest lists must lie inside the run directory, through no symbolic link, and each log
/// compressed must be a regular file: otherwise nothing is packed ([`rundir::inside`]).
pub fn pack(run_dir: &Path, min_bytes: u64) -> Result<Packed, PackError> {
    let mut run = rundir::read_manifest(run_dir)?;
    let manifest = run_dir.join(rundir::MANIFEST);
    // A run still writing its logs would lose what it writes after they were compressed.
    if run.finished.is_none() {
        return Err(PackError::InProgress { manifest });
    }
    // (stage, log, its path, its size) of each log to compress, every path checked first.
    let mut chosen = Vec::new();
    for (s, stage) in run.stages.iter().enumerate() {
        for (l, log) in stage.logs.iter().enumerate() {
            let refused = |source| PackError::Refused {
                manifest: manifest.clone(),
                stage: stage.name.clone(),
                log: log.path.clone(),
                source,
            };
            let path = match rundir::inside(run_dir, &log.path) {
                Ok(path) => path,
                Err(Refused::Missing) => continue,
                Err(e) => return Err(refused(e)),
            };
            // Only parsed logs: a cubin stays as it is, for the stages that load it.
            if log.format.is_none() || log.path.ends_with(".gz") {
                continue;
            }
            let size = match rundir::regular_file(&path) {
                Ok(size) => size,
                Err(Refused::Missing) => continue,
                Err(e) => return Err(refused(e)),
            };
            if size >= min_bytes {
                chosen.push((s, l, path, size));
            }
        }
    }
    let mut packed = Packed::default();
    let mut originals = Vec::new();
    for (s, l, source, size) in chosen {
        let Some(log) = run.stages.get_mut(s).and_then(|st| st.logs.get_mut(l)) else {
            continue;
        };
        let target = source.with_file_name(format!(
            "{}.gz",
            source.file_name().unwrap_or_default().to_string_lossy()
        ));
        let compressed = compress(&source, &target).map_err(|source| PackError::Compress {
            path: target.clone(),
            source,
        })?;
        packed.files += 1;
        packed.bytes_before += size;
        packed.bytes_after += compressed;
        log.path.push_str(".gz");
        originals.push(source);
    }
    if packed.files > 0 {
        let json = serde_json::to_vec_pretty(&run).map_err(|e| WriteError {
            path: manifest.clone(),
            source: std::io::Error::other(e),
        })?;
        rundir::write_atomic(&manifest, &[json, b"\n".to_vec()].concat())?;
        for original in originals {
            let _ = std::fs::remove_file(original);
        }
    }
    Ok(packed)
}

/// Writes `source` gzip-compressed to `target` (through a fresh temporary file) and returns its
/// size.
fn compress(source: &Path, target: &Path) -> std::io::Result<u64> {
    let temp = target.with_extension("gz.tmp");
    let result = (|| {
        let mut input = rundir::open_file(source, None).map_err(std::io::Error::other)?;
        let _ = std::fs::remove_file(&temp);
        let output = std::fs::File::create_new(&temp)?;
        let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::best());
        std::io::copy(&mut input, &mut encoder)?;
        encoder.finish()?.flush()?;
        std::fs::rename(&temp, target)?;
        Ok(std::fs::symlink_metadata(target)?.len())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
