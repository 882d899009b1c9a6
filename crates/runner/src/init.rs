//! `runner init [DIR]`: a starting `pipeline.yaml` for the program found in a directory, with a
//! comment on every line, written only where there is none.
//!
//! What it looks for, first match wins: a CMake project (`CMakeLists.txt`), a PyTorch
//! extension (a Python file using `torch.utils.cpp_extension` or `load_inline`), a Triton
//! script (a Python file importing `triton`), a CuPy or Numba script (a Python file importing
//! `cupy`, or `numba` with its CUDA target, at any depth), CUDA files (`.cu`, one of them with
//! a `main`). The other kinds are read from the directory and the one below. No hidden, build
//! or run directory is read, nothing is run; `cli/` then runs `check` on what it wrote.

use std::path::{Path, PathBuf};

/// The file `init` writes.
pub const FILE: &str = "pipeline.yaml";

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    #[error("{0} exists: not overwritten (check it with `runner check {0}`)")]
    Exists(String),
    #[error(
        "{0}: found no CUDA file (.cu), CMakeLists.txt, PyTorch extension, Triton, CuPy or \
         Numba script to write a pipeline for"
    )]
    NothingFound(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

/// What was found, and the pipeline written for it.
#[derive(Debug)]
pub struct Written {
    pub path: PathBuf,
    /// One line: what the pipeline runs ("a CMake project with ctest tests").
    pub found: String,
}

/// Writes `DIR/pipeline.yaml` for what `dir` holds; refuses to replace one.
pub fn init(dir: &Path) -> Result<Written, InitError> {
    let path = dir.join(FILE);
    let shown = path.display().to_string();
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(InitError::Exists(shown));
    }
    // The kinds other than CuPy and Numba scripts are looked for near the top only.
    let (near, deep): (Vec<Found>, Vec<Found>) =
        scan(dir).into_iter().partition(|f| f.depth <= NEAR);
    let (found, yaml) =
        draft(&near, &deep).ok_or_else(|| InitError::NothingFound(dir.display().to_string()))?;
    // `create_new`: a file that appeared meanwhile is not replaced either.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => InitError::Exists(shown.clone()),
            _ => InitError::Io(shown.clone(), e),
        })?;
    std::io::Write::write_all(&mut file, yaml.as_bytes()).map_err(|e| InitError::Io(shown, e))?;
    Ok(Written {
        path,
        found: plain(&found),
    })
}

/// A file found: its path relative to the directory, and its text when it is small enough to
/// read (source files only).
struct Found {
    relative: String,
    text: String,
    /// 1 for the directory's own files, 2 for those one level down, ...
    depth: usize,
}

/// How deep `scan` reads; kinds other than CuPy and Numba scripts are looked for in the first
/// [`NEAR`] levels only.
const DEPTH: usize = 8;
const NEAR: usize = 2;

/// Directories never looked into: hidden ones, and what builds and runs leave.
const SKIPPED: &[&str] = &[
    "artifacts",
    "reports",
    "build",
    "target",
    "node_modules",
    "__pycache__",
];

/// The directory's source files (`.cu`, `.cuh`, `.cpp`, `.py`, `.txt`) down to [`DEPTH`]
/// levels, sorted, at most 500 in the first [`NEAR`] levels and 500 below, each read when it
/// is under 1 MiB.
fn scan(dir: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    // Files taken near the top, and below.
    let mut taken = [0usize; 2];
    let mut walk = walkdir::WalkDir::new(dir)
        .max_depth(DEPTH)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(Ok(entry)) = walk.next() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.depth() > 0
            && entry.file_type().is_dir()
            && (name.starts_with('.') || SKIPPED.contains(&name.as_str()))
        {
            walk.skip_current_dir();
            continue;
        }
        // Only the files a pipeline is written from count towards the cap: assets beside the
        // sources (images, data) never hide them.
        let source = [".cu", ".cuh", ".py", ".txt", ".cpp"]
            .iter()
            .any(|x| name.ends_with(x));
        // Each group its own 500: a deep tree early in name order never hides the files at
        // the top.
        let taken = &mut taken[usize::from(entry.depth() > NEAR)];
        if !entry.file_type().is_file() || !source || *taken >= 500 {
            continue;
        }
        *taken += 1;
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        let relative = relative.to_string_lossy().into_owned();
        let small = entry.metadata().is_ok_and(|m| m.len() <= 1 << 20);
        let text = if small {
            std::fs::read(entry.path())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        } else {
            String::new()
        };
        out.push(Found {
            relative,
            text,
            depth: entry.depth(),
        });
    }
    out
}

