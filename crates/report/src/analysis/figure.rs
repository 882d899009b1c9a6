//! A coverage row's key figure: what its stage measured or found, in a few words.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::join::Joined;
use crate::kernel_id::KernelId;
use crate::run::StageKind;
use crate::text::plural;

/// Where the program's longest profiled kernel stands, for a clean verdict: clean is no cause found, not
/// at the limit (" Its longest kernel, reduce3<int>, runs at 52.1% of DRAM bandwidth.").
pub(super) fn longest_against_the_limit(
    joined: &Joined,
    ncu: &[crate::resources::NcuSummary],
) -> String {
    ncu.iter()
        .filter(|n| n.limit.is_some())
        // The program's own: a framework's kernel it launched (PyTorch's softmax as its
        // reference) is measured, but the verdict speaks of the program.
        .filter(|n| joined.is_own(n.config.as_deref(), &KernelId::of(&n.kernel)))
        .max_by(|a, b| {
            a.duration_us
                .unwrap_or(0.0)
                .total_cmp(&b.duration_us.unwrap_or(0.0))
        })
        .and_then(|n| {
            let p = n.limit.as_ref()?;
            Some(format!(
                " Its longest kernel, {}, runs {}.",
                crate::text::short_kernel(&n.kernel),
                p.phrase()
            ))
        })
        .unwrap_or_default()
}

/// A stage's key figure from its logs.
/// A launch search in a few words: `clean at 64 launches`, `clean at 8, fails at 9`.
pub(super) fn search_figure(search: &crate::run::LaunchSearch) -> String {
    let own = match (search.clean_at, search.fails_at) {
        (Some(clean), Some(fails)) => format!("clean at {clean}, fails at {fails}"),
        (None, Some(fails)) => format!("fails at {fails}"),
        (Some(clean), None) => format!("clean at {clean} launches"),
        (None, None) => "no launch ran".to_string(),
    };
    match search.memcheck.as_ref().map(|m| (m.clean_at, m.fails_at)) {
        Some((Some(clean), Some(fails))) => {
            format!("{own}; memcheck clean at {clean}, errors from {fails}")
        }
        Some((None, Some(fails))) => format!("{own}; memcheck errors from {fails}"),
        _ => own,
    }
}

pub(super) fn figure(joined: &Joined, kind: StageKind, logs: &[&str]) -> String {
    let sources = sources_of(joined, logs);
    if sources.is_empty() {
        // The baseline's profile is joined on its own.
        if let Some(baseline) = joined.baseline.as_deref()
            && !sources_of(baseline, logs).is_empty()
        {
            let kernels = crate::resources::ncu_summaries(baseline).len();
            return format!("the baseline's kernels: {} profiled", kernels);
        }
        return "no log".to_string();
    }
    let results = || joined.results_of(&sources);
    match kind {
        StageKind::Compile => compile_figure(joined, &sources),
        StageKind::Sass => sass_figure(joined, &sources),
        k if k.is_sanitizer() => sanitizer_figure(joined, &sources, k),
        StageKind::Check => {
            let checks: Vec<_> = results().filter_map(|r| r.result.check.as_ref()).collect();
            if checks.is_empty() {
                if let Some(t) = program_tally(joined, &sources) {
                    return format!("{t}{}", tests_note(joined, &sources));
                }
                return error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no check result".to_string());
            }
            let passed = checks.iter().filter(|c| c.passed).count();
            format!("{passed}/{} passed", checks.len())
        }
        StageKind::Stress => {
            let mut parts = Vec::new();
            for r in results() {
                if let Some(s) = &r.result.stress {
                    parts.push(match s.first_failure {
                        Some(n) => format!("fails at launch {n}/{}", s.launches),
                        None if s.mismatched_launches > 0 => {
                            format!("{}/{} differ", s.mismatched_launches, s.launches)
                        }
                        None => format!("{} launches ok", s.launches),
                    });
                }
            }
            if parts.is_empty() {
                error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no stress result".to_string())
            } else {
                parts.join("; ")
            }
        }
        StageKind::Bench | StageKind::Baseline => {
            let benches: Vec<_> = results().filter_map(|r| r.result.bench.as_ref()).collect();
            if benches.is_empty() {
                // A user's program's own benchmark timings (pytest-benchmark, Google Benchmark).
                let timings: usize = sources
                    .iter()
                    .filter_map(|&i| joined.source(i))
                    .map(|s| s.log.timings.len())
                    .sum();
                if timings > 0 {
                    return plural(timings as u64, "timing", "timings");
                }
                let skipped = results().filter(|r| r.result.skipped.is_some()).count();
                if skipped > 0 {
                    return format!("{skipped} skipped");
                }
                return error_figure(results().map(|r| r.result))
                    .unwrap_or_else(|| "no timing".to_string());
            }
            let best = benches.iter().map(|b| b.tflops).fold(0.0f64, f64::max);
            format!(
                "{}, best {} TFLOP/s",
                plural(benches.len() as u64, "timing", "timings"),
                crate::text::sig3(best)
            )
        }
        StageKind::Profile => profile_figure(joined, &sources),
        StageKind::Report => "rendered".to_string(),
        _ => String::new(),
    }
}

