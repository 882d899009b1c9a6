//! A newcomer's first day, round two (issue 51), through the CLI: a run in which nothing could
//! run says what is missing and how to install it, never "no error"; a closed pipe ends nothing
//! early.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use crate::util::{BIN, Project, code, stage, stderr};

/// A stand-in python3 without torch or triton: `import torch` fails as Python's does, and
/// `importlib.util.find_spec` finds neither (hand-written, not a real interpreter).
const PYTHON_WITHOUT_TORCH: &str = r#"#!/bin/sh
# Stand-in for python3 in tests: no torch, no triton.
case "$*" in
  --version*) echo "Python 3.11.0 (stand-in)"; exit 0 ;;
  *find_spec*) shift 2; for m in "$@"; do echo "$m False"; done; exit 0 ;;
  *"import os, torch"*)
    echo "Traceback (most recent call last):" >&2
    echo "ModuleNotFoundError: No module named 'torch'" >&2
    exit 1 ;;
esac
echo "stand-in python3: nothing to run" >&2
exit 1
"#;

/// A PyTorch extension's build script and a Triton oracle, as a newcomer's project holds them:
/// only their imports matter here.
fn extension_project() -> Project {
    let project = Project::new();
    project.tool("python3", PYTHON_WITHOUT_TORCH);
    project.write(
        "build.py",
        "from torch.utils.cpp_extension import load\nload(name='ext', sources=['ext.cu'])\n",
    );
    project.write("oracle.py", "import triton\nimport triton.language as tl\n");
    project.pipeline(
        "target:\n  build:\n    command: [python3, build.py]\n  program:\n    command: [python3, \
         oracle.py]\ntoolchain:\n  tools:\n    python3: bin/python3\n    nvcc: bin/nvcc\n    \
         cuobjdump: bin/cuobjdump\nstages:\n  build: {}\n  memcheck: {}\n  check: {}\n  \
         profile: {}\n  sass: {}\n",
    );
    project
}

#[test]
fn a_run_where_nothing_ran_names_what_is_missing_and_never_reads_as_no_error() {
    let project = extension_project();
    let out = project.run(&["pipeline.yaml"]);
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    // Nothing was checked: no evidence is no pass (docs/commands.md, exit codes).
    assert_eq!(code(&out), 3, "{printed}");
    let verdict = printed
        .lines()
        .find(|l| l.starts_with("verdict: "))
        .unwrap_or_else(|| panic!("a verdict line in {printed}"));
    assert!(verdict.contains("Not checked"), "{verdict}");
    assert!(!verdict.contains("no error"), "{verdict}");
    assert!(verdict.contains("torch (pip install torch)"), "{verdict}");
    assert!(verdict.contains("triton (pip install triton)"), "{verdict}");
    assert!(verdict.contains("an NVIDIA GPU"), "{verdict}");
    assert!(
        verdict.contains("Not checked: build, memcheck, check, profile and sass."),
        "{verdict}"
    );
    // The manifest says what each skipped unit lacked, by name.
    let manifest = project.manifest();
    let build = stage(&manifest, "build");
    assert_eq!(build["status"], "skipped");
    assert_eq!(build["missing"], serde_json::json!(["torch"]), "{build}");
    let check = stage(&manifest, "check");
    assert_eq!(check["missing"][0], "gpu", "{check}");
    assert!(
        check["missing"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("triton")),
        "{check}"
    );
    // The report: what is missing with the command that installs it, and no stage claimed
    // as run that did not (the skipped profile profiled nothing).
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("**Verdict:** 🚫 Not checked"), "{report}");
    assert!(report.contains("Missing here:"), "{report}");
    assert!(report.contains("- **torch** (torch not importable: ModuleNotFoundError: No module named 'torch'): `pip install torch`."), "{report}");
    assert!(report.contains("- **triton**"), "{report}");
    assert!(!report.contains("found no error"), "{report}");
    assert!(!report.contains("Compile-only"), "{report}");
    assert!(!report.contains("profiled the first"), "{report}");
    // `exhibit report` renders the same from the stored run (it exits 0: it read every log).
    let id = manifest["id"].as_str().unwrap();
    let again = project.run(&["report", &format!("artifacts/{id}")]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let again = String::from_utf8_lossy(&again.stdout);
    assert!(again.contains("🚫 Not checked"), "{again}");
    assert!(again.contains("`pip install triton`"), "{again}");
}

