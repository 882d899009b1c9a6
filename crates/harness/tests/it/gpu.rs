//! Without a driver: exit 4 and the message. On a GPU machine, run with `-- --include-ignored`
//! and `EXHIBIT_CUBIN` (a cubin of kernel/attention.cu; `EXHIBIT_SHAPE` defaults to 2,8,512,64
//! and must match its HEAD_DIM) and `EXHIBIT_PLANTED_CUBIN`: check, stress, bench and once
//! against the real kernel.

use parsers::harness::HarnessOutput;

use crate::{harness, stderr, stdout};

#[test]
fn without_libcuda_probe_and_once_exit_4_with_the_message() {
    if harness::gpu::driver_present() {
        // With a driver the harness must get past loading it.
        let out = harness(&["--probe"]);
        assert_ne!(out.status.code(), Some(4), "{}", stderr(&out));
    } else {
        no_driver_exits_4();
    }
}

fn no_driver_exits_4() {
    for list in [
        vec!["--probe"],
        vec![
            "--cubin",
            "missing.cubin",
            "--shape",
            "2,8,512,64",
            "--dtype",
            "f16",
            "--mode",
            "once",
        ],
    ] {
        let out = harness(&list);
        assert_eq!(out.status.code(), Some(4), "{list:?}");
        assert!(
            stderr(&out).contains("no CUDA driver: libcuda.so.1 not found"),
            "{}",
            stderr(&out)
        );
    }
}

/// The cubin and shape to test on the GPU (the GPU tests are ignored unless asked for).
fn gpu_target() -> (String, String) {
    let cubin = std::env::var("EXHIBIT_CUBIN")
        .expect("the GPU tests need EXHIBIT_CUBIN, a cubin of kernel/attention.cu");
    let shape = std::env::var("EXHIBIT_SHAPE").unwrap_or_else(|_| "2,8,512,64".to_string());
    (cubin, shape)
}

fn run_json(args: &[&str]) -> (i32, HarnessOutput, serde_json::Value) {
    let mut list = args.to_vec();
    list.push("--json");
    let out = harness(&list);
    let text = stdout(&out);
    let value: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}\n{}", stderr(&out)));
    let doc: HarnessOutput = serde_json::from_value(value.clone()).expect("schema");
    (out.status.code().unwrap_or(-1), doc, value)
}

