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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::json;

use crate::analysis::{Analysis, VerdictKind, analyze};
use crate::diagnosis::{Confidence, Diagnosis, EvidenceItem, Level};
use crate::noise::{Judgement, NoiseOptions, judge};
use crate::resources::{KernelResources, kernel_resources};
use crate::rules::RuleId;
use crate::tables::Case;
use crate::text::{fixed, relative_path, scrub, short_hash};
use crate::{evidence::Evidence, run::Run, run::Stage, run::StageStatus};

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

/// What `runner diff` may be told.
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
    /// Why timings were not compared, when they were not.
    pub timing_refused: Option<String>,
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

    let resources = resource_changes(&kernel_resources(&aa.joined), &kernel_resources(&ba.joined));
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
    diff.verdict = if !diff.missing.is_empty() {
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

/// Why timings of the two runs must not be compared, unless the options allow it.
fn refuse_timing(a: &Run, b: &Run, opts: &DiffOptions) -> Option<String> {
    if a.id == b.id {
        return Some(format!(
            "A and B are one run (`{}`): timings not compared",
            a.id
        ));
    }
    if opts.allow_different_gpu {
        return None;
    }
    let gpu = |r: &Run| r.environment.gpus.first().map(|g| g.name.clone());
    let mut why = Vec::new();
    if gpu(a) != gpu(b) {
        why.push(format!(
            "GPUs differ ({} vs {})",
            gpu(a).unwrap_or_else(|| "none".into()),
            gpu(b).unwrap_or_else(|| "none".into())
        ));
    }
    if a.environment.driver != b.environment.driver {
        why.push(format!(
            "drivers differ ({} vs {})",
            a.environment
                .driver
                .clone()
                .unwrap_or_else(|| "none".into()),
            b.environment
                .driver
                .clone()
                .unwrap_or_else(|| "none".into())
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "{}: timings not compared (pass --allow-different-gpu to compare anyway)",
            why.join("; ")
        )
    })
}

/// A run's stages indexed once, so that placing every root cause and finding of a diff is linear
/// in stage records (a scan of every stage for each one made `runner diff` quadratic).
struct StageIndex<'a> {
    /// By log path.
    by_log: HashMap<&'a str, Vec<&'a Stage>>,
    /// By stage name and config.
    by_name: HashMap<(&'a str, Option<&'a str>), Vec<&'a Stage>>,
    /// By what makes a unit the same unit: name, kind, config, arch and case.
    by_unit: HashMap<UnitKey<'a>, Vec<&'a Stage>>,
}

type UnitKey<'a> = (
    &'a str,
    crate::run::StageKind,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

fn unit_key(s: &Stage) -> UnitKey<'_> {
    (
        s.name.as_str(),
        s.kind,
        s.config.as_deref(),
        s.arch.as_deref(),
        s.unit.case.as_ref().map(|c| c.name.as_str()),
    )
}

impl<'a> StageIndex<'a> {
    fn of(run: &'a Run) -> StageIndex<'a> {
        let mut index = StageIndex {
            by_log: HashMap::new(),
            by_name: HashMap::new(),
            by_unit: HashMap::new(),
        };
        for s in &run.stages {
            for l in &s.logs {
                let stages = index.by_log.entry(l.path.as_str()).or_default();
                // A stage listing one path twice is still one stage.
                if !stages.last().is_some_and(|o| std::ptr::eq(*o, s)) {
                    stages.push(s);
                }
            }
            index
                .by_name
                .entry((s.name.as_str(), s.config.as_deref()))
                .or_default()
                .push(s);
            index.by_unit.entry(unit_key(s)).or_default().push(s);
        }
        index
    }
}

/// The stages of a run (`index`) that found a root cause: those whose logs its evidence quotes,
/// and for evidence that names no log (a program's exit status), the stages of that name and
/// config. In the run's order.
fn diagnosis_stages<'a>(d: &Diagnosis, index: &StageIndex<'a>) -> Vec<&'a Stage> {
    let mut out: Vec<&Stage> = Vec::new();
    let mut seen: HashSet<*const Stage> = HashSet::new();
    for e in &d.evidence {
        let found = if e.log.is_empty() {
            index.by_name.get(&(e.stage.as_str(), e.config.as_deref()))
        } else {
            index.by_log.get(e.log.as_str())
        };
        for s in found.into_iter().flatten() {
            if seen.insert(*s as *const Stage) {
                out.push(s);
            }
        }
    }
    out
}