/// A compile stage's figure: its compile errors, or the target kernels' most registers and
/// spills with the warnings.
fn compile_figure(joined: &Joined, sources: &[usize]) -> String {
    let findings = || joined.findings_of(sources);
    let errors = findings()
        .filter(|f| f.finding.kind == parsers::FindingKind::CompileError)
        .count();
    if errors > 0 {
        return plural(errors as u64, "compile error", "compile errors");
    }
    let kernels: Vec<_> = joined
        .kernels_with_resources_from(sources)
        .filter(|k| joined.is_target(&k.name))
        .collect();
    let regs = kernels.iter().filter_map(|k| k.registers()).max();
    let spills: Option<u64> = kernels.iter().filter_map(|k| k.spill_bytes()).max();
    let warnings = findings()
        .filter(|f| f.finding.severity == parsers::Severity::Warning)
        .count();
    let mut parts = Vec::new();
    if let Some(r) = regs {
        parts.push(format!("{r} regs"));
    }
    parts.push(match spills {
        Some(s) => format!("{s} B spilled"),
        None => "spills unknown".to_string(),
    });
    if warnings > 0 {
        parts.push(plural(warnings as u64, "warning", "warnings"));
    }
    parts.join(", ")
}

/// A SASS stage's figure: the target kernels' MMA, local-memory and trap instructions.
fn sass_figure(joined: &Joined, sources: &[usize]) -> String {
    let kernels: Vec<_> = joined
        .kernels_with_sass_from(sources)
        .filter(|k| joined.is_target(&k.name))
        .collect();
    let sum = |f: fn(&parsers::SassCounts) -> u64| {
        kernels
            .iter()
            .filter_map(|k| k.sass)
            .map(f)
            .fold(0u64, u64::saturating_add)
    };
    let mma = sum(|s| s.hmma.saturating_add(s.hgmma).saturating_add(s.imma));
    let local = sum(|s| s.ldl.saturating_add(s.stl));
    let traps = sum(|s| s.bpt_trap);
    let mut text = format!("{mma} MMA, {local} LDL/STL");
    if traps > 0 {
        text.push_str(&format!(", {traps} BPT.TRAP"));
    }
    text
}

/// A sanitizer stage's figure: its errors (racecheck's with warnings and hazards), those not
/// printed, and whether a log lacks its summary.
fn sanitizer_figure(joined: &Joined, sources: &[usize], k: StageKind) -> String {
    let findings = || joined.findings_of(sources);
    let logs: Vec<&parsers::ParsedLog> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .filter(|s| s.kind.is_sanitizer())
        .map(|s| s.log)
        .collect();
    if logs.is_empty() {
        return "no sanitizer log".to_string();
    }
    let records: u64 = findings()
        .filter(|f| {
            joined
                .source(f.source)
                .is_some_and(|s| s.kind.is_sanitizer())
        })
        .map(|f| f.finding.count)
        .fold(0, u64::saturating_add);
    let reported: Option<u64> = logs
        .iter()
        .map(|l| l.reported_errors)
        .try_fold(0u64, |acc, x| x.map(|x| acc.saturating_add(x)));
    let n = reported.unwrap_or(records);
    let unprinted: u64 = logs
        .iter()
        .map(|l| l.unprinted_errors)
        .fold(0, u64::saturating_add);
    let mut text = if k == StageKind::Racecheck {
        let hazards: u64 = findings()
            .filter(|f| f.finding.kind == parsers::FindingKind::Race)
            .map(|f| f.finding.facts.race_hazards().unwrap_or(f.finding.count))
            .fold(0, u64::saturating_add);
        let warnings: u64 = logs
            .iter()
            .filter_map(|l| l.reported_warnings)
            .fold(0, u64::saturating_add);
        if n.saturating_add(warnings) == 0 && hazards == 0 {
            "0 hazards".to_string()
        } else {
            format!(
                "{}, {} ({})",
                plural(n, "error", "errors"),
                plural(warnings, "warning", "warnings"),
                plural(hazards, "hazard", "hazards")
            )
        }
    } else {
        plural(n, "error", "errors")
    };
    if unprinted > 0 {
        text.push_str(&format!(" ({unprinted} not printed)"));
    }
    if logs.iter().any(|l| !l.complete) {
        text.push_str(", no summary");
    }
    text
}

