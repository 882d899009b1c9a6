//! The git a bisection needs: revisions resolved, the commits between them, what each changed,
//! a signature of the pipeline's inputs at each, and one worktree of its own that is checked
//! out at each step. The user's working tree, index and branches are never touched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use report::bisect::Commit;

use super::BisectError;
use crate::process::exec;
use crate::process::interrupt::Interrupt;

/// A repository, from any directory in its working tree.
pub struct Git<'a> {
    /// Its working tree's top directory.
    pub top: PathBuf,
    /// Its `.git` directory (shared by every worktree): where the bisection's lock lives.
    pub common: PathBuf,
    interrupt: &'a Interrupt,
}

const QUICK: Duration = Duration::from_secs(120);
/// A worktree of a large repository takes a while to check out.
const CHECKOUT: Duration = Duration::from_secs(900);

impl<'a> Git<'a> {
    pub fn open(dir: &Path, interrupt: &'a Interrupt) -> Result<Git<'a>, BisectError> {
        let out = git(
            dir,
            &["rev-parse", "--show-toplevel", "--git-common-dir"],
            QUICK,
            interrupt,
        )
        .map_err(|e| match e {
            BisectError::Git(why) => BisectError::Usage(format!(
                "{}: not in a git repository ({why})",
                dir.display()
            )),
            e => e,
        })?;
        let mut lines = out.lines();
        let (Some(top), Some(common)) = (lines.next(), lines.next()) else {
            return Err(BisectError::Git(format!(
                "git rev-parse in {}: expected the top directory and the git directory, got `{}`",
                dir.display(),
                out.trim()
            )));
        };
        let top = PathBuf::from(top);
        let common = dir.join(common);
        Ok(Git {
            top,
            common,
            interrupt,
        })
    }

    /// A quick query: not cut short by an interrupt, which still needs its answers (the
    /// commits an interrupted bisection names).
    fn run(&self, args: &[&str]) -> Result<String, BisectError> {
        git(&self.top, args, QUICK, &Interrupt::new())
    }

    /// The full hash of a revision that names a commit.
    pub fn resolve(&self, revision: &str) -> Result<String, BisectError> {
        let spec = format!("{revision}^{{commit}}");
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ])
        .map(|out| out.trim().to_string())
        .map_err(|_| {
            BisectError::Usage(format!(
                "`{revision}` does not name a commit in {}",
                self.top.display()
            ))
        })
    }

    /// A file's content at a commit, if it is there.
    pub fn blob(&self, commit: &str, path: &Path) -> Option<Vec<u8>> {
        let spec = format!("{commit}:{}", crate::evidence::rundir::slash(path));
        self.run(&["cat-file", "blob", &spec])
            .ok()
            .map(String::into_bytes)
    }

    /// Whether the user's working tree has uncommitted changes to tracked files.
    pub fn dirty(&self) -> bool {
        self.run(&["status", "--porcelain", "--untracked-files=no"])
            .is_ok_and(|out| !out.trim().is_empty())
    }

    pub fn is_ancestor(&self, ancestor: &str, of: &str) -> Result<bool, BisectError> {
        let argv = argv(&["merge-base", "--is-ancestor", ancestor, of]);
        match exec::probe(&argv, &self.top, QUICK, &Interrupt::new()) {
            Ok((0, _, _)) => Ok(true),
            Ok((1, _, _)) => Ok(false),
            Ok((code, _, err)) => Err(BisectError::Git(format!(
                "git merge-base --is-ancestor exited with {code}: {}",
                err.trim()
            ))),
            Err(why) if self.interrupt.is_set() => Err(BisectError::Interrupted(why)),
            Err(why) => Err(BisectError::Git(format!("git merge-base: {why}"))),
        }
    }

    /// The commits after `good` up to `bad`, oldest first, and whether they are a first-parent
    /// walk past merges.
    /// Along BAD's first-parent history (as `git bisect --first-parent` walks it): the states
    /// of one line of development, ordered, so that a fault once in stays in; a fault a merge
    /// brought in is found at that merge. Where `good` is not on that line, every commit that
    /// descends from `good` and leads to `bad`, in topological order.
    pub fn between(&self, good: &str, bad: &str) -> Result<(Vec<String>, bool), BisectError> {
        let range = format!("{good}..{bad}");
        let list = |args: &[&str]| -> Result<Vec<String>, BisectError> {
            let mut argv = vec!["rev-list", "--reverse"];
            argv.extend_from_slice(args);
            argv.extend(["--ancestry-path", range.as_str()]);
            Ok(self.run(&argv)?.lines().map(str::to_string).collect())
        };
        let merges = !self
            .run(&["rev-list", "--merges", &range])?
            .trim()
            .is_empty();
        let first_parent = list(&["--first-parent"])?;
        if first_parent.last().is_some_and(|last| self.same(last, bad)) {
            return Ok((first_parent, merges));
        }
        Ok((list(&["--topo-order"])?, false))
    }

    /// Whether two revisions name one commit.
    fn same(&self, a: &str, b: &str) -> bool {
        let resolve = |r: &str| self.run(&["rev-parse", "--verify", &format!("{r}^{{commit}}")]);
        match (resolve(a), resolve(b)) {
            (Ok(x), Ok(y)) => x.trim() == y.trim(),
            _ => false,
        }
    }

    /// A commit's hash, short hash, subject, author date and the files it changed.
    pub fn commit(&self, hash: &str) -> Result<Commit, BisectError> {
        let out = self.run(&["show", "-s", "--format=%H%n%h%n%aI%n%s", hash])?;
        let mut lines = out.lines();
        let mut field = || lines.next().unwrap_or_default().to_string();
        let (full, short, date, subject) = (field(), field(), field(), field());
        let files = self.run(&[
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "-r",
            "--root",
            "-m",
            "--first-parent",
            hash,
        ])?;
        let mut files: Vec<String> = files.lines().map(str::to_string).collect();
        files.dedup();
        Ok(Commit {
            hash: full,
            short,
            subject,
            date,
            files,
        })
    }

    /// What the pipeline's inputs are at a commit: every file under `specs` (paths relative
    /// to the top directory), with its mode and blob, hashed. Two commits with one signature
    /// give a pipeline the same inputs.
    pub fn signature(&self, commit: &str, specs: &[String]) -> Result<String, BisectError> {
        if specs.is_empty() {
            return Ok(commit.to_string());
        }
        let mut args = vec!["ls-tree", "-r", "--full-tree", commit, "--"];
        args.extend(specs.iter().map(String::as_str));
        let listing = self.run(&args)?;
        Ok(crate::evidence::hash::bytes(listing.as_bytes()))
    }

    /// Adds a detached worktree at `dir`, checked out at `commit`.
    pub fn add_worktree(&self, dir: &Path, commit: &str) -> Result<(), BisectError> {
        let dir = dir.to_string_lossy();
        git(
            &self.top,
            &["worktree", "add", "--detach", "--force", &dir, commit],
            CHECKOUT,
            self.interrupt,
        )
        .map(drop)
    }

    /// Checks the worktree out at `commit`, removing what the last step left that git does not
    /// track (the run directories under `keep` excepted: the cache serves the next step from
    /// them).
    pub fn checkout(&self, tree: &Path, commit: &str, keep: &[&str]) -> Result<(), BisectError> {
        git(
            tree,
            &["checkout", "--quiet", "--detach", "--force", commit],
            CHECKOUT,
            self.interrupt,
        )?;
        let mut args = vec!["clean", "-ffdxq"];
        for k in keep {
            args.extend(["-e", k]);
        }
        git(tree, &args, CHECKOUT, self.interrupt).map(drop)
    }

    /// Fills the worktree's submodules at `commit` from the repository's own copies of them
    /// (`.git/modules/<name>`, as `git submodule update` left them), read-only: each gitlink's
    /// commit is extracted with `git archive`, nothing of the user's submodules changes and
    /// nothing is fetched. Returns the submodules it could not fill (not initialised in the
    /// repository, or their commit not there), with why.
    pub fn fill_submodules(&self, tree: &Path, commit: &str) -> Result<Vec<String>, BisectError> {
        // Without `.gitmodules` there is nothing to fill: no listing of the whole tree.
        let Some(modules) = self.blob(commit, Path::new(".gitmodules")) else {
            return Ok(Vec::new());
        };
        let modules = String::from_utf8_lossy(&modules).into_owned();
        let listing = self.run(&["ls-tree", "-r", "--full-tree", commit])?;
        let links: Vec<(String, String)> = listing
            .lines()
            .filter_map(|line| {
                let (meta, path) = line.split_once('\t')?;
                let mut words = meta.split_whitespace();
                let (mode, _, sha) = (words.next()?, words.next()?, words.next()?);
                (mode == "160000").then(|| (path.to_string(), sha.to_string()))
            })
            .collect();
        if links.is_empty() {
            return Ok(Vec::new());
        }
        // Each submodule's name by its path, from the commit's `.gitmodules`.
        let name_of = |path: &str| -> String {
            let mut name = None;
            for line in modules.lines().map(str::trim) {
                if let Some(section) = line
                    .strip_prefix("[submodule \"")
                    .and_then(|l| l.strip_suffix("\"]"))
                {
                    name = Some(section.to_string());
                } else if let Some(value) = line.strip_prefix("path") {
                    let value = value.trim_start().trim_start_matches('=').trim();
                    if value == path {
                        return name.clone().unwrap_or_else(|| path.to_string());
                    }
                }
            }
            path.to_string()
        };
        let mut missing = Vec::new();
        for (path, sha) in links {
            // A name is a path below `modules/` (git refuses others: CVE-2018-11235); a
            // committed `.gitmodules` naming `../../evil.git` would have git run that
            // directory's configuration.
            let name = name_of(&path);
            if !plain_module_name(&name) {
                missing.push(format!(
                    "{path} (its submodule name {name:?} leaves .git/modules)"
                ));
                continue;
            }
            let module = self.common.join("modules").join(&name);
            if !module.is_dir() {
                missing.push(format!("{path} (not initialised in the repository)"));
                continue;
            }
            // What an earlier step extracted goes: a file the new commit lacks must not stay.
            let into = tree.join(&path);
            let _ = std::fs::remove_dir_all(&into);
            let _ = std::fs::create_dir_all(&into);
            let archive = tempfile::NamedTempFile::new()
                .map_err(|e| BisectError::Io(format!("a temporary file: {e}")))?;
            let git_dir = format!("--git-dir={}", module.display());
            let mut command = exec::Command::new(
                argv(&[&git_dir, "archive", "--format=tar", &sha]),
                &self.top,
                CHECKOUT,
            );
            command.stdout = Some(archive.path().to_path_buf());
            command.stderr = Some(archive.path().with_extension("err"));
            let archived = exec::run(&command, self.interrupt);
            let _ = std::fs::remove_file(archive.path().with_extension("err"));
            if !matches!(archived, Ok(ref o) if o.ending == exec::Ending::Exited(0)) {
                missing.push(format!(
                    "{path} (its commit {sha} is not in {})",
                    module.display()
                ));
                continue;
            }
            let tar: Vec<OsString> = vec![
                "tar".into(),
                "-xf".into(),
                archive.path().into(),
                "-C".into(),
                into.into(),
            ];
            if !matches!(
                exec::probe(&tar, &self.top, CHECKOUT, self.interrupt),
                Ok((0, _, _))
            ) {
                missing.push(format!("{path} (its files did not extract)"));
            }
        }
        Ok(missing)
    }

    /// Removes the worktree and git's record of it; best effort, and never interrupted (it is
    /// what an interrupt runs).
    pub fn remove_worktree(&self, dir: &Path) {
        let quiet = Interrupt::new();
        let shown = dir.to_string_lossy();
        if git(
            &self.top,
            &["worktree", "remove", "--force", "--force", &shown],
            QUICK,
            &quiet,
        )
        .is_err()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = git(&self.top, &["worktree", "prune"], QUICK, &quiet);
    }
}

