//! Provisioning the pinned compiler never destroys a working one: the install goes into a
//! staging directory and replaces the cache entry only once complete.

use std::path::Path;
use std::process::Command;

use crate::util::{Project, code, pipeline, stage, stderr};

/// A stand-in python3 (hand-written): `-m venv DIR` makes a venv whose pip fails as pip does
/// when a pinned wheel does not exist.
const PYTHON3: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "Python 3.0.0 (stand-in)"; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\necho "ERROR: No matching distribution found for nvidia-cuda-nvcc==13.0.88 (stand-in)" >&2\nexit 1\n' > "$3/bin/pip"
  chmod +x "$3/bin/pip"
  echo "$3" > "$(dirname "$0")/venv.dir"
  exit 0
fi
exit 2
"#;

/// A toolchain provisioned earlier, with other pins: its nvcc stands where the wheels put it.
fn working_install(cache: &Path) -> std::path::PathBuf {
    let dir = cache.join("exhibit/cuda-13.0.88");
    let bin = dir.join("lib/python3.11/site-packages/nvidia/cu13/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let nvcc = bin.join("nvcc");
    std::fs::write(&nvcc, crate::util::NVCC).expect("write nvcc");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(dir.join(".exhibit-complete"), "nvidia-cuda-nvcc==13.0.48\n").expect("stamp");
    nvcc
}

#[test]
fn a_failed_install_leaves_the_working_toolchain_in_place() {
    let project = Project::new();
    project.tool("python3", PYTHON3);
    let cache = project.root.join("cache");
    let nvcc = working_install(&cache);
    project.pipeline(
        &pipeline("")
            .replace("  provision: false\n", "  provision: true\n")
            .replace("    nvcc: bin/nvcc\n", "    python3: bin/python3\n"),
    );
    let out = Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &cache)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .expect("run the runner");
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.contains("provisioning CUDA 13.0.88 from PyPI"),
        "provisioning was attempted: {err}"
    );
    assert!(err.contains("No matching distribution found"), "{err}");
    // The install ran in a staging directory beside the cache entry, now gone ...
    let venv = std::fs::read_to_string(project.root.join("bin/venv.dir")).expect("venv.dir");
    let venv = Path::new(venv.trim());
    assert_ne!(venv, cache.join("exhibit/cuda-13.0.88"));
    assert_eq!(venv.parent(), Some(cache.join("exhibit").as_path()));
    assert!(!venv.exists(), "the staging directory was removed");
    // ... and the working toolchain is untouched.
    assert!(nvcc.is_file(), "the working toolchain was deleted");
    assert_eq!(
        std::fs::read_to_string(cache.join("exhibit/cuda-13.0.88/.exhibit-complete")).unwrap(),
        "nvidia-cuda-nvcc==13.0.48\n"
    );
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "compile")["status"], "failed");
}
