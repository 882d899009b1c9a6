//! The launch geometry the harness records (`harness.launch_info`: threads per block and
//! dynamic shared memory, as `attention_launch_info` reported them) reaches the per-config table
//! and the occupancy figure when Nsight Compute did not profile the kernel.

use parsers::Format;
use report::resources::HARNESS;
use report::{StageKind, StageStatus, analyze};

use crate::support::{Step, compile, evidence, harness, markdown, read, sass};

const CONFIG: &str = "d64_m128_n64_s2_w4";
const PTXAS: &str = "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log";
const SASS: &str = "sass/nvcc13.0_attention_d64_cuobjdump.log";

#[test]
fn the_harness_launch_info_gives_dynamic_shared_memory_and_threads() {
    let ev = evidence(
        "launch_info",
        &[
            compile(CONFIG, PTXAS),
            sass(CONFIG, SASS),
            harness(
                StageKind::Check,
                Some(CONFIG),
                "harness/check_attention.json",
            ),
        ],
        &["kernel/attention.cu"],
    );
    let a = analyze(&ev);
    let rows = a.tables.kernels.clone();
    // Only the kernel the harness launched: not the 1-thread `attention_launch_info` helper.
    let names: Vec<&str> = rows.iter().map(|r| r.kernel.as_str()).collect();
    assert_eq!(names, ["attention_fwd_f16"]);
    let row = &rows[0];
    // The capture's `harness.launch_info` says 128 threads and 49152 bytes of dynamic shared
    // memory (BLOCK_M=128, BLOCK_N=64, STAGES=2, HEAD_DIM=64).
    assert_eq!(row.dynamic_shared_bytes, Some(49152));
    assert_eq!(row.dynamic_shared_from, Some(HARNESS));
    assert_eq!(row.threads_per_block, Some(128));
    assert_eq!(row.threads_from, Some(HARNESS));
    assert_eq!(row.occupancy_caveat, None);
    let occupancy = row.occupancy.as_ref().expect("an occupancy figure");
    // 48 KiB of dynamic shared memory per block allows 4 blocks of an sm_90 SM's 228 KiB.
    assert_eq!(occupancy.by_shared, 4);
    let md = markdown(&ev);
    assert!(
        md.contains("| 0 B | 48.0 KiB (harness) | 0 B | 128 (harness) |"),
        "{md}"
    );
    assert!(md.contains("(harness) what the kernel's `attention_launch_info` reported"));
    assert!(!md.contains("dynamic unknown"), "{md}");
}

#[test]
fn without_launch_info_dynamic_shared_memory_stays_unknown() {
    let ev = evidence(
        "compile_only",
        &[compile(CONFIG, PTXAS), sass(CONFIG, SASS)],
        &["kernel/attention.cu"],
    );
    let a = analyze(&ev);
    let rows = a.tables.kernels.clone();
    let f16 = rows
        .iter()
        .find(|r| r.kernel == "attention_fwd_f16")
        .expect("the f16 kernel");
    assert_eq!(f16.dynamic_shared_bytes, None);
    assert_eq!(f16.dynamic_shared_from, None);
    assert_eq!(f16.threads_from, Some("WARPS define"));
    let caveat = f16.occupancy_caveat.as_deref().unwrap_or("");
    assert!(caveat.contains("dynamic shared memory unknown"), "{caveat}");
    let md = markdown(&ev);
    assert!(md.contains("| 0 B | — | 0 B | 128 (WARPS) |"), "{md}");
}

#[test]
fn documents_without_or_with_a_malformed_launch_info_still_parse() {
    // The real capture, edited here: once without its top-level `harness` object (as documents
    // written before it existed), once with a malformed `launch_info`.
    let text = read("harness/check_attention.json");
    let original = parsers::parse(Format::Harness, &text);
    assert_eq!(
        original
            .launch
            .as_ref()
            .map(|l| (l.threads, l.dynamic_smem_bytes)),
        Some((128, 49152))
    );
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("the capture is JSON");
    let obj = doc.as_object_mut().expect("a JSON object");
    let launch_info = obj
        .get_mut("harness")
        .and_then(|h| h.get_mut("launch_info"))
        .expect("the capture has harness.launch_info");
    *launch_info = serde_json::json!({"threads": "many"});
    let malformed = parsers::parse(Format::Harness, &doc.to_string());
    assert_eq!(malformed.launch, None);
    assert_eq!(malformed.results, original.results);
    assert!(malformed.complete);

    let obj = doc.as_object_mut().expect("a JSON object");
    obj.remove("harness");
    let old = parsers::parse(Format::Harness, &doc.to_string());
    assert_eq!(old.launch, None);
    assert_eq!(old.results, original.results);
    assert_eq!(old.findings, original.findings);
}

#[test]
fn a_skipped_stage_command_names_the_kernel_the_table_shows() {
    // Compiled without a GPU: the check stage was skipped, but its recorded command says which
    // entry point the harness would have launched, so the 1-thread `attention_launch_info`
    // helper is left out of the per-config table.
    let mut check = Step {
        name: "check",
        kind: StageKind::Check,
        config: Some(CONFIG),
        fixture: PTXAS,
        format: Format::Ptxas,
        status: Some(StageStatus::Skipped),
        args: vec!["--kernel", "attention_fwd_f16", "--mode", "check"],
    };
    let ev = evidence(
        "skipped_check",
        &[compile(CONFIG, PTXAS), sass(CONFIG, SASS), check.clone()],
        &["kernel/attention.cu"],
    );
    let rows = analyze(&ev).tables.kernels;
    let names: Vec<&str> = rows.iter().map(|r| r.kernel.as_str()).collect();
    assert_eq!(names, ["attention_fwd_f16"]);
    assert!(!markdown(&ev).contains("`attention_launch_info`"));

    // Without a command naming a kernel, every compiled kernel is listed.
    check.args.clear();
    let ev = evidence(
        "skipped_check_no_command",
        &[compile(CONFIG, PTXAS), sass(CONFIG, SASS), check],
        &["kernel/attention.cu"],
    );
    let rows = analyze(&ev).tables.kernels;
    assert!(rows.iter().any(|r| r.kernel == "attention_launch_info"));
}
