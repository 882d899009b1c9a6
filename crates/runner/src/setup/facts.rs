//! What the preflight learned on earlier runs, kept in the user's cache
//! (`~/.cache/exhibit/preflight.json`) and reused while nothing it depends on has changed.
//!
//! Asking the tools costs seconds on a GPU machine (every `--version`, `nvidia-smi`, the harness
//! opening CUDA, `import torch`), so each answer is stored with the identity of what it depends
//! on, read without starting a process:
//!
//! - a tool's version: its binary ([`Identity`]: canonical path, size, mtime, ctime, inode);
//! - the GPUs: the NVIDIA driver ([`Driver`], from `/proc/driver/nvidia` and the boot id), the
//!   `nvidia-smi` and harness binaries, and the variables that decide which library and device
//!   are found (`LD_LIBRARY_PATH`, `CUDA_VISIBLE_DEVICES`); without a loaded driver nothing is
//!   cached and the preflight asks as it always did;
//! - torch's version: the python3 binary, the variables that decide where Python imports from,
//!   and torch's installation directory and its `version.py`.
//!
//! An answer is reused only when every identity it depends on still matches. The file is only a
//! cache: one that does not read, or that another runner version wrote, is ignored and
//! rewritten, and failing to write it is not an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use report::Gpu;
use serde::{Deserialize, Serialize};

use crate::evidence::rundir::{self, WriteError};

/// The cache file's name, in [`crate::setup::toolchain::cache_home`].
pub const FILE: &str = "preflight.json";

const SCHEMA: &str = "exhibit.preflight/1";

/// Where the loaded NVIDIA driver describes itself.
pub const DRIVER_DIR: &str = "/proc/driver/nvidia";

/// The variables that decide where `libcuda` is found and which device the harness opens.
const GPU_VARIABLES: &[&str] = &["LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"];

/// The variables that decide where Python imports torch from.
const PYTHON_VARIABLES: &[&str] = &[
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
];

/// How many GPU entries the file keeps (one per harness binary and environment).
const GPU_ENTRIES: usize = 16;

/// A file or directory as `stat` sees it: any change to it changes one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// With every symbolic link resolved.
    pub path: PathBuf,
    pub size: u64,
    /// Seconds and nanoseconds.
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub inode: u64,
    pub device: u64,
}

impl Identity {
    /// The identity of what `path` names (following links); `None` when it does not exist.
    pub fn of(path: &Path) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        let canonical = std::fs::canonicalize(path).ok()?;
        let m = std::fs::metadata(&canonical).ok()?;
        Some(Identity {
            path: canonical,
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            inode: m.ino(),
            device: m.dev(),
        })
    }
}

/// The loaded NVIDIA driver, as the kernel describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Driver {
    /// `version` in the driver's directory: the release and its build.
    pub version: String,
    /// Each entry of `gpus/` (a PCI address) with its `information` file (model, UUID).
    pub gpus: BTreeMap<String, String>,
    /// The boot id: a GPU's modes (MIG, ECC) change across a reboot.
    pub boot: String,
}

impl Driver {
    /// Reads the driver's directory (normally [`DRIVER_DIR`]); `None` when there is no driver.
    pub fn read(dir: &Path) -> Option<Driver> {
        let version = std::fs::read_to_string(dir.join("version")).ok()?;
        let mut gpus = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(dir.join("gpus")) {
            for entry in entries.flatten() {
                let information =
                    std::fs::read_to_string(entry.path().join("information")).unwrap_or_default();
                gpus.insert(
                    entry.file_name().to_string_lossy().into_owned(),
                    information,
                );
            }
        }
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        Some(Driver {
            version,
            gpus,
            boot: boot.trim().to_string(),
        })
    }
}

/// What the GPU facts depend on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuKey {
    pub driver: Driver,
    pub nvidia_smi: Option<Identity>,
    pub harness: Option<Identity>,
    /// `GPU_VARIABLES` that are set.
    pub env: BTreeMap<String, String>,
}

impl GpuKey {
    /// The key for this machine with these binaries; `None` without a loaded driver.
    pub fn new(
        driver_dir: &Path,
        nvidia_smi: Option<&Path>,
        harness: Option<&Path>,
    ) -> Option<Self> {
        Some(GpuKey {
            driver: Driver::read(driver_dir)?,
            nvidia_smi: nvidia_smi.and_then(Identity::of),
            harness: harness.and_then(Identity::of),
            env: variables(GPU_VARIABLES),
        })
    }
}

