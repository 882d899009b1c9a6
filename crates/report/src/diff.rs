//! Comparing two runs: new and fixed root causes and findings by fingerprint, resource changes
//! per kernel, config and arch, and timings judged against each run's measured noise. Timings
//! from different GPUs or drivers are not compared unless asked, and a timing both runs took
//! from the same measurement (a unit served from the cache) is not compared at all.
//!
//! A root cause (or tool finding) of `a` that `b` does not have is fixed only when `b` re-ran
//! every stage that found it, on the same config, arch and case, to a verdict (passed, or
//! findings of something else); otherwise it is not re-tested: `b` skipped that stage, it
//! failed, timed out, was inconclusive or interrupted, or `b` has no such stage.
//!
//! The verdict is the first rule that holds:
//! 1. incomplete: a log either run lists is missing or unreadable;
//! 2. regression: a new root cause at warning or error level, a new error-level tool finding,
//!    or a kernel timing judged slower (beyond twice the noise, see [`crate::noise`]);
//! 3. incomplete: a root cause or tool finding of `a` was not re-tested in `b`;
//! 4. ambiguous: a kernel timing moved by more than the noise but less than twice it, or was
//!    measured throttled or with too few samples: re-run to decide;
//! 5. no regression.

mod perf;
mod retest;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Serialize;

use crate::analysis::{Analysis, VerdictKind, analyze};
use crate::diagnosis::{Diagnosis, Level};
use crate::noise::{Judgement, NoiseOptions};
use crate::resources::KernelResources;
use crate::tables::Case;
use crate::text::{relative_path, scrub};
use crate::{evidence::Evidence, run::Run, run::Stage};
pub use perf::{Differ, TimingRefusal};
use perf::{perf_changes, perf_diagnoses, refuse_timing};
use retest::{StageIndex, diagnosis_stages, untested};

/// Why two runs are no before and after of one another, or `None` when they are: another
/// pipeline file, or no stage run on a config the other ran. Comparing them would report every
/// root cause as new or fixed, or nothing at all, and say "no regression".
pub fn unrelated(a: &Run, b: &Run) -> Option<String> {
    if a.pipeline != b.pipeline {
        return Some(format!(
            "the runs are of different pipelines (`{}` and `{}`): a diff compares two runs of one \
             pipeline, before and after a change",
            a.pipeline, b.pipeline
        ));
    }
    let units = |r: &Run| -> BTreeSet<(String, Option<String>)> {
        r.stages
            .iter()
            .map(|s| (s.name.clone(), s.config.clone()))
            .collect()
    };
    let (ua, ub) = (units(a), units(b));
    if !ua.is_empty() && !ub.is_empty() && ua.is_disjoint(&ub) {
        return Some(
            "the runs share no stage on any config: nothing of one can be compared with the other"
                .to_string(),
        );
    }
    None
}

/// What `exhibit diff` may be told.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiffOptions {
    /// Compare timings even when the runs' GPUs or drivers differ.
    pub allow_different_gpu: bool,
    pub noise: NoiseOptions,
}

/// The comparison of run `a` (before) with run `b` (after).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub a: RunSummary,
    pub b: RunSummary,
    /// Root causes in `b` whose fingerprint `a` does not have.
    pub new: Vec<Diagnosis>,
    /// Root causes in `a` whose fingerprint `b` does not have, where `b` re-ran every stage
    /// that found them to a verdict.
    pub fixed: Vec<Diagnosis>,
    /// Root causes in `a` whose fingerprint `b` does not have, but whose stages `b` did not
    /// re-run to a verdict: not known to be fixed.
    pub not_retested: Vec<NotRetested<Diagnosis>>,
    /// Root causes in both (as `b` has them).
    pub unchanged: Vec<Diagnosis>,
    /// Tool findings (sanitizer and compiler sites) by config and fingerprint.
    pub new_findings: Vec<FindingChange>,
    pub fixed_findings: Vec<FindingChange>,
    /// Tool findings of `a` that `b` does not have, where `b` did not re-run their stage to a
    /// verdict.
    pub not_retested_findings: Vec<NotRetested<FindingChange>>,
    pub resources: Vec<ResourceChange>,
    pub perf: Vec<PerfChange>,
    /// Why timings were not compared, when they were not (in JSON, its words).
    pub timing_refused: Option<TimingRefusal>,
    /// `perf-regression` and `perf-improvement` diagnoses.
    pub perf_diagnoses: Vec<Diagnosis>,
    /// Timings in both runs that are one measurement (B's unit was served from the cache of
    /// the run A's came from): not compared.
    pub same_measurement: usize,
    /// Logs either run lists that could not be read: `A: path: why`.
    pub missing: Vec<String>,
    /// The thresholds the timings were judged by.
    pub thresholds: NoiseOptions,
    pub verdict: DiffVerdict,
}

