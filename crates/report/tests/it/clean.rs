//! Clean runs say so, name what was checked, and never claim more than ran.

use parsers::Format;
use report::{Level, StageKind, StageStatus, VerdictKind, analyze};

use crate::support::{
    Step, assert_deterministic_text, compile, evidence, harness, markdown, sanitizer, sass,
};

/// GPU stages the runner skips on a machine without a driver, as it records them.
fn skipped(kind: StageKind, config: &'static str) -> Step {
    Step {
        name: report::join::kind_name(kind),
        kind,
        config: Some(config),
        fixture: "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log",
        format: Format::Ptxas,
        status: Some(StageStatus::Skipped),
        args: Vec::new(),
    }
}

#[test]
fn clean_kernel_compiled_without_a_gpu() {
    const CONFIG: &str = "d64_m128_n64_s2_w4";
    let mut steps = vec![
        compile(CONFIG, "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log"),
        sass(CONFIG, "sass/nvcc13.0_attention_d64_cuobjdump.log"),
    ];
    for kind in [
        StageKind::Memcheck,
        StageKind::Racecheck,
        StageKind::Check,
        StageKind::Bench,
    ] {
        steps.push(skipped(kind, CONFIG));
    }
    let mut ev = evidence("clean_compile_only", &steps, &["kernel/attention.cu"]);
    // Skipped stages keep no log and carry the preflight's reason.
    for stage in ev
        .run
        .stages
        .iter_mut()
        .filter(|s| s.status == StageStatus::Skipped)
    {
        ev.logs.remove(&stage.logs[0].path);
        stage.logs.clear();
        stage.command.clear();
        stage.reason = Some("no CUDA driver: libcuda.so.1 not found".to_string());
    }
    let a = analyze(&ev);
    assert!(
        a.diagnoses.iter().all(|d| d.level == Level::Note),
        "the committed kernel compiles without spills or local memory: {:#?}",
        a.diagnoses
    );
    // Without a GPU stage run the verdict is about the build only, never clean.
    assert_eq!(
        a.verdict.kind,
        VerdictKind::CompileOnly,
        "{}",
        a.verdict.line
    );
    assert!(
        a.verdict.line.starts_with("Compile-only:"),
        "{}",
        a.verdict.line
    );
    // What did not run is said, with why.
    assert!(
        a.verdict
            .line
            .contains("Not run: memcheck, racecheck, check and bench"),
        "{}",
        a.verdict.line
    );
    let md = markdown(&ev);
    assert!(md.contains("no CUDA driver: libcuda.so.1 not found"));
    assert!(
        md.contains("| d64_m128_n64_s2_w4 | sm_90 | `attention_fwd_f16` |"),
        "{md}"
    );
    assert_deterministic_text(&md);
    insta::assert_snapshot!("clean_compile_only", md);
}

#[test]
fn clean_sanitizer_run_prints_a_coverage_receipt() {
    // syncdiv in block mode diverges nowhere: synccheck's real "0 errors".
    let ev = evidence(
        "clean_synccheck",
        &[
            compile("block", "ptxas/device_syncdiv.log"),
            sanitizer(
                StageKind::Synccheck,
                "block",
                "compute-sanitizer/synccheck_syncdiv_block.log",
            ),
        ],
        &["crates/parsers/fixtures/programs/syncdiv.cu"],
    );
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Clean, "{:#?}", a.diagnoses);
    let md = markdown(&ev);
    assert!(md.contains("Checked:"), "{md}");
    assert!(md.contains("- **synccheck**: 1 run on `block`"), "{md}");
    insta::assert_snapshot!("clean_synccheck", md);
}

#[test]
fn a_failed_tool_makes_the_run_inconclusive_not_clean() {
    let mut step = sanitizer(
        StageKind::Synccheck,
        "block",
        "compute-sanitizer/synccheck_syncdiv_block.log",
    );
    step.status = Some(StageStatus::Failed);
    let mut ev = evidence(
        "tool_failed",
        &[compile("block", "ptxas/device_syncdiv.log"), step],
        &[],
    );
    ev.run.stages[1].reason = Some("compute-sanitizer exited 255 without a summary".to_string());
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Inconclusive);
    assert!(markdown(&ev).contains("compute-sanitizer exited 255 without a summary"));
}