#[test]
fn a_compile_only_run_still_exits_0_and_names_the_missing_gpu() {
    // The built-in kernel's pipeline with a GPU stage: the build ran, the GPU stage could not.
    let project = Project::new();
    project.pipeline(&crate::util::pipeline("  check:\n    cases: [seed]\n"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("Compile-only"), "{report}");
    assert!(
        report.contains("- **an NVIDIA GPU with its driver**"),
        "{report}"
    );
    // A CI job that must have checked something (a runner that lost its driver must not pass)
    // asks for it: the same run is then no pass.
    let required = project.run(&["pipeline.yaml", "--require-gpu"]);
    assert_eq!(code(&required), 3, "{}", stderr(&required));
    assert!(
        stderr(&required).contains("--require-gpu: no stage ran the program on a GPU"),
        "{}",
        stderr(&required)
    );
}

/// `exhibit pipeline.yaml | head -1`: the reader goes away after one line; the run goes on,
/// writes its run directory and report, and exits with the code it would have had.
#[test]
fn a_closed_stdout_or_stderr_ends_nothing_early() {
    for closed in ["stdout", "stderr"] {
        let project = Project::new();
        let mut child = Command::new(BIN)
            .arg("pipeline.yaml")
            .current_dir(&project.root)
            .env("XDG_CACHE_HOME", &project.cache)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the runner");
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (mut first, mut keep): (Box<dyn Read + Send>, Box<dyn Read + Send>) = match closed {
            "stdout" => (Box::new(stdout), Box::new(stderr_pipe)),
            _ => (Box::new(stderr_pipe), Box::new(stdout)),
        };
        // The other stream is read to its end, as a terminal would.
        let drain = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = keep.read_to_string(&mut text);
            text
        });
        let mut line = String::new();
        let _ = BufReader::new(&mut first).read_line(&mut line);
        drop(first);
        let status = child.wait().expect("wait for the runner");
        let other = drain.join().expect("the drain");
        assert_eq!(status.code(), Some(0), "{closed} closed: {other}");
        let manifest = project.manifest();
        assert_eq!(manifest["interrupted"], false, "{closed} closed");
        assert!(
            project.root.join("reports/latest.md").is_file(),
            "{closed} closed: no report"
        );
        assert_eq!(stage(&manifest, "report")["status"], "passed");
    }
}

/// A stand-in for Debian's python3 without `python3-venv` (hand-written after the message
/// Debian 12's python3.11 prints): `-m venv` fails with its advice on stdout.
const DEBIAN_PYTHON_WITHOUT_VENV: &str = r#"#!/bin/sh
# Stand-in for python3 in tests: Debian without python3-venv.
if [ "$1" = "--version" ]; then echo "Python 3.11.2 (stand-in)"; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  echo "The virtual environment was not created successfully because ensurepip is not"
  echo "available.  On Debian/Ubuntu systems, you need to install the python3-venv"
  echo "package using the following command."
  echo ""
  echo "    apt install python3.11-venv"
  echo ""
  echo "You may need to use sudo with that command.  After installing the python3-venv"
  echo "package, recreate your virtual environment."
  echo ""
  echo "Failing command: $3/bin/python3"
  exit 1
fi
exit 2
"#;

