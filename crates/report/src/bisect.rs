//! `exhibit bisect`: what the search looks for in the evidence, each step's verdict from its own
//! run, and the answer.
//!
//! The exhibit checks out each commit and runs the pipeline; this module only reads evidence.
//! A commit is bad when its run has what BAD's run has and GOOD's has not:
//!
//! - a root cause ([`Sought::Cause`]), found again by its fingerprint, or by its rule, kernel,
//!   file and title (its line numbers aside) when an unrelated change moved its line;
//! - or a slower timing ([`Sought::Slower`]): `diff` against GOOD's run judges it slower
//!   beyond twice the measured noise.
//!
//! A step whose decisive units (the stages that found the cause, on its config) did not all
//! reach a verdict (a build that failed, a unit that failed, timed out or was inconclusive) is
//! skipped, as `git bisect skip` would: its evidence says nothing either way.

use serde::Serialize;

use crate::diff::{DiffOptions, PerfChange, diff};
use crate::noise::Judgement;
use crate::text::md_code;
use crate::{
    analysis::analyze, diagnosis::Diagnosis, diagnosis::Level, diagnosis::SourceLocation,
    evidence::Evidence, run::StageKind, run::StageStatus,
};

/// What makes a commit bad.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Sought {
    Cause(Cause),
    Slower(Slower),
}

/// A root cause of BAD's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// Its number among BAD's root causes, as BAD's report numbers them.
    pub number: usize,
    pub rule: String,
    pub title: String,
    pub kernel: Option<String>,
    pub location: Option<SourceLocation>,
    pub fingerprint: String,
    /// The config it was found in: the one a step runs.
    pub config: Option<String>,
    /// The stages whose evidence it rests on: the ones a step runs.
    pub stages: Vec<String>,
    /// As BAD's report explains it, and its fix.
    pub explanation: String,
    pub fix: String,
}

/// Timings BAD measured slower than GOOD.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slower {
    /// What the user named.
    pub bench: String,
    /// The timings it names, as GOOD and BAD measured them.
    pub timings: Vec<Timing>,
    /// The configs and stages that measured them: what a step runs.
    pub configs: Vec<String>,
    pub stages: Vec<String>,
}

/// One timing on both sides of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// `implementation case timing`, as `exhibit diff` shows it.
    pub label: String,
    pub before_p50_us: f64,
    pub after_p50_us: f64,
    /// (after - before) / before.
    pub change: f64,
    /// The larger run's relative noise.
    pub noise: f64,
    pub judgement: Judgement,
}

impl Sought {
    /// The stages a step runs (their builds come with them).
    pub fn stages(&self) -> &[String] {
        match self {
            Sought::Cause(c) => &c.stages,
            Sought::Slower(s) => &s.stages,
        }
    }

    /// The configs a step runs; empty for every config.
    pub fn configs(&self) -> Vec<String> {
        match self {
            Sought::Cause(c) => c.config.iter().cloned().collect(),
            Sought::Slower(s) => s.configs.clone(),
        }
    }

