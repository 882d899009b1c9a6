//! How a unit's ending and evidence become its status and reason.

use std::time::Duration;

use parsers::{Format, Severity};
use report::{StageKind, StageStatus};

use crate::pipeline::config::{self, ExitCodes};
use crate::process::exec::Ending;

use super::SANITIZER_ERROR_EXITCODE;
use super::gather::Gathered;

/// A unit's status and the reason that goes with it.
type Verdict = (StageStatus, Option<String>);

/// Turns a unit's ending and evidence into its status and reason. A program that fails is a
/// finding (the program is what is under test) unless its exit status says it did not test
/// (`exits`); a tool that breaks is a failure.
pub fn decide(
    kind: StageKind,
    tool: &str,
    timeout: Duration,
    ending: Ending,
    evidence: &Gathered,
    exits: &ExitCodes,
) -> (StageStatus, Option<String>) {
    let code = match exit_code(kind, tool, timeout, ending, evidence) {
        Ok(code) => code,
        Err(verdict) => return verdict,
    };
    // The program said it did not test: it could not here, or it broke before it did.
    if kind != StageKind::Compile
        && code != SANITIZER_ERROR_EXITCODE
        && let Some(verdict) = did_not_test(code, evidence, exits)
    {
        return verdict;
    }
    let findings = findings(evidence);
    match kind {
        StageKind::Compile if code != 0 => {
            match find_kind(evidence, parsers::FindingKind::CompileError) {
                Some(message) => (
                    StageStatus::Findings,
                    Some(format!("compile error: {message}")),
                ),
                None => (
                    StageStatus::Failed,
                    Some(format!("{tool} exited with status {code}{}", how(evidence))),
                ),
            }
        }
        StageKind::Compile => verdict_from_findings(&findings),
        kind if config::is_sanitizer(kind) => sanitizer_verdict(kind, code, evidence),
        StageKind::Check | StageKind::Stress | StageKind::Bench => {
            program_verdict(kind, code, evidence, &findings)
        }
        StageKind::Baseline => baseline_verdict(code, evidence),
        StageKind::Profile => profile_verdict(code, evidence),
        _ if code != 0 => (
            StageStatus::Failed,
            Some(format!(
                "{tool} exited with status {code}{}",
                stderr_tail(evidence)
            )),
        ),
        _ => verdict_from_findings(&findings),
    }
}

/// How the program failed, in its own words (`: ` and its failure line), else nothing.
fn how(evidence: &Gathered) -> String {
    crate::execution::target::failure_line(&evidence.program_output, "")
        .map(|l| format!(": {l}"))
        .unwrap_or_default()
}

/// The last line of stderr (`: ` and the line), else nothing.
fn stderr_tail(evidence: &Gathered) -> String {
    evidence
        .stderr_last
        .as_deref()
        .map(|l| format!(": {l}"))
        .unwrap_or_default()
}

/// The process's exit code, or the verdict of an ending that has none: timed out,
/// interrupted, killed by a signal.
fn exit_code(
    kind: StageKind,
    tool: &str,
    timeout: Duration,
    ending: Ending,
    evidence: &Gathered,
) -> Result<i32, Verdict> {
    match ending {
        Ending::TimedOut => Err((
            StageStatus::TimedOut,
            Some(format!(
                "{tool} still running after {}: its process group was killed",
                humantime::format_duration(timeout)
            )),
        )),
        Ending::Interrupted => Err((StageStatus::Interrupted, Some("interrupted".into()))),
        Ending::OutputRunaway => Err((
            StageStatus::Failed,
            Some(format!("{tool} {}", crate::process::exec::runaway_words())),
        )),
        Ending::Signaled(signal) if kind == StageKind::Compile => Err((
            StageStatus::Failed,
            Some(format!("{tool} killed by {}", signal_name(signal))),
        )),
        Ending::Signaled(signal) => Err((
            StageStatus::Findings,
            Some(format!(
                "the program was killed by {}{}",
                signal_name(signal),
                how(evidence)
            )),
        )),
        Ending::Exited(code) => Ok(code),
    }
}

