//! The run directory `artifacts/<run-id>/` and crash-safe writes.
//!
//! Every file the runner itself writes (the manifest, reports) goes to a temporary file in the
//! same directory and is renamed into place, so a reader sees the old version or the new one,
//! never half of one. The manifest is written when the run starts and when it ends; in between,
//! each unit's record is appended to [`JOURNAL`] as it ends, so that a run of n units writes
//! O(n) bytes, not a manifest per unit. A run that dies leaves its first manifest, marked
//! interrupted, and the journal of the units done so far, which [`read_manifest`] reads back.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// The file a program unit's `{out}` names, in its unit directory.
pub const PROGRAM_OUT: &str = "results.json";

/// Where a run writes, relative to the pipeline root.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    /// `artifacts/<run-id>`, relative to the pipeline root.
    pub relative: PathBuf,
    /// The same, joined to the root.
    pub path: PathBuf,
}

/// A write that failed.
#[derive(Debug, thiserror::Error)]
#[error("write {path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The artifacts directory under a pipeline root.
pub const ARTIFACTS: &str = "artifacts";
/// The reports directory under a pipeline root.
pub const REPORTS: &str = "reports";
/// The manifest's file name inside a run directory.
pub const MANIFEST: &str = "manifest.json";
/// The units ended so far, one JSON line each, while the run runs; removed once the manifest
/// that ends the run holds them.
pub const JOURNAL: &str = "units.jsonl";

/// One line of [`JOURNAL`]: a unit's place in the plan, its record, and the flag input it hashed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    unit: usize,
    stage: report::Stage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<(String, String)>,
}

/// A file in a run directory that holds [`RESERVE_BYTES`] of its file system while the run
/// runs: when a program filled the disk, removing it lets the manifest still be written, with
/// the reason its units are inconclusive. Removed when the run ends.
pub const RESERVE: &str = ".space-reserve";
pub const RESERVE_BYTES: usize = 2 << 20;

/// After a unit, less free space than this on the run directory's file system makes the unit
/// inconclusive: its logs may have been cut short. `EXHIBIT_MIN_FREE_BYTES` overrides it.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

/// `20261122T101500Z-3fa9c2d1`: the UTC start time and a short hash of what makes the run
/// unique (the pipeline's hash, the process, the clock's nanoseconds).
pub fn run_id(started: DateTime<Utc>, pipeline_hash: &str) -> String {
    let salt = format!(
        "{pipeline_hash}:{}:{}",
        std::process::id(),
        started.timestamp_nanos_opt().unwrap_or_default()
    );
    let hash = crate::evidence::hash::bytes(salt.as_bytes());
    format!(
        "{}-{}",
        started.format("%Y%m%dT%H%M%SZ"),
        hash.get(..8).unwrap_or(&hash)
    )
}

impl RunDir {
    /// Creates `artifacts/<id>/` under `root`.
    pub fn create(root: &Path, id: &str) -> Result<RunDir, WriteError> {
        let relative = Path::new(ARTIFACTS).join(id);
        let path = root.join(&relative);
        std::fs::create_dir_all(&path).map_err(|source| WriteError {
            path: path.clone(),
            source,
        })?;
        // Best effort: on a disk too full for it, the run goes on without. Under a file size
        // limit (`ulimit -f`), a quarter of it: a write past the limit would end the runner.
        let size = file_size_limit().map_or(RESERVE_BYTES, |limit| {
            RESERVE_BYTES.min(usize::try_from(limit / 4).unwrap_or(RESERVE_BYTES))
        });
        let _ = std::fs::write(path.join(RESERVE), vec![0u8; size]);
        Ok(RunDir {
            id: id.to_string(),
            relative,
            path,
        })
    }

    /// Gives back the space [`RESERVE`] holds; true when there was a reserve to give.
    pub fn release_reserve(&self) -> bool {
        std::fs::remove_file(self.path.join(RESERVE)).is_ok()
    }

