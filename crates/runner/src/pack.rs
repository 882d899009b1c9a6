//! `runner pack RUN_DIR`: compresses a stored run's large logs so that it can be committed.
//!
//! Each log at or above the size threshold is gzip-compressed beside itself (`sass.log` becomes
//! `sass.log.gz`, byte for byte the tool's output once decompressed), the manifest is rewritten
//! to name the compressed file, and only then is the original removed. A run that is packed twice
//! is left as it is; `runner report` reads packed and unpacked logs alike.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::rundir::{self, ReadError, WriteError};

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
    #[error("compress {path}: {source}")]
    Compress {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Compresses every parsed log of the run in `run_dir` of at least `min_bytes`.
pub fn pack(run_dir: &Path, min_bytes: u64) -> Result<Packed, PackError> {
    let mut run = rundir::read_manifest(run_dir)?;
    let mut packed = Packed::default();
    let mut originals = Vec::new();
    for log in run
        .stages
        .iter_mut()
        .flat_map(|stage| stage.logs.iter_mut())
    {
        // Only parsed logs: a cubin stays as it is, for the stages that load it.
        if log.format.is_none() || log.path.ends_with(".gz") {
            continue;
        }
        let source = run_dir.join(&log.path);
        let Ok(meta) = std::fs::metadata(&source) else {
            continue;
        };
        if meta.len() < min_bytes {
            continue;
        }
        let target = run_dir.join(format!("{}.gz", log.path));
        let size = compress(&source, &target).map_err(|source| PackError::Compress {
            path: target.clone(),
            source,
        })?;
        packed.files += 1;
        packed.bytes_before += meta.len();
        packed.bytes_after += size;
        log.path.push_str(".gz");
        originals.push(source);
    }
    if packed.files > 0 {
        let json = serde_json::to_vec_pretty(&run).map_err(|e| WriteError {
            path: run_dir.join(rundir::MANIFEST),
            source: std::io::Error::other(e),
        })?;
        rundir::write_atomic(
            &run_dir.join(rundir::MANIFEST),
            &[json, b"\n".to_vec()].concat(),
        )?;
        for original in originals {
            let _ = std::fs::remove_file(original);
        }
    }
    Ok(packed)
}

/// Writes `source` gzip-compressed to `target` (through a temporary file) and returns its size.
fn compress(source: &Path, target: &Path) -> std::io::Result<u64> {
    let temp = target.with_extension("gz.tmp");
    let result = (|| {
        let mut input = std::fs::File::open(source)?;
        let output = std::fs::File::create(&temp)?;
        let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::best());
        std::io::copy(&mut input, &mut encoder)?;
        encoder.finish()?.flush()?;
        std::fs::rename(&temp, target)?;
        Ok(std::fs::metadata(target)?.len())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