/// The verdict of a program that did not test: it never started, its exit status says it
/// could not test here (`exits.skipped`), or that it broke before it did (`exits.broken`).
fn did_not_test(code: i32, evidence: &Gathered, exits: &ExitCodes) -> Option<Verdict> {
    // A program that never started is a broken pipeline, not evidence about a kernel.
    if code != 0
        && let Some(line) =
            crate::execution::target::could_not_start(&evidence.program_output, code)
    {
        return Some((
            StageStatus::Failed,
            Some(format!("the program could not start: {line}")),
        ));
    }
    if exits.skipped.contains(&code) {
        return Some((
            StageStatus::Skipped,
            Some(
                evidence
                    .stderr_last
                    .clone()
                    .unwrap_or_else(|| format!("the program could not test here (exit {code})")),
            ),
        ));
    }
    if exits.broken.contains(&code) {
        return Some((
            StageStatus::Failed,
            Some(format!(
                "the program exited with status {code}{}",
                stderr_tail(evidence)
            )),
        ));
    }
    None
}

/// What the program's results say went wrong: the harness's own words first, else the first
/// error-level finding of its results.
fn result_failure(evidence: &Gathered) -> Option<String> {
    result_problem(evidence).or_else(|| {
        evidence
            .parsed
            .iter()
            .filter(|(_, p)| {
                matches!(
                    p.format,
                    Format::ProgramResults | Format::Harness | Format::JUnit
                )
            })
            .flat_map(|(_, p)| &p.findings)
            .find(|f| f.severity == Severity::Error)
            .map(|f| f.message.clone())
    })
}

/// A sanitizer unit's verdict: its error count and summary line, then the program's own.
fn sanitizer_verdict(kind: StageKind, code: i32, evidence: &Gathered) -> Verdict {
    let log = evidence
        .parsed
        .iter()
        .find(|(_, p)| p.format == Format::ComputeSanitizer)
        .map(|(_, p)| p);
    let complete = log.is_some_and(|p| p.complete);
    let errors = log.and_then(|p| p.reported_errors).unwrap_or(0);
    if code == SANITIZER_ERROR_EXITCODE || errors > 0 {
        return (
            StageStatus::Findings,
            Some(format!(
                "compute-sanitizer reported {}",
                report::text::plural(errors, "error", "errors")
            )),
        );
    }
    if !complete && code == 0 {
        return (
            StageStatus::Inconclusive,
            Some("compute-sanitizer's summary line is missing".into()),
        );
    }
    if !complete {
        return (
            StageStatus::Failed,
            Some(format!(
                "compute-sanitizer exited with status {code} without its summary{}",
                how(evidence)
            )),
        );
    }
    if code != 0 {
        return (
            StageStatus::Findings,
            Some(format!(
                "the program failed (exit {code}) with no {} error{}",
                config::kind_name(kind),
                how(evidence)
            )),
        );
    }
    if let Some(blocker) = launch_blocker(evidence) {
        return (StageStatus::Inconclusive, Some(blocker));
    }
    if let Some(failure) = result_failure(evidence) {
        return (StageStatus::Findings, Some(failure));
    }
    (StageStatus::Passed, None)
}

/// A check, stress or bench unit's verdict: its exit status, launch and results, and for a
/// bench, its timings.
fn program_verdict(
    kind: StageKind,
    code: i32,
    evidence: &Gathered,
    findings: &[&parsers::Finding],
) -> Verdict {
    if code != 0 {
        return (
            StageStatus::Findings,
            Some(result_failure(evidence).unwrap_or_else(|| {
                format!("the program exited with status {code}{}", how(evidence))
            })),
        );
    }
    if let Some(blocker) = launch_blocker(evidence) {
        return (StageStatus::Inconclusive, Some(blocker));
    }
    if let Some(failure) = result_failure(evidence) {
        return (StageStatus::Findings, Some(failure));
    }
    if kind == StageKind::Bench
        && let Some(problem) = &evidence.pattern_problem
    {
        return (StageStatus::Inconclusive, Some(problem.clone()));
    }
    let timings = evidence
        .parsed
        .iter()
        .map(|(_, p)| p.timings.len() + p.results.iter().filter(|r| r.bench.is_some()).count())
        .sum::<usize>();
    if kind == StageKind::Bench && timings == 0 {
        return (
            StageStatus::Inconclusive,
            Some(
                "the program printed no timings in a known format (exhibit.harness/1, \
                 pytest-benchmark or Google Benchmark JSON, on stdout or in {out})"
                    .into(),
            ),
        );
    }
    verdict_from_findings(findings)
}

