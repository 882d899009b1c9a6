//! The files a pipeline's target is built from: every file under its `sources`, and the C,
//! C++ and CUDA files beside a translation unit. The walks take the pipeline's root as a path,
//! not the `Pipeline`: reading the file (`config`) walks with them.

use std::path::{Path, PathBuf};

use walkdir::WalkDir;

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

/// Every file under a target's `sources` (relative to the pipeline's `root`; none: the whole of
/// `root`), relative to `root`, sorted: the build's inputs, hashed for the cache. Files reached
/// through a symbolic link are included ([`link_of`] names the link).
pub fn source_files(root: &Path, sources: &[PathBuf]) -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = if sources.is_empty() {
        vec![PathBuf::new()]
    } else {
        sources.to_vec()
    };
    let mut files = Vec::new();
    for dir in dirs {
        for entry in files_under(&root.join(&dir), true, true) {
            if let Ok(relative) = entry.path().strip_prefix(root) {
                files.push(relative.to_path_buf());
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The C, C++ and CUDA sources and headers under `dir` (relative to the pipeline's `root`),
/// relative to `root`, sorted: what a translation unit there may include. The built-in kernel's
/// compile hashes these, so a header nobody listed in `kernel.includes` still invalidates the
/// cache.
pub fn headers_near(root: &Path, dir: &Path) -> Vec<PathBuf> {
    const EXTENSIONS: &[&str] = &[
        "cu", "cuh", "h", "hpp", "hh", "c", "cc", "cpp", "cxx", "inc", "inl",
    ];
    let mut files: Vec<PathBuf> = files_under(&root.join(dir), true, true)
        .filter(|e| {
            e.path()
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| EXTENSIONS.contains(&x))
        })
        .filter_map(|e| e.path().strip_prefix(root).ok().map(Path::to_path_buf))
        .collect();
    files.sort();
    files
}