/// What a diff concludes; see the module's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffVerdict {
    Incomplete,
    Regression,
    Ambiguous,
    NoRegression,
}

impl Diff {
    /// True when `b` is worse than `a`: a new error or warning root cause, a new error-level
    /// tool finding, or a kernel timing judged slower.
    pub fn has_regression(&self) -> bool {
        self.regressed()
    }

    /// Kernel timings (not baselines) with this judgement.
    pub fn kernel_timings(&self, judgement: Judgement) -> usize {
        self.perf
            .iter()
            .filter(|p| !p.baseline && p.judgement == judgement)
            .count()
    }

    fn regressed(&self) -> bool {
        self.new.iter().any(|d| d.level > Level::Note)
            || self.new_findings.iter().any(|f| f.severity == "error")
            || self
                .perf_diagnoses
                .iter()
                .any(|d| d.rule == "perf-regression")
    }
}

/// A root cause or finding of run `a` that run `b` lacks without having looked for it again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotRetested<T> {
    #[serde(flatten)]
    pub item: T,
    /// What `b` did with the stages that found it, e.g. `check on plain, sm_90: skipped in B
    /// (disabled in the pipeline)`.
    pub why: Vec<String>,
}

/// A run's identity as the diff shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub commit: Option<String>,
    pub dirty: bool,
    pub gpu: Option<String>,
    pub driver: Option<String>,
    pub verdict: VerdictKind,
}

/// A tool finding that appeared or went away.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingChange {
    pub config: Option<String>,
    pub fingerprint: String,
    pub kind: String,
    pub severity: String,
    pub kernel: Option<String>,
    pub location: Option<String>,
    pub count: u64,
    pub message: String,
}

/// One resource figure of one kernel that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceChange {
    pub config: Option<String>,
    pub arch: Option<String>,
    pub kernel: String,
    pub field: String,
    pub before: Option<u64>,
    pub after: Option<u64>,
}

/// One timing compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfChange {
    pub case: Case,
    pub implementation: String,
    pub baseline: bool,
    pub cache: String,
    pub timing: String,
    pub a_p50_us: f64,
    pub b_p50_us: f64,
    pub change: f64,
    pub noise: f64,
    pub judgement: Judgement,
    pub reason: Option<String>,
    /// The significance test on the two runs' raw samples, when both kept enough of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<crate::noise::SampleTest>,
    /// The run each side's timing was measured in, when it was served from the cache.
    pub a_cached_from: Option<String>,
    pub b_cached_from: Option<String>,
}

