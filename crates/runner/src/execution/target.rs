//! A user's own project as the GPU stages' target: the words and environment its build and
//! program get, the files that are its inputs, and the products its build leaves.
//!
//! The built-in kernel is a target too (`config::builtin` writes it). What wraps a target's
//! program (nothing, compute-sanitizer, ncu) is decided by the stage kind.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::pipeline::config::Config;

/// The values a target's placeholders and `EXHIBIT_*` variables stand for in one unit.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    /// `{build_dir}`: the config's build directory inside the run directory, absolute.
    pub build_dir: PathBuf,
    pub arch: String,
    pub config: String,
    /// `{defines}`: one `-DNAME=VALUE` word per define of the config.
    pub defines: Vec<String>,
    /// `{source}`: the config's `source:` (a build's translation unit), absolute.
    pub source: Option<PathBuf>,
    /// `{launches}`, for a stress unit.
    pub launches: Option<u64>,
    /// `{out}`: where the program may write its results or timings, absolute.
    pub out: Option<PathBuf>,
    /// The unit's case, when its stage names cases: `{case}`, `{shape}` (`B,H,S,D`), `{dtype}`,
    /// `{causal}` (`true` or `false`).
    pub case: Option<crate::pipeline::config::CaseInstance>,
    /// `{env:NAME}`: the config's environment variables (a size a knob varies, given on the
    /// command line).
    pub env: BTreeMap<String, String>,
}

impl Vars {
    /// The case's placeholders and their values (empty without a case).
    fn case_values(&self) -> [(&'static str, String); 4] {
        let case = self.case.as_ref();
        [
            ("case", case.map(|c| c.case.clone()).unwrap_or_default()),
            (
                "shape",
                case.map(|c| {
                    let s = c.shape;
                    format!("{},{},{},{}", s.batch, s.heads, s.seq_len, s.head_dim)
                })
                .unwrap_or_default(),
            ),
            (
                "dtype",
                case.map(|c| c.dtype.to_string()).unwrap_or_default(),
            ),
            (
                "causal",
                case.map(|c| c.causal.to_string()).unwrap_or_default(),
            ),
        ]
    }
}

impl Vars {
    /// Expands the placeholders of `argv`. `{defines}` standing alone becomes one word per define;
    /// a placeholder without a value (`{launches}` outside a stress unit) expands to nothing.
    pub fn expand(&self, argv: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(argv.len());
        for word in argv {
            if word == "{defines}" {
                out.extend(self.defines.iter().cloned());
                continue;
            }
            let launches = self.launches.map(|n| n.to_string()).unwrap_or_default();
            let out_path = self
                .out
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut word = word
                .replace("{build_dir}", &self.build_dir.to_string_lossy())
                .replace("{arch}", &self.arch)
                .replace("{config}", &self.config)
                .replace("{defines}", &self.defines.join(" "))
                .replace("{launches}", &launches)
                .replace(
                    "{source}",
                    &self
                        .source
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                )
                .replace("{out}", &out_path);
            for (name, value) in self.case_values() {
                word = word.replace(&format!("{{{name}}}"), &value);
            }
            for (name, value) in &self.env {
                word = word.replace(&format!("{{env:{name}}}"), value);
            }
            out.push(word);
        }
        out
    }

