//! How a unit's ending and evidence become its status: tool failure, application failure and
//! findings are never conflated. Driven through `runner::execution::stages::decide` with evidence
//! built the way `gather` builds it, for the GPU stages no test here can run for real, and the
//! built-in harness's exit codes (2 usage, 3 infrastructure, 4 no GPU).

use std::time::Duration;

use parsers::harness::{Check, HarnessOutput, HarnessResult, Mode, Shape};
use parsers::{Format, ParsedLog};
use report::{StageKind, StageStatus};
use runner::execution::stages::{Gathered, decide};
use runner::pipeline::config::ExitCodes;
use runner::process::exec::Ending;

fn check(
    kind: StageKind,
    ending: Ending,
    evidence: &Gathered,
    expect: (StageStatus, Option<&str>),
) {
    let (status, reason) = decide(
        kind,
        "tool",
        Duration::from_secs(60),
        ending,
        evidence,
        &ExitCodes::harness(),
    );
    assert_eq!(
        (status, reason.as_deref()),
        expect,
        "{kind:?} ending {ending:?}"
    );
}

fn result(launched: bool, check: Option<Check>) -> HarnessResult {
    HarnessResult {
        mode: Mode::Once,
        kernel: "attention_fwd_f16".into(),
        config: Some("c".into()),
        shape: Shape {
            batch: 2,
            heads: 8,
            seq_len: 512,
            head_dim: 64,
        },
        dtype: "f16".into(),
        causal: false,
        launched,
        error: (!launched)
            .then(|| "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid".into()),
        skipped: None,
        check,
        stress: None,
        bench: None,
        figures: Default::default(),
    }
}

fn harness(results: Vec<HarnessResult>) -> Option<HarnessOutput> {
    Some(HarnessOutput {
        schema: parsers::harness::SCHEMA.into(),
        producer: "harness".into(),
        device: None,
        results,
    })
}

/// Evidence from a sanitizer run whose summary was (or was not) complete.
fn sanitizer(complete: bool, launched: bool) -> Gathered {
    let mut log = ParsedLog::new(Format::ComputeSanitizer, None);
    log.complete = complete;
    log.reported_errors = Some(0);
    Gathered {
        parsed: vec![("memcheck.log".into(), log)],
        harness: harness(vec![result(launched, None)]),
        ..Gathered::default()
    }
}

#[test]
fn sanitizer_outcomes() {
    let clean = sanitizer(true, true);
    check(
        StageKind::Memcheck,
        Ending::Exited(0),
        &clean,
        (StageStatus::Passed, None),
    );
    check(
        StageKind::Memcheck,
        Ending::Exited(86),
        &clean,
        (
            StageStatus::Findings,
            Some("compute-sanitizer reported 0 errors"),
        ),
    );
    // One error is one error.
    let mut one = sanitizer(true, true);
    one.parsed[0].1.reported_errors = Some(1);
    check(
        StageKind::Racecheck,
        Ending::Exited(86),
        &one,
        (
            StageStatus::Findings,
            Some("compute-sanitizer reported 1 error"),
        ),
    );
    check(
        StageKind::Racecheck,
        Ending::Exited(0),
        &sanitizer(false, true),
        (
            StageStatus::Inconclusive,
            Some("compute-sanitizer's summary line is missing"),
        ),
    );
    check(
        StageKind::Initcheck,
        Ending::Exited(0),
        &sanitizer(true, false),
        (
            StageStatus::Inconclusive,
            Some(
                "the kernel never launched: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid",
            ),
        ),
    );
    check(
        StageKind::Synccheck,
        Ending::Exited(0),
        &Gathered::default(),
        (
            StageStatus::Inconclusive,
            Some("compute-sanitizer's summary line is missing"),
        ),
    );
    let no_gpu = Gathered {
        stderr_last: Some("no CUDA driver: libcuda.so.1 not found".into()),
        ..Gathered::default()
    };
    check(
        StageKind::Memcheck,
        Ending::Exited(4),
        &no_gpu,
        (
            StageStatus::Skipped,
            Some("no CUDA driver: libcuda.so.1 not found"),
        ),
    );
    let broken = Gathered {
        stderr_last: Some("========= Error: stand-in tool failure".into()),
        ..Gathered::default()
    };
    check(
        StageKind::Memcheck,
        Ending::Exited(255),
        &broken,
        (
            StageStatus::Failed,
            Some("compute-sanitizer exited with status 255 without its summary"),
        ),
    );
    check(
        StageKind::Memcheck,
        Ending::Signaled(9),
        &clean,
        (
            StageStatus::Findings,
            Some("the program was killed by SIGKILL"),
        ),
    );
    check(
        StageKind::Memcheck,
        Ending::TimedOut,
        &clean,
        (
            StageStatus::TimedOut,
            Some("tool still running after 1m: its process group was killed"),
        ),
    );
    check(
        StageKind::Memcheck,
        Ending::Interrupted,
        &clean,
        (StageStatus::Interrupted, Some("interrupted")),
    );
}