/// A word of a YAML flow sequence: quoted, so that any file name reads as itself.
fn q(word: &str) -> String {
    serde_json::to_string(word).unwrap_or_else(|_| format!("{word:?}"))
}

/// Whether a Python file imports `module` (`import m`, `import m.x`, `from m import ...`).
fn imports(text: &str, module: &str) -> bool {
    text.lines().map(str::trim_start).any(|l| {
        let rest = l
            .strip_prefix("import ")
            .or_else(|| l.strip_prefix("from "))
            .unwrap_or("");
        rest.split([',', ' ']).any(|w| {
            let w = w.trim();
            w == module || w.starts_with(&format!("{module}."))
        })
    })
}

/// The comment a written pipeline starts with, saying what it runs: `what` names files, whose
/// names may hold any character, so none of them can end the comment ([`plain`]).
fn header(what: &str) -> String {
    format!(
        "# Written by `runner init` for {} in this directory. Every key, placeholder and\n\
         # stage option: docs/pipeline.md. Run it with `runner pipeline.yaml`.\n",
        plain(what)
    )
}

/// Text with every control character (a newline in a file's name, a terminal escape) shown as
/// `?`: safe in a YAML comment and on a terminal.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The stages for a program that runs on the GPU, with comments.
const GPU_STAGES: &str =
    "  # Each runs the program, alone or under a tool; without a GPU they are skipped, saying why.
  memcheck: {}     # compute-sanitizer: out-of-bounds and misaligned accesses
  racecheck: {}    # shared-memory races
  initcheck: {}    # reads of uninitialised device memory
  synccheck: {}    # barriers not every thread reaches
  check: {}        # the program alone: its exit status and output
  profile: {}      # Nsight Compute: the first launches of each kernel
  sass: {}         # cuobjdump: the SASS of what the build (or a JIT cache) made
";

