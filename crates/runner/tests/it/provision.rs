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

/// Runs the pipeline with provisioning on, the stand-in python3 the only way to a compiler, and
/// `cache` as the cache home.
fn provision_with(project: &Project, cache: &Path) -> std::process::Output {
    project.pipeline(
        &pipeline("")
            .replace("  provision: false\n", "  provision: true\n")
            .replace("    nvcc: bin/nvcc\n", "    python3: bin/python3\n"),
    );
    Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", cache)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .expect("run the runner")
}

#[test]
fn a_failed_install_leaves_the_working_toolchain_in_place() {
    let project = Project::new();
    project.tool("python3", PYTHON3);
    let cache = project.root.join("cache");
    let nvcc = working_install(&cache);
    let out = provision_with(&project, &cache);
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

/// A stand-in python3 (hand-written) whose venv's pip "installs" the wheels it is given: it
/// notes its arguments in `pip.args` beside this script and leaves a stand-in nvcc where the
/// nvcc wheel puts it.
fn installing_python3() -> String {
    format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "Python 3.0.0 (stand-in)"; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  here="$(cd "$(dirname "$0")" && pwd)"
  mkdir -p "$3/bin" "$3/lib/python3.11/site-packages/nvidia/cu13/bin"
  cat > "$3/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc" <<'NVCC'
{}NVCC
  chmod +x "$3/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc"
  printf '#!/bin/sh\nshift\nfor a; do echo "$a"; done > "%s/pip.args"\n' "$here" > "$3/bin/pip"
  chmod +x "$3/bin/pip"
  exit 0
fi
exit 2
"#,
        crate::util::NVCC
    )
}

/// A project with no CUDA compiler anywhere it looks, whose build is a script that calls
/// `nvcc` by name; `toolchain` is written into its pipeline as it is.
fn compiler_less(toolchain: &str) -> Project {
    let project = Project::new();
    std::fs::remove_dir_all(project.root.join("bin")).expect("remove the stand-in tools");
    project.write("py/python3", &installing_python3());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        project.root.join("py/python3"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    project.write("add.cu", "// stand-in kernel source\n");
    project.write(
        "build.sh",
        "#!/bin/sh\n# Builds as a user's script would: nvcc by name, from PATH.\nexec nvcc -cubin -o \"$1/add.cubin\" add.cu\n",
    );
    project.pipeline(&format!(
        "target:\n  build:\n    command: [sh, build.sh, \"{{build_dir}}\"]\n  program:\n    command: [\"{{build_dir}}/add\"]\n{toolchain}stages:\n  build: {{}}\n"
    ));
    project
}

fn run_compiler_less(project: &Project) -> std::process::Output {
    let path = format!("{}:/usr/bin:/bin", project.root.join("py").display());
    Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .env("PATH", path)
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .expect("run the runner")
}

/// No `toolchain:`, or only its version: with no compiler installed, the runner provisions its
/// default set (the pins of the project's own pipeline.yaml), and a build script that calls
/// `nvcc` by name finds that compiler. The first run says nothing of an earlier run's cache;
/// the second reuses what the first learned and says so.
#[test]
fn without_a_toolchain_the_default_set_is_provisioned_and_found_by_name() {
    let expected: Vec<String> = runner::pipeline::config::DEFAULT_WHEELS
        .iter()
        .map(|(name, version)| format!("{name}=={version}"))
        .collect();
    for toolchain in ["", "toolchain:\n  cuda: 13.0.88\n"] {
        let project = compiler_less(toolchain);
        let out = run_compiler_less(&project);
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{toolchain:?}: {err}");
        assert!(
            err.contains("provisioning CUDA 13.0.88 from PyPI"),
            "{toolchain:?}: {err}"
        );
        let args = std::fs::read_to_string(project.root.join("py/pip.args")).expect("pip.args");
        let mut wheels: Vec<String> = args
            .lines()
            .filter(|a| !a.starts_with("--"))
            .map(str::to_string)
            .collect();
        wheels.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(wheels, want, "{toolchain:?}: the wheels pip was given");
        assert!(
            !err.contains("from the cache of an earlier run"),
            "{toolchain:?}: a first run: {err}"
        );
        let manifest = project.manifest();
        assert_eq!(stage(&manifest, "build")["status"], "passed", "{err}");
        assert_eq!(
            manifest["environment"]["toolchain_source"], "provisioned 13.0.88",
            "{manifest:#}"
        );
        let calls = project
            .cache
            .join("exhibit/cuda-13.0.88/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc.calls");
        assert!(calls.is_file(), "the provisioned nvcc built it: {err}");

        let again = run_compiler_less(&project);
        let err = stderr(&again);
        assert_eq!(code(&again), 0, "{err}");
        assert!(!err.contains("provisioning CUDA"), "{err}");
        assert!(
            err.contains("preflight: from the cache of an earlier run (unchanged since): nvcc"),
            "{err}"
        );
    }
}

/// A version of CUDA other than the default set's needs its wheels pinned: the runner never
/// guesses another release's wheels, and says what its default set pins.
#[test]
fn another_cuda_version_without_wheels_is_refused_naming_the_default_set() {
    let project = compiler_less("toolchain:\n  cuda: 13.5.37\n");
    let out = project.run(&["check", "pipeline.yaml"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("toolchain.wheels: provisioning CUDA 13.5.37 needs its wheels pinned"),
        "{err}"
    );
    assert!(err.contains("nvidia-nvvm: 13.0.88"), "{err}");
}

/// One definition of the default set: the project's own pipeline.yaml pins exactly the set the
/// runner provisions for a pipeline that pins none, and a pipeline without `toolchain:` reads
/// as that set.
#[test]
fn the_default_set_is_the_projects_own_pins() {
    use runner::pipeline::config::{DEFAULT_CUDA, DEFAULT_WHEELS, Pipeline};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let own = Pipeline::load(&repo.join("pipeline.yaml")).expect("pipeline.yaml loads");
    let default: Vec<(String, String)> = DEFAULT_WHEELS
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let pinned: Vec<(String, String)> = own.toolchain.wheels.clone().into_iter().collect();
    let mut sorted = default.clone();
    sorted.sort();
    assert_eq!(pinned, sorted, "pipeline.yaml's toolchain.wheels");
    assert_eq!(own.toolchain.cuda, DEFAULT_CUDA);
    let none = Pipeline::parse(
        &repo.join("examples/triton/pipeline.yaml"),
        &std::fs::read_to_string(repo.join("examples/triton/pipeline.yaml")).expect("read"),
    )
    .expect("the Triton example loads");
    assert_eq!(none.toolchain.cuda, DEFAULT_CUDA);
    assert!(none.toolchain.provision);
    assert_eq!(
        none.toolchain.wheels.into_iter().collect::<Vec<_>>(),
        sorted,
        "no toolchain: reads as the default set"
    );
}

/// A provisioned toolkit that every user may write could hold anything: it is neither run nor
/// silently replaced, and the error says which directory and why.
#[test]
fn a_toolkit_every_user_can_write_is_refused_with_a_clear_message() {
    let project = Project::new();
    project.tool("python3", PYTHON3);
    let cache = project.root.join("cache");
    let nvcc = working_install(&cache);
    let dir = cache.join("exhibit/cuda-13.0.88");
    // What refuses it is its mode, before its stamp (another set's pins) is read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = provision_with(&project, &cache);
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("writable by every user"), "{err}");
    assert!(
        !err.contains("provisioning CUDA 13.0.88 from PyPI"),
        "it tried to replace the toolkit: {err}"
    );
    assert!(nvcc.exists(), "the toolkit was removed");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
}