fn argv(args: &[&str]) -> Vec<OsString> {
    std::iter::once("git")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect()
}

/// Runs git in `cwd`: its stdout, or what went wrong.
fn git(
    cwd: &Path,
    args: &[&str],
    timeout: Duration,
    interrupt: &Interrupt,
) -> Result<String, BisectError> {
    match exec::probe(&argv(args), cwd, timeout, interrupt) {
        Ok((0, out, _)) => Ok(out),
        Ok((code, _, err)) => Err(BisectError::Git(format!(
            "git {} exited with {code}: {}",
            args.first().copied().unwrap_or_default(),
            err.trim()
        ))),
        Err(why) if interrupt.is_set() => Err(BisectError::Interrupted(why)),
        Err(why) => Err(BisectError::Git(format!(
            "git {}: {why}",
            args.first().copied().unwrap_or_default()
        ))),
    }
}

/// Whether a submodule's name is a relative path of plain components, as git requires of the
/// names under `.git/modules`: no `..`, no root, no backslash, not empty.
fn plain_module_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('\\')
        && std::path::Path::new(name)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_submodule_name_never_leaves_the_modules_directory() {
        assert!(super::plain_module_name("lib/cutlass"));
        assert!(super::plain_module_name("third_party"));
        assert!(!super::plain_module_name("../../evil.git"));
        assert!(!super::plain_module_name("a/../../b"));
        assert!(!super::plain_module_name("/etc"));
        assert!(!super::plain_module_name("a\\..\\b"));
        assert!(!super::plain_module_name(""));
        assert!(!super::plain_module_name("./a"));
    }
}