/// Compares run `a` (before) with run `b` (after).
pub fn diff(a: &Evidence, b: &Evidence, opts: &DiffOptions) -> Diff {
    let aa = analyze(a);
    let ba = analyze(b);
    let fps_a: BTreeSet<&str> = aa
        .diagnoses
        .iter()
        .map(|d| d.fingerprint.as_str())
        .collect();
    let fps_b: BTreeSet<&str> = ba
        .diagnoses
        .iter()
        .map(|d| d.fingerprint.as_str())
        .collect();
    let new = ba
        .diagnoses
        .iter()
        .filter(|d| !fps_a.contains(d.fingerprint.as_str()))
        .cloned()
        .collect();
    let index_a = StageIndex::of(&a.run);
    let index_b = StageIndex::of(&b.run);
    let mut fixed = Vec::new();
    let mut not_retested = Vec::new();
    for d in aa
        .diagnoses
        .iter()
        .filter(|d| !fps_b.contains(d.fingerprint.as_str()))
    {
        let why = untested(&diagnosis_stages(d, &index_a), &index_b);
        if why.is_empty() {
            fixed.push(d.clone());
        } else {
            not_retested.push(NotRetested {
                item: d.clone(),
                why,
            });
        }
    }
    let unchanged = ba
        .diagnoses
        .iter()
        .filter(|d| fps_a.contains(d.fingerprint.as_str()))
        .cloned()
        .collect();

    let finds_a = findings(&aa);
    let finds_b = findings(&ba);
    let new_findings = finds_b
        .iter()
        .filter(|(k, _)| !finds_a.contains_key(*k))
        .map(|(_, (v, _))| v.clone())
        .collect();
    let mut fixed_findings = Vec::new();
    let mut not_retested_findings = Vec::new();
    for (_, (change, stages)) in finds_a.iter().filter(|(k, _)| !finds_b.contains_key(*k)) {
        let why = untested(stages, &index_b);
        if why.is_empty() {
            fixed_findings.push(change.clone());
        } else {
            not_retested_findings.push(NotRetested {
                item: change.clone(),
                why,
            });
        }
    }

    let resources = resource_changes(&aa.tables.kernels, &ba.tables.kernels);
    let timing_refused = refuse_timing(&a.run, &b.run, opts);
    let (perf, same_measurement) = if timing_refused.is_some() {
        (Vec::new(), 0)
    } else {
        perf_changes(&aa, &ba, &opts.noise)
    };
    let perf_diagnoses = perf_diagnoses(&perf, &b.run);
    let missing = [("A", a), ("B", b)]
        .iter()
        .flat_map(|(side, ev)| {
            ev.missing
                .iter()
                .map(move |(path, why)| format!("{side}: {path}: {why}"))
        })
        .collect();
    let mut diff = Diff {
        a: summary(&a.run, &aa),
        b: summary(&b.run, &ba),
        new,
        fixed,
        not_retested,
        unchanged,
        new_findings,
        fixed_findings,
        not_retested_findings,
        resources,
        perf,
        timing_refused,
        perf_diagnoses,
        same_measurement,
        missing,
        thresholds: opts.noise,
        verdict: DiffVerdict::NoRegression,
    };
    diff.verdict = if !diff.missing.is_empty() || !diff.unchecked().is_empty() {
        DiffVerdict::Incomplete
    } else if diff.regressed() {
        DiffVerdict::Regression
    } else if !diff.not_retested.is_empty() || !diff.not_retested_findings.is_empty() {
        DiffVerdict::Incomplete
    } else if diff.kernel_timings(Judgement::Ambiguous) > 0 {
        DiffVerdict::Ambiguous
    } else {
        DiffVerdict::NoRegression
    };
    diff
}

impl Diff {
    /// The sides that ran nothing on a GPU (compile-only, or nothing checked): a comparison
    /// with them says nothing of the program's behaviour, so it is never "no regression".
    pub fn unchecked(&self) -> Vec<&'static str> {
        let unchecked =
            |v: VerdictKind| matches!(v, VerdictKind::CompileOnly | VerdictKind::NotChecked);
        [("A", &self.a), ("B", &self.b)]
            .into_iter()
            .filter(|(_, s)| unchecked(s.verdict))
            .map(|(side, _)| side)
            .collect()
    }
}

fn summary(run: &Run, a: &Analysis) -> RunSummary {
    RunSummary {
        id: run.id.clone(),
        commit: run.git.as_ref().map(|g| g.commit.clone()),
        dirty: run.git.as_ref().is_some_and(|g| g.dirty),
        gpu: run.environment.gpus.first().map(|g| g.name.clone()),
        driver: run.environment.driver.clone(),
        verdict: a.verdict.kind,
    }
}

type FindingKey = (Option<String>, String);