/// What the preflight learns about the GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFacts {
    pub driver: Option<String>,
    pub gpus: Vec<Gpu>,
    /// Why GPU stages cannot run here.
    pub unavailable: Option<String>,
}

/// torch as one python3 imports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torch {
    /// `torch.__version__`.
    pub version: String,
    /// The directory of `torch/__init__.py`, when the import named it.
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct VersionEntry {
    binary: Identity,
    version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct GpuEntry {
    key: GpuKey,
    facts: GpuFacts,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TorchEntry {
    python: Identity,
    env: BTreeMap<String, String>,
    dir: Identity,
    version_py: Identity,
    version: String,
}

/// The file's contents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Stored {
    schema: String,
    /// The runner that wrote it: another one may read versions or GPUs differently.
    runner: String,
    /// By the tool's path as found.
    versions: BTreeMap<String, VersionEntry>,
    /// Newest first.
    gpu: Vec<GpuEntry>,
    /// By the python3 path as found.
    torch: BTreeMap<String, TorchEntry>,
}

/// The cache as one preflight uses it: what it reused, and what it learned to store.
#[derive(Debug, Default)]
pub struct Facts {
    path: Option<PathBuf>,
    stored: Stored,
    changed: bool,
    reused: Vec<String>,
    /// The facts this preflight asked for itself: read again later in the same preflight (the
    /// tools found again once the compiler is provisioned), they are no earlier run's.
    learned: Vec<String>,
}

/// Whether `path` is a regular file of this user's that no other user can write.
fn users_alone(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_file() && m.uid() == nix::unistd::getuid().as_raw() && m.mode() & 0o022 == 0
    })
}