#[test]
#[ignore = "needs an NVIDIA GPU and EXHIBIT_CUBIN: run with -- --include-ignored on a GPU machine"]
fn gpu_check_passes_for_both_dtypes_masks_and_random_shapes() {
    let (cubin, shape) = gpu_target();
    for dtype in ["f16", "bf16"] {
        for causal in [false, true] {
            let mut args = vec![
                "--cubin",
                &cubin,
                "--shape",
                &shape,
                "--dtype",
                dtype,
                "--mode",
                "check",
                "--random-shapes",
                "6",
            ];
            if causal {
                args.push("--causal");
            }
            let (code, doc, _) = run_json(&args);
            assert_eq!(code, 0, "{dtype} causal={causal}");
            assert_eq!(doc.results.len(), 13);
            assert!(
                doc.results
                    .iter()
                    .all(|r| r.check.as_ref().is_some_and(|c| c.passed))
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and EXHIBIT_CUBIN: run with -- --include-ignored on a GPU machine"]
fn gpu_stress_is_bitwise_repeatable_under_every_sync_policy() {
    let (cubin, shape) = gpu_target();
    for sync in ["every", "every:7", "end"] {
        let (code, doc, _) = run_json(&[
            "--cubin",
            &cubin,
            "--shape",
            &shape,
            "--dtype",
            "f16",
            "--mode",
            "stress",
            "--launches",
            "30",
            "--sync",
            sync,
        ]);
        assert_eq!(code, 0, "{sync}");
        let st = doc.results[0].stress.as_ref().expect("stress");
        assert_eq!((st.mismatched_launches, st.first_failure), (0, None));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and EXHIBIT_CUBIN: run with -- --include-ignored on a GPU machine"]
fn gpu_bench_reports_ordered_statistics() {
    let (cubin, shape) = gpu_target();
    for (cache, timing) in [("warm", "events"), ("cold", "events"), ("warm", "graph")] {
        let (code, doc, value) = run_json(&[
            "--cubin",
            &cubin,
            "--shape",
            &shape,
            "--dtype",
            "f16",
            "--mode",
            "bench",
            "--cache",
            cache,
            "--timing",
            timing,
            "--max-seconds",
            "2",
        ]);
        assert_eq!(code, 0);
        let b = doc.results[0].bench.as_ref().expect("bench");
        assert!(
            b.min_us > 0.0 && b.min_us <= b.p50_us && b.p50_us <= b.p90_us && b.p90_us <= b.p99_us
        );
        assert!(b.tflops > 0.0 && b.gbps > 0.0);
        assert_eq!((b.cache.as_str(), b.timing.as_str()), (cache, timing));
        // The raw samples travel with the statistics, for `exhibit diff`'s test of a change:
        // every one of them, each within the range the statistics state.
        assert_eq!(b.samples_us.len() as u64, b.samples, "{cache} {timing}");
        assert!(
            b.samples_us
                .iter()
                .all(|s| *s >= b.min_us && s.is_finite() && *s > 0.0),
            "{cache} {timing}: {:?}",
            b.samples_us
        );
        assert!(value["results"][0]["details"]["stop_reason"].is_string());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and EXHIBIT_CUBIN: run with -- --include-ignored on a GPU machine"]
fn gpu_once_and_probe_succeed() {
    let (cubin, shape) = gpu_target();
    let (code, doc, _) = run_json(&[
        "--cubin", &cubin, "--shape", &shape, "--dtype", "f16", "--mode", "once",
    ]);
    assert_eq!(code, 0);
    assert!(doc.results[0].launched && doc.results[0].error.is_none());
    let out = harness(&["--probe"]);
    assert_eq!(out.status.code(), Some(0));
    let probe: HarnessOutput = serde_json::from_str(&stdout(&out)).expect("probe JSON");
    assert!(probe.device.is_some_and(|d| d.sm_count.unwrap_or(0) > 0));
}

/// `EXHIBIT_PLANTED_CUBIN`: tests/fixtures/planted.cu built with -DHEAD_DIM=64
/// -DPLANT_FROM_LAUNCH=3 (a write one element past O from the third launch on).
#[test]
#[ignore = "needs an NVIDIA GPU and EXHIBIT_PLANTED_CUBIN: run with -- --include-ignored on a GPU machine"]
fn gpu_stress_names_the_launch_that_first_writes_past_the_output() {
    let cubin = std::env::var("EXHIBIT_PLANTED_CUBIN").expect(
        "needs EXHIBIT_PLANTED_CUBIN: tests/fixtures/planted.cu built with -DHEAD_DIM=64 \
         -DPLANT_FROM_LAUNCH=3",
    );
    for sync in ["every", "every:4", "end"] {
        let (code, doc, value) = run_json(&[
            "--cubin",
            &cubin,
            "--shape",
            "2,4,200,64",
            "--dtype",
            "f16",
            "--mode",
            "stress",
            "--launches",
            "10",
            "--sync",
            sync,
        ]);
        assert_eq!(code, 1, "{sync}");
        let st = doc.results[0].stress.as_ref().expect("stress");
        assert_eq!(
            (st.first_failure, st.failure_kind.as_deref()),
            (Some(3), Some("canary")),
            "{sync}"
        );
        assert_eq!(st.canaries_corrupted, vec!["o.after".to_string()]);
        assert_eq!(
            value["results"][0]["details"]["first_corruption"]["corruption"]["nearest_to_data"],
            0
        );
    }
}