/// Each finding of a run by config and fingerprint, with the stages that reported it.
fn findings<'a>(a: &'a Analysis) -> BTreeMap<FindingKey, (FindingChange, Vec<&'a Stage>)> {
    let mut out: BTreeMap<FindingKey, (FindingChange, Vec<&Stage>)> = BTreeMap::new();
    for f in &a.joined.findings {
        let finding = f.finding;
        if crate::rules::is_harness_kind(finding.kind)
            || finding.severity == parsers::Severity::Info
        {
            continue;
        }
        let kind = serde_json::to_value(finding.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let severity = match finding.severity {
            parsers::Severity::Error => "error",
            parsers::Severity::Warning => "warning",
            parsers::Severity::Info => "info",
        };
        let location = finding.file.as_ref().map(|file| {
            let file = relative_path(file, &a.joined.repo_files);
            match finding.line {
                Some(l) => format!("{file}:{l}"),
                None => file,
            }
        });
        let key = (f.config.clone(), finding.fingerprint.clone());
        let (entry, stages) = out.entry(key).or_insert_with(|| {
            (
                FindingChange {
                    config: f.config.clone(),
                    fingerprint: finding.fingerprint.clone(),
                    kind,
                    severity: severity.to_string(),
                    kernel: f.kernel.clone().map(String::from),
                    location,
                    count: 0,
                    message: scrub(&finding.message, &a.joined.repo_files),
                },
                Vec::new(),
            )
        });
        entry.count = entry.count.saturating_add(finding.count);
        if let Some(stage) = a.joined.sources.get(f.source).and_then(|s| s.stage) {
            stages.push(stage);
        }
    }
    // Each stage once, in the order first found (a set, not a scan per finding: linear in
    // findings however many stages found one).
    for (_, stages) in out.values_mut() {
        let mut seen: HashSet<*const Stage> = HashSet::new();
        stages.retain(|s| seen.insert(*s as *const Stage));
    }
    out
}

fn resource_changes(a: &[KernelResources], b: &[KernelResources]) -> Vec<ResourceChange> {
    type Key = (Option<String>, Option<String>, String);
    let key = |r: &KernelResources| -> Key { (r.config.clone(), r.arch.clone(), r.kernel.clone()) };
    let fields = |r: &KernelResources| -> Vec<(&'static str, Option<u64>)> {
        vec![
            ("registers", r.registers.map(u64::from)),
            ("spill_store_bytes", r.spill_store_bytes),
            ("spill_load_bytes", r.spill_load_bytes),
            ("static_shared_bytes", r.static_shared_bytes),
            ("stack_frame_bytes", r.stack_frame_bytes),
            ("hmma", r.hmma),
            ("hgmma", r.hgmma),
            ("ldl", r.ldl),
            ("stl", r.stl),
            ("bpt_trap", r.bpt_trap),
            (
                "blocks_per_sm",
                r.occupancy.map(|o| u64::from(o.blocks_per_sm)),
            ),
        ]
    };
    let map_a: BTreeMap<Key, &KernelResources> = a.iter().map(|r| (key(r), r)).collect();
    let map_b: BTreeMap<Key, &KernelResources> = b.iter().map(|r| (key(r), r)).collect();
    let keys: BTreeSet<&Key> = map_a.keys().chain(map_b.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        let fa = map_a.get(k).map(|r| fields(r));
        let fb = map_b.get(k).map(|r| fields(r));
        let (config, arch, kernel) = k.clone();
        match (fa, fb) {
            (Some(fa), Some(fb)) => {
                // Only figures both runs measured are compared: a stage one run did not have
                // is not a change.
                for ((name, before), (_, after)) in fa.into_iter().zip(fb) {
                    if before.is_some() && after.is_some() && before != after {
                        out.push(ResourceChange {
                            config: config.clone(),
                            arch: arch.clone(),
                            kernel: kernel.clone(),
                            field: name.to_string(),
                            before,
                            after,
                        });
                    }
                }
            }
            (a_side, b_side) => out.push(ResourceChange {
                config,
                arch,
                kernel,
                field: if a_side.is_some() { "removed" } else { "added" }.to_string(),
                before: a_side.map(|_| 1),
                after: b_side.map(|_| 1),
            }),
        }
    }
    out
}
