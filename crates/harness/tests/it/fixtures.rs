//! Real harness output captured on a GPU (tests/fixtures/gpu, see its meta.json): it must stay
//! readable as the shared schema, and it pins what the harness reported there.

use std::path::PathBuf;

use parsers::harness::{HarnessOutput, Mode, SCHEMA};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu")
}

fn load(name: &str) -> (HarnessOutput, serde_json::Value) {
    let path = fixture_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    (
        serde_json::from_value(value.clone()).expect("schema"),
        value,
    )
}

#[test]
fn every_captured_document_reads_as_the_schema() {
    let mut count = 0;
    for entry in std::fs::read_dir(fixture_dir()).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if path.extension().and_then(|e| e.to_str()) != Some("json") || name == "meta" {
            continue;
        }
        let (doc, value) = load(&name);
        assert_eq!(
            (doc.schema.as_str(), doc.producer.as_str()),
            (SCHEMA, "harness"),
            "{name}"
        );
        assert!(doc.device.is_some(), "{name}");
        let results = value["results"].as_array().cloned().unwrap_or_default();
        for (r, typed) in results.iter().zip(&doc.results) {
            // Every figure the harness recorded is typed: written back, the figures are the
            // document's `details` object less its nulls (a figure with no value).
            let mut recorded = r["details"].as_object().cloned().expect("a details object");
            recorded.retain(|_, v| !v.is_null());
            let written = serde_json::to_value(&typed.figures).expect("JSON");
            assert_eq!(written, serde_json::Value::Object(recorded), "{name}");
        }
        count += 1;
    }
    assert!(count >= 20, "only {count} fixtures");
}

#[test]
fn captured_checks_pass_on_the_kernel_and_fail_on_the_faults() {
    let (doc, _) = load("check_d64_m128_n64_s2_w4_f16");
    assert_eq!(doc.results.len(), 17);
    assert!(doc.results.iter().all(|r| {
        r.check
            .as_ref()
            .is_some_and(|c| c.passed && c.rel_l2_err < 1e-3)
    }));
    let (doc, _) = load("fault_nan_check");
    let c = doc.results[0].check.as_ref().expect("check");
    assert!(!c.passed && c.nan_count > 0);
    let (doc, _) = load("planted_after1_check");
    assert_eq!(
        doc.results[0]
            .check
            .as_ref()
            .expect("check")
            .canaries_corrupted,
        vec!["o.after"]
    );
    let (doc, _) = load("planted_before1_check");
    assert_eq!(
        doc.results[0]
            .check
            .as_ref()
            .expect("check")
            .canaries_corrupted,
        vec!["o.before"]
    );
}

#[test]
fn captured_stress_names_the_first_failing_launch() {
    let (doc, _) = load("planted_after3_stress_end");
    let st = doc.results[0].stress.as_ref().expect("stress");
    assert_eq!(
        (
            st.first_failure,
            st.failure_kind.as_deref(),
            st.sync.as_str()
        ),
        (Some(3), Some("canary"), "end")
    );
    let (doc, value) = load("fault_ring_stress_every");
    let r = &doc.results[0];
    assert!(
        r.error
            .as_deref()
            .is_some_and(|e| e.starts_with("CUDA_ERROR_ILLEGAL_ADDRESS"))
    );
    assert_eq!(
        r.stress.as_ref().and_then(|s| s.failure_kind.as_deref()),
        Some("error")
    );
    assert_eq!(value["results"][0]["details"]["cuda_error_sticky"], true);
    let (doc, _) = load("fault_wmma_check");
    assert!(
        doc.results[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("unspecified launch failure"))
    );
    assert!(doc.results[1..].iter().all(|r| r.skipped.is_some()));
}

#[test]
fn captured_bench_statistics_are_ordered() {
    for name in [
        "bench_seed_warm_events",
        "bench_seed_warm_graph",
        "bench_seed_cold_events",
        "bench_4k_d128_bf16",
    ] {
        let (doc, _) = load(name);
        let r = &doc.results[0];
        assert_eq!(r.mode, Mode::Bench);
        let b = r.bench.as_ref().expect("bench");
        assert!(b.samples >= 200, "{name}");
        assert!(
            b.min_us <= b.p50_us && b.p50_us <= b.p90_us && b.p90_us <= b.p99_us,
            "{name}"
        );
        assert!(
            b.tflops > 0.0 && b.sm_clock_mhz_before.is_some() && b.throttled.is_some(),
            "{name}"
        );
    }
}