/// Provisioning without `python3-venv`: the error is said once, quotes the tool's own advice
/// from the log that holds it and names that log; piped, the download says one quiet line.
#[test]
fn a_failed_provisioning_is_said_once_with_the_tools_advice_and_its_log() {
    let project = Project::new();
    project.tool("python3", DEBIAN_PYTHON_WITHOUT_VENV);
    project.write("add.cu", "__global__ void k() {}\n");
    project.pipeline(
        "target:\n  build:\n    command: [nvcc, \"-arch={arch}\", -o, \"{build_dir}/add\", \
         add.cu]\n  program:\n    command: [\"{build_dir}/add\"]\ntoolchain:\n  tools:\n    \
         python3: bin/python3\nstages:\n  build: {}\n  memcheck: {}\n  sass: {}\n",
    );
    let out = Command::new(BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .expect("start the runner");
    let err = stderr(&out);
    let printed = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    if printed.contains("nvcc: Cuda compilation tools") {
        // /usr/local/cuda has a compiler here: nothing to provision.
        return;
    }
    assert_eq!(code(&out), 3, "{printed}");
    assert_eq!(
        printed.matches("apt install python3.11-venv").count(),
        1,
        "{printed}"
    );
    let warning = err
        .lines()
        .find(|l| l.starts_with("warning: failed to provision CUDA"))
        .unwrap_or_else(|| panic!("a warning in {err}"));
    assert!(
        warning.contains("python3 -m venv failed (exit status 1): apt install python3.11-venv"),
        "{warning}"
    );
    // The log that holds the advice, not the empty stderr log beside it.
    assert!(warning.ends_with("cuda-13.0.88.provision.log"), "{warning}");
    let log = project.cache.join("exhibit/cuda-13.0.88.provision.log");
    let log = std::fs::read_to_string(&log).expect("the provisioning log");
    assert!(log.contains("apt install python3.11-venv"), "{log}");
    // Piped: one line for the download, no progress rewritten in place.
    assert_eq!(
        err.matches("provisioning CUDA 13.0.88 from PyPI").count(),
        1,
        "{err}"
    );
    assert!(!err.contains('\r'), "{err:?}");
    // The report says it once too, in its environment, without this machine's paths.
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert_eq!(
        report.matches("apt install python3.11-venv").count(),
        1,
        "{report}"
    );
    assert!(
        !report.contains(&*project.cache.to_string_lossy()),
        "{report}"
    );
}

/// A stand-in for nvcc's driver (hand-written, Python): it forks a compiler that, as cc1plus
/// does, takes a moment to clean up on SIGINT, while the driver itself dies at once, so the
/// compiler ends an orphan the runner adopted. `--version` answers as nvcc does.
const NVCC_WITH_A_SLOW_CHILD: &str = r#"#!/usr/bin/env python3
# Stand-in for nvcc in tests (hand-written): a driver and a compiler child.
import os, signal, sys, time
if sys.argv[1:2] == ["--version"]:
    print("Cuda compilation tools, release 0.0, V0.0.0 (stand-in)")
    sys.exit(0)
here = os.path.dirname(os.path.abspath(__file__))
child = os.fork()
if child == 0:
    def clean_up(signum, frame):
        time.sleep(0.3)
        os._exit(2)
    signal.signal(signal.SIGINT, clean_up)
    open(os.path.join(here, "compiling"), "w").write(str(os.getpid()))
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"#;

/// Ctrl-C while nvcc compiles: the runner says at once that it stops, the compiler's processes
/// end, and the run is over well within the grace period (5 s by default), exiting 130.
#[test]
fn ctrl_c_during_a_compile_exits_promptly_with_a_message() {
    let project = Project::new();
    project.tool("nvcc", NVCC_WITH_A_SLOW_CHILD);
    // The default grace period: what a user's Ctrl-C meets.
    project.pipeline(&crate::util::pipeline("").replace("grace: 1s\n", ""));
    let mut runner = Command::new(BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the runner");
    let compiler: i32 = project
        .wait_for("bin/compiling", std::time::Duration::from_secs(20))
        .trim()
        .parse()
        .expect("a pid");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(runner.id()).unwrap());
    let sent = std::time::Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("send SIGINT");
    let mut err = String::new();
    runner
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    let status = runner.wait().expect("wait for the runner");
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(130), "{err}");
    // Promptly: the compiler's child ends 0.3 s after the signal, and the runner never waits
    // out the grace period (5 s) for a stage whose processes all ended. The bound is the grace
    // itself, not a guess at how fast a busy machine runs.
    assert!(
        took < std::time::Duration::from_secs(5),
        "the runner took {took:?} to stop, as long as the grace period: {err}"
    );
    assert!(
        err.contains("runner: interrupted (SIGINT): stopping the running stages"),
        "{err}"
    );
    assert!(!crate::util::alive(compiler), "the compiler survived");
    assert_eq!(
        stage(&project.manifest(), "compile")["status"],
        "interrupted"
    );
}

/// `matrix:` with an `arch:` list alone, a newcomer's first matrix: one config, `default`,
/// built for each arch.
#[test]
fn a_matrix_of_archs_alone_is_one_config_for_each_arch() {
    let project = Project::new();
    project.write("add.cu", "__global__ void k() {}\n");
    project.pipeline(
        "target:\n  build:\n    command: [nvcc, \"-arch={arch}\", -o, \"{build_dir}/add\", \
         add.cu]\n  program:\n    command: [\"{build_dir}/add\"]\ntoolchain:\n  tools:\n    \
         nvcc: bin/nvcc\nmatrix:\n  arch: [sm_80, sm_90]\nstages:\n  build: {}\n",
    );
    let check = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&check), 0, "{}", stderr(&check));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let builds = crate::util::stages(&manifest, "build");
    let archs: Vec<(&str, &str)> = builds
        .iter()
        .map(|b| (b["config"].as_str().unwrap(), b["arch"].as_str().unwrap()))
        .collect();
    assert_eq!(archs, [("default", "sm_80"), ("default", "sm_90")]);
    assert_eq!(project.nvcc_calls(), 2);
}

