//! `exhibit bisect GOOD BAD [PIPELINE]`: the first commit at which the evidence changes as it did
//! between GOOD and BAD.
//!
//! One worktree of the bisection's own, in a temporary directory, is checked out at each commit
//! in turn and the pipeline run there ([`Launch`]: here, on a `--host` or under `--slurm`, as a
//! pipeline run would). BAD runs first, whole; what makes a commit bad comes from its evidence
//! ([`report::bisect`]): a root cause BAD has (GOOD's run tells which one when BAD has several),
//! or with `--slower BENCH` a timing slower than GOOD's. Each step then runs only the stages that
//! decide it, on the config where it was found, and the cache in the worktree's `artifacts/`
//! serves every unit whose inputs did not change. Commits that leave the pipeline's inputs
//! unchanged are never run ([`search`]). GOOD is the search's first commit, run when the search
//! narrows to it.
//!
//! What it keeps: `artifacts/bisect-<id>/` beside the pipeline, with every run directory
//! (`runs/<run-id>`) and the answer as `bisect.md` and `bisect.json`. The worktree goes when the
//! bisection ends, interrupted or not; a second bisection of the same repository is refused
//! while one runs ([`lock`]).

mod git;
mod lock;
pub mod search;

use std::path::{Path, PathBuf};
use std::time::Instant;

use report::bisect::{self as judge, Answer, Bisection, Choice, Judged, Sought, Step, StepVerdict};
use report::{DiffOptions, Evidence};

use crate::evidence::rundir;
use crate::planning::plan::Selection;
use crate::process::interrupt::Interrupt;
use git::Git;
use search::{Mark, Next, Search};

/// Why a bisection could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BisectError {
    /// The command line names what is not there (a revision, a pipeline outside the repository).
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Git(String),
    #[error("{0}")]
    Locked(String),
    #[error("interrupted: {0}")]
    Interrupted(String),
    #[error("{0}")]
    Io(String),
}

/// What to bisect.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub good: String,
    pub bad: String,
    pub pipeline: PathBuf,
    /// `--cause N`: the root cause of BAD's report to look for.
    pub cause: Option<usize>,
    /// `--slower BENCH`: a timing regression instead.
    pub slower: Option<String>,
    /// The user's `--only` and `--config`, for the runs of GOOD and BAD.
    pub selection: Selection,
}

/// Runs a pipeline file where the user asked (here, a host, a cluster).
pub trait Launch {
    /// Runs `pipeline` with `selection` (every unit again with `force`); the run directory,
    /// or why there is none (the file does not load at this commit, the run could not start).
    fn launch(
        &self,
        pipeline: &Path,
        selection: &Selection,
        force: bool,
    ) -> Result<Launched, String>;
}

/// A run a [`Launch`] made.
pub struct Launched {
    /// Its run directory.
    pub dir: PathBuf,
    pub interrupted: bool,
}

/// A bisection made (or cut short).
pub struct Finished {
    pub bisection: Bisection,
    /// `artifacts/bisect-<id>`, absolute.
    pub dir: PathBuf,
    pub interrupted: bool,
}

/// A step's run, read back.
struct Ran {
    evidence: Evidence,
    /// Relative to the pipeline's directory.
    kept: String,
    units: usize,
    cached: usize,
}

struct Session<'a> {
    git: Git<'a>,
    tree: PathBuf,
    /// The pipeline file, relative to the repository's top, and its text as the working tree
    /// has it: written into the worktree at every step, so that every commit is tested alike.
    pipeline: PathBuf,
    pipeline_text: Vec<u8>,
    /// Where runs are kept, and the same relative to the pipeline's directory.
    out: PathBuf,
    out_shown: String,
    launch: &'a dyn Launch,
    say: &'a dyn Fn(&str),
    steps: Vec<Step>,
    /// What the answer notes, in the order found.
    notes: Vec<String>,
    /// The distinct states of the pipeline's inputs after GOOD's, once counted.
    distinct: usize,
    runs: usize,
    interrupted: bool,
}