    /// One line naming it: "root cause 1, `memcheck-oob`: Out-of-bounds ... at `k.cu:12`".
    pub fn line(&self) -> String {
        match self {
            Sought::Cause(c) => format!(
                "root cause {} ({}): {}",
                c.number,
                md_code(&c.rule),
                c.title
            ),
            Sought::Slower(s) => format!(
                "{} slower than in GOOD ({})",
                md_code(&s.bench),
                s.timings
                    .iter()
                    .map(|t| md_code(&t.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a step's evidence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    Good,
    Bad,
    /// No verdict: the commit is skipped.
    Skip,
    /// A timing moved by more than the noise but less than twice it: measure again.
    Ambiguous,
}

impl StepVerdict {
    pub fn word(self) -> &'static str {
        match self {
            StepVerdict::Good => "good",
            StepVerdict::Bad => "bad",
            StepVerdict::Skip => "skip",
            StepVerdict::Ambiguous => "ambiguous",
        }
    }
}

/// A step's verdict and why, in words from its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    pub verdict: StepVerdict,
    pub why: String,
    /// For `--slower`: the timings compared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<Timing>,
    /// For a bad step: the raw lines its root cause rests on (a few, scrubbed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excerpt: Vec<String>,
}

impl Judged {
    /// A verdict and its reason, with no timings or excerpt.
    pub fn new(verdict: StepVerdict, why: String) -> Judged {
        Judged {
            verdict,
            why,
            timings: Vec::new(),
            excerpt: Vec::new(),
        }
    }
}

/// Raw lines quoted in a step's answer, at most.
const EXCERPT_LINES: usize = 4;

/// The root causes of a run, numbered as its report numbers them (from 1).
pub fn root_causes(evidence: &Evidence) -> Vec<Diagnosis> {
    analyze(evidence)
        .diagnoses
        .into_iter()
        .filter(|d| d.level > Level::Note)
        .collect()
}

/// Which root cause of BAD to look for.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// This one; the notes say what else BAD has.
    Sought(Box<Sought>, Vec<String>),
    /// BAD has several root causes and none was picked: GOOD's run tells which are new.
    NeedsGood,
    /// Nothing to look for, and why.
    Refused(String),
}

/// Picks the root cause to look for: number `pick` of BAD's (as its report numbers them); else
/// BAD's only one; else (with GOOD's run) the first that GOOD has not, noting the others.
pub fn choose_cause(bad: &Evidence, good: Option<&Evidence>, pick: Option<usize>) -> Choice {
    let causes = root_causes(bad);
    let cause = |number: usize, d: &Diagnosis| {
        Box::new(Sought::Cause(Cause {
            number,
            rule: d.rule.to_string(),
            title: d.title.clone().markdown(),
            kernel: d.kernel.clone(),
            location: d.location.clone(),
            fingerprint: d.fingerprint.clone(),
            config: d.config.clone(),
            stages: decisive_stages(bad, d),
            explanation: d.explanation().markdown(),
            fix: d.fix().markdown(),
        }))
    };
    if causes.is_empty() {
        return Choice::Refused(
            "BAD's run has no root cause: nothing to look for (`--slower BENCH` looks for a slower timing)"
                .to_string(),
        );
    }
    if let Some(n) = pick {
        return match causes.get(n.wrapping_sub(1)) {
            Some(d) => Choice::Sought(cause(n, d), Vec::new()),
            None => Choice::Refused(format!(
                "--cause {n}: BAD's run has {} root cause{} (numbered from 1 as its report numbers them)",
                causes.len(),
                if causes.len() == 1 { "" } else { "s" }
            )),
        };
    }
    if causes.len() == 1 && good.is_none() {
        return Choice::Sought(cause(1, &causes[0]), Vec::new());
    }
    let Some(good) = good else {
        return Choice::NeedsGood;
    };
    let old = root_causes(good);
    let new: Vec<(usize, &Diagnosis)> = causes
        .iter()
        .enumerate()
        .filter(|(_, d)| !old.iter().any(|o| same_cause(d, o)))
        .map(|(i, d)| (i + 1, d))
        .collect();
    let Some(((number, first), rest)) = new.split_first() else {
        return Choice::Refused(format!(
            "every root cause of BAD's run ({}) is in GOOD's too: nothing changed between them",
            causes.len()
        ));
    };
    let notes = rest
        .iter()
        .map(|(n, d)| {
            format!(
                "BAD also has root cause {n}, which GOOD has not: {} (`--cause {n}` looks for it)",
                d.title.markdown()
            )
        })
        .collect();
    Choice::Sought(cause(*number, first), notes)
}

/// The stages whose evidence a root cause rests on. The builds are left out (a step's
/// selection brings them) unless the cause rests on a build alone (a compile error, ptxas's
/// spills): then the build decides.
fn decisive_stages(run: &Evidence, d: &Diagnosis) -> Vec<String> {
    let kind = |name: &str| {
        run.run
            .stages
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.kind)
    };
    let mut stages: Vec<String> = Vec::new();
    let mut builds: Vec<String> = Vec::new();
    for item in &d.evidence {
        let into = match kind(&item.stage) {
            Some(StageKind::Report) => continue,
            Some(StageKind::Compile) => &mut builds,
            _ => &mut stages,
        };
        if !into.contains(&item.stage) {
            into.push(item.stage.clone());
        }
    }
    if stages.is_empty() { builds } else { stages }
}

/// Two diagnoses of one root cause: the same fingerprint, or the same rule, kernel, file and
/// title once line numbers are left out (an unrelated change above it moves its line, and the
/// fingerprint with it).
pub fn same_cause(a: &Diagnosis, b: &Diagnosis) -> bool {
    a.fingerprint == b.fingerprint || moved(a).is_some_and(|m| moved(b) == Some(m))
}

/// The step's root cause that is the one sought, by [`same_cause`]'s rule.
fn find_sought(c: &Cause, causes: &[Diagnosis]) -> Option<usize> {
    causes
        .iter()
        .position(|d| d.fingerprint == c.fingerprint)
        .or_else(|| {
            let sought = identity(&c.rule, c.kernel.as_deref(), c.location.as_ref(), &c.title)?;
            causes.iter().position(|d| moved(d) == Some(sought.clone()))
        })
}

/// What names a root cause wherever its line is: rule, kernel, file and title, the line
/// numbers the title quotes left out (`k.cu:12` reads `k.cu:`).
type Identity = (String, Option<String>, String, String);

/// A root cause's [`Identity`]; none without a file.
fn identity(
    rule: &str,
    kernel: Option<&str>,
    location: Option<&SourceLocation>,
    title: &str,
) -> Option<Identity> {
    let mut shape = String::with_capacity(title.len());
    let mut after_colon = false;
    for c in title.chars() {
        if after_colon && c.is_ascii_digit() {
            continue;
        }
        after_colon = c == ':';
        shape.push(c);
    }
    Some((
        rule.to_string(),
        kernel.map(str::to_string),
        location?.file.clone(),
        shape,
    ))
}

fn moved(d: &Diagnosis) -> Option<Identity> {
    identity(
        d.rule.as_str(),
        d.kernel.as_deref(),
        d.location.as_ref(),
        &d.title.markdown(),
    )
}

/// The timings BENCH names, compared from GOOD's run to BAD's: they must be slower in BAD.
pub fn choose_slower(
    bench: &str,
    good: &Evidence,
    bad: &Evidence,
    opts: &DiffOptions,
) -> Result<Sought, String> {
    let d = diff(good, bad, opts);
    if let Some(why) = &d.timing_refused {
        return Err(format!(
            "GOOD's and BAD's timings cannot be compared: {}",
            why.words().markdown()
        ));
    }
    let named: Vec<&PerfChange> = named(bench, &d.perf);
    if named.is_empty() {
        let all: Vec<String> = d.perf.iter().filter(|p| !p.baseline).map(label).collect();
        return Err(format!(
            "no timing in both GOOD's and BAD's runs is named `{bench}` (timings: {})",
            if all.is_empty() {
                "none".to_string()
            } else {
                all.join("; ")
            }
        ));
    }
    let timings: Vec<Timing> = named.iter().map(|p| timing(p)).collect();
    if !timings.iter().any(|t| t.judgement == Judgement::Slower) {
        return Err(format!(
            "BAD is not slower than GOOD at `{bench}`: {}",
            timings
                .iter()
                .map(timing_words)
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut configs: Vec<String> = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    for p in &named {
        let config = bad
            .run
            .stages
            .iter()
            .any(|s| s.config.as_deref() == Some(p.implementation.as_str()));
        if config && !configs.contains(&p.implementation) {
            configs.push(p.implementation.clone());
        }
    }
    for s in &bad.run.stages {
        let on = configs.is_empty() || s.config.as_ref().is_some_and(|c| configs.contains(c));
        if s.kind == StageKind::Bench && on && !stages.contains(&s.name) {
            stages.push(s.name.clone());
        }
    }
    Ok(Sought::Slower(Slower {
        bench: bench.to_string(),
        timings: timings
            .into_iter()
            .filter(|t| t.judgement == Judgement::Slower)
            .collect(),
        configs,
        stages,
    }))
}

/// The kernel timings (never a baseline's) `bench` names: their implementation (the config),
/// or any part of their label.
fn named<'a>(bench: &str, perf: &'a [PerfChange]) -> Vec<&'a PerfChange> {
    let wanted = bench.to_lowercase();
    let kernel = perf.iter().filter(|p| !p.baseline);
    let exact: Vec<&PerfChange> = kernel
        .clone()
        .filter(|p| p.implementation.to_lowercase() == wanted)
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    kernel
        .filter(|p| label(p).to_lowercase().contains(&wanted))
        .collect()
}

fn label(p: &PerfChange) -> String {
    let case = p.case.label();
    let mut out = p.implementation.clone();
    for part in [case.as_str(), p.timing.as_str(), p.cache.as_str()] {
        if !part.is_empty() {
            out.push(' ');
            out.push_str(part);
        }
    }
    out
}

fn timing(p: &PerfChange) -> Timing {
    Timing {
        label: label(p),
        before_p50_us: p.a_p50_us,
        after_p50_us: p.b_p50_us,
        change: p.change,
        noise: p.noise,
        judgement: p.judgement,
    }
}

fn timing_words(t: &Timing) -> String {
    format!(
        "`{}` {:.3} -> {:.3} µs ({:+.1}%, noise {:.1}%): {}",
        t.label,
        t.before_p50_us,
        t.after_p50_us,
        t.change * 100.0,
        t.noise * 100.0,
        t.judgement.as_str()
    )
}

/// A step's verdict. `good` is GOOD's run (needed for `--slower`).
pub fn judge(
    sought: &Sought,
    good: Option<&Evidence>,
    step: &Evidence,
    opts: &DiffOptions,
) -> Judged {
    if let Some(why) = undecided(sought, step) {
        return Judged::new(StepVerdict::Skip, why);
    }
    match sought {
        Sought::Cause(c) => {
            let causes = root_causes(step);
            match find_sought(c, &causes) {
                Some(i) => Judged {
                    excerpt: causes[i]
                        .evidence
                        .iter()
                        .find(|e| !e.excerpt.is_empty())
                        .map(|e| e.excerpt.iter().take(EXCERPT_LINES).cloned().collect())
                        .unwrap_or_default(),
                    ..Judged::new(
                        StepVerdict::Bad,
                        format!(
                            "has it (its root cause {}: {}{})",
                            i + 1,
                            causes[i].title.markdown(),
                            causes[i]
                                .location
                                .as_ref()
                                .map(|l| format!(" at {}", md_code(&l.to_string())))
                                .unwrap_or_default()
                        ),
                    )
                },
                None => Judged::new(
                    StepVerdict::Good,
                    format!(
                        "{} ran to a verdict without it{}",
                        words(&c.stages),
                        match causes.len() {
                            0 => String::new(),
                            n =>
                                format!(" ({n} other root cause{})", if n == 1 { "" } else { "s" }),
                        }
                    ),
                ),
            }
        }
        Sought::Slower(s) => {
            let Some(good) = good else {
                return Judged::new(
                    StepVerdict::Skip,
                    "GOOD's timings are needed to judge a timing".to_string(),
                );
            };
            let d = diff(good, step, opts);
            if let Some(why) = d.timing_refused {
                return Judged::new(StepVerdict::Skip, why.words().markdown());
            }
            let named = named(&s.bench, &d.perf);
            if named.is_empty() {
                return if d.same_measurement > 0 {
                    Judged::new(
                        StepVerdict::Good,
                        "its timing is GOOD's own measurement (the same inputs, served from the cache)"
                            .to_string(),
                    )
                } else {
                    Judged::new(
                        StepVerdict::Skip,
                        format!("no timing named `{}` in both runs", s.bench),
                    )
                };
            }
            let timings: Vec<Timing> = named.iter().map(|p| timing(p)).collect();
            let verdict = if timings.iter().any(|t| t.judgement == Judgement::Slower) {
                StepVerdict::Bad
            } else if timings.iter().any(|t| t.judgement == Judgement::Ambiguous) {
                StepVerdict::Ambiguous
            } else {
                StepVerdict::Good
            };
            Judged {
                verdict,
                why: timings
                    .iter()
                    .map(timing_words)
                    .collect::<Vec<_>>()
                    .join("; "),
                timings,
                excerpt: Vec::new(),
            }
        }
    }
}

/// Why a step's decisive units say nothing, if they do not: none ran, its build failed, one did
/// not reach a verdict, or a log of theirs is missing.
fn undecided(sought: &Sought, step: &Evidence) -> Option<String> {
    let configs = sought.configs();
    let on = |s: &crate::run::Stage| {
        configs.is_empty() || s.config.as_ref().is_some_and(|c| configs.contains(c))
    };
    let units: Vec<&crate::run::Stage> = step
        .run
        .stages
        .iter()
        .filter(|s| sought.stages().contains(&s.name) && on(s))
        .collect();
    let verdict =
        |s: &crate::run::Stage| matches!(s.status, StageStatus::Passed | StageStatus::Findings);
    if !units.is_empty() && units.iter().all(|u| verdict(u)) {
        return units.iter().find_map(|unit| {
            unit.logs.iter().find_map(|log| {
                step.missing
                    .get(&log.path)
                    .map(|why| format!("{}: {}: {why}", md_code(&unit.name), log.path))
            })
        });
    }
    if let Some(build) = step.run.stages.iter().find(|s| {
        s.kind == StageKind::Compile
            && on(s)
            && (!verdict(s) || s.exit_code.is_some_and(|c| c != 0))
    }) {
        return Some(format!(
            "does not build ({} {}{}{})",
            md_code(&build.name),
            crate::analysis::stage_status_word(build.status),
            build
                .exit_code
                .map(|c| format!(", exit {c}"))
                .unwrap_or_default(),
            build
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    let Some(unit) = units.iter().find(|u| !verdict(u)) else {
        return Some(format!(
            "its run has no {} unit{}",
            words(sought.stages()),
            match configs.as_slice() {
                [] => String::new(),
                [one] => format!(" on {}", md_code(one)),
                many => format!(" on {}", words(many)),
            }
        ));
    };
    Some(format!(
        "{}{}: {}{}",
        md_code(&unit.name),
        unit.config
            .as_deref()
            .map(|c| format!(" on {}", md_code(c)))
            .unwrap_or_default(),
        crate::analysis::stage_status_word(unit.status),
        unit.reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ))
}

fn words(names: &[String]) -> String {
    let coded: Vec<String> = names.iter().map(|n| md_code(n)).collect();
    crate::text::join_words(&coded)
}

/// A commit as the answer names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Commit {
    pub hash: String,
    pub short: String,
    pub subject: String,
    /// The author date, ISO 8601.
    pub date: String,
    /// The files it changed (against its first parent).
    pub files: Vec<String>,
}

/// What the search concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// The first bad commit, and the good commit tested before it: the first of the commits
    /// just before it with the same inputs (GOOD itself when the first candidate is bad).
    Found {
        first_bad: Commit,
        last_good: Commit,
    },
    /// One of these is the first bad commit: the ones before the last were skipped.
    OneOf {
        commits: Vec<Commit>,
        last_good: Commit,
    },
    /// No answer, and why.
    Unanswered { why: String },
    /// Interrupted before an answer.
    Interrupted,
}

/// One commit judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub commit: Commit,
    /// `good` or `bad` for the ends, `candidate` for the rest.
    pub role: String,
    pub verdict: StepVerdict,
    pub why: String,
    /// The run directory kept, relative to the pipeline's directory; none when the verdict came
    /// without a run (the same inputs as a commit already judged).
    pub run: Option<String>,
    /// Its units, and how many of them the cache served.
    pub units: usize,
    pub cached: usize,
    /// Wall time of the step, as the runner measured it.
    pub seconds: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<Timing>,
    /// For a bad step: the raw lines its root cause rests on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excerpt: Vec<String>,
}

/// A bisection's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bisection {
    pub schema: String,
    pub pipeline: String,
    pub good: Commit,
    pub bad: Commit,
    /// Commits after GOOD up to BAD, and how many distinct states of the pipeline's inputs
    /// they hold.
    pub commits: usize,
    pub distinct_inputs: usize,
    pub sought: Option<Sought>,
    pub answer: Answer,
    pub steps: Vec<Step>,
    /// Pipeline runs made, and the wall time of the whole bisection.
    pub runs: usize,
    pub seconds: f64,
    pub notes: Vec<String>,
}

impl Bisection {
    /// Whether it named the first bad commit (or the few it must be among).
    pub fn answered(&self) -> bool {
        matches!(self.answer, Answer::Found { .. } | Answer::OneOf { .. })
    }

    /// The one-line verdict.
    pub fn headline(&self) -> String {
        match &self.answer {
            Answer::Found { first_bad, .. } => format!(
                "first bad commit: {} {}",
                md_code(&first_bad.short),
                crate::text::md_text(&first_bad.subject)
            ),
            Answer::OneOf { commits, .. } => format!(
                "the first bad commit is one of {}",
                crate::text::join_words(
                    &commits
                        .iter()
                        .map(|c| md_code(&c.short))
                        .collect::<Vec<_>>()
                )
            ),
            Answer::Unanswered { why } => format!("no answer: {why}"),
            Answer::Interrupted => "interrupted before an answer".to_string(),
        }
    }
}