/// `exhibit init DIR`, as a user runs it.
fn init(dir: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .arg("init")
        .arg(dir)
        .output()
        .expect("run the runner")
}

/// `exhibit init DIR` writes a commented pipeline for what the directory holds, checks it, and
/// never writes over an existing one.
#[test]
fn runner_init_writes_a_checked_pipeline_for_each_kind_of_program_and_never_overwrites() {
    // What a directory holds, what init says it found, a line of what it writes.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 13] = [
        (
            "a .cu file",
            &[(
                "vadd.cu",
                "__global__ void add() {}\nint main() { add<<<1, 1>>>(); }\n",
            )],
            "for CUDA code (vadd.cu)",
            "command: [nvcc, -lineinfo, \"-arch={arch}\", -Xptxas, -v, -o, \"{build_dir}/vadd\", \"vadd.cu\"]",
        ),
        (
            "a CMake project",
            &[
                (
                    "CMakeLists.txt",
                    "project(p LANGUAGES CXX CUDA)\nadd_executable(tests t.cu)\nenable_testing()\nadd_test(NAME t COMMAND tests)\n",
                ),
                ("t.cu", "int main() {}\n"),
            ],
            "for a CMake project with tests (ctest)",
            "command: [ctest, --test-dir, \"{build_dir}\", --output-on-failure, --output-junit, \"{out}\"]",
        ),
        (
            "a PyTorch extension",
            &[
                (
                    "setup.py",
                    "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n",
                ),
                ("csrc/k.cu", "__global__ void k() {}\n"),
                ("test_ext.py", "import torch\nimport ext\n"),
            ],
            "for a PyTorch extension (setup.py)",
            "command: [python3, \"test_ext.py\"]",
        ),
        (
            "a Triton script",
            &[(
                "softmax.py",
                "import torch\nimport triton\nimport triton.language as tl\n",
            )],
            "for a Triton script (softmax.py)",
            "command: [python3, \"softmax.py\"]",
        ),
        (
            "a CuPy script three levels down",
            &[(
                "src/interp/spline/bspline.py",
                "import cupy as cp\nk = cp.RawKernel(r'''extern \"C\" __global__ void f() {}''', \"f\")\nif __name__ == \"__main__\":\n    k((1,), (1,), ())\n",
            )],
            "for a CuPy script (src/interp/spline/bspline.py)",
            "cupy.cuda.set_allocator(None)",
        ),
        (
            "a Numba kernel module and the test that imports it",
            &[
                (
                    "pkg/kernels/reduce.py",
                    "from numba import cuda\n\n@cuda.jit(lineinfo=True)\ndef k(x):\n    x[0] = 1\n",
                ),
                (
                    "pkg/test_reduce.py",
                    "from pkg.kernels.reduce import k\n\ndef test_k():\n    pass\n",
                ),
            ],
            "for a Numba script (pkg/test_reduce.py)",
            "command: [python3, -m, pytest, -q, \"pkg/test_reduce.py\", \"--junitxml={out}\"]",
        ),
        (
            "CUDA C++ in folders: main in a .cpp, a header elsewhere, cuBLAS, an unused .cu",
            &[
                (
                    "main.cpp",
                    "void launch(float*);\nint main() { launch(nullptr); }\n",
                ),
                (
                    "src/wmma/gemm.cu",
                    "#include \"util.cuh\"\n#include <cublas_v2.h>\n__global__ void k(float* a) { a[0] = sq(a[0]); }\nvoid launch(float* a) { k<<<1, 1>>>(a); }\n",
                ),
                (
                    "include/util.cuh",
                    "__device__ inline float sq(float x) { return x * x; }\n",
                ),
                ("src/unused.cu", "__global__ void orphan() {}\n"),
            ],
            "for CUDA code (main.cpp, src/wmma/gemm.cu)",
            "command: [nvcc, -lineinfo, \"-arch={arch}\", -Xptxas, -v, \"-Iinclude\", -o, \"{build_dir}/main\", \"main.cpp\", \"src/wmma/gemm.cu\", -lcublas]",
        ),
        (
            "a CUDA program that times its kernels",
            &[(
                "bench.cu",
                "__global__ void k() {}\nint main() { for (int i = 0; i < 500; ++i) k<<<1, 1>>>(); float ms; cudaEventElapsedTime(&ms, 0, 0); }\n",
            )],
            "for CUDA code (bench.cu)",
            "racecheck: { args: [--launch-count, \"8\"] }",
        ),
        (
            "a CMake project for the matrix's arch",
            &[
                (
                    "CMakeLists.txt",
                    "project(p LANGUAGES CUDA)\nadd_executable(app app.cu)\n",
                ),
                ("app.cu", "int main() {}\n"),
            ],
            "for a CMake project",
            "-DCMAKE_CUDA_ARCHITECTURES=$(echo {arch} | sed s/^sm_//) '-DCMAKE_CUDA_FLAGS=-lineinfo -Xptxas=-v'",
        ),
        (
            "a Triton kernel module three levels down and the driver that imports it",
            &[
                (
                    "pkg/ops/kernels/softmax.py",
                    "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n",
                ),
                (
                    "pkg/ops/kernels/util.py",
                    "import triton\n\ndef grid(n):\n    return (triton.cdiv(n, 128),)\n",
                ),
                (
                    "bench/run_softmax.py",
                    "import torch\nfrom pkg.ops.kernels.softmax import k\n\nif __name__ == \"__main__\":\n    k[(1,)](torch.ones(1))\n",
                ),
            ],
            "for a Triton script (bench/run_softmax.py)",
            "command: [python3, \"bench/run_softmax.py\"]",
        ),
        (
            "an extension a module builds with load_inline, and the driver that imports it",
            &[
                (
                    "ops/ext.py",
                    "from torch.utils.cpp_extension import load_inline\nm = load_inline(name='e', cpp_sources='', cuda_sources='', functions=['f'])\n",
                ),
                (
                    "bench.py",
                    "import torch\nfrom ops import ext\n\nif __name__ == \"__main__\":\n    ext.m.f(torch.ones(1))\n",
                ),
            ],
            "for a PyTorch extension (ops/ext.py)",
            "    runpy.run_path(sys.argv[0], run_name='__main__')\n",
        ),
        (
            "an autotuned Triton kernel",
            &[(
                "add.py",
                "import triton\n\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\ndef k(x, n):\n    pass\n\nif __name__ == \"__main__\":\n    k[(1,)](None, 1)\n",
            )],
            "for a Triton script (add.py)",
            "  program:\n    env: { TRITON_CACHE_AUTOTUNING: \"1\" }\n",
        ),
        (
            "a CuPy test file that also runs as a script: pytest, whose exit status is the check",
            &[(
                "test_scale.py",
                "import cupy as cp\n\ndef test_scale():\n    assert cp.allclose(cp.ones(4) * 2, 2)\n\nif __name__ == \"__main__\":\n    print(\"FAIL\" if not cp.allclose(cp.ones(4), 2) else \"ok\")\n",
            )],
            "for a CuPy script (test_scale.py)",
            "command: [python3, -m, pytest, -q, \"test_scale.py\", \"--junitxml={out}\"]",
        ),
    ];
    for (kind, files, found, command) in cases {
        let dir = tempfile::tempdir().expect("a directory");
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let out = init(dir.path());
        let err = stderr(&out);
        assert_eq!(code(&out), 0, "{kind}: {err}");
        assert!(err.contains(found), "{kind}: {err}");
        // `check` ran on it.
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            printed.contains("pipeline.yaml: ok: 1 config"),
            "{kind}: {printed}"
        );
        // It says what each stage runs: the program, and a sanitizer's tool around it.
        assert!(printed.contains("\n  program: "), "{kind}: {printed}");
        if kind == "a CUDA program that times its kernels" {
            assert!(
                printed
                    .contains("runs compute-sanitizer --tool racecheck --launch-count 8 <program>"),
                "{printed}"
            );
        }
        // Each build's command and the tools it starts (cmake inside `sh -c`; the GPU for a
        // run that autotunes); a script given in one word, by its size.
        let build = match kind {
            "a CMake project for the matrix's arch" => Some("needs cmake\n"),
            "an extension a module builds with load_inline, and the driver that imports it" => {
                Some("build:   python3 -c <script of 17 lines> bench.py\n")
            }
            "an autotuned Triton kernel" => Some("needs gpu, python3, torch, triton\n"),
            _ => None,
        };
        if let Some(build) = build {
            assert!(printed.contains(build), "{kind}: {printed}");
        }
        let yaml = std::fs::read_to_string(dir.path().join("pipeline.yaml")).unwrap();
        assert!(yaml.starts_with("# Written by `exhibit init`"), "{yaml}");
        // What each run writes is kept out of version control.
        let ignore = std::fs::read_to_string(dir.path().join(".gitignore")).unwrap();
        assert!(ignore.contains("\n/artifacts/\n/reports/\n"), "{ignore:?}");
        assert!(err.contains("added artifacts/ and reports/"), "{err}");
        assert!(yaml.contains(command), "{kind}:\n{yaml}");
        // Never over an existing pipeline: refused, the file as it was.
        std::fs::write(dir.path().join("pipeline.yaml"), "# mine\n").unwrap();
        let again = init(dir.path());
        assert_eq!(code(&again), 2, "{kind}: {}", stderr(&again));
        assert!(
            stderr(&again).contains("exists: not overwritten"),
            "{}",
            stderr(&again)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pipeline.yaml")).unwrap(),
            "# mine\n"
        );
    }
    let empty = tempfile::tempdir().expect("a directory");
    let out = Command::new(BIN)
        .args(["init".as_ref(), empty.path().as_os_str()])
        .output()
        .expect("run the runner");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains(
        "found no CUDA file (.cu), CMakeLists.txt, PyTorch extension, Triton, CuPy or Numba \
             script"
    ));
    assert!(!empty.path().join("pipeline.yaml").exists());
}

