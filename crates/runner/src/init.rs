//! `exhibit init [DIR]`: a starting `pipeline.yaml` for the program found in a directory, with a
//! comment on every line, written only where there is none.
//!
//! What it looks for, first match wins: a CMake project (`CMakeLists.txt`) or a PyTorch
//! extension (a Python file using `torch.utils.cpp_extension` or `load_inline`) in the
//! directory and the one below; then, at any depth, a Triton, CuPy or Numba script (of the
//! Python files that use the framework or import a module that does, the driver that runs as a
//! script, else a test run by pytest), then CUDA C++ (the file with `main`, a `.cu` or a `.cpp`,
//! and the files that define what it calls, with `-I` for the folders of its headers and `-l`
//! for the CUDA libraries it includes). A program whose sources time its kernels gets
//! sanitizers bounded to its first launches, saying why. No hidden, build or run directory is
//! read, nothing is run; `cli/` then runs `check` on what it wrote.

use std::path::{Path, PathBuf};

/// The file `init` writes.
pub const FILE: &str = "pipeline.yaml";

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InitError {
    #[error("{0} exists: not overwritten (check it with `exhibit check {0}`)")]
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
    /// The `.gitignore` the run folders were added to, where they were not there already.
    pub ignored: Option<PathBuf>,
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
    let ignored = ignore_runs(dir)?;
    Ok(Written {
        path,
        found: plain(&found),
        ignored,
    })
}

/// The folders every run writes beside the pipeline, which version control should not keep.
const RUN_FOLDERS: [&str; 2] = ["artifacts/", "reports/"];

/// Adds [`RUN_FOLDERS`] to `dir/.gitignore` (made if absent) where no line names them yet;
/// the file where it changed one. A `.gitignore` that is not a regular file is left alone.
fn ignore_runs(dir: &Path) -> Result<Option<PathBuf>, InitError> {
    let path = dir.join(".gitignore");
    let io = |e| InitError::Io(path.display().to_string(), e);
    let text = match std::fs::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(_) => std::fs::read_to_string(&path).map_err(io)?,
        Err(_) => String::new(),
    };
    let listed = |folder: &str| {
        let bare = folder.trim_end_matches('/');
        text.lines()
            .map(str::trim)
            .any(|l| [bare, folder, &format!("/{bare}"), &format!("/{folder}")].contains(&l))
    };
    let missing: Vec<&str> = RUN_FOLDERS.into_iter().filter(|f| !listed(f)).collect();
    if missing.is_empty() {
        return Ok(None);
    }
    let mut added = String::new();
    if !text.is_empty() && !text.ends_with('\n') {
        added.push('\n');
    }
    added.push_str("# What each Exhibit run writes (exhibit init)\n");
    for folder in missing {
        added.push_str(&format!("/{folder}\n"));
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(io)?;
    std::io::Write::write_all(&mut file, added.as_bytes()).map_err(io)?;
    Ok(Some(path))
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

/// The directory's source files (`.cu`, `.cuh`, `.cpp`, `.cc`, `.h`, `.hpp`, `.py`, `.txt`) down to [`DEPTH`]
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
        let source = [".cu", ".cuh", ".py", ".txt", ".cpp", ".cc", ".h", ".hpp"]
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
        "# Written by `exhibit init` for {} in this directory. Every key, placeholder and\n\
         # stage option: docs/pipeline.md. Run it with `exhibit pipeline.yaml`.\n",
        plain(what)
    )
}

/// Text with every control character (a newline in a file's name, a terminal escape) shown as
/// `?`: safe in a YAML comment and on a terminal.
pub(crate) fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// How a program shows it times its kernels: each of these repeats its launches many times.
const TIMES_ITS_LAUNCHES: &[&str] = &[
    "cudaEventElapsedTime",
    "do_bench",
    "benchmark::State",
    "cupyx.profiler",
    "perf_counter",
    "timeit",
    "enable_timing",
];

/// The launches a sanitizer checks in a program that times its kernels.
const CHECKED_LAUNCHES: u32 = 8;

