//! Harness and baseline JSON. The documents are built from the schema types themselves, as the
//! harness builds them, then read back through `parse`.

use parsers::harness::{
    Bench, Check, Device, HarnessOutput, HarnessResult, Mode, SCHEMA, Shape, Stress,
};
use parsers::{FindingKind, Format};

fn result(mode: Mode) -> HarnessResult {
    HarnessResult {
        mode,
        kernel: "attention_fwd_f16".into(),
        config: Some("d64_m128_n64_s2_w4".into()),
        shape: Shape {
            batch: 2,
            heads: 8,
            seq_len: 512,
            head_dim: 64,
        },
        dtype: "f16".into(),
        causal: false,
        launched: true,
        error: None,
        skipped: None,
        check: None,
        stress: None,
        bench: None,
        figures: Default::default(),
    }
}

fn document(results: Vec<HarnessResult>) -> String {
    serde_json::to_string_pretty(&HarnessOutput {
        schema: SCHEMA.into(),
        producer: "harness".into(),
        device: Some(Device {
            name: "NVIDIA H100 80GB HBM3".into(),
            ..Device::default()
        }),
        results,
    })
    .unwrap()
}

fn kinds(text: &str) -> Vec<FindingKind> {
    assert_eq!(parsers::detect(text), Some(Format::Harness));
    let log = parsers::parse(Format::Harness, text);
    assert!(log.complete);
    log.findings.iter().map(|f| f.kind).collect()
}

#[test]
fn a_passing_check_has_no_findings() {
    let mut r = result(Mode::Check);
    r.check = Some(Check {
        passed: true,
        max_abs_err: 1e-3,
        rel_l2_err: 1e-4,
        tolerance: 2e-2,
        nan_count: 0,
        unwritten: 0,
        canaries_corrupted: vec![],
    });
    assert_eq!(kinds(&document(vec![r])), []);
}

#[test]
fn every_failed_check_becomes_a_finding() {
    let mut r = result(Mode::Check);
    r.check = Some(Check {
        passed: false,
        max_abs_err: 3.5,
        rel_l2_err: 0.7,
        tolerance: 2e-2,
        nan_count: 12,
        unwritten: 4096,
        canaries_corrupted: vec!["o.after".into()],
    });
    let text = document(vec![r]);
    assert_eq!(
        kinds(&text),
        [
            FindingKind::WrongResult,
            FindingKind::NanOutput,
            FindingKind::UnwrittenOutput,
            FindingKind::CanaryCorrupted
        ]
    );
    let log = parsers::parse(Format::Harness, &text);
    let facts = log.findings[2]
        .facts
        .harness
        .as_ref()
        .expect("the result's facts");
    assert_eq!((facts.mode, facts.unwritten), (Mode::Check, Some(4096)));
    assert_eq!(log.results.len(), 1);
}

#[test]
fn launch_errors_and_stress_failures() {
    let mut failed = result(Mode::Once);
    failed.launched = false;
    failed.error = Some("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure".into());
    let mut stress = result(Mode::Stress);
    stress.stress = Some(Stress {
        launches: 20,
        sync: "end".into(),
        mismatched_launches: 3,
        first_failure: Some(7),
        failure_kind: Some("mismatch".into()),
        canaries_corrupted: vec![],
    });
    let text = document(vec![failed, stress]);
    assert_eq!(
        kinds(&text),
        [FindingKind::LaunchError, FindingKind::Nondeterminism]
    );
    let log = parsers::parse(Format::Harness, &text);
    let facts = log.findings[1]
        .facts
        .harness
        .as_ref()
        .expect("the result's facts");
    assert_eq!(facts.first_failing_launch, Some(7));
    assert_eq!(facts.mismatched_launches, Some(3));
}

#[test]
fn bench_results_become_metrics() {
    let mut r = result(Mode::Bench);
    r.bench = Some(Bench {
        cache: "warm".into(),
        timing: "events".into(),
        samples: 100,
        min_us: 10.0,
        p50_us: 12.5,
        p90_us: 13.0,
        p99_us: 15.0,
        mean_us: 12.7,
        stdev_us: 0.5,
        tflops: 120.0,
        gbps: 900.0,
        sm_clock_mhz_before: None,
        sm_clock_mhz_after: None,
        throttled: None,
        samples_us: Vec::new(),
    });
    let log = parsers::parse(Format::Harness, &document(vec![r]));
    let p50 = log.metrics.iter().find(|m| m.name == "p50_us").unwrap();
    assert_eq!((p50.value, p50.unit.as_deref()), (12.5, Some("us")));
}

#[test]
fn real_harness_documents() {
    let ok = crate::parse_fixture("harness/check_attention.json");
    assert!(ok.complete && ok.findings.is_empty());
    assert_eq!(ok.results[0].check.as_ref().map(|c| c.passed), Some(true));

    let tail = crate::parse_fixture("harness/check_tail_off_by_one.json");
    assert_eq!(tail.findings[0].kind, FindingKind::WrongResult);
    assert_eq!(
        tail.findings[0].kernel.as_deref(),
        Some("attention_fwd_f16")
    );

    let stress = crate::parse_fixture("harness/stress_wmma_local_q.json");
    let kinds: Vec<_> = stress.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::LaunchError]);
    assert!(
        stress.findings[0]
            .message
            .starts_with("CUDA_ERROR_LAUNCH_FAILED")
    );

    let sdpa = crate::parse_fixture("harness/sdpa_b2h8s512d64.json");
    assert!(sdpa.complete);
    assert!(
        sdpa.metrics
            .iter()
            .any(|m| m.name == "p50_us" && m.kernel.starts_with("sdpa:"))
    );
}