impl Facts {
    /// Reads the cache at `path`. With `reuse` false (`--force`) nothing is read: every fact is
    /// asked for again, and the answers replace the file's.
    pub fn open(path: Option<PathBuf>, reuse: bool) -> Facts {
        let stored = path
            .as_deref()
            .filter(|_| reuse)
            // Believed only where this user alone could have written it: another's version
            // of a tool would go into the manifest as this machine's.
            .filter(|p| users_alone(p))
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|s| s.schema == SCHEMA && s.runner == env!("CARGO_PKG_VERSION"))
            .unwrap_or_default();
        Facts {
            path,
            stored,
            changed: !reuse,
            reused: Vec::new(),
            learned: Vec::new(),
        }
    }

    /// The facts taken from the cache, by name (a tool, `gpu`, `torch`), in the order used.
    pub fn reused(&self) -> &[String] {
        &self.reused
    }

    fn note_reused(&mut self, name: &str) {
        if !self.reused.iter().any(|r| r == name) && !self.learned.iter().any(|l| l == name) {
            self.reused.push(name.to_string());
        }
    }

    /// Whether the version of the tool at `path` is stored for the binary there now.
    pub fn knows_version(&self, path: &Path) -> bool {
        let key = path.to_string_lossy().into_owned();
        Identity::of(path).is_some_and(|identity| {
            self.stored
                .versions
                .get(&key)
                .is_some_and(|entry| entry.binary == identity)
        })
    }

    /// The version line of the tool `name` at `path`: the stored one while the binary is the
    /// one it was read from, else `ask`'s answer (stored when it is one).
    pub fn version(
        &mut self,
        name: &str,
        path: &Path,
        ask: impl FnOnce() -> Result<Option<String>, String>,
    ) -> Result<Option<String>, String> {
        let key = path.to_string_lossy().into_owned();
        // Read before asking: a binary replaced meanwhile is asked again next time.
        let identity = Identity::of(path);
        if let Some(identity) = &identity
            && let Some(entry) = self.stored.versions.get(&key)
            && entry.binary == *identity
        {
            let version = entry.version.clone();
            self.note_reused(name);
            return Ok(version);
        }
        let version = ask()?;
        self.learned.push(name.to_string());
        if let Some(binary) = identity {
            self.stored.versions.insert(
                key,
                VersionEntry {
                    binary,
                    version: version.clone(),
                },
            );
            self.changed = true;
        }
        Ok(version)
    }

    /// The GPU facts: the stored ones while `key` matches, else `ask`'s. `ask` also says whether
    /// its answer may be kept (not when a tool failed in a way that may pass). Without a key (no
    /// driver) nothing is stored. The clocks are readings of the moment, not facts: they are not
    /// kept.
    pub fn gpu(&mut self, key: Option<GpuKey>, ask: impl FnOnce() -> (GpuFacts, bool)) -> GpuFacts {
        if let Some(key) = &key
            && let Some(entry) = self.stored.gpu.iter().find(|e| e.key == *key)
        {
            let facts = entry.facts.clone();
            self.note_reused("gpu");
            return facts;
        }
        let (facts, keep) = ask();
        if let Some(key) = key
            && keep
        {
            let mut kept = facts.clone();
            for gpu in &mut kept.gpus {
                gpu.sm_clock_mhz = None;
                gpu.mem_clock_mhz = None;
            }
            self.stored.gpu.retain(|e| e.key != key);
            self.stored.gpu.insert(0, GpuEntry { key, facts: kept });
            self.stored.gpu.truncate(GPU_ENTRIES);
            self.changed = true;
        }
        facts
    }

    /// torch's version as `python` imports it: the stored one while the python3 binary, the
    /// variables that decide where it imports from, torch's directory and its `version.py` are
    /// unchanged, else `ask`'s answer. Failures are not stored: installing torch fixes them.
    pub fn torch(
        &mut self,
        python: &Path,
        ask: impl FnOnce() -> Result<Torch, String>,
    ) -> Result<String, String> {
        let key = python.to_string_lossy().into_owned();
        let identity = Identity::of(python);
        let env = variables(PYTHON_VARIABLES);
        if let Some(identity) = &identity
            && let Some(entry) = self.stored.torch.get(&key)
            && entry.python == *identity
            && entry.env == env
            && Identity::of(&entry.dir.path).as_ref() == Some(&entry.dir)
            && Identity::of(&entry.version_py.path).as_ref() == Some(&entry.version_py)
        {
            let version = entry.version.clone();
            self.note_reused("torch");
            return Ok(version);
        }
        let torch = ask()?;
        let dir = torch.dir.as_deref();
        if let Some(python) = identity
            && let Some(dir_identity) = dir.and_then(Identity::of)
            && let Some(version_py) = dir.and_then(|d| Identity::of(&d.join("version.py")))
        {
            self.stored.torch.insert(
                key,
                TorchEntry {
                    python,
                    env,
                    dir: dir_identity,
                    version_py,
                    version: torch.version.clone(),
                },
            );
            self.changed = true;
        }
        Ok(torch.version)
    }

    /// Writes the file (temporary file, then rename) when something was learned, dropping the
    /// entries whose binaries are gone.
    pub fn save(&mut self) -> Result<(), WriteError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if !self.changed {
            return Ok(());
        }
        let stored = &mut self.stored;
        stored.schema = SCHEMA.to_string();
        stored.runner = env!("CARGO_PKG_VERSION").to_string();
        stored.versions.retain(|path, _| Path::new(path).exists());
        stored.torch.retain(|path, _| Path::new(path).exists());
        stored
            .gpu
            .retain(|e| e.key.harness.as_ref().is_none_or(|h| h.path.exists()));
        let text = serde_json::to_string_pretty(stored).unwrap_or_default();
        rundir::write_atomic(path, text.as_bytes())?;
        // This user's alone, whatever the umask: a file others can write is not read back.
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
        self.changed = false;
        Ok(())
    }
}