    /// Bytes an unprivileged writer may still write on the run directory's file system.
    // The counts are narrower than u64 on 32-bit targets.
    #[allow(clippy::useless_conversion)]
    pub fn free_bytes(&self) -> std::io::Result<u64> {
        let stat = nix::sys::statvfs::statvfs(&self.path).map_err(std::io::Error::from)?;
        Ok(u64::from(stat.blocks_available()).saturating_mul(u64::from(stat.fragment_size())))
    }

    /// Creates a unit's directory and returns it.
    pub fn unit_dir(&self, unit: &Path) -> Result<PathBuf, WriteError> {
        let dir = self.path.join(unit);
        std::fs::create_dir_all(&dir).map_err(|source| WriteError {
            path: dir.clone(),
            source,
        })?;
        Ok(dir)
    }

    /// Appends an ended unit's record to [`JOURNAL`]: `unit` is its place in the plan, `input`
    /// the flag input it hashed. One line in one write, so a crash leaves at most the last line
    /// cut short, which [`read_manifest`] skips.
    pub fn record_unit(
        &self,
        unit: usize,
        stage: &report::Stage,
        input: Option<(String, String)>,
    ) -> Result<(), WriteError> {
        let path = self.path.join(JOURNAL);
        let error = |source| WriteError {
            path: path.clone(),
            source,
        };
        let entry = Entry {
            unit,
            stage: stage.clone(),
            input,
        };
        let mut line = serde_json::to_vec(&entry).map_err(|e| error(std::io::Error::other(e)))?;
        line.push(b'\n');
        let append = |line: &[u8]| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut file| file.write_all(line))
        };
        append(&line)
            .or_else(|e| {
                if self.release_reserve() {
                    append(&line)
                } else {
                    Err(e)
                }
            })
            .map_err(error)
    }

    /// Writes the manifest that ends the run (it holds every unit) and removes [`JOURNAL`].
    pub fn finish_manifest(&self, run: &report::Run) -> Result<(), WriteError> {
        self.write_manifest(run)?;
        match std::fs::remove_file(self.path.join(JOURNAL)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(WriteError {
                path: self.path.join(JOURNAL),
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Writes `manifest.json`, atomically.
    pub fn write_manifest(&self, run: &report::Run) -> Result<(), WriteError> {
        let path = self.path.join(MANIFEST);
        let mut json = serde_json::to_vec_pretty(run).map_err(|e| WriteError {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        json.push(b'\n');
        // On a full disk, the reserve's space is what records why.
        write_atomic(&path, &json).or_else(|e| {
            if self.release_reserve() {
                write_atomic(&path, &json)
            } else {
                Err(e)
            }
        })
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`: a crash of the
/// runner leaves the old file or the new one, never a part of either.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let error = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(error)?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        // A fresh file: never through whatever a stale temporary name points to.
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::File::create_new(&temp)?;
        file.write_all(bytes)?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(error)
}

/// Opens a log the user named on the command line (`exhibit parse`, `exhibit explain`),
/// decompressing it when its name ends in `.gz` (see [`crate::evidence::pack`]). A stored run's logs go
/// through [`open_stored_log`] instead.
pub fn open_log(path: &Path) -> std::io::Result<Box<dyn std::io::BufRead>> {
    let file = std::fs::File::open(path)?;
    Ok(decompressed(path, file))
}

/// The most bytes a stored `.gz` log may inflate to: the runner keeps at most the first and last
/// 64 MiB of a stream, so a log past this was not written by it (a gzip bomb in a received run).
pub const MAX_INFLATED: u64 = 256 << 20;

fn decompressed(path: &Path, file: std::fs::File) -> Box<dyn std::io::BufRead> {
    if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(Capped {
            inner: flate2::read::GzDecoder::new(file),
            left: MAX_INFLATED,
        }))
    } else {
        Box::new(std::io::BufReader::new(file))
    }
}

/// A reader that fails, rather than goes on, once it has given `left` bytes and there are more.
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "it inflates past {} MiB, more than the runner ever stores",
                        MAX_INFLATED >> 20
                    ),
                )),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The file size limit (`ulimit -f`) in bytes, when there is one: a process that writes past
/// it gets SIGXFSZ, or, ignoring that, the error EFBIG.
pub fn file_size_limit() -> Option<u64> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    let (soft, _) = getrlimit(Resource::RLIMIT_FSIZE).ok()?;
    (soft != RLIM_INFINITY).then_some(soft)
}

/// Reads what a program or tool wrote, decoding it lossily: one byte that is not UTF-8 becomes
/// U+FFFD and never loses the rest of the text.
pub fn read_lossy(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Reads a log as [`read_lossy`] does, up to `limit` bytes: a longer one gives its first and
/// last `limit / 2` bytes with a line between them, so memory stays bounded whatever a program
/// wrote (one line with no newline included).
pub fn read_head_tail(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size <= limit {
        return read_lossy(path);
    }
    let half = limit / 2;
    let mut head = Vec::new();
    (&mut file).take(half).read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(size - half))?;
    let mut tail = Vec::new();
    file.take(half).read_to_end(&mut tail)?;
    let mut text = String::from_utf8_lossy(&head).into_owned();
    text.push_str(&format!(
        "\n[exhibit: {} bytes of {size} not read here]\n",
        size - 2 * half
    ));
    text.push_str(&String::from_utf8_lossy(&tail));
    Ok(text)
}

/// The most a manifest may weigh: a run of thousands of units writes a few megabytes.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Reads a stored run's manifest: a regular file of at most [`MAX_MANIFEST_BYTES`], never a
/// symbolic link, FIFO or device. A run that did not finish gets the units its [`JOURNAL`]
/// recorded (a line cut short by a crash is skipped).
pub fn read_manifest(run_dir: &Path) -> Result<report::Run, ReadError> {
    let path = run_dir.join(MANIFEST);
    let bytes = read_file(&path, MAX_MANIFEST_BYTES).map_err(|source| ReadError::Refused {
        path: path.clone(),
        source,
    })?;
    let mut run: report::Run =
        serde_json::from_slice(&bytes).map_err(|source| ReadError::Json { path, source })?;
    if run.finished.is_none() {
        let journal = run_dir.join(JOURNAL);
        match read_file(&journal, MAX_MANIFEST_BYTES) {
            Ok(lines) => replay(&mut run, &lines),
            Err(Refused::Missing) => {}
            Err(source) => {
                return Err(ReadError::Refused {
                    path: journal,
                    source,
                });
            }
        }
    }
    Ok(run)
}

/// The units a journal recorded, in plan order, after the stages the manifest already holds;
/// a later line for the same unit replaces an earlier one.
fn replay(run: &mut report::Run, journal: &[u8]) {
    let mut units: std::collections::BTreeMap<usize, report::Stage> = Default::default();
    for line in journal.split(|b| *b == b'\n') {
        let Ok(entry) = serde_json::from_slice::<Entry>(line) else {
            continue;
        };
        if let Some((key, sha)) = entry.input {
            run.inputs.insert(key, sha);
        }
        units.insert(entry.unit, entry.stage);
    }
    run.stages.extend(units.into_values());
}

/// A stored manifest that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("read {path}: {source}")]
    Refused {
        path: PathBuf,
        #[source]
        source: Refused,
    },
    #[error("read {path}: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

// Paths inside a run directory. `report`, `diff`, `pack`, `attach` and the cache reach every file
// of a stored run through these functions, and only through them: a path a manifest names is
// resolved under the run directory component by component, a symbolic link anywhere on the way
// is refused (a run writes none), and only regular files are opened, without blocking.

/// Why a path a manifest names is not followed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    #[error("outside the run directory (expected a relative path below it)")]
    Outside,
    #[error("`{0}` is a symbolic link; a run directory holds none, so it is not followed")]
    Link(String),
    #[error("a symbolic link; a run directory holds none, so it is not followed")]
    Symlink,
    #[error("`{0}` is not a directory")]
    NotADirectory(String),
    #[error("not a directory")]
    NotDirectory,
    #[error("missing")]
    Missing,
    #[error("a directory, not a file")]
    Directory,
    #[error("not a regular file (a FIFO, socket or device), so it is not opened")]
    Special,
    #[error("is {size} bytes; at most {limit} bytes are read")]
    TooLarge { size: u64, limit: u64 },
    #[error("unreadable: {0}")]
    Io(#[source] std::io::Error),
}

impl Refused {
    fn from_io(error: std::io::Error) -> Refused {
        match error.raw_os_error() {
            Some(libc::ENOENT) => Refused::Missing,
            Some(libc::ELOOP) => Refused::Symlink,
            _ => Refused::Io(error),
        }
    }
}

/// `relative` (a path as a manifest writes it) joined under `run_dir`, when every component is
/// a plain name and none of the directories on the way is a symbolic link or not a directory;
/// the last component may be missing or anything but a symbolic link (the caller checks what
/// it needs with [`regular_file`] or [`directory`]).
pub fn inside(run_dir: &Path, relative: &str) -> Result<PathBuf, Refused> {
    let relative = Path::new(relative);
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            std::path::Component::Normal(name) => names.push(name),
            std::path::Component::CurDir => {}
            _ => return Err(Refused::Outside),
        }
    }
    if names.is_empty() {
        return Err(Refused::Outside);
    }
    let mut path = run_dir.to_path_buf();
    let mut shown = PathBuf::new();
    let last = names.len() - 1;
    for (i, name) in names.into_iter().enumerate() {
        path.push(name);
        shown.push(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Refused::Link(shown.display().to_string()));
            }
            Ok(meta) if i < last && !meta.is_dir() => {
                return Err(Refused::NotADirectory(shown.display().to_string()));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && i == last => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refused::Missing),
            Err(e) => return Err(Refused::Io(e)),
        }
    }
    Ok(path)
}

/// The size of `path` when it is a regular file (not through a symbolic link); it is not opened.
pub fn regular_file(path: &Path) -> Result<u64, Refused> {
    let meta = std::fs::symlink_metadata(path).map_err(Refused::from_io)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        Err(Refused::Symlink)
    } else if kind.is_dir() {
        Err(Refused::Directory)
    } else if !kind.is_file() {
        Err(Refused::Special)
    } else {
        Ok(meta.len())
    }
}

/// Whether `path` is a directory (not through a symbolic link).
pub fn directory(path: &Path) -> Result<(), Refused> {
    let meta = std::fs::symlink_metadata(path).map_err(Refused::from_io)?;
    if meta.file_type().is_symlink() {
        Err(Refused::Symlink)
    } else if meta.is_dir() {
        Ok(())
    } else {
        Err(Refused::NotDirectory)
    }
}

/// Opens `path` for reading when it is a regular file of at most `limit` bytes: checked before
/// opening, then opened without following a symbolic link and without blocking (a FIFO swapped
/// in meanwhile is never waited on) and checked again on the open file.
pub fn open_file(path: &Path, limit: Option<u64>) -> Result<std::fs::File, Refused> {
    use std::os::unix::fs::OpenOptionsExt;
    regular_file(path)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(Refused::from_io)?;
    let meta = file.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::Special);
    }
    if let Some(limit) = limit
        && meta.len() > limit
    {
        return Err(Refused::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    Ok(file)
}

/// Reads a regular file of at most `limit` bytes (see [`open_file`]); a file that grows past the
/// limit while it is read is refused too.
pub fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    use std::io::Read;
    let file = open_file(path, Some(limit))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Refused::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Opens the log a manifest names as `relative`, inside `run_dir` (see [`inside`]),
/// decompressing it when its name ends in `.gz`. Logs are streamed, so they have no size limit.
pub fn open_stored_log(
    run_dir: &Path,
    relative: &str,
) -> Result<Box<dyn std::io::BufRead>, Refused> {
    let path = inside(run_dir, relative)?;
    let file = open_file(&path, None)?;
    Ok(decompressed(&path, file))
}

/// A path as the runner prints it on the terminal: relative to the directory the command ran
/// in, or absolute, as `path` is (the pipeline's directory joined as the command line named
/// it), without `.` components; `.` for the directory itself. Never `//`, whatever `slash`
/// would make of an absolute path.
pub fn shown(path: &Path) -> String {
    let cleaned: PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if cleaned.as_os_str().is_empty() {
        ".".to_string()
    } else {
        cleaned.to_string_lossy().into_owned()
    }
}

/// A relative path with forward slashes, as the manifest records paths.
pub fn slash(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