/// The stages for a program that runs on the GPU, with comments. A program whose sources time
/// its kernels launches them hundreds of times, and racecheck over each takes hours: its
/// sanitizers check the first launches only, and the comment says why.
fn gpu_stages(sources: &[&Found]) -> String {
    let timer = sources
        .iter()
        .find_map(|f| TIMES_ITS_LAUNCHES.iter().find(|t| f.text.contains(**t)));
    let (bound, why) = match timer {
        Some(timer) => (
            format!("{{ args: [--launch-count, \"{CHECKED_LAUNCHES}\"] }}"),
            format!(
                "  # The program times its kernels ({}): a sanitizer over every timed launch takes\n  \
                 # hours, so each checks the first {CHECKED_LAUNCHES} launches (compute-sanitizer \
                 --launch-count).\n  \
                 # initcheck does not see what later launches write: the report notes a record \
                 that may be that.\n",
                plain(timer)
            ),
        ),
        None => ("{}".to_string(), String::new()),
    };
    format!(
        "  # Each runs the program, alone or under a tool; without a GPU they are skipped, saying why.\n\
         {why}  memcheck: {bound}     # compute-sanitizer: out-of-bounds and misaligned accesses\n  \
         racecheck: {bound}    # shared-memory races\n  \
         initcheck: {bound}    # reads of uninitialised device memory\n  \
         synccheck: {bound}    # barriers not every thread reaches\n  \
         check: {{}}        # the program alone: its exit status and output\n  \
         profile: {{}}      # Nsight Compute: the first launches of each kernel\n  \
         sass: {{}}         # cuobjdump: the SASS of what the build (or a JIT cache) made\n"
    )
}

/// The pipeline for the first kind of program `files` (the first [`NEAR`] levels) and `deep`
/// (those below) hold, with a line saying what it is.
fn draft(files: &[Found], deep: &[Found]) -> Option<(String, String)> {
    let py = |f: &&Found| f.relative.ends_with(".py");
    let all: Vec<&Found> = files.iter().chain(deep).collect();
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
            "{}target:\n  build:\n    # Configured and built in this config's build directory for \
             the matrix's arch (sm_90 gives\n    # 90), with line information for the tools and \
             ptxas's resource usage (-Xptxas -v).\n    command: [sh, -c, \"cmake -S . -B \
             '{{build_dir}}' -DCMAKE_CUDA_ARCHITECTURES=$(echo {{arch}} | sed s/^sm_//) \
             '-DCMAKE_CUDA_FLAGS=-lineinfo -Xptxas=-v' -DCMAKE_BUILD_TYPE=Release && cmake \
             --build '{{build_dir}}' -j 4\"]\n  program:\n{program}matrix:\n  arch: [sm_90]            \
             # the GPU it runs on (sm_80 for an A100)\nstages:\n  build: {{ timeout: 10m }}  \
             # a stage named build is the compile kind\n{}",
            header(what),
            gpu_stages(&all)
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
        // A build script by its name; a script that calls `load` or `load_inline` builds as it
        // runs.
        let base = name.rsplit('/').next().unwrap_or(name);
        let builds = matches!(base, "setup.py" | "build.py");
        // The program: for a build script, the script that checks what it built; for a
        // module that builds as it is imported, the driver that imports it; else the script.
        let stem = base.strip_suffix(".py").unwrap_or(base);
        let runner = files
            .iter()
            .filter(py)
            .filter(|f| f.relative != name)
            .filter(|f| {
                if builds {
                    imports(&f.text, "torch")
                } else {
                    imports_word(&f.text, stem)
                }
            })
            .max_by_key(|f| {
                let base = f.relative.rsplit('/').next().unwrap_or("");
                (base.starts_with("test") || base.contains("oracle") || base.contains("check"))
                    as u8
            })
            .map(|f| f.relative.clone());
        let program = runner.unwrap_or_else(|| name.to_string());
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
            jit_extension_build(&program)
        };
        let what = format!("a PyTorch extension ({name})");
        let yaml = format!(
            "{}target:\n{build}  program:\n    # What the GPU stages run: the script that loads \
             and checks the extension.\n    command: [python3, {}]\nstages:\n  build: {{ timeout: \
             10m }}  # torch needed: `pip install torch`\n{}",
            header(&what),
            q(&program),
            gpu_stages(&all)
        );
        return Some((what, yaml));
    }
    if let Some(found) = python_jit(&all) {
        return Some(found);
    }
    let all: Vec<&Found> = files.iter().chain(deep).collect();
    cuda_program(&all)
}