    /// The `EXHIBIT_*` variables every target process gets.
    pub fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert(
            "EXHIBIT_BUILD_DIR".into(),
            self.build_dir.to_string_lossy().into_owned(),
        );
        env.insert("EXHIBIT_ARCH".into(), self.arch.clone());
        env.insert("EXHIBIT_CONFIG".into(), self.config.clone());
        if let Some(n) = self.launches {
            env.insert("EXHIBIT_LAUNCHES".into(), n.to_string());
        }
        if let Some(out) = &self.out {
            env.insert("EXHIBIT_OUT".into(), out.to_string_lossy().into_owned());
        }
        if self.case.is_some() {
            for (name, value) in self.case_values() {
                env.insert(format!("EXHIBIT_{}", name.to_uppercase()), value);
            }
        }
        // JIT compilers leave their cubins inside the build directory, where the SASS stage
        // finds them: Triton's cache and torch's extension builds.
        env.insert(
            "TRITON_CACHE_DIR".into(),
            self.build_dir
                .join("jit/triton")
                .to_string_lossy()
                .into_owned(),
        );
        env.insert(
            "TORCH_EXTENSIONS_DIR".into(),
            self.build_dir
                .join("jit/torch_extensions")
                .to_string_lossy()
                .into_owned(),
        );
        // CuPy's kernel cache, with each kernel's CUDA source saved beside its cubin
        // (`<md5>.cubin.cu`, the name its line information gives), so that a line of a kernel
        // written as a Python string is mapped back to the string.
        env.insert(
            "CUPY_CACHE_DIR".into(),
            self.build_dir
                .join("jit/cupy")
                .to_string_lossy()
                .into_owned(),
        );
        env.insert("CUPY_CACHE_SAVE_CUDA_SOURCE".into(), "1".into());
        // Numba's cache: a kernel compiled with `@cuda.jit(cache=True)` keeps its cubin there,
        // pickled (`<module>.<function>-<line>.py<ver>.<n>.nbc`).
        env.insert(
            "NUMBA_CACHE_DIR".into(),
            self.build_dir
                .join("jit/numba")
                .to_string_lossy()
                .into_owned(),
        );
        env
    }
}

/// The `-D` words of a config, then its build flags (an experiment's `-maxrregcount=64`).
pub fn define_words(config: Option<&Config>) -> Vec<String> {
    config
        .into_iter()
        .flat_map(|c| {
            c.defines
                .iter()
                .map(|(name, value)| format!("-D{name}={}", value.0))
                .chain(c.flags.iter().cloned())
        })
        .collect()
}

/// The first component of `relative` (below `root`) that is a symbolic link, with the link's
/// target as written: how an input was reached, for the manifest.
pub fn link_of(root: &Path, relative: &Path) -> Option<(String, String)> {
    let mut prefix = PathBuf::new();
    for component in relative.components() {
        prefix.push(component);
        let path = root.join(&prefix);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(&path).ok()?;
            return Some((
                crate::evidence::rundir::slash(&prefix),
                target.to_string_lossy().into_owned(),
            ));
        }
    }
    None
}

/// The sha256 of every regular file under `dir` (links not followed), by path relative to
/// `base` with forward slashes: what a unit left in its directory.
pub fn file_hashes(base: &Path, dir: &Path) -> BTreeMap<String, String> {
    WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let relative = e.path().strip_prefix(base).ok()?;
            let sha = crate::evidence::hash::file(e.path()).ok()?;
            Some((crate::evidence::rundir::slash(relative), sha))
        })
        .collect()
}

