//! A temporary project per test: a pipeline, a kernel source, stand-in tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_exhibit");

/// A stand-in nvcc: answers `--version` (counted in `nvcc.versions`), counts its compilations in
/// `nvcc.calls`, writes the `-o` file and a line on stderr.
pub const NVCC: &str = r#"#!/bin/sh
# Stand-in for nvcc in tests; its output is hand-written, not real compiler output.
if [ "$1" = "--version" ]; then
  echo "version" >> "$(dirname "$0")/nvcc.versions"
  echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"
  exit 0
fi
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
echo "call" >> "$(dirname "$0")/nvcc.calls"
# An ELF header, so the SASS stage takes it for a build product.
printf '\177ELF stand-in cubin\n' > "$out"
echo "stand-in compiler message (hand-written for tests)" >&2
"#;

/// A stand-in cuobjdump printing a real listing: `cuobjdump -sass` of a clean kernel, captured
/// with the pinned compiler (`crates/parsers/fixtures/sass/nvcc13.0_clean_cuobjdump.log`, its
/// sidecar names the command and version). A SASS stage whose tool prints no `Function :`
/// section is inconclusive, so the stand-in must print a real one.
pub fn cuobjdump() -> String {
    format!(
        r#"#!/bin/sh
# Stand-in for cuobjdump in tests: prints a captured listing, whatever the cubin.
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
cat '{}/../parsers/fixtures/sass/nvcc13.0_clean_cuobjdump.log'
"#,
        env!("CARGO_MANIFEST_DIR")
    )
}

pub struct Project {
    // Held for their Drop, which removes the directories.
    _dir: tempfile::TempDir,
    _cache: tempfile::TempDir,
    pub root: PathBuf,
    /// The runner's user cache (`XDG_CACHE_HOME`), outside the project: the preflight keeps
    /// its facts there.
    pub cache: PathBuf,
}

impl Project {
    /// A project with a kernel source, stand-in nvcc and cuobjdump, and the default pipeline.
    pub fn new() -> Project {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let cache = tempfile::tempdir().expect("create a temporary directory");
        let project = Project {
            root: dir.path().to_path_buf(),
            cache: cache.path().to_path_buf(),
            _dir: dir,
            _cache: cache,
        };
        project.write("kernel/attention.cu", "// stand-in kernel source\n");
        project.tool("nvcc", NVCC);
        project.tool("cuobjdump", &cuobjdump());
        project.pipeline(&pipeline(""));
        project
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create directories");
        std::fs::write(&path, text).expect("write a file");
    }

    /// Writes an executable script to `bin/<name>`.
    pub fn tool(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root.join("bin").join(name);
        self.write(&format!("bin/{name}"), script);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make a script executable");
    }

    pub fn pipeline(&self, yaml: &str) {
        self.write("pipeline.yaml", yaml);
    }