/// The build of an extension that a script compiles as it runs (torch's `load` or
/// `load_inline`): the program runs with both replaced by a build that returns a stand-in,
/// and stops where the stand-in is first used, before the extension runs. The build lands in
/// this config's `TORCH_EXTENSIONS_DIR`, where the GPU stages' runs of the same script find it,
/// so no stage compiles under a sanitizer and the compiler's output is the build's log.
fn jit_extension_build(program: &str) -> String {
    format!(
        "  build:\n    # Compiles the extension the program builds as it runs (torch's load or \
         load_inline) into\n    # this config's build directory (TORCH_EXTENSIONS_DIR), and \
         stops before it runs: the GPU\n    # stages then load that build instead of compiling \
         under a sanitizer.\n    command:\n      - python3\n      - -c\n      - |\n{}      - \
         {}\n",
        JIT_BUILD
            .lines()
            .map(|l| format!("        {l}\n"))
            .collect::<String>(),
        q(program)
    )
}

/// The Python that [`jit_extension_build`] runs: the script named after it, with
/// `cpp_extension.load` and `load_inline` building (verbosely, for the log) and returning a
/// module whose first use ends the run.
const JIT_BUILD: &str = "import os, runpy, sys
import torch.utils.cpp_extension as ext
class Built(BaseException): pass
class Unused:
    def __getattr__(self, name): raise Built(name)
def building(load):
    def build(*args, **kwargs):
        load(*args, **{**kwargs, 'verbose': True})
        return Unused()
    return build
ext.load, ext.load_inline = building(ext.load), building(ext.load_inline)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
try:
    runpy.run_path(sys.argv[0], run_name='__main__')
except Built:
    print('built; stopped at the first use of the extension', file=sys.stderr)";

/// The CUDA libraries a source's `#include <...>` asks the link for.
const LIBRARIES: &[(&str, &str)] = &[
    ("cublas_v2.h", "cublas"),
    ("cublas.h", "cublas"),
    ("cublasLt.h", "cublasLt"),
    ("cufft.h", "cufft"),
    ("curand.h", "curand"),
    ("cusparse.h", "cusparse"),
    ("cusolverDn.h", "cusolver"),
    ("cuda.h", "cuda"),
];

