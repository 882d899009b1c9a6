//! What a run records of where it came from: the hash of every input file (the pipeline file,
//! its sources, the target's tree), the links among them, and the commit the tree is at.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use report::Git;

use crate::evidence::hash;
use crate::evidence::rundir::slash;
use crate::pipeline::config::Pipeline;
use crate::process::exec;
use crate::process::interrupt::Interrupt;

use super::RunError;

/// The sha256 of each input file, by its path relative to the pipeline's directory: the
/// pipeline file itself (`pipeline_name`), its sources, and every file of its target's tree.
pub(super) fn input_hashes(
    pipeline: &Pipeline,
    pipeline_name: &str,
) -> Result<BTreeMap<String, String>, RunError> {
    let mut inputs = BTreeMap::new();
    let hash_input =
        |inputs: &mut BTreeMap<String, String>, relative: &Path| -> Result<(), RunError> {
            let path = pipeline.resolve(relative);
            let sha = hash::file(&path).map_err(|source| RunError::Hash { path, source })?;
            inputs.insert(slash(relative), sha);
            Ok(())
        };
    hash_input(&mut inputs, Path::new(pipeline_name))?;
    for source in pipeline.sources() {
        hash_input(&mut inputs, source)?;
    }
    if let Some(target) = &pipeline.target {
        for file in crate::pipeline::files::source_files(&pipeline.root, &target.sources) {
            hash_input(&mut inputs, &file)?;
        }
    }
    Ok(inputs)
}

/// Each input reached through a symbolic link: the link and its target as written
/// ([`crate::execution::target::link_of`]).
pub(super) fn links(
    pipeline: &Pipeline,
    inputs: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    inputs
        .keys()
        .filter_map(|input| crate::execution::target::link_of(&pipeline.root, Path::new(input)))
        .collect()
}

/// The commit the pipeline's tree is at. A copy of the tree without `.git` (a source tree carried
/// to a GPU machine) names its commit in `EXHIBIT_COMMIT`; its dirty flag is then unknown and
/// recorded as dirty.
pub(super) fn git(root: &Path, interrupt: &Interrupt) -> Option<Git> {
    git_status(root, interrupt).or_else(|| {
        let commit = std::env::var("EXHIBIT_COMMIT").ok()?;
        let commit = commit.trim();
        (!commit.is_empty()).then(|| Git {
            commit: commit.to_string(),
            dirty: true,
        })
    })
}

/// The commit `git` says the tree at `root` is at, and whether it has uncommitted changes to
/// tracked files.
fn git_status(root: &Path, interrupt: &Interrupt) -> Option<Git> {
    let run = |args: &[&str]| {
        let mut argv: Vec<OsString> = vec!["git".into()];
        argv.extend(args.iter().map(OsString::from));
        exec::capture(&argv, root, Duration::from_secs(30), interrupt)
            .filter(|(code, _, _)| *code == 0)
            .map(|(_, out, _)| out)
    };
    let commit = run(&["rev-parse", "HEAD"])?.trim().to_string();
    let status = run(&["status", "--porcelain", "--untracked-files=no"])?;
    Some(Git {
        commit,
        dirty: !status.trim().is_empty(),
    })
}