    /// Runs `exhibit ARGS` in the project directory, with the project's own user cache.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(&self.root)
            .env("XDG_CACHE_HOME", &self.cache)
            .output()
            .expect("start the runner")
    }

    /// [`Project::run`] with extra environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(&self.root)
            .env("XDG_CACHE_HOME", &self.cache)
            .envs(env.iter().copied())
            .output()
            .expect("start the runner")
    }

    /// The run directories, oldest first (by their manifest's modification time: run ids of
    /// the same second do not sort by time).
    pub fn runs(&self) -> Vec<PathBuf> {
        let mut runs: Vec<(std::time::SystemTime, PathBuf)> =
            std::fs::read_dir(self.root.join("artifacts"))
                .map(|d| {
                    d.flatten()
                        .map(|e| {
                            let modified = std::fs::metadata(e.path().join("manifest.json"))
                                .and_then(|m| m.modified())
                                .unwrap_or(std::time::UNIX_EPOCH);
                            (modified, e.path())
                        })
                        .collect()
                })
                .unwrap_or_default();
        runs.sort();
        runs.into_iter().map(|(_, path)| path).collect()
    }

    /// The newest run's manifest.
    pub fn manifest(&self) -> Value {
        let run = self.runs().pop().expect("a run directory");
        let text = std::fs::read_to_string(run.join("manifest.json")).expect("a manifest");
        serde_json::from_str(&text).expect("the manifest is JSON")
    }

    /// How many times a stand-in tool was asked its version (`bin/<name>.versions`).
    pub fn version_calls(&self, name: &str) -> usize {
        std::fs::read_to_string(self.root.join(format!("bin/{name}.versions")))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// How many times the stand-in nvcc compiled.
    pub fn nvcc_calls(&self) -> usize {
        std::fs::read_to_string(self.root.join("bin/nvcc.calls"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// Waits up to `limit` for a file to appear and returns its contents.
    pub fn wait_for(&self, relative: &str, limit: Duration) -> String {
        let path = self.root.join(relative);
        let end = Instant::now() + limit;
        loop {
            if let Ok(text) = std::fs::read_to_string(&path)
                && !text.trim().is_empty()
            {
                return text;
            }
            if Instant::now() >= end {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{relative} did not appear within {limit:?}");
    }
}

/// A pipeline with compile, sass and report stages using the stand-in tools; `extra` is
/// appended under `stages:`.
pub fn pipeline(extra: &str) -> String {
    format!(
        r#"kernel:
  source: kernel/attention.cu
  entry_points:
    f16: attention_fwd_f16
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
  tools:
    nvcc: bin/nvcc
    cuobjdump: bin/cuobjdump
matrix:
  arch: [sm_90]
  configs:
    small: {{ HEAD_DIM: 64, BLOCK_M: 64 }}
cases:
  seed: {{ shape: "2,8,512,64" }}
grace: 1s
stages:
  compile:
    timeout: 30s
  sass:
    timeout: 30s
  report:
    timeout: 30s
{extra}"#
    )
}

/// The stages of a manifest with this name.
pub fn stages<'a>(manifest: &'a Value, name: &str) -> Vec<&'a Value> {
    manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["name"] == name)
        .collect()
}

/// The one stage of a manifest with this name.
pub fn stage<'a>(manifest: &'a Value, name: &str) -> &'a Value {
    let found = stages(manifest, name);
    assert_eq!(found.len(), 1, "one `{name}` stage in {manifest:#}");
    found[0]
}

/// Whether a process is still running (a zombie nobody reaped counts as dead).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
    }
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn code(output: &Output) -> i32 {
    output.status.code().expect("an exit code")
}

pub fn root_relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Held by the tests that may provision the pinned CUDA from PyPI: two provisionings at once
/// would install into the same cache directory.
pub static PROVISIONING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `command` with its output in files, waiting at most `limit`; `None` (after killing it)
/// when it is still running then: a hang fails the test instead of stalling the suite.
pub fn run_limited(command: &mut Command, limit: Duration) -> Option<Output> {
    let out = tempfile::tempfile().expect("a temporary file");
    let err = tempfile::tempfile().expect("a temporary file");
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().expect("clone"))
        .stderr(err.try_clone().expect("clone"))
        .spawn()
        .expect("start the runner");
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |mut file: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        file.seek(std::io::SeekFrom::Start(0)).expect("seek");
        file.read_to_end(&mut bytes).expect("read");
        bytes
    };
    Some(Output {
        status,
        stdout: read(out),
        stderr: read(err),
    })
}

impl Project {
    /// [`Project::run`] under [`run_limited`]; panics when it hangs past `limit`.
    pub fn run_within(&self, args: &[&str], limit: Duration) -> Output {
        run_limited(
            Command::new(BIN)
                .args(args)
                .current_dir(&self.root)
                .env("XDG_CACHE_HOME", &self.cache),
            limit,
        )
        .unwrap_or_else(|| panic!("`exhibit {}` still ran after {limit:?}", args.join(" ")))
    }
}

/// A diagnosis's `notes` or `help` from the JSON report, as one paragraph.
pub fn prose(diagnosis: &serde_json::Value, key: &str) -> String {
    diagnosis[key]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// `exhibit report RUN [--format F]`'s output, as text.
pub fn rendered(run: &Path, format: &str) -> String {
    let out = Command::new(BIN)
        .args(["report", "--format", format])
        .arg(run)
        .output()
        .expect("render");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