/// The variables of `names` that are set, with their values.
fn variables(names: &[&str]) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|name| {
            std::env::var_os(name).map(|v| (name.to_string(), v.to_string_lossy().into_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver_dir(version: &str, gpus: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("version"), version).expect("write version");
        for (address, information) in gpus {
            let gpu = dir.path().join("gpus").join(address);
            std::fs::create_dir_all(&gpu).expect("create a GPU entry");
            std::fs::write(gpu.join("information"), information).expect("write information");
        }
        dir
    }

    fn facts(name: &str) -> GpuFacts {
        GpuFacts {
            driver: Some("580.00".into()),
            gpus: vec![Gpu {
                name: name.into(),
                sm_clock_mhz: Some(1980),
                ..Gpu::default()
            }],
            unavailable: None,
        }
    }

    #[test]
    fn no_driver_no_key() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        assert_eq!(GpuKey::new(dir.path(), None, None), None);
    }

    /// A cache file others can write is not believed: its facts are asked for again.
    #[test]
    fn facts_others_can_write_are_not_believed() {
        use std::os::unix::fs::PermissionsExt;
        let cache = tempfile::tempdir().expect("a temporary directory");
        let file = cache.path().join(FILE);
        let driver = driver_dir("NVRM version: 580.00\n", &[("0000:01:00.0", "Model: A\n")]);
        let key = || GpuKey::new(driver.path(), None, None);
        let mut first = Facts::open(Some(file.clone()), true);
        first.gpu(key(), || (facts("planted"), true));
        first.save().expect("save");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let mut second = Facts::open(Some(file.clone()), true);
        let asked = second.gpu(key(), || (facts("asked"), true));
        assert_eq!(asked.gpus[0].name, "asked");
        assert!(second.reused().is_empty());
    }

    #[test]
    fn gpu_facts_are_reused_until_the_driver_or_its_gpus_change() {
        let cache = tempfile::tempdir().expect("a temporary directory");
        let file = cache.path().join(FILE);
        let driver = driver_dir("NVRM version: 580.00\n", &[("0000:01:00.0", "Model: A\n")]);
        let key = || GpuKey::new(driver.path(), None, None);

        let mut first = Facts::open(Some(file.clone()), true);
        let asked = first.gpu(key(), || (facts("first"), true));
        assert_eq!(asked.gpus[0].sm_clock_mhz, Some(1980));
        first.save().expect("save");

        let mut second = Facts::open(Some(file.clone()), true);
        let reused = second.gpu(key(), || panic!("asked although nothing changed"));
        assert_eq!(reused.gpus[0].name, "first");
        assert_eq!(
            reused.gpus[0].sm_clock_mhz, None,
            "a clock reading was kept"
        );
        assert_eq!(second.reused(), ["gpu"]);

        std::fs::write(driver.path().join("version"), "NVRM version: 590.00\n").expect("write");
        let mut third = Facts::open(Some(file.clone()), true);
        assert_eq!(
            third.gpu(key(), || (facts("new driver"), true)).gpus[0].name,
            "new driver"
        );
        assert!(third.reused().is_empty());
        third.save().expect("save");

        let gpu = driver.path().join("gpus/0000:02:00.0");
        std::fs::create_dir_all(&gpu).expect("create a GPU entry");
        let mut fourth = Facts::open(Some(file), true);
        assert_eq!(
            fourth.gpu(key(), || (facts("new gpu"), true)).gpus[0].name,
            "new gpu"
        );
    }

    #[test]
    fn gpu_facts_that_may_not_be_kept_are_asked_again() {
        let cache = tempfile::tempdir().expect("a temporary directory");
        let file = cache.path().join(FILE);
        let driver = driver_dir("NVRM version: 580.00\n", &[]);
        let key = || GpuKey::new(driver.path(), None, None);
        let mut first = Facts::open(Some(file.clone()), true);
        first.gpu(key(), || (facts("failed probe"), false));
        first.save().expect("save");
        let mut second = Facts::open(Some(file), true);
        assert_eq!(
            second.gpu(key(), || (facts("asked"), true)).gpus[0].name,
            "asked"
        );
    }

    #[test]
    fn a_changed_harness_binary_asks_again() {
        let cache = tempfile::tempdir().expect("a temporary directory");
        let file = cache.path().join(FILE);
        let driver = driver_dir("NVRM version: 580.00\n", &[]);
        let harness = cache.path().join("harness");
        std::fs::write(&harness, "one").expect("write");
        let key = || GpuKey::new(driver.path(), None, Some(&harness));
        let mut first = Facts::open(Some(file.clone()), true);
        first.gpu(key(), || (facts("first"), true));
        first.save().expect("save");
        std::fs::write(&harness, "two, longer").expect("write");
        let mut second = Facts::open(Some(file), true);
        assert_eq!(
            second.gpu(key(), || (facts("asked"), true)).gpus[0].name,
            "asked"
        );
    }
}