/// A profile stage's figure: each profiled kernel with its launches, the metrics and source
/// lines counted, the build's kernels it did not profile, and the kernels not the program's own.
fn profile_figure(joined: &Joined, sources: &[usize]) -> String {
    // Each profiled kernel with its launches (ncu's launch ids); a source page names
    // its kernels without them.
    let mut launches: BTreeMap<KernelId, BTreeSet<u64>> = BTreeMap::new();
    for m in joined.metrics_of(sources) {
        let ids = launches.entry(m.kernel.clone()).or_default();
        ids.extend(m.metric.launch);
    }
    let mut lines = 0;
    for s in sources.iter().filter_map(|&i| joined.source(i)) {
        lines += s.log.source_lines.len();
        for function in s.log.source_lines.iter().map(|l| &l.function) {
            launches.entry(KernelId::of(function)).or_default();
        }
    }
    // The kernels ncu measured that the program does not own (a framework's).
    let config = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .find_map(|s| s.config);
    let (launches, foreign): (BTreeMap<_, _>, BTreeMap<_, _>) = launches
        .into_iter()
        .partition(|(kernel, _)| joined.is_own(config, kernel));
    let kernels: Vec<KernelId> = launches.keys().cloned().collect();
    let n = joined.metrics_of(sources).count();
    // The kernels the config's build defined that no profiled launch of its program
    // ran (a harness unit launches one kernel by choice).
    let configs: Vec<Option<&str>> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .filter(|s| {
            s.stage
                .is_some_and(|st| st.unit().target == crate::run::TargetKind::Program)
        })
        .map(|s| s.config)
        .collect();
    let mut idle: Vec<KernelId> = joined
        .kernels
        .iter()
        .filter(|k| k.resources.is_some() && configs.contains(&k.config.as_deref()))
        .map(|k| k.name.clone())
        .filter(|name| !kernels.contains(name))
        .collect();
    idle.sort();
    idle.dedup();
    let named: Vec<String> = launches
        .iter()
        .map(|(kernel, ids)| match ids.len() {
            0 => kernel.to_string(),
            k => format!("{kernel} ({})", plural(k as u64, "launch", "launches")),
        })
        .collect();
    let mut counted = Vec::new();
    if n > 0 {
        counted.push(plural(n as u64, "metric", "metrics"));
    }
    if lines > 0 {
        counted.push(plural(lines as u64, "source line", "source lines"));
    }
    let mut text = if kernels.is_empty() {
        "no kernel profiled".to_string()
    } else {
        format!("profiled {}; {}", named.join(", "), counted.join(", "))
    };
    // A library builds many instantiations its program never launches: a few named,
    // the rest counted. Where ncu was told which kernels or launches to profile, the
    // others may well have run: not profiled, not "never launched".
    let filtered = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .filter_map(|s| s.stage)
        .any(|st| st.command.iter().any(|a| profile_filter(a)));
    let idle_word = if filtered {
        "not profiled"
    } else {
        "never launched"
    };
    const NAMED_IDLE: usize = 6;
    if idle.len() > NAMED_IDLE {
        let shown: Vec<&str> = idle.iter().take(NAMED_IDLE).map(KernelId::as_str).collect();
        text.push_str(&format!(
            "; {idle_word}: {} kernels of the build ({} and {} more)",
            idle.len(),
            shown.join(", "),
            idle.len() - NAMED_IDLE
        ));
    } else if !idle.is_empty() {
        text.push_str(&format!("; {idle_word}: {}", idle.join(", ")));
    }
    if !foreign.is_empty() {
        let names: Vec<KernelId> = foreign.into_keys().collect();
        text.push_str(&format!(
            "; also measured, not the program's own: {}",
            names.join(", ")
        ));
    }
    text
}