#[test]
fn harness_outcomes() {
    let failed_check = Gathered {
        harness: harness(vec![result(
            true,
            Some(Check {
                passed: false,
                max_abs_err: 0.5,
                rel_l2_err: 0.1,
                tolerance: 1e-3,
                nan_count: 3,
                unwritten: 0,
                canaries_corrupted: vec![],
            }),
        )]),
        ..Gathered::default()
    };
    let expected = "check failed: max abs error 5.000e-1 (tolerance 1.0e-3), 3 NaN, 0 unwritten";
    check(
        StageKind::Check,
        Ending::Exited(1),
        &failed_check,
        (StageStatus::Findings, Some(expected)),
    );
    // A failed comparison is a finding even if the exit status forgot to say so.
    check(
        StageKind::Check,
        Ending::Exited(0),
        &failed_check,
        (StageStatus::Findings, Some(expected)),
    );
    // A check that failed with its error within the tolerance says what else failed it.
    let mut repeat = result(
        true,
        Some(Check {
            passed: false,
            max_abs_err: 1.6e-4,
            rel_l2_err: 2.7e-4,
            tolerance: 1e-3,
            nan_count: 0,
            unwritten: 0,
            canaries_corrupted: vec![],
        }),
    );
    repeat.figures.repeat_elements_differing = Some(352256);
    repeat.figures.elements_total = Some(524288);
    check(
        StageKind::Check,
        Ending::Exited(1),
        &Gathered {
            harness: harness(vec![repeat]),
            ..Gathered::default()
        },
        (
            StageStatus::Findings,
            Some(
                "check failed: max abs error 1.600e-4 (tolerance 1.0e-3), 0 NaN, 0 unwritten; \
                 within tolerance, it failed on: a second launch on the same inputs gave \
                 different output in 352256 of 524288 elements",
            ),
        ),
    );
    let ok = Gathered {
        harness: harness(vec![result(true, None)]),
        ..Gathered::default()
    };
    check(
        StageKind::Check,
        Ending::Exited(0),
        &ok,
        (StageStatus::Passed, None),
    );
    // A bench whose results hold no timing measured nothing.
    check(
        StageKind::Bench,
        Ending::Exited(0),
        &ok,
        (
            StageStatus::Inconclusive,
            Some(
                "the program printed no timings in a known format (exhibit.harness/1, \
                 pytest-benchmark or Google Benchmark JSON, on stdout or in {out})",
            ),
        ),
    );
    // The harness's usage error is its own failure, not the kernel's.
    check(
        StageKind::Stress,
        Ending::Exited(2),
        &ok,
        (
            StageStatus::Failed,
            Some("the program exited with status 2"),
        ),
    );
}

#[test]
fn compile_and_profile_outcomes() {
    check(
        StageKind::Compile,
        Ending::Exited(0),
        &Gathered::default(),
        (StageStatus::Passed, None),
    );
    check(
        StageKind::Compile,
        Ending::Signaled(9),
        &Gathered::default(),
        (StageStatus::Failed, Some("tool killed by SIGKILL")),
    );
    let denied = Gathered {
        counters_denied: true,
        ..Gathered::default()
    };
    check(
        StageKind::Profile,
        Ending::Exited(1),
        &denied,
        (
            StageStatus::Skipped,
            Some("ncu cannot read performance counters (ERR_NVGPUCTRPERM)"),
        ),
    );
    let no_metrics = Gathered {
        parsed: vec![("ncu.csv".into(), ParsedLog::new(Format::NcuCsv, None))],
        harness: harness(vec![result(true, None)]),
        ..Gathered::default()
    };
    check(
        StageKind::Profile,
        Ending::Exited(0),
        &no_metrics,
        (
            StageStatus::Inconclusive,
            Some("ncu reported no metrics (does the kernel filter match?)"),
        ),
    );
}