/// A file name is never pipeline text: a `.cu` file whose name holds newlines and a YAML key
/// (the exploit of a hostile checkout) is named in the header comment with `?` for each control
/// character, and the written pipeline has no key the name spelled.
#[test]
fn runner_init_never_lets_a_file_name_write_yaml() {
    let dir = tempfile::tempdir().expect("a directory");
    let name = "k\ntoolchain: {tools: {nvcc: pwn.sh}}\n\u{1b}]52;c;aGk=\u{7}x.cu";
    std::fs::write(dir.path().join(name), "int main() { return 0; }\n").unwrap();
    let out = init(dir.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let yaml = std::fs::read_to_string(dir.path().join("pipeline.yaml")).unwrap();
    assert!(
        !yaml.lines().any(|l| l.starts_with("toolchain")),
        "a key from the file's name:\n{yaml}"
    );
    assert!(!yaml.contains('\u{1b}'), "{yaml}");
    let header = yaml.lines().next().unwrap_or("");
    assert!(header.contains("k?toolchain"), "{header}");
    let said = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
    assert!(
        !said.contains('\u{1b}'),
        "a terminal escape reached the terminal: {said:?}"
    );
}

/// Assets beside the sources never hide them: 600 images sorted before `src/main.cu` used to
/// fill the 500 files `exhibit init` reads, and it found no CUDA file.
#[test]
fn runner_init_finds_the_sources_past_hundreds_of_other_files() {
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::create_dir_all(dir.path().join("assets")).unwrap();
    for i in 0..600 {
        std::fs::write(dir.path().join(format!("assets/{i:04}.png")), "png").unwrap();
    }
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.cu"),
        "__global__ void k() {}\nint main() { k<<<1, 1>>>(); }\n",
    )
    .unwrap();
    let out = init(dir.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("for CUDA code (src/main.cu)"),
        "{}",
        stderr(&out)
    );
}