/// Why `b` did not re-test what `stages` (of the other run) found: for each stage, unless `b`
/// (its index) ran the same stage on the same config, arch and case to a verdict. Empty when
/// all were re-tested; never empty when no stage is known to have found it.
fn untested(stages: &[&Stage], b: &StageIndex) -> Vec<String> {
    if stages.is_empty() {
        return vec!["no stage of A is known to have found it".to_string()];
    }
    let mut why = Vec::new();
    for s in stages {
        let unit = s.unit();
        let case = unit.case.as_ref().map(|c| c.name.as_str());
        let same: &[&Stage] = b.by_unit.get(&unit_key(s)).map_or(&[], Vec::as_slice);
        let place = [s.config.as_deref(), s.arch.as_deref(), case]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        let on = if place.is_empty() {
            s.name.clone()
        } else {
            format!("{} on {place}", s.name)
        };
        if same.is_empty() {
            why.push(format!("{on}: not run in B"));
        }
        for t in same {
            let state = match t.status {
                StageStatus::Passed | StageStatus::Findings => continue,
                StageStatus::Failed => "failed",
                StageStatus::TimedOut => "timed out",
                StageStatus::Skipped => "skipped",
                StageStatus::Inconclusive => "inconclusive",
                StageStatus::Interrupted => "interrupted",
            };
            let reason = t
                .reason
                .as_deref()
                .map(|r| format!(" ({})", r.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            why.push(format!("{on}: {state} in B{reason}"));
        }
    }
    why.dedup();
    why
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

/// The timings both runs have, judged; and how many of them are one measurement.
fn perf_changes(a: &Analysis, b: &Analysis, opts: &NoiseOptions) -> (Vec<PerfChange>, usize) {
    type Key = (Case, String, String, String);
    type Timing = (bool, parsers::harness::Bench, Option<String>);
    let timings = |an: &Analysis| -> BTreeMap<Key, Timing> {
        let mut out = BTreeMap::new();
        for r in &an.joined.results {
            let Some(bench) = &r.result.bench else {
                continue;
            };
            let baseline = crate::join::is_baseline(r.result);
            let implementation = if baseline {
                r.result.kernel.clone()
            } else {
                r.config.clone().unwrap_or_else(|| r.kernel.to_string())
            };
            let cached_from = an
                .joined
                .sources
                .get(r.source)
                .and_then(|s| s.stage)
                .and_then(|s| s.cached_from.clone());
            out.insert(
                (
                    Case::of(r.result),
                    implementation,
                    bench.cache.clone(),
                    bench.timing.clone(),
                ),
                (baseline, bench.clone(), cached_from),
            );
        }
        // A program's own benchmarks (pytest-benchmark, Google Benchmark): by config and name.
        for source in &an.joined.sources {
            let baseline = match source.kind {
                crate::run::StageKind::Bench => false,
                crate::run::StageKind::Baseline => true,
                _ => continue,
            };
            let cached_from = source.stage.and_then(|s| s.cached_from.clone());
            for t in &source.log.timings {
                let Some(bench) = program_bench(t) else {
                    continue;
                };
                let implementation = source.config.unwrap_or("program").to_string();
                out.insert(
                    (
                        Case::none(),
                        implementation,
                        bench.cache.clone(),
                        t.name.clone(),
                    ),
                    (baseline, bench, cached_from.clone()),
                );
            }
        }
        out
    };
    let ta = timings(a);
    let tb = timings(b);
    let origin = |an: &Analysis, cached: &Option<String>| {
        cached
            .clone()
            .or_else(|| an.joined.run.map(|r| r.id.clone()))
    };
    let mut out = Vec::new();
    let mut same_measurement = 0;
    for (key, (baseline, before, a_cached)) in &ta {
        let Some((_, after, b_cached)) = tb.get(key) else {
            continue;
        };
        // One measurement: a side served from the cache of the run the other was measured in.
        let cached = a_cached.is_some() || b_cached.is_some();
        if cached && origin(a, a_cached).is_some() && origin(a, a_cached) == origin(b, b_cached) {
            same_measurement += 1;
            continue;
        }
        let c = judge(before, after, opts);
        out.push(PerfChange {
            case: key.0.clone(),
            implementation: key.1.clone(),
            baseline: *baseline,
            cache: key.2.clone(),
            timing: key.3.clone(),
            a_p50_us: before.p50_us,
            b_p50_us: after.p50_us,
            change: c.change,
            noise: c.noise,
            judgement: c.judgement,
            reason: c.reason,
            test: c.test,
            a_cached_from: a_cached.clone(),
            b_cached_from: b_cached.clone(),
        });
    }
    (out, same_measurement)
}

/// A program's timing in the harness's terms, for the noise judgement: its median (else mean),
/// its spread from its standard deviation, its samples (its repetitions or rounds).
fn program_bench(t: &parsers::Timing) -> Option<parsers::harness::Bench> {
    let p50 = t.median_us.or(t.mean_us)?;
    Some(parsers::harness::Bench {
        cache: match t.format {
            parsers::Format::PytestBenchmark => "pytest-benchmark",
            parsers::Format::GoogleBenchmark => "Google Benchmark real_time",
            parsers::Format::Nvbench => "nvbench cold GPU time",
            parsers::Format::TextTimings => "text pattern",
            _ => "the program's",
        }
        .to_string(),
        timing: t.name.clone(),
        samples: t.samples.unwrap_or(1),
        min_us: t.min_us.unwrap_or(f64::NAN),
        p50_us: p50,
        p90_us: f64::NAN,
        p99_us: f64::NAN,
        mean_us: t.mean_us.unwrap_or(f64::NAN),
        stdev_us: t.stdev_us.unwrap_or(f64::NAN),
        tflops: f64::NAN,
        gbps: f64::NAN,
        sm_clock_mhz_before: None,
        sm_clock_mhz_after: None,
        throttled: None,
        samples_us: t.samples_us.clone(),
    })
}

fn perf_diagnoses(perf: &[PerfChange], b: &Run) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for p in perf.iter().filter(|p| !p.baseline) {
        let (rule, level, word) = match p.judgement {
            Judgement::Slower => (RuleId::PerfRegression, Level::Warning, "slower"),
            Judgement::Faster => (RuleId::PerfImprovement, Level::Note, "faster"),
            _ => continue,
        };
        // A baseline that moved the same way on the same case says the machine moved.
        let machine = perf.iter().any(|q| {
            q.baseline && q.case == p.case && q.timing == p.timing && q.judgement == p.judgement
        });
        let title = format!(
            "{} {} by {}% on {} ({} {})",
            p.implementation,
            word,
            fixed(p.change.abs() * 100.0, 1),
            p.case.label(),
            p.timing,
            p.cache
        );
        let key = format!(
            "{}|{}|{}|{}",
            p.case.label(),
            p.implementation,
            p.cache,
            p.timing
        );
        out.push(Diagnosis {
            rule,
            title,
            level,
            confidence: if machine { Confidence::Low } else { Confidence::High },
            kernel: None,
            config: Some(p.implementation.clone()),
            configs: vec![p.implementation.clone()],
            arch: None,
            location: None,
            call_site: None,
            helpers: Vec::new(),
            evidence: vec![EvidenceItem {
                stage: "bench".to_string(),
                config: Some(p.implementation.clone()),
                log: String::new(),
                summary: format!(
                    "p50 {} µs -> {} µs ({:+.1}%), {}",
                    crate::text::sig3(p.a_p50_us),
                    crate::text::sig3(p.b_p50_us),
                    p.change * 100.0,
                    match &p.test {
                        Some(t) => format!(
                            "{} (Mann-Whitney U, {} and {} samples)",
                            crate::noise::p_clause(t.p),
                            t.a_samples,
                            t.b_samples
                        ),
                        None => format!(
                            "noise {}% (the larger of the two runs')",
                            fixed(p.noise * 100.0, 1)
                        ),
                    }
                ),
                excerpt: Vec::new(),
            }],
            spans: Vec::new(),
            notes: vec![format!(
                "The p50 moved by {:+.1}%, {}.{}",
                p.change * 100.0,
                match &p.test {
                    Some(t) => format!(
                        "a significant change: the two runs' {} and {} samples differ with {} by \
                         a Mann-Whitney U test",
                        t.a_samples,
                        t.b_samples,
                        crate::noise::p_clause(t.p)
                    ),
                    None => format!(
                        "more than twice the measured noise ({}%)",
                        fixed(p.noise * 100.0, 1)
                    ),
                },
                if machine {
                    " The baseline moved the same way on this case: the machine, not the kernel, may have changed."
                } else {
                    ""
                }
            )],
            help: vec![if rule == RuleId::PerfRegression {
                format!(
                    "Compare the two runs' per-config resources (registers, spills, occupancy, \
                     HMMA counts) for {}; re-run the bench stage to confirm.",
                    p.implementation
                )
            } else {
                "Nothing to fix; keep the change.".to_string()
            }],
            fingerprint: short_hash(&[rule.as_str(), &key, &b.pipeline]),
            kernels: Vec::new(),
            hypothesis: None,
            figures: [
                ("change".to_string(), crate::text::round_json(p.change)),
                ("noise".to_string(), crate::text::round_json(p.noise)),
                ("a_p50_us".to_string(), crate::text::round_json(p.a_p50_us)),
                ("b_p50_us".to_string(), crate::text::round_json(p.b_p50_us)),
                ("baseline_moved".to_string(), json!(machine)),
            ]
            .into_iter()
            .collect(),
        });
    }
    out.sort_by(crate::fold::rank);
    out
}