/// The kernels a target's build defined, by mangled name, as ptxas printed them in the build's
/// logs (`stdout.log`, `stderr.log` in the build unit's directory, the parent of its build
/// directory); empty when the build printed no resource usage (no `-Xptxas -v`).
pub fn built_kernels(build_dir: &Path) -> Vec<String> {
    let Some(unit_dir) = build_dir.parent() else {
        return Vec::new();
    };
    let mut names: Vec<String> = ["stdout.log", "stderr.log"]
        .iter()
        .filter_map(|log| {
            let file = std::fs::File::open(unit_dir.join(log)).ok()?;
            parsers::parse_reader(
                parsers::Format::Ptxas,
                std::io::BufReader::new(file.take(16 << 20)),
            )
            .ok()
        })
        .flat_map(|parsed| parsed.kernels)
        .map(|k| k.mangled)
        .filter(|m| !m.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// An ncu `--kernel-name` value matching exactly these mangled names.
pub fn kernel_filter(names: &[String]) -> String {
    let escaped: Vec<String> = names
        .iter()
        .map(|n| {
            n.chars()
                .flat_map(|c| {
                    let special = "\\.+*?()|[]{}^$".contains(c);
                    special
                        .then_some('\\')
                        .into_iter()
                        .chain(std::iter::once(c))
                })
                .collect()
        })
        .collect();
    format!("regex:^({})$", escaped.join("|"))
}

/// What a build product is, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProductKind {
    /// An ELF file: an executable, a shared library, an object file or a cubin.
    Elf,
    /// A fat binary (`.fatbin`).
    Fatbin,
    /// A static library.
    Archive,
    /// A CuPy kernel-cache file (`<hash>.cubin` in `CUPY_CACHE_DIR`): the cubin after a hash
    /// of it in hexadecimal, this many characters long (32 for an md5, 40 from CuPy 14).
    CupyCache(usize),
    /// A Numba cache file (`.nbc`): a pickle holding the kernel's cubin among its other state.
    NumbaCache,
}

/// The longest hash a CuPy kernel-cache file is read with, before its cubin.
const CUPY_PREFIX_MAX: usize = 64;

/// The files under `dirs` that may hold device code, in a stable order: ELF files (executables,
/// `.so`, `.o`, `.cubin`), fat binaries and static libraries.
pub fn products(dirs: &[PathBuf]) -> Vec<(PathBuf, ProductKind)> {
    let mut found = Vec::new();
    for dir in dirs {
        for entry in crate::pipeline::files::files_under(dir, false, false) {
            if let Some(kind) = product_kind(entry.path()) {
                found.push((entry.path().to_path_buf(), kind));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn product_kind(path: &Path) -> Option<ProductKind> {
    let mut head = [0u8; CUPY_PREFIX_MAX + 4];
    let mut file = std::fs::File::open(path).ok()?;
    let n = file.read(&mut head).ok()?;
    let head = head.get(..n)?;
    // A CuPy cache file: hexadecimal digits (at least an md5's 32), then the cubin.
    let hex = head.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let numba = path.extension().is_some_and(|e| e == "nbc") && head.first() == Some(&0x80);
    if hex >= 32 && head[hex..].starts_with(b"\x7fELF") {
        Some(ProductKind::CupyCache(hex))
    } else if numba {
        Some(ProductKind::NumbaCache)
    } else if head.starts_with(b"\x7fELF") {
        Some(ProductKind::Elf)
    } else if head.starts_with(&[0x50, 0xed, 0x55, 0xba]) {
        Some(ProductKind::Fatbin)
    } else if head.starts_with(b"!<arch>\n") {
        Some(ProductKind::Archive)
    } else {
        None
    }
}

/// A file name for the log of a product, unique within the unit: its path below the walked
/// directory with separators replaced, e.g. `jit__triton__ab12__add_kernel.cubin.sass`.
pub fn product_log_name(product: &Path, base: &Path) -> String {
    let relative = product.strip_prefix(base).unwrap_or(product);
    let name: String = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("__")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{name}.sass")
}

/// A one-line description of how a program failed, from its output: the first line naming a
/// CUDA error, else the line that explains the failure ([`parsers::program::telling_line`]: an
/// exception's last line, the program's own failing comparison, a line saying it failed), else
/// the last line of stderr, then of stdout that is not a banner.
pub fn failure_line(stderr: &str, stdout: &str) -> Option<String> {
    const MARKERS: &[&str] = &[
        "CUDA error",
        "CUDA_ERROR_",
        "cudaError",
        "illegal memory access",
        "unspecified launch failure",
        "illegal instruction",
        "misaligned address",
    ];
    // PyTorch appends a paragraph of advice to its CUDA errors: keep the error.
    let clip = |line: &str| {
        let line = line.trim();
        let line = line.split(" Search for `").next().unwrap_or(line);
        line.chars().take(300).collect::<String>()
    };
    // A literal `\n` is a line break the program meant: a C `printf("...\\n")` prints one, and
    // a message printed through a repr (Python's exceptions in a list, a JSON string) holds its
    // line breaks that way. Each piece is a line of its own.
    fn split(text: &str) -> Vec<&str> {
        text.lines().flat_map(|line| line.split("\\n")).collect()
    }
    let (stderr, stdout) = (split(stderr), split(stdout));
    // The program's own words: not a wrapping tool's lines (compute-sanitizer's `=========`,
    // ncu's `==PROF==` and CSV rows).
    let own = |line: &&str| {
        let t = line.trim();
        !t.is_empty()
            && !t.starts_with("==")
            && !t.starts_with('"')
            && !parsers::program::is_banner(t)
    };
    stderr
        .iter()
        .chain(&stdout)
        .copied()
        .filter(own)
        .find(|line| MARKERS.iter().any(|m| line.contains(m)))
        .map(clip)
        .or_else(|| parsers::program::telling_line(stderr.iter().copied()).map(clip))
        .or_else(|| parsers::program::telling_line(stdout.iter().copied()).map(clip))
        .or_else(|| stderr.iter().copied().rev().find(own).map(clip))
        .or_else(|| stdout.iter().copied().rev().find(own).map(clip))
}

/// The line of a program's output that says it never got to run what it was to test: the
/// command or a file it names was not found or may not be executed (a shell's 126 and 127), a
/// shared library did not load, its Python module, or one it imports, is not there or does not
/// import, or pytest stopped before running a test (collection errors, usage errors, no tests).
/// `None` when nothing says so: the program ran, and its failure is evidence.
pub fn could_not_start(output: &str, code: i32) -> Option<String> {
    // Lines only a start-up failure prints.
    const ALWAYS: &[&str] = &[
        "No module named",
        "ModuleNotFoundError",
        "ImportError",
        "can't open file",
        "cannot open shared object file",
        "error while loading shared libraries",
        "ERROR collecting",
    ];
    // Lines a program that ran may print too (it failed to open a file of its own): they count
    // only with an exit status that is the shell's, Python's or pytest's "did not start".
    const WITH_STATUS: &[&str] = &[
        ": command not found",
        ": not found",
        "Permission denied",
        "No such file or directory",
        "no tests ran",
        "error: unrecognized arguments",
        "usage error",
    ];
    let start_status = matches!(code, 2..=5 | 126 | 127);
    output
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.starts_with("==") && !t.starts_with('"'))
        .find(|line| {
            ALWAYS.iter().any(|m| line.contains(m))
                || (start_status && WITH_STATUS.iter().any(|m| line.contains(m)))
        })
        .map(|line| line.chars().take(300).collect())
}

/// The counts a launch search tries next, `width` at most at once: the limit first (a program
/// clean there needs no other run); failing there, one launch (most faults show at the first)
/// and, beside it, counts spread over the rest of the range; then counts spread between the
/// largest clean and the smallest failing count (bisection, with one). Empty when done. It
/// assumes a failure once seen persists at higher counts.
pub fn next_launch_counts(
    clean: Option<u64>,
    failing: Option<u64>,
    limit: u64,
    width: usize,
) -> Vec<u64> {
    let width = width.max(1) as u64;
    match (clean, failing) {
        (None, None) => vec![limit.max(1)],
        (Some(_), None) => Vec::new(),
        (None, Some(1)) => Vec::new(),
        (None, Some(fail)) => {
            let mut counts = vec![1];
            counts.extend(spread(1, fail, width - 1));
            counts
        }
        (Some(clean), Some(fail)) => spread(clean, fail, width),
    }
}

/// Up to `n` counts strictly between `low` and `high`, evenly spread (one: the middle).
fn spread(low: u64, high: u64, n: u64) -> Vec<u64> {
    let gap = high.saturating_sub(low);
    if gap <= 1 || n == 0 {
        return Vec::new();
    }
    let n = n.min(gap - 1);
    let mut counts: Vec<u64> = (1..=n).map(|i| low + gap * i / (n + 1)).collect();
    counts.retain(|&c| c > low && c < high);
    counts.dedup();
    counts
}

#[cfg(test)]
mod tests {
    use super::{failure_line, next_launch_counts};

    #[test]
    fn a_literal_backslash_n_breaks_the_line_the_program_failed_on() {
        // flash-attention-minimal's check (corpus `fa-minimal-tail`, H100): its C++ prints
        // `...%d \\n` with a literal backslash-n, so Python's next print shares the line.
        let stdout = "Max shared memory: 49152, requested shared memory: 28672 \\nseq_len 20: \
                      max abs diff 2.000167 (atol 0.01)\nattn values sanity check: False\n";
        assert_eq!(
            failure_line("", stdout).as_deref(),
            Some("seq_len 20: max abs diff 2.000167 (atol 0.01)")
        );
        // A repr's literal line breaks: the error is the first piece.
        let stderr = "RuntimeError: CUDA error: an illegal memory access was encountered\\nCUDA \
                      kernel errors might be asynchronously reported";
        assert_eq!(
            failure_line(stderr, "").as_deref(),
            Some("RuntimeError: CUDA error: an illegal memory access was encountered")
        );
    }

    /// Runs the search against a program that fails from `first_fail` launches on: the largest
    /// clean and the smallest failing count it ends with, and the rounds it took.
    fn search(limit: u64, first_fail: u64, width: usize) -> (Option<u64>, Option<u64>, usize) {
        let (mut clean, mut fail) = (None, None);
        let mut tried: Vec<(u64, bool)> = Vec::new();
        let mut rounds = 0;
        loop {
            let counts = next_launch_counts(clean, fail, limit, width);
            if counts.is_empty() {
                return (clean, fail, rounds);
            }
            rounds += 1;
            tried.extend(counts.iter().map(|&n| (n, n < first_fail)));
            fail = tried.iter().filter(|t| !t.1).map(|t| t.0).min();
            clean = tried
                .iter()
                .filter(|t| t.1 && fail.is_none_or(|f| t.0 < f))
                .map(|t| t.0)
                .max();
        }
    }

    #[test]
    fn one_at_a_time_is_the_limit_then_one_then_bisection() {
        assert_eq!(next_launch_counts(None, None, 64, 1), vec![64]);
        assert_eq!(next_launch_counts(None, Some(64), 64, 1), vec![1]);
        assert_eq!(next_launch_counts(Some(1), Some(64), 64, 1), vec![32]);
        assert!(next_launch_counts(Some(8), Some(9), 64, 1).is_empty());
        assert!(next_launch_counts(Some(64), None, 64, 1).is_empty());
        assert!(next_launch_counts(None, Some(1), 64, 1).is_empty());
    }

    #[test]
    fn several_at_once_spread_over_the_range() {
        assert_eq!(
            next_launch_counts(None, Some(64), 64, 4),
            vec![1, 16, 32, 48]
        );
        assert_eq!(
            next_launch_counts(Some(1), Some(16), 64, 4),
            vec![4, 7, 10, 13]
        );
        assert_eq!(next_launch_counts(Some(5), Some(9), 64, 4), vec![6, 7, 8]);
    }

    #[test]
    fn every_width_finds_the_first_failing_count_and_more_width_takes_fewer_rounds() {
        for first_fail in 1..=65 {
            let mut last = usize::MAX;
            for width in [1, 2, 4, 8] {
                let (clean, fail, rounds) = search(64, first_fail, width);
                if first_fail > 64 {
                    assert_eq!((clean, fail, rounds), (Some(64), None, 1));
                    continue;
                }
                assert_eq!(fail, Some(first_fail), "width {width}");
                assert_eq!(
                    clean,
                    (first_fail > 1).then(|| first_fail - 1),
                    "width {width}"
                );
                assert!(
                    rounds <= last,
                    "{first_fail} width {width}: {rounds} > {last}"
                );
                last = rounds;
            }
            // One at a time: the limit, one, then bisection (at most 2 + 6 rounds for 64).
            assert!(search(64, first_fail, 1).2 <= 8);
            assert!(search(64, first_fail, 4).2 <= 5, "{first_fail}");
        }
    }
}
