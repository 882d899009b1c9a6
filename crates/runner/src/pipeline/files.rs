//! The files a pipeline's target is built from: every file under its `sources`, and the C,
//! C++ and CUDA files beside a translation unit.

use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::pipeline::config::{Pipeline, Target};

/// Directory names never walked as sources or products: version control, caches, the runner's
/// own output.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "artifacts",
    "reports",
    "target",
    "__pycache__",
    ".pytest_cache",
    "node_modules",
];

/// Every file under `root` in name order, passing over the directories in [`SKIPPED_DIRS`] (and,
/// with `hidden`, those whose name starts with a dot). With `follow`, symbolic links are followed
/// (a link to a file is that file; loops are passed over); without, they are left out.
pub(crate) fn files_under(
    root: &Path,
    hidden: bool,
    follow: bool,
) -> impl Iterator<Item = walkdir::DirEntry> {
    WalkDir::new(root)
        .follow_links(follow)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(move |e| {
            e.depth() == 0
                || !(e.file_type().is_dir()
                    && e.file_name().to_str().is_some_and(|n| {
                        SKIPPED_DIRS.contains(&n) || (hidden && n.starts_with('.'))
                    }))
        })
        .flatten()
        .filter(|e| e.file_type().is_file())
}

/// Every file under the target's `sources` (default: the pipeline's directory), relative to
/// the pipeline root, sorted: the build's inputs, hashed for the cache. Files reached through a
/// symbolic link are included ([`link_of`] names the link).
pub fn source_files(pipeline: &Pipeline, target: &Target) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = if target.sources.is_empty() {
        vec![PathBuf::new()]
    } else {
        target.sources.clone()
    };
    let mut files = Vec::new();
    for root in roots {
        for entry in files_under(&pipeline.resolve(&root), true, true) {
            if let Ok(relative) = entry.path().strip_prefix(&pipeline.root) {
                files.push(relative.to_path_buf());
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The C, C++ and CUDA sources and headers under `dir` (relative to the pipeline root), sorted:
/// what a translation unit there may include. The built-in kernel's compile hashes these, so a
/// header nobody listed in `kernel.includes` still invalidates the cache.
pub fn headers_near(pipeline: &Pipeline, dir: &Path) -> Vec<PathBuf> {
    const EXTENSIONS: &[&str] = &[
        "cu", "cuh", "h", "hpp", "hh", "c", "cc", "cpp", "cxx", "inc", "inl",
    ];
    let mut files: Vec<PathBuf> = files_under(&pipeline.resolve(dir), true, true)
        .filter(|e| {
            e.path()
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| EXTENSIONS.contains(&x))
        })
        .filter_map(|e| {
            e.path()
                .strip_prefix(&pipeline.root)
                .ok()
                .map(Path::to_path_buf)
        })
        .collect();
    files.sort();
    files
}