/// Runs the bisection.
pub fn bisect(
    request: &Request,
    launch: &dyn Launch,
    interrupt: &Interrupt,
    say: &dyn Fn(&str),
) -> Result<Finished, BisectError> {
    let clock = Instant::now();
    let pipeline = std::path::absolute(&request.pipeline)
        .and_then(std::fs::canonicalize)
        .map_err(|e| BisectError::Usage(format!("{}: {e}", request.pipeline.display())))?;
    let root = pipeline.parent().map(Path::to_path_buf).unwrap_or_default();
    let git = Git::open(&root, interrupt)?;
    let top = std::fs::canonicalize(&git.top).unwrap_or_else(|_| git.top.clone());
    let relative = pipeline
        .strip_prefix(&top)
        .map_err(|_| {
            BisectError::Usage(format!(
                "{}: not inside the repository at {}",
                request.pipeline.display(),
                top.display()
            ))
        })?
        .to_path_buf();
    let Range {
        good,
        bad,
        candidates,
        merges,
    } = range(&git, request)?;
    let _lock = lock::Lock::acquire(&git.common)?;
    let pipeline_text = std::fs::read(&pipeline)
        .map_err(|e| BisectError::Usage(format!("{}: {e}", request.pipeline.display())))?;
    let differs = git
        .blob(&bad, &relative)
        .is_none_or(|committed| committed != pipeline_text);

    let id = format!(
        "bisect-{}",
        rundir::run_id(chrono::Utc::now(), &format!("{good}..{bad}"))
    );
    let out = root.join(rundir::ARTIFACTS).join(&id);
    std::fs::create_dir_all(out.join("runs"))
        .map_err(|e| BisectError::Io(format!("create {}: {e}", out.display())))?;
    let temp = tempfile::Builder::new()
        .prefix("exhibit-bisect-")
        .tempdir()
        .map_err(|e| BisectError::Io(format!("create a temporary directory: {e}")))?;
    let tree = temp.path().join("tree");
    say(&format!(
        "bisect: {} after GOOD {} up to BAD {}; worktree {}",
        report::text::plural(candidates.len() as u64, "commit", "commits"),
        short(&good),
        short(&bad),
        tree.display()
    ));
    if let Err(e) = git.add_worktree(&tree, &bad) {
        // Whatever part of it git made goes too.
        git.remove_worktree(&tree);
        return Err(e);
    }
    let mut session = Session {
        git,
        tree: tree.clone(),
        pipeline: relative,
        pipeline_text,
        out: out.clone(),
        out_shown: rundir::slash(&Path::new(rundir::ARTIFACTS).join(&id)),
        launch,
        say,
        steps: Vec::new(),
        notes: Vec::new(),
        distinct: 0,
        runs: 0,
        interrupted: false,
    };
    let result = session.search(request, &good, &bad, &candidates);
    session.git.remove_worktree(&tree);
    drop(temp);
    // A search cut short by a failure keeps what its steps showed: the answer says why.
    let (answer, sought) = match result {
        Ok(searched) => searched,
        Err(BisectError::Interrupted(_)) => {
            session.interrupted = true;
            (Answer::Interrupted, None)
        }
        Err(e) => (
            Answer::Unanswered {
                why: format!("the search failed: {e}"),
            },
            None,
        ),
    };
    let notes = session.answer_notes(request, merges, differs);
    let commit = |hash: &str| session.git.commit(hash);
    let bisection = Bisection {
        schema: "exhibit.bisect/1".to_string(),
        pipeline: rundir::slash(&session.pipeline),
        good: commit(&good)?,
        bad: commit(&bad)?,
        commits: candidates.len(),
        distinct_inputs: session.distinct,
        sought,
        answer,
        steps: std::mem::take(&mut session.steps),
        runs: session.runs,
        seconds: clock.elapsed().as_secs_f64(),
        notes,
    };
    write_answer(&out, &bisection)?;
    Ok(Finished {
        bisection,
        dir: out,
        interrupted: session.interrupted,
    })
}