/// A baseline unit's verdict: its exit status, whether it skipped, and its timings.
fn baseline_verdict(code: i32, evidence: &Gathered) -> Verdict {
    if code != 0 {
        return (
            StageStatus::Failed,
            Some(format!(
                "the baseline exited with status {code}{}",
                how(evidence)
            )),
        );
    }
    if let Some(doc) = &evidence.harness
        && !doc.results.is_empty()
        && doc.results.iter().all(|r| r.skipped.is_some())
    {
        return (
            StageStatus::Skipped,
            doc.results.iter().find_map(|r| r.skipped.clone()),
        );
    }
    if let Some(problem) = &evidence.pattern_problem {
        return (StageStatus::Inconclusive, Some(problem.clone()));
    }
    if !evidence.program_results {
        return (
            StageStatus::Inconclusive,
            Some("the baseline printed no timings in a known format".into()),
        );
    }
    (StageStatus::Passed, None)
}

/// A profile unit's verdict: counter permission, the program's exit status, and ncu's metrics.
fn profile_verdict(code: i32, evidence: &Gathered) -> Verdict {
    if evidence.counters_denied {
        return (
            StageStatus::Skipped,
            Some("ncu cannot read performance counters (ERR_NVGPUCTRPERM)".into()),
        );
    }
    let metrics = evidence
        .parsed
        .iter()
        .filter(|(_, p)| p.format == Format::NcuCsv)
        .map(|(_, p)| p.metrics.len())
        .sum::<usize>();
    if code != 0 {
        (
            StageStatus::Findings,
            Some(result_failure(evidence).unwrap_or_else(|| {
                format!(
                    "the program failed under ncu (exit {code}){}",
                    how(evidence)
                )
            })),
        )
    } else if let Some(blocker) = launch_blocker(evidence) {
        (StageStatus::Inconclusive, Some(blocker))
    } else if metrics == 0 {
        (
            StageStatus::Inconclusive,
            Some("ncu reported no metrics (does the kernel filter match?)".into()),
        )
    } else {
        (StageStatus::Passed, None)
    }
}

fn findings(evidence: &Gathered) -> Vec<&parsers::Finding> {
    evidence
        .parsed
        .iter()
        .flat_map(|(_, p)| &p.findings)
        .filter(|f| matches!(f.severity, Severity::Error | Severity::Warning))
        .collect()
}

fn verdict_from_findings(findings: &[&parsers::Finding]) -> (StageStatus, Option<String>) {
    if findings.is_empty() {
        return (StageStatus::Passed, None);
    }
    let mut kinds: Vec<String> = findings
        .iter()
        .map(|f| {
            serde_json::to_value(f.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    let n = findings.len();
    (
        StageStatus::Findings,
        Some(format!(
            "{n} finding{}: {}",
            if n == 1 { "" } else { "s" },
            kinds.join(", ")
        )),
    )
}

fn find_kind(evidence: &Gathered, kind: parsers::FindingKind) -> Option<String> {
    evidence
        .parsed
        .iter()
        .flat_map(|(_, p)| &p.findings)
        .find(|f| f.kind == kind)
        .map(|f| f.message.clone())
}

/// Why the evidence cannot show the kernel ran: results (exhibit.harness/1) that say a launch
/// never happened.
fn launch_blocker(evidence: &Gathered) -> Option<String> {
    let doc = evidence.harness.as_ref()?;
    doc.results.iter().find(|r| !r.launched).map(|r| {
        format!(
            "the kernel never launched{}",
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        )
    })
}

/// A harness result that shows the kernel misbehaving.
fn result_problem(evidence: &Gathered) -> Option<String> {
    let doc = evidence.harness.as_ref()?;
    doc.results.iter().find_map(|r| {
        if let Some(error) = &r.error {
            return Some(format!("CUDA error: {error}"));
        }
        if let Some(check) = &r.check
            && !check.passed
        {
            return Some(format!(
                "check failed: max abs error {:.3e} (tolerance {:.1e}), {} NaN, {} unwritten{}",
                check.max_abs_err,
                check.tolerance,
                check.nan_count,
                check.unwritten,
                report::check_failure::within_tolerance_failure(r)
                    .map(|why| format!("; within tolerance, it failed on: {why}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(stress) = &r.stress
            && (stress.first_failure.is_some() || stress.mismatched_launches > 0)
        {
            return Some(format!(
                "stress failed at launch {} of {} ({}), {} mismatched",
                stress
                    .first_failure
                    .map_or_else(|| "?".into(), |n| n.to_string()),
                stress.launches,
                stress.failure_kind.as_deref().unwrap_or("mismatch"),
                stress.mismatched_launches
            ));
        }
        None
    })
}

/// `SIGSEGV`, or `signal N` for one nix does not know.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_string())
}