#[test]
fn a_timed_out_or_interrupted_run_is_inconclusive() {
    let mut step = sanitizer(
        StageKind::Synccheck,
        "block",
        "compute-sanitizer/synccheck_syncdiv_block.log",
    );
    step.status = Some(StageStatus::TimedOut);
    let ev = evidence("timed_out", &[step], &[]);
    assert_eq!(analyze(&ev).verdict.kind, VerdictKind::Inconclusive);

    let mut ev = evidence(
        "interrupted",
        &[sanitizer(
            StageKind::Synccheck,
            "block",
            "compute-sanitizer/synccheck_syncdiv_block.log",
        )],
        &[],
    );
    ev.run.interrupted = true;
    assert_eq!(analyze(&ev).verdict.kind, VerdictKind::Inconclusive);
}

#[test]
fn a_run_where_nothing_ran_is_not_checked() {
    let mut step = skipped(StageKind::Memcheck, "cfg");
    step.status = Some(StageStatus::Skipped);
    let mut ev = evidence("nothing", &[step], &[]);
    ev.logs.clear();
    ev.run.stages[0].logs.clear();
    // Never "no error": nothing ran, so nothing was checked (issue 51).
    let verdict = analyze(&ev).verdict;
    assert_eq!(verdict.kind, VerdictKind::NotChecked);
    assert!(verdict.line.starts_with("Not checked:"), "{}", verdict.line);
    assert!(!verdict.line.contains("no error"), "{}", verdict.line);
}

/// The harness captures of attention.cu built with one config's defines, checked and timed
/// beside the SDPA baseline on the same shape (H200, 2026-11-22; the sidecars have the
/// commands).
pub fn clean_gpu() -> report::Evidence {
    const CONFIG: &str = "d64_m128_n64_s2_w4";
    evidence(
        "clean_gpu",
        &[
            compile(CONFIG, "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log"),
            sass(CONFIG, "sass/nvcc13.0_attention_d64_cuobjdump.log"),
            harness(
                StageKind::Check,
                Some(CONFIG),
                "harness/check_attention.json",
            ),
            harness(
                StageKind::Bench,
                Some(CONFIG),
                "harness/bench_attention.json",
            ),
            harness(StageKind::Baseline, None, "harness/sdpa_b2h8s512d64.json"),
        ],
        &["kernel/attention.cu"],
    )
}

#[test]
fn clean_kernel_checked_and_timed_against_sdpa_on_the_gpu() {
    let ev = clean_gpu();
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Clean, "{:#?}", a.diagnoses);
    let rows = a.tables.bench.clone();
    let sdpa_events = rows
        .iter()
        .find(|r| r.baseline && r.timing == "events")
        .expect("SDPA timed with events");
    // Both timed with CUDA events in a warm loop: the ratio of the two p50s.
    let ours = rows.iter().find(|r| !r.baseline).expect("our timing");
    let expected = sdpa_events.p50_us / ours.p50_us;
    assert!((sdpa_events.speedup.expect("a speed-up") - expected).abs() < 1e-9);
    // SDPA's CUDA-graph timing has no kernel counterpart: no ratio is made up for it.
    assert!(
        rows.iter()
            .any(|r| r.baseline && r.timing == "graph" && r.speedup.is_none())
    );
    assert!(report::render_bench_svg(&report::analyze(&ev)).is_some());
    let md = markdown(&ev);
    assert!(md.contains("## Performance"));
    assert!(
        md.contains("- **check**: 1 run on `d64_m128_n64_s2_w4`; the kernel launched under each"),
        "{md}"
    );
    assert_deterministic_text(&md);
    insta::assert_snapshot!("clean_gpu", md);
    insta::assert_snapshot!(
        "clean_gpu_svg",
        report::render_bench_svg(&report::analyze(&ev)).unwrap_or_default()
    );
}