/// CUDA C++ at any depth, built with one nvcc command: the file with `main` (a `.cu`, else a
/// `.cpp` beside CUDA files), the `.cu` and `.cpp` files that define what it calls (followed
/// from file to file; a file another includes, or one with a `main` of its own, is not built
/// apart), `-I` for each folder an included header is found in, and `-l` for each CUDA library
/// a source includes.
fn cuda_program(all: &[&Found]) -> Option<(String, String)> {
    let ends = |f: &Found, xs: &[&str]| xs.iter().any(|x| f.relative.ends_with(x));
    if !all.iter().any(|f| ends(f, &[".cu"])) {
        return None;
    }
    static MAIN: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\bmain\s*\(").expect("valid regex"));
    static INCLUDE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?m)^\s*#\s*include\s*([<"])([^>"]+)[>"]"#).expect("valid regex")
    });
    // A definition at the start of a line (not a declaration, which ends with `;`): the name
    // before its parameter list.
    static DEFINED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[A-Za-z_][^;#/(]*?\b([A-Za-z_]\w*)\s*\(").expect("valid regex")
    });
    let defines = |f: &Found, words: &std::collections::HashSet<&str>| {
        f.text
            .lines()
            .filter(|l| !l.trim_end().ends_with(';'))
            .filter_map(|l| DEFINED.captures(l))
            .any(|c| words.contains(&c[1]))
    };
    let includes = |f: &Found| -> Vec<(bool, String)> {
        INCLUDE
            .captures_iter(&f.text)
            .map(|c| (&c[1] == "<", c[2].to_string()))
            .collect()
    };
    let units: Vec<&Found> = all
        .iter()
        .copied()
        .filter(|f| ends(f, &[".cu", ".cpp", ".cc"]))
        .collect();
    // A unit another one includes is compiled there.
    let included = |u: &Found| {
        units.iter().any(|o| {
            includes(o)
                .iter()
                .any(|(_, name)| !name.is_empty() && u.relative.ends_with(name.as_str()))
        })
    };
    let units: Vec<&Found> = units.iter().copied().filter(|u| !included(u)).collect();
    let main = units
        .iter()
        .copied()
        .filter(|f| MAIN.is_match(&f.text))
        // The program nearest the top, a file named `main` first, then a `.cu`.
        .min_by_key(|f| {
            let stem = Path::new(&f.relative).file_stem().and_then(|s| s.to_str());
            (
                f.depth,
                stem != Some("main"),
                !f.relative.ends_with(".cu"),
                f.relative.clone(),
            )
        })?;
    // Follow what the built units call into the other units that define it.
    let mut built: Vec<&Found> = vec![main];
    loop {
        // The names the built units use.
        let words: std::collections::HashSet<&str> = built
            .iter()
            .flat_map(|f| f.text.split(|c: char| !(c.is_alphanumeric() || c == '_')))
            .collect();
        let more: Vec<&Found> = units
            .iter()
            .copied()
            .filter(|u| !built.iter().any(|b| b.relative == u.relative))
            .filter(|u| !MAIN.is_match(&u.text))
            .filter(|u| defines(u, &words))
            .collect();
        if more.is_empty() {
            break;
        }
        built.extend(more);
    }
    built.sort_by(|a, b| a.relative.cmp(&b.relative));
    // The headers the built units include (and those headers include), and where each is.
    let mut folders: Vec<String> = Vec::new();
    let mut libraries: Vec<&str> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut reading: Vec<&Found> = built.clone();
    while let Some(f) = reading.pop() {
        for (system, name) in includes(f) {
            if let Some((_, lib)) = LIBRARIES.iter().find(|(h, _)| *h == name)
                && !libraries.contains(lib)
            {
                libraries.push(lib);
            }
            if system {
                continue;
            }
            let beside = Path::new(&f.relative).parent().unwrap_or(Path::new(""));
            let local = beside.join(&name);
            let Some(header) = all.iter().copied().find(|h| {
                Path::new(&h.relative) == local
                    || h.relative.ends_with(&format!("/{name}"))
                    || h.relative == name
            }) else {
                continue;
            };
            if Path::new(&header.relative) != local
                && let Some(folder) = header.relative.strip_suffix(name.as_str())
            {
                let folder = folder.trim_end_matches('/');
                let folder = if folder.is_empty() { "." } else { folder };
                if !folders.iter().any(|f| f == folder) {
                    folders.push(folder.to_string());
                }
            }
            if !seen.contains(&header.relative.as_str()) {
                seen.push(&header.relative);
                reading.push(header);
            }
        }
    }
    let stem = Path::new(&main.relative).file_stem().map_or_else(
        || "program".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let output = q(&format!("{{build_dir}}/{stem}"));
    let mut words: Vec<String> = vec![
        "nvcc".into(),
        "-lineinfo".into(),
        q("-arch={arch}"),
        "-Xptxas".into(),
        "-v".into(),
    ];
    words.extend(folders.iter().map(|f| q(&format!("-I{f}"))));
    words.extend(["-o".to_string(), output.clone()]);
    words.extend(built.iter().map(|f| q(&f.relative)));
    words.extend(libraries.iter().map(|l| format!("-l{l}")));
    let what = format!("CUDA code ({})", join(&built));
    let yaml = format!(
        "{}target:\n  build:\n    # -lineinfo: the tools name source lines; -Xptxas -v: \
         registers, spills, shared memory.\n    command: [{}]\n  program:\n    command: \
         [{output}]\nmatrix:\n  arch: [sm_90]    # the GPU it runs on (sm_80 for an A100)\n\
         stages:\n  build: {{}}\n{}",
        header(&what),
        words.join(", "),
        gpu_stages(&built)
    );
    Some((what, yaml))
}

