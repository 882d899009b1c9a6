//! Sources a build wrote from the user's own text, mapped back to it. torch's `load_inline`
//! writes its `cuda_sources` and `cpp_sources` strings to `cuda.cu` and `main.cpp` in the
//! extension's build directory (inside the run directory, `TORCH_EXTENSIONS_DIR`); tools then
//! name `cuda.cu:9`, a file the user never wrote. The lines of each such file are looked up in
//! the run's Python inputs: the string sits there as one block, so the offset most lines agree
//! on maps the file's lines to the user's. CuPy does the same with a `RawKernel`'s or
//! `RawModule`'s code string: with `CUPY_CACHE_SAVE_CUDA_SOURCE` (the runner sets it) its
//! cache holds the source beside each cubin as `<md5>.cubin.cu`, the name the kernel's line
//! information gives. A kernel source CuPy reads from the program's own `.cu` files (a
//! `RawModule` built from them, one file or several concatenated) is mapped to each file whose
//! lines it holds, most of them in one block.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use report::{Run, SourceMap};

/// The names `load_inline` gives the files it writes.
const GENERATED: &[&str] = &["cuda.cu", "main.cpp"];

/// The most bytes of one file read here.
const MAX_BYTES: u64 = 4 << 20;

/// The maps of every generated file in the run's build directories whose text the run's
/// Python or CUDA inputs hold. Nothing is mapped where the inputs cannot be found (a run
/// directory moved without its sources).
pub fn maps(run: &Run, run_dir: &Path) -> Vec<SourceMap> {
    // Only inputs a manifest names inside the project: a received manifest's absolute or `..`
    // path is never opened.
    let inputs: Vec<&String> = run
        .inputs
        .keys()
        .filter(|k| {
            (k.ends_with(".py") || k.ends_with(".cu") || k.ends_with(".cuh")) && plain_relative(k)
        })
        .collect();
    if inputs.is_empty() {
        return Vec::new();
    }
    let Some(root) = root_of(run_dir, &inputs) else {
        return Vec::new();
    };
    let read = |keep: fn(&str) -> bool| -> Vec<(String, Vec<String>)> {
        inputs
            .iter()
            .filter(|p| keep(p))
            .filter_map(|p| Some(((*p).clone(), lines(&root.join(p))?)))
            .collect()
    };
    let sources = read(|p| p.ends_with(".py"));
    let cuda = read(|p| !p.ends_with(".py"));
    let mut out = Vec::new();
    for (config, file) in generated_files(run_dir) {
        let Some(generated) = lines(&file) else {
            continue;
        };
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut found: Vec<(String, u32, u32, i64)> =
            best_match(&generated, &sources).into_iter().collect();
        // A CUDA file is a block of its own: mapped where most of its lines are there.
        for file in &cuda {
            if let Some((votes, first, last, offset)) = offset_of(&generated, &file.1) {
                let distinctive = file.1.iter().filter(|l| l.len() >= 8).count();
                if 2 * votes >= distinctive {
                    found.push((file.0.clone(), first, last, offset));
                }
            }
        }
        for (source, first, last, offset) in found {
            out.push(SourceMap {
                config: config.clone(),
                generated: name.clone(),
                source,
                first,
                last,
                offset,
            });
        }
    }
    out
}

/// Whether a path is relative and made of plain names only (no `..`, no root).
fn plain_relative(path: &str) -> bool {
    Path::new(path).components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    })
}

/// The directory the run's inputs are relative to: the nearest ancestor of the run directory
/// that holds every Python input.
fn root_of(run_dir: &Path, inputs: &[&String]) -> Option<PathBuf> {
    run_dir
        .ancestors()
        .skip(1)
        .find(|dir| inputs.iter().all(|p| dir.join(p).is_file()))
        .map(Path::to_path_buf)
}

/// `build/<config>/<arch>/jit/torch_extensions/<name>/{cuda.cu,main.cpp}` and
/// `build/<config>/<arch>/jit/cupy/<md5>.cubin.cu` under the run directory, with the config.
fn generated_files(run_dir: &Path) -> Vec<(Option<String>, PathBuf)> {
    let build = run_dir.join("build");
    walkdir::WalkDir::new(&build)
        .max_depth(6)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            let under = |dir: &str| e.path().components().any(|c| c.as_os_str() == dir);
            let name = e.file_name().to_string_lossy();
            (GENERATED.iter().any(|g| name == *g) && under("torch_extensions"))
                || (name.ends_with(".cubin.cu") && under("cupy"))
        })
        .map(|e| {
            let config = e
                .path()
                .strip_prefix(&build)
                .ok()
                .and_then(|p| p.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            (config, e.into_path())
        })
        .collect()
}

/// A regular file's lines, when it is one and not too large.
fn lines(path: &Path) -> Option<Vec<String>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|l| l.trim().to_string())
            .collect(),
    )
}

/// The source, the generated lines it covers and the offset that most of the generated file's
/// distinctive lines agree on (at least three of them).
fn best_match(
    generated: &[String],
    sources: &[(String, Vec<String>)],
) -> Option<(String, u32, u32, i64)> {
    sources
        .iter()
        .filter_map(|(name, text)| Some((name, offset_of(generated, text)?)))
        // The first of equals.
        .rev()
        .max_by_key(|(_, (votes, ..))| *votes)
        .map(|(name, (_, first, last, offset))| (name.clone(), first, last, offset))
}

/// Where `text`'s lines sit in the generated file: the offset most of their distinctive lines
/// (eight characters or more) agree on, with how many agree (at least three) and the first and
/// last generated lines (1-based) among them.
fn offset_of(generated: &[String], text: &[String]) -> Option<(usize, u32, u32, i64)> {
    let mut at: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, line) in text.iter().enumerate() {
        if line.len() >= 8 {
            at.entry(line.as_str()).or_default().push(i);
        }
    }
    // Offset -> the generated lines (0-based) that agree on it.
    let mut votes: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (g, line) in generated.iter().enumerate() {
        for &s in at.get(line.as_str()).into_iter().flatten() {
            let offset = i64::try_from(s).unwrap_or(0) - i64::try_from(g).unwrap_or(0);
            votes.entry(offset).or_default().push(g);
        }
    }
    let (offset, lines) = votes.into_iter().max_by_key(|(_, v)| v.len())?;
    if lines.len() < 3 {
        return None;
    }
    let first = lines.iter().min().copied().unwrap_or(0);
    let last = lines.iter().max().copied().unwrap_or(0);
    Some((
        lines.len(),
        u32::try_from(first + 1).unwrap_or(0),
        u32::try_from(last + 1).unwrap_or(0),
        offset,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_plain_relative_inputs_are_opened() {
        assert!(super::plain_relative("py/oracle.py"));
        assert!(super::plain_relative("./oracle.py"));
        assert!(!super::plain_relative("../../home/u/.ssh/id.py"));
        assert!(!super::plain_relative("/etc/secret.py"));
    }
}