/// The JUnit example (`examples/pytest-triton/`): its report names the tests that passed beside
/// the one that failed, stage by stage, as `exhibit report` renders its reference run.
#[test]
fn the_junit_examples_report_lists_the_tests_that_passed_beside_the_failing_one() {
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/pytest-triton/reference/artifacts/20261124T194319Z-f9ba6593");
    let out = Command::new(BIN)
        .arg("report")
        .arg(&run)
        .output()
        .expect("run the runner");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    let check = md
        .lines()
        .find(|l| l.starts_with("- **check** (`default`): "))
        .unwrap_or_else(|| panic!("a tests line for the check stage in:\n{md}"));
    assert_eq!(
        check,
        "- **check** (`default`): 3 passed: `tests/test_kernels.py::test_scale[1024]`, \
         `tests/test_kernels.py::test_scale[1000]`, `tests/test_kernels.py::test_rowsum[256]` · \
         1 failed: `tests/test_kernels.py::test_rowsum[200]` · 1 skipped: \
         `tests/test_kernels.py::test_blackwell_only`"
    );
}

/// `examples/gtest-cuda/` without cmake: its build cannot run, a failed stage (exit 3, as its
/// README says) that never started, and the reason names what is missing. (With cmake and GoogleTest, and no
/// GPU, it reads "Compile-only" and exits 0, as every example does.)
#[test]
fn the_gtest_example_without_cmake_fails_its_build_naming_cmake() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gtest-cuda");
    let project = Project::new();
    for file in ["CMakeLists.txt", "kernels.cuh", "test_kernels.cu"] {
        std::fs::copy(example.join(file), project.root.join(file)).expect("copy the example");
    }
    let yaml = std::fs::read_to_string(example.join("pipeline.yaml")).expect("its pipeline");
    project.pipeline(&format!(
        "{yaml}\ntoolchain:\n  tools:\n    nvcc: bin/nvcc\n    cuobjdump: bin/cuobjdump\n"
    ));
    // A PATH with a shell and nothing else: no cmake.
    let path = project.root.join("shell");
    std::fs::create_dir_all(&path).unwrap();
    std::os::unix::fs::symlink("/bin/sh", path.join("sh")).unwrap();
    let out = Command::new(BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .env("PATH", &path)
        .output()
        .expect("start the runner");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let build = stage(&project.manifest(), "build").clone();
    assert_eq!(build["status"], "failed", "{build}");
    assert!(
        build["reason"]
            .as_str()
            .unwrap_or("")
            .contains("cmake not found"),
        "{build}"
    );
}