fn error_figure<'r>(
    results: impl Iterator<Item = &'r parsers::harness::HarnessResult>,
) -> Option<String> {
    results
        .filter_map(|r| r.error.as_deref())
        .next()
        .map(|e| e.split(':').next().unwrap_or(e).trim().to_string())
}

/// A countable key figure: sanitizer errors, or checks passed of checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub count: u64,
    /// The total `count` is out of (checks run), when it is a share.
    pub of: Option<u64>,
    /// `errors` or `passed`.
    pub unit: &'static str,
}

impl Tally {
    /// Sums tallies of one unit; `None` when they differ in unit or there are none.
    pub fn sum(tallies: &[Option<Tally>]) -> Option<Tally> {
        let first = (*tallies.first()?)?;
        let mut total = Tally {
            count: 0,
            of: first.of.map(|_| 0),
            unit: first.unit,
        };
        for t in tallies {
            let t = (*t)?;
            if t.unit != first.unit || t.of.is_some() != first.of.is_some() {
                return None;
            }
            total.count = total.count.saturating_add(t.count);
            total.of = total.of.zip(t.of).map(|(a, b)| a.saturating_add(b));
        }
        Some(total)
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.of {
            Some(of) => write!(f, "{}/{of} {}", self.count, self.unit),
            None if self.unit == "errors" => f.write_str(&plural(self.count, "error", "errors")),
            None => write!(f, "{} {}", self.count, self.unit),
        }
    }
}

/// The checks a user's program reported (`exhibit.results/1`) in these sources, as passed of
/// run; `None` when there are none.
pub(super) fn program_tally(joined: &Joined, sources: &[usize]) -> Option<Tally> {
    let checks: Vec<bool> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .flat_map(|s| {
            // A test framework's cases (JUnit XML), those that ran.
            let tests = s
                .log
                .tests
                .iter()
                .filter(|t| t.outcome != parsers::TestOutcome::Skipped)
                .map(|t| t.outcome == parsers::TestOutcome::Passed);
            s.log.checks.iter().map(|c| c.passed).chain(tests)
        })
        .collect();
    if checks.is_empty() {
        return None;
    }
    Some(Tally {
        count: checks.iter().filter(|p| **p).count() as u64,
        of: Some(checks.len() as u64),
        unit: "passed",
    })
}

/// What a test framework's cases add to a check's count: those skipped, and the slowest few
/// that ran (`; 2 skipped; slowest: test_a 1.20 s, test_b 0.41 s`).
pub(super) fn tests_note(joined: &Joined, sources: &[usize]) -> String {
    let tests: Vec<&parsers::TestCase> = sources
        .iter()
        .filter_map(|&i| joined.source(i))
        .flat_map(|s| &s.log.tests)
        .collect();
    let mut note = String::new();
    let skipped = tests
        .iter()
        .filter(|t| t.outcome == parsers::TestOutcome::Skipped)
        .count();
    if skipped > 0 {
        note.push_str(&format!("; {skipped} skipped"));
    }
    let mut timed: Vec<(&str, f64)> = tests
        .iter()
        .filter(|t| t.outcome != parsers::TestOutcome::Skipped)
        .filter_map(|t| Some((t.id.as_str(), t.time_s?)))
        .filter(|(_, s)| *s >= 0.005)
        .collect();
    timed.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !timed.is_empty() {
        let slowest: Vec<String> = timed
            .iter()
            .take(3)
            .map(|(id, s)| format!("{} {s:.2} s", crate::text::md_code(id)))
            .collect();
        note.push_str(&format!("; slowest: {}", slowest.join(", ")));
    }
    note
}

/// An Nsight Compute argument that chooses which kernels or launches it profiles.
pub(super) fn profile_filter(arg: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    matches!(
        name,
        "-k" | "--kernel-name"
            | "--kernel-id"
            | "--kernel-regex"
            | "-c"
            | "--launch-count"
            | "-s"
            | "--launch-skip"
            | "--launch-skip-before-match"
            | "--nvtx-include"
    )
}

/// The indices of the joined sources read from `logs`.
pub(super) fn sources_of(joined: &Joined, logs: &[&str]) -> Vec<usize> {
    joined.sources_at(logs)
}