/// The pipeline for the first kind of program `files` (the first [`NEAR`] levels) and `deep`
/// (those below) hold, with a line saying what it is.
fn draft(files: &[Found], deep: &[Found]) -> Option<(String, String)> {
    let py = |f: &&Found| f.relative.ends_with(".py");
    // A CMake project.
    if let Some(cmake) = files.iter().find(|f| f.relative == "CMakeLists.txt") {
        let tests = cmake.text.contains("add_test") || cmake.text.contains("gtest_discover");
        let executable = cmake
            .text
            .split("add_executable(")
            .nth(1)
            .and_then(|rest| rest.split([' ', ')', '\n']).next())
            .filter(|name| !name.is_empty() && !name.contains('$'))
            .unwrap_or("main")
            .to_string();
        let program = if tests {
            "    # ctest runs the project's tests; {out} receives its JUnit XML, read by the report.\n    \
             command: [ctest, --test-dir, \"{build_dir}\", --output-on-failure, --output-junit, \"{out}\"]\n"
                .to_string()
        } else {
            format!(
                "    # The executable CMakeLists.txt adds first; change it to the one to check.\n    \
                 command: [{}]\n",
                q(&format!("{{build_dir}}/{executable}"))
            )
        };
        let what = if tests {
            "a CMake project with tests (ctest)"
        } else {
            "a CMake project"
        };
        let yaml = format!(
            "{}target:\n  build:\n    # Configured and built in this config's build directory, for \
             the matrix's arch.\n    command: [sh, -c, \"cmake -S . -B '{{build_dir}}' \
             -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release && cmake --build \
             '{{build_dir}}' -j 4\"]\n  program:\n{program}matrix:\n  arch: [sm_90]            \
             # the GPU it runs on (sm_80 for an A100)\nstages:\n  build: {{ timeout: 10m }}  \
             # a stage named build is the compile kind\n{GPU_STAGES}",
            header(what)
        );
        return Some((what.to_string(), yaml));
    }
    // A PyTorch extension: a build script (cpp_extension) or a script that builds its own
    // (load_inline), and the script that runs it.
    let extension = files
        .iter()
        .filter(py)
        .find(|f| f.text.contains("cpp_extension") || f.text.contains("load_inline"));
    if let Some(ext) = extension {
        let name = ext.relative.as_str();
        // A build script by its name; a script that calls `load_inline` builds as it runs.
        let base = name.rsplit('/').next().unwrap_or(name);
        let builds = matches!(base, "setup.py" | "build.py");
        let runner = files
            .iter()
            .filter(py)
            .filter(|f| f.relative != name && imports(&f.text, "torch"))
            .max_by_key(|f| {
                let base = f.relative.rsplit('/').next().unwrap_or("");
                (base.starts_with("test") || base.contains("oracle") || base.contains("check"))
                    as u8
            })
            .map(|f| f.relative.clone());
        let build = if builds {
            let command = if name.ends_with("setup.py") {
                format!(
                    "[python3, {}, build_ext, --build-lib, \"{{build_dir}}\"]",
                    q(name)
                )
            } else {
                format!("[python3, {}]", q(name))
            };
            format!(
                "  build:\n    # Builds the extension (torch.utils.cpp_extension); nvcc is found by \
                 name. Pass\n    # \"{{build_dir}}\" if it takes an output directory.\n    \
                 command: {command}\n"
            )
        } else {
            String::new()
        };
        let program = runner.unwrap_or_else(|| name.to_string());
        let what = format!("a PyTorch extension ({name})");
        let yaml = format!(
            "{}target:\n{build}  program:\n    # What the GPU stages run: the script that loads \
             and checks the extension.\n    command: [python3, {}]\nstages:\n{}{GPU_STAGES}",
            header(&what),
            q(&program),
            if builds {
                "  build: { timeout: 10m }  # torch needed: `pip install torch`\n"
            } else {
                ""
            }
        );
        return Some((what, yaml));
    }
    // A Triton script.
    if let Some(script) = files.iter().filter(py).find(|f| imports(&f.text, "triton")) {
        let what = format!("a Triton script ({})", script.relative);
        let yaml = format!(
            "{}target:\n  # No build: Triton compiles its kernels when the script runs; the SASS \
             stage reads\n  # its cache.\n  program:\n    command: [python3, {}]   # needs \
             triton and torch: `pip install triton torch`\nstages:\n{GPU_STAGES}",
            header(&what),
            q(&script.relative)
        );
        return Some((what, yaml));
    }
    if let Some(found) = python_jit(files.iter().chain(deep)) {
        return Some(found);
    }
    // CUDA files: the one with `main` and the others beside it, built together.
    let cuda: Vec<&Found> = files
        .iter()
        .filter(|f| f.relative.ends_with(".cu"))
        .collect();
    let main = *cuda.iter().find(|f| f.text.contains("main("))?;
    let stem = Path::new(&main.relative).file_stem().map_or_else(
        || "program".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    // The file with `main` and the kernels beside it: other files with a `main` are other
    // programs.
    let cuda: Vec<&Found> = cuda
        .into_iter()
        .filter(|f| f.relative == main.relative || !f.text.contains("main("))
        .collect();
    let sources: Vec<String> = cuda.iter().map(|f| q(&f.relative)).collect();
    let what = format!("CUDA code ({})", join(&cuda));
    let yaml = format!(
        "{}target:\n  build:\n    # -lineinfo: the tools name source lines; -Xptxas -v: \
         registers, spills, shared memory.\n    command: [nvcc, -lineinfo, \"-arch={{arch}}\", \
         -Xptxas, -v, -o, {}, {}]\n  program:\n    command: [{}]\nmatrix:\n  arch: [sm_90]    \
         # the GPU it runs on (sm_80 for an A100)\nstages:\n  build: {{}}\n{GPU_STAGES}",
        header(&what),
        q(&format!("{{build_dir}}/{stem}")),
        sources.join(", "),
        q(&format!("{{build_dir}}/{stem}")),
    );
    Some((what, yaml))
}

/// A CuPy or Numba script at any depth: of the Python files that use the framework or import a
/// module that does, the one that runs as a script (`__main__`), else a test, else the first;
/// its pipeline says how to get line information without `-G` and how the sanitizers see past
/// CuPy's memory pool.
fn python_jit<'f>(files: impl Iterator<Item = &'f Found>) -> Option<(String, String)> {
    let py: Vec<&Found> = files.filter(|f| f.relative.ends_with(".py")).collect();
    let cupy = |f: &Found| imports(&f.text, "cupy");
    let numba = |f: &Found| {
        imports(&f.text, "numba") && (f.text.contains("cuda.jit") || f.text.contains("numba.cuda"))
    };
    let (framework, uses): (&str, &dyn Fn(&Found) -> bool) = if py.iter().any(|f| cupy(f)) {
        ("CuPy", &cupy)
    } else {
        ("Numba", &numba)
    };
    // The modules that use it, by their file stem, and the files that import one of them.
    let stems: Vec<&str> = py
        .iter()
        .filter(|f| uses(f))
        .filter_map(|f| Path::new(&f.relative).file_stem()?.to_str())
        .collect();
    let reaches = |f: &Found| uses(f) || stems.iter().any(|stem| imports_word(&f.text, stem));
    let script = py.iter().filter(|f| reaches(f)).max_by_key(|f| {
        let base = f.relative.rsplit('/').next().unwrap_or("");
        (
            f.text.contains("__main__"),
            base.starts_with("test"),
            std::cmp::Reverse(f.depth),
            std::cmp::Reverse(f.relative.clone()),
        )
    })?;
    let base = script.relative.rsplit('/').next().unwrap_or("");
    let command = if base.starts_with("test") && !script.text.contains("__main__") {
        format!(
            "[python3, -m, pytest, -q, {}, \"--junitxml={{out}}\"]",
            q(&script.relative)
        )
    } else {
        format!("[python3, {}]", q(&script.relative))
    };
    let (notes, install): (&[&str], &str) = if framework == "CuPy" {
        (
            &[
                "No build: CuPy compiles each kernel with NVRTC when the script runs. The runner",
                "keeps CuPy's cache, with each kernel's source, in the build directory: the SASS",
                "stage reads it, and a line of a kernel written as a Python string is named in",
                "the .py file. Lines without -G: options=(\"-lineinfo\",) on RawKernel or",
                "RawModule (CUPY_CUDA_COMPILE_WITH_DEBUG=1 gives -G, which changes what profile",
                "and racecheck see). The sanitizers see out-of-bounds and uninitialised reads only",
                "outside CuPy's memory pool: call cupy.cuda.set_allocator(None) first.",
            ],
            "`pip install cupy-cuda13x`",
        )
    } else {
        (
            &[
                "No build: Numba compiles each @cuda.jit kernel when it is first called. Lines",
                "without -G: @cuda.jit(lineinfo=True) (NUMBA_CUDA_DEBUGINFO=1 gives -G, which",
                "changes what profile and racecheck see). The SASS stage reads a kernel's cubin",
                "only where it asks for Numba's cache: @cuda.jit(lineinfo=True, cache=True).",
                "Under numpy 2.5, numba-cuda needs `np.row_stack = np.vstack` before",
                "`import numba`.",
            ],
            "`pip install numba-cuda[cu13]`",
        )
    };
    let notes: String = notes.iter().map(|l| format!("  # {l}\n")).collect();
    let what = format!("a {framework} script ({})", script.relative);
    let yaml = format!(
        "{}target:\n{notes}  program:\n    command: {command}   # needs {framework}: {install}\n\
         stages:\n{GPU_STAGES}",
        header(&what)
    );
    Some((what, yaml))
}

/// Whether a Python file's import lines name `word` as a module (`from pkg.red import k`,
/// `import red`).
fn imports_word(text: &str, word: &str) -> bool {
    text.lines().map(str::trim_start).any(|l| {
        (l.starts_with("import ") || l.starts_with("from "))
            && l.split([' ', '.', ',']).any(|w| w == word)
    })
}

fn join(files: &[&Found]) -> String {
    let names: Vec<&str> = files.iter().map(|f| f.relative.as_str()).collect();
    names.join(", ")
}