/// A `.gitignore` that already names a run folder is not given it twice; the other is added
/// after the user's own lines.
#[test]
fn runner_init_adds_only_the_run_folders_a_gitignore_lacks() {
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(dir.path().join(".gitignore"), "*.o\nartifacts").unwrap();
    std::fs::write(dir.path().join("k.cu"), "int main() {}\n").unwrap();
    let out = init(dir.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".gitignore")).unwrap(),
        "*.o\nartifacts\n# What each Exhibit run writes (exhibit init)\n/reports/\n"
    );
}

/// A build through `sh -c` needs the tools its script starts: the preflight finds `cmake` and
/// says its version, and without one on `PATH` the build fails before it starts, naming it (a
/// CPU stage whose tool is missing could not do what the pipeline asks), not on the shell's
/// `cmake: not found`.
#[test]
fn a_cmake_build_in_a_shell_script_needs_cmake_and_fails_naming_it_without_it() {
    let project = Project::new();
    project.tool(
        "cmake",
        "#!/bin/sh\nif [ \"$1\" = --version ]; then\n  echo 'cmake version 4.4.3'\n  echo\n  \
         echo 'CMake suite maintained and supported by Kitware (kitware.com/cmake).'\nfi\n",
    );
    project.pipeline(
        "target:\n  build:\n    command: [sh, -c, \"cmake -S . -B '{build_dir}' && cmake \
         --build '{build_dir}'\"]\n  program:\n    command: [sh, -c, \"exit 0\"]\nstages:\n  \
         build: {}\n",
    );
    let bin = project.root.join("bin");
    // Only `sh` and the stand-in: no other cmake can be found.
    let shell = project.root.join("shell");
    std::fs::create_dir_all(&shell).unwrap();
    std::os::unix::fs::symlink("/bin/sh", shell.join("sh")).unwrap();
    let with = format!("{}:{}", bin.display(), shell.display());
    let out = project.run_env(&["pipeline.yaml"], &[("PATH", &with)]);
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(printed.contains("cmake: cmake version 4.4.3"), "{printed}");
    let manifest = project.manifest();
    let build = stage(&manifest, "build");
    assert_eq!(build["status"], "passed", "{build}");

    let without = shell.display().to_string();
    let out = project.run_env(&["pipeline.yaml"], &[("PATH", &without)]);
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let manifest = project.manifest();
    let build = stage(&manifest, "build");
    assert_eq!(build["status"], "failed", "{printed}");
    assert!(printed.contains("build default sm_90"), "{printed}");
    assert!(printed.contains("cmake not found"), "{printed}");
    assert!(!printed.contains("cmake: not found"), "{printed}");
}