/// The commits a bisection searches: GOOD and BAD resolved, and the commits after GOOD up to
/// BAD on BAD's first-parent history.
struct Range {
    good: String,
    bad: String,
    /// After GOOD, up to BAD, oldest first.
    candidates: Vec<String>,
    /// Whether the range holds merges.
    merges: bool,
}

/// Resolves the request's GOOD and BAD and the commits between them; refuses GOOD and BAD that
/// are the same commit, a GOOD that is not an ancestor of BAD, and a range with no commit.
fn range(git: &Git<'_>, request: &Request) -> Result<Range, BisectError> {
    let good = git.resolve(&request.good)?;
    let bad = git.resolve(&request.bad)?;
    if good == bad {
        return Err(BisectError::Usage(format!(
            "GOOD `{}` and BAD `{}` are the same commit",
            request.good, request.bad
        )));
    }
    if !git.is_ancestor(&good, &bad)? {
        return Err(BisectError::Usage(format!(
            "GOOD `{}` is not an ancestor of BAD `{}`: the search needs GOOD before BAD",
            request.good, request.bad
        )));
    }
    let (candidates, merges) = git.between(&good, &bad)?;
    if candidates.is_empty() {
        return Err(BisectError::Usage(format!(
            "no commit leads from GOOD `{}` to BAD `{}`",
            request.good, request.bad
        )));
    }
    Ok(Range {
        good,
        bad,
        candidates,
        merges,
    })
}

/// Writes the answer into the bisection's directory `out`: `bisect.md` and `bisect.json`.
fn write_answer(out: &Path, bisection: &Bisection) -> Result<(), BisectError> {
    for (name, format) in [
        ("bisect.md", report::OutputFormat::Markdown),
        ("bisect.json", report::OutputFormat::Json),
    ] {
        let text = report::render_bisect(bisection, format, false);
        rundir::write_atomic(&out.join(name), text.as_bytes())
            .map_err(|e| BisectError::Io(e.to_string()))?;
    }
    Ok(())
}

/// A run at one commit.
enum Outcome {
    Ran(Box<Ran>, f64),
    /// No run directory, and why (the pipeline does not load there, the run could not start).
    NoRun(String, f64),
    Interrupted,
}