/// A Triton, CuPy or Numba script at any depth: of the Python files that use the framework or
/// import a module that does, the one that runs as a script (`__main__`), else a test, else the
/// first; its pipeline says how to get line information without `-G` and how the sanitizers
/// see past CuPy's memory pool.
fn python_jit(files: &[&Found]) -> Option<(String, String)> {
    let py: Vec<&Found> = files
        .iter()
        .copied()
        .filter(|f| f.relative.ends_with(".py"))
        .collect();
    let triton = |f: &Found| imports(&f.text, "triton");
    let cupy = |f: &Found| imports(&f.text, "cupy");
    let numba = |f: &Found| {
        imports(&f.text, "numba") && (f.text.contains("cuda.jit") || f.text.contains("numba.cuda"))
    };
    let (framework, uses): (&str, &dyn Fn(&Found) -> bool) = if py.iter().any(|f| triton(f)) {
        ("Triton", &triton)
    } else if py.iter().any(|f| cupy(f)) {
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
    // A test file runs under pytest, whose exit status is its assertions' (and whose JUnit
    // names each test), even where it also runs as a script: a script's own `print("FAIL")`
    // and exit 0 would read as a pass.
    let has_tests = script
        .text
        .lines()
        .any(|l| l.starts_with("def test_") || l.starts_with("async def test_"));
    let pytest = base.starts_with("test") && (has_tests || !script.text.contains("__main__"));
    let command = if pytest {
        format!(
            "[python3, -m, pytest, -q, {}, \"--junitxml={{out}}\"]",
            q(&script.relative)
        )
    } else {
        format!("[python3, {}]", q(&script.relative))
    };
    // A script that is its own check: only its exit status says it failed.
    let exit_note = if pytest {
        String::new()
    } else {
        "    # The script's exit status is its check: it must exit non-zero when it finds the \
         output wrong\n    # (`sys.exit(1)`, a failed `assert`); a printed FAIL with exit 0 \
         reads as a pass.\n"
            .to_string()
    };
    let (notes, install): (&[&str], &str) = if framework == "Triton" {
        (
            &[
                "No build: Triton compiles its kernels when the script runs; the SASS stage reads its cache.",
            ],
            "`pip install triton torch`",
        )
    } else if framework == "CuPy" {
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
    let what = format!("a {framework} script ({})", script.relative);
    let reached: Vec<&Found> = py.iter().copied().filter(|f| reaches(f)).collect();
    // Autotuned kernels: a run before the others keeps each kernel's tuned config in Triton's
    // cache, so that every stage launches it from the first launch.
    let autotuned = framework == "Triton"
        && reached
            .iter()
            .any(|f| f.text.contains("triton.autotune") || f.text.contains("@autotune"));
    let (notes, program_env, build_stage) = if autotuned {
        (
            format!(
                "  build:\n    # The kernels are autotuned (triton.autotune). This runs the \
                 program once on the GPU before\n    # the other stages, and Triton's cache in \
                 the build directory keeps each kernel's tuned\n    # config \
                 (TRITON_CACHE_AUTOTUNING): every later stage launches the tuned config from\n    \
                 # its first launch, so the profile measures the config the timings use and no\n    \
                 # sanitizer checks the autotuner's trials. Its exit status is not the build's: \
                 the stages\n    # after it check the program.\n    command: [sh, -c, {}]\n    \
                 env: {{ TRITON_CACHE_AUTOTUNING: \"1\", TRITON_PRINT_AUTOTUNING: \"1\" }}\n",
                q(&format!(
                    "python3 {}'{}' || true",
                    if pytest { "-m pytest -q " } else { "" },
                    script.relative.replace('\'', "'\\''")
                ))
            ),
            "    env: { TRITON_CACHE_AUTOTUNING: \"1\" }\n",
            "  build: { needs: { gpu: true, tools: [python3, torch, triton] }, timeout: 10m }  \
             # runs the program: it needs the GPU\n",
        )
    } else {
        (notes.iter().map(|l| format!("  # {l}\n")).collect(), "", "")
    };
    let yaml = format!(
        "{}target:\n{notes}  program:\n{program_env}{exit_note}    command: {command}   # needs \
         {framework}: {install}\nstages:\n{build_stage}{}",
        header(&what),
        gpu_stages(&reached)
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