impl Session<'_> {
    /// The answer's notes: those the search found, after what the answer rests on: a working
    /// tree with uncommitted changes, a pipeline file that differs from BAD's (`differs`), a
    /// range that holds merges.
    fn answer_notes(&mut self, request: &Request, merges: bool, differs: bool) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.notes);
        if merges {
            notes.insert(
                0,
                "the range holds merges: the search walked BAD's first-parent history, so a fault a \
                 merge brought in is named at that merge (as `git bisect --first-parent` does)"
                    .to_string(),
            );
        }
        if differs {
            notes.insert(
                0,
                format!(
                    "every step ran `{}` as the working tree has it, which differs from BAD's",
                    rundir::slash(&self.pipeline)
                ),
            );
        }
        if self.git.dirty() {
            notes.insert(
                0,
                format!(
                    "the working tree has uncommitted changes: BAD is the commit `{}` names, without them",
                    request.bad
                ),
            );
        }
        notes
    }

    /// The search's answer, and what it looked for once it knew.
    fn search(
        &mut self,
        request: &Request,
        good: &str,
        bad: &str,
        candidates: &[String],
    ) -> Result<(Answer, Option<Sought>), BisectError> {
        let options = DiffOptions::default();
        let unanswered = |why: String| Answer::Unanswered { why };

        // BAD, whole: what it has is what the search looks for.
        let bad_run = match self.run_end(
            bad,
            "bad",
            StepVerdict::Bad,
            "BAD, run whole: what it has is what the search looks for",
            &request.selection,
        )? {
            Ok(ran) => ran,
            Err(answer) => return Ok((answer, None)),
        };
        let needs_good = request.slower.is_some()
            || judge::choose_cause(&bad_run.evidence, None, request.cause) == Choice::NeedsGood;
        let good_run = if needs_good {
            let why = if request.slower.is_some() {
                "the timings the others are compared with"
            } else {
                "its root causes tell which of BAD's are new"
            };
            match self.run_end(good, "good", StepVerdict::Good, why, &request.selection)? {
                Ok(ran) => Some(ran),
                Err(answer) => return Ok((answer, None)),
            }
        } else {
            None
        };
        let good_evidence = good_run.as_ref().map(|g| &g.evidence);
        let chosen = match &request.slower {
            Some(bench) => match good_evidence {
                Some(g) => judge::choose_slower(bench, g, &bad_run.evidence, &options),
                None => Err("GOOD's run is needed and was not made".to_string()),
            },
            None => match judge::choose_cause(&bad_run.evidence, good_evidence, request.cause) {
                Choice::Sought(sought, more) => {
                    self.notes.extend(more);
                    Ok(*sought)
                }
                Choice::Refused(why) => Err(why),
                Choice::NeedsGood => Err("GOOD's run is needed and was not made".to_string()),
            },
        };
        let sought = match chosen {
            Ok(sought) => sought,
            Err(why) => return Ok((unanswered(why), None)),
        };
        (self.say)(&report::text::strip_controls(&format!(
            "bisect: looking for {}",
            sought.line()
        )));

        // GOOD, then every commit up to BAD, each with its inputs' signature: the files in the
        // directories that hold BAD's run's inputs.
        let specs = self.input_specs(&bad_run.evidence);
        let commits: Vec<&str> = std::iter::once(good)
            .chain(candidates.iter().map(String::as_str))
            .collect();
        let mut signatures = Vec::with_capacity(commits.len());
        for commit in &commits {
            signatures.push(self.git.signature(commit, &specs)?);
        }
        let mut search = Search::new(&signatures);
        // The groups after GOOD's: the distinct states of the inputs the commits hold.
        self.distinct = search.groups.len().saturating_sub(1);
        if good_run.is_some() {
            search.mark(0, Mark::Good);
        }
        let selection = Selection {
            stages: sought.stages().to_vec(),
            configs: sought.configs(),
        };
        let reference = good_run.as_deref();
        loop {
            let next = search.next();
            let first = |group: usize| commits[search.groups[group].first];
            match next {
                Next::Test(group) => {
                    let role = if group == 0 { "good" } else { "candidate" };
                    let commit = first(group);
                    match self.judged(commit, role, &selection, &sought, reference, &options)? {
                        Some(verdict) => search.mark(group, mark(verdict)),
                        None => return Ok((Answer::Interrupted, Some(sought))),
                    }
                }
                Next::Found(0) => {
                    let why = "GOOD has it too: it did not appear between GOOD and BAD";
                    return Ok((unanswered(why.into()), Some(sought)));
                }
                Next::OneOf(groups) if groups.first() == Some(&0) => {
                    // GOOD's own run reached no verdict: it is taken as good, as the user gave it.
                    self.notes.push(
                        "GOOD's own run reached no verdict: the answer takes GOOD as good, as given"
                            .into(),
                    );
                    search.mark(0, Mark::Good);
                }
                Next::Found(group) => {
                    let answer = Answer::Found {
                        first_bad: self.git.commit(first(group))?,
                        last_good: self.git.commit(first(group - 1))?,
                    };
                    return Ok((answer, Some(sought)));
                }
                Next::OneOf(groups) => {
                    let answer = Answer::OneOf {
                        commits: groups
                            .iter()
                            .map(|&g| self.git.commit(first(g)))
                            .collect::<Result<_, _>>()?,
                        last_good: self.git.commit(first(groups[0] - 1))?,
                    };
                    return Ok((answer, Some(sought)));
                }
            }
        }
    }

    /// BAD or GOOD run whole (`role`), recorded with `verdict` and `why` when it ran: its run,
    /// or the answer when it could not run or was interrupted.
    fn run_end(
        &mut self,
        commit: &str,
        role: &str,
        verdict: StepVerdict,
        why: &str,
        selection: &Selection,
    ) -> Result<Result<Box<Ran>, Answer>, BisectError> {
        match self.run(commit, selection, false)? {
            // A run of an end that ran nothing on a GPU (compile-only, or nothing checked)
            // shows neither a root cause nor a timing: it is neither good nor bad.
            Outcome::Ran(ran, seconds)
                if matches!(
                    report::analyze(&ran.evidence).verdict.kind,
                    report::VerdictKind::CompileOnly | report::VerdictKind::NotChecked
                ) =>
            {
                let why = "its run ran nothing on a GPU (compile-only): it shows neither a root \
                           cause nor a timing";
                let judged = Judged::new(StepVerdict::Skip, why.into());
                self.record(commit, role, judged, Some(&ran), seconds)?;
                Ok(Err(Answer::Unanswered {
                    why: format!(
                        "{} {why}; bisect where the pipeline's GPU stages run",
                        role.to_uppercase()
                    ),
                }))
            }
            Outcome::Ran(ran, seconds) => {
                self.record(
                    commit,
                    role,
                    Judged::new(verdict, why.into()),
                    Some(&ran),
                    seconds,
                )?;
                Ok(Ok(ran))
            }
            Outcome::NoRun(why, seconds) => {
                let judged = Judged::new(StepVerdict::Skip, why.clone());
                self.record(commit, role, judged, None, seconds)?;
                Ok(Err(Answer::Unanswered {
                    why: format!("{} could not be run: {why}", role.to_uppercase()),
                }))
            }
            Outcome::Interrupted => Ok(Err(Answer::Interrupted)),
        }
    }

    /// Runs a step and judges it; an ambiguous timing is measured once more, then skipped if it
    /// stays so. `None`: interrupted.
    fn judged(
        &mut self,
        commit: &str,
        role: &str,
        selection: &Selection,
        sought: &Sought,
        good: Option<&Ran>,
        options: &DiffOptions,
    ) -> Result<Option<StepVerdict>, BisectError> {
        let mut force = false;
        loop {
            let (judged, ran, seconds) = match self.run(commit, selection, force)? {
                Outcome::Interrupted => return Ok(None),
                Outcome::NoRun(why, seconds) => {
                    (Judged::new(StepVerdict::Skip, why), None, seconds)
                }
                Outcome::Ran(ran, seconds) => {
                    let judged =
                        judge::judge(sought, good.map(|g| &g.evidence), &ran.evidence, options);
                    (judged, Some(ran), seconds)
                }
            };
            let again = judged.verdict == StepVerdict::Ambiguous && !force;
            let verdict = match judged.verdict {
                StepVerdict::Ambiguous if again => StepVerdict::Ambiguous,
                StepVerdict::Ambiguous => StepVerdict::Skip,
                v => v,
            };
            let why = if judged.verdict == StepVerdict::Ambiguous && !again {
                format!("ambiguous twice: {}", judged.why)
            } else {
                judged.why
            };
            self.record(
                commit,
                role,
                Judged {
                    verdict,
                    why,
                    ..judged
                },
                ran.as_deref(),
                seconds,
            )?;
            if !again {
                return Ok(Some(verdict));
            }
            force = true;
        }
    }

    /// Checks the worktree out at `commit` and runs the pipeline there; the run directory is
    /// copied to the bisection's own at once, so that an interrupt loses nothing.
    fn run(
        &mut self,
        commit: &str,
        selection: &Selection,
        force: bool,
    ) -> Result<Outcome, BisectError> {
        let clock = Instant::now();
        (self.say)(&format!("bisect: {} ...", short(commit)));
        let checked_out = self
            .git
            .checkout(&self.tree, commit, &[rundir::ARTIFACTS, rundir::REPORTS])
            .and_then(|()| self.git.fill_submodules(&self.tree, commit));
        match checked_out {
            Ok(missing) => {
                for what in missing {
                    (self.say)(&format!("bisect: {}: submodule {what}", short(commit)));
                }
            }
            Err(BisectError::Interrupted(_)) => {
                self.interrupted = true;
                return Ok(Outcome::Interrupted);
            }
            Err(e) => return Err(e),
        }
        let pipeline = self.tree.join(&self.pipeline);
        if let Some(dir) = pipeline.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(&pipeline, &self.pipeline_text)
            .map_err(|e| BisectError::Io(format!("write {}: {e}", pipeline.display())))?;
        let launched = match self.launch.launch(&pipeline, selection, force) {
            Ok(launched) => launched,
            Err(why) => return Ok(Outcome::NoRun(why, clock.elapsed().as_secs_f64())),
        };
        self.runs += 1;
        let name = launched
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kept = self.out.join("runs").join(&name);
        copy_dir(&launched.dir, &kept)?;
        if launched.interrupted {
            self.interrupted = true;
            return Ok(Outcome::Interrupted);
        }
        let evidence = match crate::evidence::stored::load(&kept) {
            Ok(evidence) => evidence,
            Err(e) => {
                return Ok(Outcome::NoRun(
                    format!("its run directory does not read: {e}"),
                    clock.elapsed().as_secs_f64(),
                ));
            }
        };
        let units = evidence
            .run
            .stages
            .iter()
            .filter(|s| s.status != report::StageStatus::Skipped)
            .count();
        let cached = evidence
            .run
            .stages
            .iter()
            .filter(|s| s.cached_from.is_some())
            .count();
        Ok(Outcome::Ran(
            Box::new(Ran {
                evidence,
                kept: format!("{}/runs/{name}", self.out_shown),
                units,
                cached,
            }),
            clock.elapsed().as_secs_f64(),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        commit: &str,
        role: &str,
        judged: Judged,
        ran: Option<&Ran>,
        seconds: f64,
    ) -> Result<(), BisectError> {
        let commit = self.git.commit(commit)?;
        (self.say)(&report::text::strip_controls(&format!(
            "bisect: {} {}: {} ({})",
            commit.short,
            commit.subject,
            judged.verdict.word(),
            judged.why
        )));
        self.steps.push(Step {
            commit,
            role: role.to_string(),
            verdict: judged.verdict,
            why: judged.why,
            run: ran.map(|r| r.kept.clone()),
            units: ran.map_or(0, |r| r.units),
            cached: ran.map_or(0, |r| r.cached),
            seconds,
            timings: judged.timings,
            excerpt: judged.excerpt,
        });
        Ok(())
    }

    /// The paths (relative to the repository's top) whose content makes up the pipeline's
    /// inputs at a commit: the directory of every input of BAD's run but the pipeline file
    /// (every step runs the working tree's).
    fn input_specs(&self, bad: &Evidence) -> Vec<String> {
        let root = self.pipeline.parent().unwrap_or(Path::new(""));
        let mut specs: Vec<String> = Vec::new();
        for input in bad.run.inputs.keys() {
            let path = root.join(input);
            if path == self.pipeline {
                // The same at every step: the working tree's.
                continue;
            }
            let spec = path.parent().map(Path::to_path_buf);
            let Some(spec) = spec.and_then(|s| normal(&s)) else {
                // Outside the repository: no commit can be told equal to another.
                return Vec::new();
            };
            let spec = if spec.is_empty() {
                ".".to_string()
            } else {
                spec
            };
            if !specs.contains(&spec) {
                specs.push(spec);
            }
        }
        specs
    }
}

fn mark(verdict: StepVerdict) -> Mark {
    match verdict {
        StepVerdict::Good => Mark::Good,
        StepVerdict::Bad => Mark::Bad,
        StepVerdict::Skip | StepVerdict::Ambiguous => Mark::Skip,
    }
}

/// `a/./b/../c` as `a/c`; `None` when it leaves the top.
fn normal(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

fn short(hash: &str) -> &str {
    hash.get(..10).unwrap_or(hash)
}

/// Copies a run directory: its directories and regular files (a run directory holds nothing
/// else that `rundir` would read).
fn copy_dir(from: &Path, to: &Path) -> Result<(), BisectError> {
    let failed = |path: &Path, e: &dyn std::fmt::Display| {
        BisectError::Io(format!(
            "keep the run {}: {}: {e}",
            from.display(),
            path.display()
        ))
    };
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| failed(from, &e))?;
        let Ok(relative) = entry.path().strip_prefix(from) else {
            continue;
        };
        let target = to.join(relative);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| failed(&target, &e))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|e| failed(&target, &e))?;
        }
    }
    Ok(())
}
