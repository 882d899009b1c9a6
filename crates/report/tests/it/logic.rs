//! The pure logic behind the rules, through the public API: occupancy arithmetic (checked
//! against Nsight Compute on a real profile), noise judgement, ranking, and the patterns the
//! result rules read from harness results (typed values, as the harness JSON deserialises).

use parsers::harness::{Bench, Check, HarnessResult, Mode, Shape, Stress};
use parsers::{Format, ParsedLog};
use report::diff::{Differ, TimingRefusal};
use report::noise::{Judgement, NoiseOptions, judge};
use report::occupancy::{Limiter, OccupancyInput, SM_90, compute};
use report::{
    DiffOptions, DiffVerdict, Evidence, Gpu, Level, Log, OutputFormat, Stage, StageKind,
    StageStatus, VerdictKind, analyze, diff, render, render_bench_svg, render_diff,
};

use crate::support::{compile, evidence, profile, redact, sanitizer, unit};

#[test]
fn occupancy_on_sm90_from_ptxas_figures() {
    let occ = |registers, threads, shared_bytes| {
        compute(
            &SM_90,
            OccupancyInput {
                registers,
                threads_per_block: threads,
                shared_bytes,
            },
        )
    };
    // 255 registers x 128 threads: 8192 registers per warp, 2 warps per sub-partition.
    let o = occ(255, 128, 0);
    assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::Registers));
    assert_eq!(o.registers_for_next_block, Some(168));
    assert_eq!(occ(168, 128, 0).blocks_per_sm, 3);
    // 100 KiB of shared memory per block (plus the 1 KiB reserved): two fit in 228 KiB.
    let o = occ(64, 128, 100 * 1024);
    assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::SharedMemory));
    // 227 KiB is the most one block may use; one byte more cannot launch.
    assert_eq!(occ(64, 128, 227 * 1024).blocks_per_sm, 1);
    let o = occ(64, 128, 227 * 1024 + 1);
    assert_eq!((o.blocks_per_sm, o.limiter), (0, Limiter::SharedMemory));
    // 256 threads of 255 registers: 65,536 registers, the whole file for one block.
    assert_eq!(occ(255, 256, 0).blocks_per_sm, 1);
    assert_eq!(occ(255, 512, 0).blocks_per_sm, 0);
    // Tiny blocks hit the 32-block limit.
    let o = occ(16, 32, 0);
    assert_eq!((o.blocks_per_sm, o.limiter), (32, Limiter::Blocks));
}

#[test]
fn occupancy_agrees_with_nsight_compute_on_a_real_profile() {
    // The same program compiled (ptxas: 10 registers) and profiled (ncu: block size 129, no
    // shared memory; block limits registers 25, shared memory 32, warps 12; 93.75% theoretical).
    let ev = evidence(
        "templ",
        &[
            compile("cfg", "ptxas/device_templ.log"),
            profile("cfg", "ncu-csv/templ_details.log"),
        ],
        &[],
    );
    let a = analyze(&ev);
    let rows = a.tables.kernels.clone();
    let row = rows
        .iter()
        .find(|r| r.kernel.contains("scale_tail"))
        .expect("scale_tail resources");
    let occ = row.occupancy.expect("occupancy");
    let ncu = a
        .tables
        .ncu
        .iter()
        .find(|n| {
            n.config.as_deref() == Some("cfg")
                && report::KernelId::of(&n.kernel) == report::KernelId::of(&row.kernel)
        })
        .expect("ncu summary");
    assert_eq!(row.threads_per_block, Some(129));
    assert_eq!(Some(occ.by_registers), ncu.block_limit_registers);
    assert_eq!(Some(occ.by_shared), ncu.block_limit_shared);
    assert_eq!(Some(occ.by_threads), ncu.block_limit_warps);
    let theoretical = ncu
        .theoretical_occupancy_pct
        .expect("theoretical occupancy");
    assert!(
        (occ.fraction * 100.0 - theoretical).abs() < 0.01,
        "{} vs {theoretical}",
        occ.fraction
    );
}

pub fn bench(p50: f64, p90: f64, samples: u64) -> Bench {
    Bench {
        cache: "warm".into(),
        timing: "events".into(),
        samples,
        min_us: p50 * 0.98,
        p50_us: p50,
        p90_us: p90,
        p99_us: p90 * 1.01,
        mean_us: p50,
        stdev_us: (p90 - p50) / 2.0,
        tflops: 100.0 * 10.0 / p50,
        gbps: 1.0,
        sm_clock_mhz_before: None,
        sm_clock_mhz_after: None,
        throttled: Some(false),
        samples_us: Vec::new(),
    }
}

/// A bench whose raw samples are `p50` + each offset.
fn sampled(p50: f64, offsets: &[f64]) -> Bench {
    let mut b = bench(p50, p50 * 1.01, offsets.len() as u64);
    b.samples_us = offsets.iter().map(|o| p50 + o).collect();
    b
}

#[test]
fn raw_samples_are_judged_by_significance_and_the_minimum_effect() {
    let opts = NoiseOptions::default();
    let tight = [-0.02, -0.015, -0.01, -0.005, 0.0, 0.005, 0.01, 0.015];
    let a = sampled(10.0, &tight);
    // 3% slower, every sample apart: significant and past the 1% minimum effect.
    let c = judge(&a, &sampled(10.3, &tight), &opts);
    assert_eq!(c.judgement, Judgement::Slower, "{c:?}");
    let test = c.test.expect("a test on raw samples");
    assert!(test.exact && test.p < 0.001, "{test:?}");
    assert_eq!((test.a_samples, test.b_samples), (8, 8));
    // 3% slower in the median, but the samples overlap: not significant, so not a regression.
    let wide = [-1.0, -0.6, -0.3, 0.0, 0.2, 0.5, 0.9, 1.2];
    let c = judge(&sampled(10.0, &wide), &sampled(10.3, &wide), &opts);
    assert_eq!(c.judgement, Judgement::Ambiguous, "{c:?}");
    assert!(c.reason.unwrap().starts_with("not significant: p = "));
    // 0.5% faster and significant, but under the minimum effect.
    let c = judge(
        &a,
        &sampled(9.95, &[-0.001, 0.0, 0.001, 0.0, -0.001, 0.001]),
        &opts,
    );
    assert_eq!(c.judgement, Judgement::Same, "{c:?}");
    // Raw samples on one side only: the noise thresholds judge.
    let mut many = a.clone();
    many.samples = 200;
    let c = judge(&many, &bench(11.0, 11.1, 200), &opts);
    assert_eq!((c.judgement, c.test), (Judgement::Slower, None));
}

#[test]
fn noise_judgement() {
    let opts = NoiseOptions::default();
    let a = bench(10.0, 10.1, 200); // 1% noise
    assert_eq!(
        judge(&a, &bench(10.05, 10.15, 200), &opts).judgement,
        Judgement::Same
    );
    assert_eq!(
        judge(&a, &bench(11.0, 11.1, 200), &opts).judgement,
        Judgement::Slower
    );
    assert_eq!(
        judge(&a, &bench(9.0, 9.09, 200), &opts).judgement,
        Judgement::Faster
    );
    // 1.5% change against 1% noise: between 1x and 2x the noise.
    assert_eq!(
        judge(&a, &bench(10.15, 10.25, 200), &opts).judgement,
        Judgement::Ambiguous
    );
    // A noisy run widens the band for both.
    assert_eq!(
        judge(&a, &bench(10.8, 12.0, 200), &opts).judgement,
        Judgement::Same
    );
    let mut throttled = bench(12.0, 12.1, 200);
    throttled.throttled = Some(true);
    assert_eq!(judge(&a, &throttled, &opts).judgement, Judgement::Ambiguous);
    assert_eq!(
        judge(&a, &bench(12.0, 12.1, 3), &opts).judgement,
        Judgement::Ambiguous
    );
    assert_eq!(
        judge(&a, &bench(0.0, 0.0, 200), &opts).judgement,
        Judgement::Ambiguous
    );
}

pub fn result(mode: Mode, config: &str, seq_len: u32, causal: bool) -> HarnessResult {
    HarnessResult {
        mode,
        kernel: "attention_fwd_f16".into(),
        config: Some(config.into()),
        shape: Shape {
            batch: 1,
            heads: 2,
            seq_len,
            head_dim: 64,
        },
        dtype: "f16".into(),
        causal,
        launched: true,
        error: None,
        skipped: None,
        check: None,
        stress: None,
        bench: None,
        figures: Default::default(),
    }
}

fn check(passed: bool, max_abs_err: f64, nan: u64) -> Check {
    Check {
        passed,
        max_abs_err,
        rel_l2_err: max_abs_err / 10.0,
        tolerance: 1e-3,
        nan_count: nan,
        unwritten: 0,
        canaries_corrupted: Vec::new(),
    }
}

/// A run whose config `cfg` was compiled with BLOCK_N=64 and whose harness stages printed
/// `results`, one stage per result.
pub fn harness_run(results: Vec<(StageKind, HarnessResult)>) -> Evidence {
    with_harness(evidence("harness", &[], &["kernel/attention.cu"]), results)
}

/// Adds the compile stage of `cfg` (BLOCK_N=64) and one harness stage per result to a run.
fn with_harness(mut ev: Evidence, results: Vec<(StageKind, HarnessResult)>) -> Evidence {
    let command: Vec<String> = "nvcc -cubin -O3 -lineinfo -arch=sm_90 -Xptxas -v -DBLOCK_M=64 -DBLOCK_N=64 -DSTAGES=2 -DWARPS=4 -DHEAD_DIM=64 kernel/attention.cu"
        .split(' ')
        .map(str::to_string)
        .collect();
    ev.run.stages.push(Stage {
        name: "compile".into(),
        kind: StageKind::Compile,
        config: Some("cfg".into()),
        arch: Some("sm_90".into()),
        status: StageStatus::Passed,
        reason: None,
        unit: unit(StageKind::Compile, &command),
        command,
        exit_code: Some(0),
        duration_ms: 1,
        cached_from: None,
        input_hash: None,
        logs: Vec::new(),
        launch_search: None,
        leftovers: Vec::new(),
        device: None,
        outputs: Default::default(),
        cut: Default::default(),
        split: Vec::new(),
        site_lines: Default::default(),
        seal: None,
        missing: Vec::new(),
    });
    for (i, (kind, r)) in results.into_iter().enumerate() {
        let path = format!("{}/cfg/{i}.json", report::join::kind_name(kind));
        // As the runner classifies a harness that worked: a failed check or stress is findings.
        let failed = r.error.is_some()
            || r.check.as_ref().is_some_and(|c| !c.passed)
            || r.stress
                .as_ref()
                .is_some_and(|s| s.first_failure.is_some() || s.mismatched_launches > 0);
        let status = if failed {
            StageStatus::Findings
        } else {
            StageStatus::Passed
        };
        let mut log = ParsedLog::new(Format::Harness, None);
        log.complete = true;
        log.results.push(r);
        ev.logs.insert(path.clone(), log);
        let command: Vec<String> = vec![
            "runner".into(),
            "harness".into(),
            "--kernel".into(),
            "attention_fwd_f16".into(),
        ];
        ev.run.stages.push(Stage {
            name: report::join::kind_name(kind).into(),
            kind,
            config: Some("cfg".into()),
            arch: Some("sm_90".into()),
            status,
            reason: None,
            unit: unit(kind, &command),
            command,
            exit_code: Some(0),
            duration_ms: 1,
            cached_from: None,
            input_hash: None,
            logs: vec![Log {
                path,
                format: Some(Format::Harness),
            }],
            launch_search: None,
            leftovers: Vec::new(),
            device: None,
            outputs: Default::default(),
            cut: Default::default(),
            split: Vec::new(),
            site_lines: Default::default(),
            seal: None,
            missing: Vec::new(),
        });
    }
    ev
}

fn checked_kernel(
    kernel: &str,
    seq_len: u32,
    causal: bool,
    c: Check,
) -> (StageKind, HarnessResult) {
    let (kind, mut r) = checked(seq_len, causal, c);
    r.kernel = kernel.into();
    (kind, r)
}

fn checked(seq_len: u32, causal: bool, c: Check) -> (StageKind, HarnessResult) {
    let mut r = result(Mode::Check, "cfg", seq_len, causal);
    r.check = Some(c);
    (StageKind::Check, r)
}

#[test]
fn failures_only_where_s_is_not_a_multiple_of_block_n_point_at_the_tail_tile() {
    let ev = harness_run(vec![
        checked(512, false, check(true, 1e-4, 0)),
        checked(256, true, check(true, 1e-4, 0)),
        checked(200, false, check(false, 0.4, 0)),
        checked(100, true, check(false, 0.3, 0)),
        // The causal mask hides the extra key: a length off the tile may still pass.
        checked(200, true, check(true, 1e-4, 0)),
    ]);
    let a = analyze(&ev);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "wrong-output");
    assert!(d.title.markdown().contains("BLOCK_N=64"), "{}", d.title);
    assert_eq!(a.verdict.kind, VerdictKind::Failing);
    // Five check executions of one config sum to one evidence cell.
    let md = render(&ev, OutputFormat::Markdown);
    assert!(md.contains("| check | ❌ ×5 3/5 passed |"), "{md}");
}

#[test]
fn nan_only_under_the_causal_mask_points_at_fully_masked_rows() {
    let ev = harness_run(vec![
        checked(512, false, check(true, 1e-4, 0)),
        checked(512, true, check(false, f64::NAN, 4096)),
        checked(200, true, check(false, f64::NAN, 128)),
    ]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert!(
        d.title.markdown().contains("fully masked rows"),
        "{}",
        d.title
    );
    // Without a passing non-causal shape the evidence cannot single out the mask.
    let ev = harness_run(vec![checked(512, true, check(false, f64::NAN, 4096))]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert_eq!(d.title, "NaN outputs");
}

fn stressed(
    first_failure: Option<u64>,
    kind: Option<&str>,
    mismatched: u64,
    error: Option<&str>,
) -> (StageKind, HarnessResult) {
    let mut r = result(Mode::Stress, "cfg", 512, false);
    r.error = error.map(str::to_string);
    r.stress = Some(Stress {
        launches: 200,
        sync: "every".into(),
        mismatched_launches: mismatched,
        first_failure,
        failure_kind: kind.map(str::to_string),
        canaries_corrupted: if kind == Some("canary") {
            vec!["o.after".into()]
        } else {
            Vec::new()
        },
    });
    (StageKind::Stress, r)
}

#[test]
fn a_failure_after_several_launches_is_told_apart_from_a_single_launch_fault() {
    let ev = harness_run(vec![
        checked(512, false, check(true, 1e-4, 0)),
        stressed(Some(7), Some("canary"), 0, None),
    ]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert_eq!(d.rule, "repeated-launch-failure");
    assert!(
        d.title.markdown().contains("launch 7 of 200"),
        "{}",
        d.title
    );
    assert!(
        d.explanation()
            .markdown()
            .contains("single launch passes check"),
        "{}",
        d.explanation()
    );

    let ev = harness_run(vec![stressed(
        Some(1),
        Some("error"),
        0,
        Some("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
    )]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert_eq!(d.rule, "launch-failure", "{d:#?}");

    // Every launch from the 50th on differs: accumulating state, not a race.
    let ev = harness_run(vec![stressed(Some(50), Some("mismatch"), 151, None)]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert!(
        d.title
            .markdown()
            .starts_with("Fails only after repeated launches"),
        "{}",
        d.title
    );
    // Scattered differences: non-determinism.
    let ev = harness_run(vec![stressed(Some(3), Some("mismatch"), 5, None)]);
    let d = analyze(&ev)
        .diagnoses
        .into_iter()
        .next()
        .expect("a diagnosis");
    assert!(
        d.title.markdown().starts_with("Non-deterministic output"),
        "{}",
        d.title
    );
    // Every launch from the second on differs, but a single launch of the same problem is
    // already wrong: output that depends on timing, not state that survives a launch (a missing
    // wait on an asynchronous copy looks like this).
    let ev = harness_run(vec![
        checked(512, false, check(false, 0.5, 0)),
        stressed(Some(2), Some("mismatch"), 199, None),
    ]);
    let stress = analyze(&ev)
        .diagnoses
        .into_iter()
        .find(|d| d.rule == "repeated-launch-failure")
        .expect("a stress diagnosis");
    assert!(
        stress
            .title
            .markdown()
            .starts_with("Non-deterministic output"),
        "{}",
        stress.title
    );
    assert!(
        stress
            .explanation()
            .markdown()
            .contains("a single launch of this problem already fails the check"),
        "{}",
        stress.explanation()
    );
    assert!(
        !stress.explanation().markdown().contains("ran correctly"),
        "{}",
        stress.explanation()
    );
}

#[test]
fn errors_rank_before_warnings_before_notes() {
    let mut ev = evidence(
        "ranked",
        &[
            compile("cfg", "ptxas/nvcc13.0_spill_maxrreg32.log"),
            sanitizer(
                StageKind::Racecheck,
                "cfg",
                "compute-sanitizer/racecheck_race.log",
            ),
        ],
        &[],
    );
    ev.run.stages[0].command.extend(["-DWARPS=4".to_string()]);
    let a = analyze(&ev);
    let levels: Vec<Level> = a.diagnoses.iter().map(|d| d.level).collect();
    let mut sorted = levels.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(levels, sorted);
    assert_eq!(a.diagnoses[0].rule, "shared-memory-race");
    assert!(a.diagnoses.iter().any(|d| d.level == Level::Warning));
}

fn bench_run(gpu: &str, p50: f64, baseline_p50: f64) -> Evidence {
    let mut ours = result(Mode::Bench, "cfg", 4096, false);
    ours.bench = Some(bench(p50, p50 * 1.01, 200));
    let mut sdpa = result(Mode::Bench, "cfg", 4096, false);
    sdpa.kernel = "sdpa:cudnn".into();
    sdpa.config = None;
    sdpa.bench = Some(bench(baseline_p50, baseline_p50 * 1.01, 200));
    let mut ev = harness_run(vec![(StageKind::Bench, ours), (StageKind::Baseline, sdpa)]);
    ev.run.environment.gpus = vec![Gpu {
        name: gpu.into(),
        ..Gpu::default()
    }];
    ev.run.environment.driver = Some("580.159.04".into());
    // Each measurement is its own run.
    ev.run.id = format!("{}-p50-{p50}", ev.run.id);
    ev
}

#[test]
fn bench_table_and_chart_compare_with_each_baseline() {
    let ev = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    let rows = analyze(&ev).tables.bench;
    let sdpa = rows.iter().find(|r| r.baseline).expect("baseline row");
    assert!((sdpa.speedup.expect("speed-up") - 1.25).abs() < 1e-9);
    assert!(rows.iter().any(|r| r.best && r.implementation == "cfg"));
    let md = render(&ev, OutputFormat::Markdown);
    assert!(
        md.contains("| `sdpa:cudnn` | events warm | 125 | 126 |"),
        "{md}"
    );
    let svg = render_bench_svg(&report::analyze(&ev)).expect("a chart");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(md.contains(&format!(
        "![bench]({})",
        report::bench_svg_file_name(&ev.run)
    )));
    assert!(render_bench_svg(&report::analyze(&evidence("none", &[], &[]))).is_none());
}

#[test]
fn diff_judges_timings_against_noise_and_refuses_other_gpus() {
    let a = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    let b = bench_run("NVIDIA H100 80GB HBM3", 110.0, 125.0);
    let d = diff(&a, &b, &DiffOptions::default());
    let ours = d.perf.iter().find(|p| !p.baseline).expect("our timing");
    assert_eq!(ours.judgement, Judgement::Slower);
    assert!(d.has_regression());
    assert!(d.perf_diagnoses.iter().any(|p| p.rule == "perf-regression"));
    insta::assert_snapshot!(
        "diff_slower",
        redact(&render_diff(&d, OutputFormat::Markdown))
    );

    let faster = diff(&b, &a, &DiffOptions::default());
    assert!(!faster.has_regression());
    assert!(
        faster
            .perf_diagnoses
            .iter()
            .any(|p| p.rule == "perf-improvement")
    );

    let other = bench_run("NVIDIA H200", 110.0, 125.0);
    let refused = diff(&a, &other, &DiffOptions::default());
    assert!(refused.perf.is_empty());
    assert_eq!(
        refused.timing_refused,
        Some(TimingRefusal::Machines {
            gpus: Some(Differ {
                a: Some("NVIDIA H100 80GB HBM3".into()),
                b: Some("NVIDIA H200".into()),
            }),
            drivers: None,
        })
    );
    assert!(!refused.has_regression());
    let allowed = diff(
        &a,
        &other,
        &DiffOptions {
            allow_different_gpu: true,
            ..DiffOptions::default()
        },
    );
    assert!(!allowed.perf.is_empty());
}

#[test]
fn the_report_gives_the_run_wall_time_and_the_unit_time_it_did_not_serve_from_the_cache() {
    let mut ev = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    for (i, stage) in ev.run.stages.iter_mut().enumerate() {
        stage.duration_ms = 20_000 * (i as u64 + 1);
    }
    // The first stage came from the cache: its 20 s were spent in another run.
    ev.run.stages[0].cached_from = Some("earlier".into());
    ev.run.wall_ms = Some(75_300);
    let units: u64 = ev.run.stages.iter().skip(1).map(|s| s.duration_ms).sum();
    let md = render(&ev, OutputFormat::Markdown);
    let header = md.lines().nth(2).expect("the header line");
    assert!(
        header.ends_with(&format!(
            " · wall time 1 min 15 s, {} min {} s of unit time",
            units / 60_000,
            (units % 60_000) / 1000
        )),
        "{header}"
    );
    // A manifest written before the wall time existed says nothing of it.
    ev.run.wall_ms = None;
    assert!(!render(&ev, OutputFormat::Markdown).contains("wall time"));
}

/// The verdict line of a diff's markdown.
fn diff_verdict(d: &report::Diff) -> String {
    render_diff(d, OutputFormat::Markdown)
        .lines()
        .find(|l| l.starts_with("**Verdict:**"))
        .expect("a verdict line")
        .to_string()
}

#[test]
fn a_diff_across_gpus_says_its_timings_were_not_compared() {
    let a = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    // B is 40% slower, on another GPU: nothing about timings may be concluded.
    let b = bench_run("NVIDIA H200", 140.0, 125.0);
    let d = diff(&a, &b, &DiffOptions::default());
    assert_eq!(d.verdict, DiffVerdict::NoRegression);
    let line = diff_verdict(&d);
    assert_eq!(
        line,
        "**Verdict:** ✅ No regression: no change in root causes, timings not compared (GPUs \
         differ (NVIDIA H100 80GB HBM3 vs NVIDIA H200))."
    );
    assert!(!line.contains("no change in timings"));
    // The report's body and its JSON give the refusal's words, the JSON as a string.
    let why = "GPUs differ (NVIDIA H100 80GB HBM3 vs NVIDIA H200): timings not compared (pass \
               --allow-different-gpu to compare anyway)";
    let md = render_diff(&d, OutputFormat::Markdown);
    assert!(md.contains(&format!("\n{why}.\n")), "{md}");
    let json = serde_json::to_value(&d).expect("JSON");
    assert_eq!(json["timing_refused"], why);
    // A run against itself: its id is code.
    let same = diff(&a, &a, &DiffOptions::default());
    let id = &a.run.id;
    assert_eq!(
        serde_json::to_value(&same).expect("JSON")["timing_refused"],
        format!("A and B are one run (`{id}`): timings not compared")
    );
    assert!(
        diff_verdict(&same).contains(&format!(
            "timings not compared (A and B are one run (`{id}`))"
        )),
        "{}",
        diff_verdict(&same)
    );
}

#[test]
fn a_timing_slower_beyond_the_noise_but_within_twice_it_is_ambiguous() {
    // The bench helper sets p90 = 1.01 p50: 1% noise. 1.5% slower is beyond 1x and within 2x
    // the noise.
    let a = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    let b = bench_run("NVIDIA H100 80GB HBM3", 101.5, 125.0);
    let d = diff(&a, &b, &DiffOptions::default());
    let ours = d.perf.iter().find(|p| !p.baseline).expect("our timing");
    assert_eq!(ours.judgement, Judgement::Ambiguous);
    assert_eq!(d.verdict, DiffVerdict::Ambiguous);
    assert!(!d.has_regression());
    assert_eq!(
        diff_verdict(&d),
        "**Verdict:** ❔ Ambiguous: no change in root causes, 1 ambiguous timing (beyond the \
         noise, within twice it, or measured throttled or with too few samples; re-run to \
         decide)."
    );
    // 10% slower is beyond twice the noise: a regression.
    let slower = diff(
        &a,
        &bench_run("NVIDIA H100 80GB HBM3", 110.0, 125.0),
        &DiffOptions::default(),
    );
    assert_eq!(slower.verdict, DiffVerdict::Regression);
    assert_eq!(
        diff_verdict(&slower),
        "**Verdict:** ❌ Regression: no change in root causes, 1 slower timing."
    );
}

#[test]
fn a_rerun_served_from_the_cache_is_not_a_second_measurement() {
    let a = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    // B's harness units were served from A's cache: its timings are A's, copied.
    let mut b = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    b.run.id = "b-run".into();
    for stage in &mut b.run.stages {
        if stage.kind != StageKind::Compile {
            stage.cached_from = Some(a.run.id.clone());
        }
    }
    let d = diff(&a, &b, &DiffOptions::default());
    assert!(d.perf.is_empty(), "{:#?}", d.perf);
    assert_eq!(d.same_measurement, 2);
    assert_eq!(d.verdict, DiffVerdict::NoRegression);
    let md = render_diff(&d, OutputFormat::Markdown);
    assert_eq!(
        diff_verdict(&d),
        "**Verdict:** ✅ No regression: no change in root causes, timings not compared (one \
         measurement: B's were served from the cache)."
    );
    assert!(
        md.contains("2 timings in both runs are one measurement"),
        "{md}"
    );
    assert!(!md.contains("within the noise"), "{md}");
    // Served from the cache of an earlier run than A: a real comparison, marked as cached.
    for stage in &mut b.run.stages {
        if stage.cached_from.is_some() {
            stage.cached_from = Some("earlier-run".into());
        }
    }
    let d = diff(&a, &b, &DiffOptions::default());
    assert_eq!(d.same_measurement, 0);
    assert!(
        d.perf
            .iter()
            .all(|p| p.b_cached_from.as_deref() == Some("earlier-run"))
    );
    assert!(render_diff(&d, OutputFormat::Markdown).contains("(cached from `earlier-run`)"));
}

#[test]
fn a_diff_with_missing_evidence_is_incomplete() {
    let a = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    let mut b = bench_run("NVIDIA H100 80GB HBM3", 100.0, 125.0);
    b.missing
        .insert("racecheck/cfg/sm_90/racecheck.log".into(), "missing".into());
    let d = diff(&a, &b, &DiffOptions::default());
    assert_eq!(d.verdict, DiffVerdict::Incomplete);
    let line = diff_verdict(&d);
    assert!(
        line.starts_with("**Verdict:** ⚠️ Incomplete: 1 log missing or unreadable"),
        "{line}"
    );
    assert!(
        render_diff(&d, OutputFormat::Markdown)
            .contains("- B: racecheck/cfg/sm_90/racecheck.log: missing")
    );
}

#[test]
fn extreme_and_malformed_values_render_without_panicking() {
    // Typed values no real tool prints, to pin that nothing in the report crate panics or
    // overflows on them: NaN and infinite timings, counts at u64::MAX, registers past any
    // arch's limit, names with markdown and XML metacharacters.
    let mut r = result(Mode::Bench, "c|fg<&>", 0, true);
    r.kernel = "void k<`|&>(float*)".into();
    r.bench = Some(Bench {
        p50_us: f64::NAN,
        p90_us: f64::INFINITY,
        tflops: f64::NAN,
        ..bench(0.0, 0.0, 0)
    });
    r.check = Some(Check {
        max_abs_err: f64::INFINITY,
        nan_count: u64::MAX,
        unwritten: u64::MAX,
        ..check(false, 0.0, 0)
    });
    r.stress = Some(Stress {
        launches: u64::MAX,
        sync: "".into(),
        mismatched_launches: u64::MAX,
        first_failure: Some(u64::MAX),
        failure_kind: Some("mismatch".into()),
        canaries_corrupted: vec!["".into()],
    });
    r.error = Some("\u{1b}[31m\0 error".into());
    let mut ev = harness_run(vec![(StageKind::Check, r.clone()), (StageKind::Stress, r)]);
    let mut log = ParsedLog::new(Format::Ptxas, None);
    log.kernels.push(parsers::Kernel {
        name: "void k<`|&>(float*)".into(),
        arch: Some("sm_90".into()),
        registers: Some(u32::MAX),
        shared_bytes: Some(u64::MAX),
        stack_frame_bytes: Some(u64::MAX),
        spill_store_bytes: Some(u64::MAX),
        spill_load_bytes: Some(u64::MAX),
        sass: Some(parsers::SassCounts {
            ldl: u64::MAX,
            stl: u64::MAX,
            hmma: u64::MAX,
            hgmma: u64::MAX,
            imma: u64::MAX,
            ..Default::default()
        }),
        ..Default::default()
    });
    let path = "compile/cfg/extreme.log".to_string();
    ev.logs.insert(path.clone(), log);
    if let Some(stage) = ev
        .run
        .stages
        .iter_mut()
        .find(|s| s.kind == StageKind::Compile)
    {
        stage.logs.push(Log {
            path,
            format: Some(Format::Ptxas),
        });
    }
    let [md, json, sarif, junit] = [
        OutputFormat::Markdown,
        OutputFormat::Json,
        OutputFormat::Sarif,
        OutputFormat::Junit,
    ]
    .map(|format| render(&ev, format));
    for (format, text) in [
        ("md", &md),
        ("json", &json),
        ("sarif", &sarif),
        ("junit", &junit),
    ] {
        // The error text's escape and NUL never reach a report, raw or JSON-escaped.
        assert!(!text.contains(['\u{1b}', '\0']), "{format}: {text}");
        assert!(!text.contains("\\u001b"), "{format}: {text}");
        // A count at u64::MAX is printed whole, not wrapped or cut.
        assert!(text.contains("18446744073709551615"), "{format}: {text}");
    }
    // The error itself is kept, less its control characters.
    assert!(md.contains("mismatch ([31m error)"), "{md}");
    // Non-finite timings read n/a; a `|` in a config or kernel name does not split its cell.
    assert!(
        md.contains(
            "| B=1 H=2 S=0 D=64 f16 causal | `c\\|fg<&>` | events warm | n/a | n/a | n/a | n/a% | — |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| cfg | sm_90 | ``k<`\\|&>`` | 4294967295 | 18446744073709551615 / 18446744073709551615 |"
        ),
        "{md}"
    );
    // JSON stays JSON: non-finite timings are null, names are kept as given.
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["bench"][0]["implementation"], "c|fg<&>");
    assert!(
        json["bench"][0]["p50_us"].is_null(),
        "{:#}",
        json["bench"][0]
    );
    // SARIF stays JSON, with one result per root cause of the Markdown report.
    let sarif: serde_json::Value = serde_json::from_str(&sarif).expect("SARIF");
    let causes = md.lines().filter(|l| l.starts_with("### ")).count();
    assert!(causes > 0, "{md}");
    assert_eq!(
        sarif["runs"][0]["results"].as_array().map(Vec::len),
        Some(causes),
        "{sarif:#}"
    );
    // JUnit stays well-formed XML: it reads back whole, one failed case per failing stage.
    let cases = parsers::parse(Format::JUnit, &junit);
    assert!(cases.complete, "{junit}");
    assert_eq!(cases.tests.len(), 3, "{junit}");
    assert!(
        cases
            .tests
            .iter()
            .all(|t| t.outcome == parsers::TestOutcome::Failed),
        "{junit}"
    );
    // The chart escapes the name for SVG and reads the NaN timing as n/a.
    let svg = render_bench_svg(&report::analyze(&ev)).expect("a chart of the bench results");
    assert!(svg.contains("c|fg&lt;&amp;&gt; (events warm)"), "{svg}");
    assert!(svg.contains("n/a TFLOP/s · p50 n/a µs"), "{svg}");
    // A run diffed with itself: nothing regressed.
    let d = diff(&ev, &ev, &DiffOptions::default());
    assert_eq!(d.verdict, DiffVerdict::NoRegression);
    assert!(
        diff_verdict(&d).starts_with("**Verdict:** ✅ No regression"),
        "{}",
        diff_verdict(&d)
    );
}

#[test]
fn symptoms_join_the_root_cause_a_sanitizer_found_on_one_launch() {
    // racecheck's real race in reverse_tile, and the wrong output and scattered differences it
    // causes, as the check and stress stages would record them.
    let race = evidence(
        "race_symptoms",
        &[sanitizer(
            StageKind::Racecheck,
            "cfg",
            "compute-sanitizer/racecheck_race.log",
        )],
        &[],
    );
    let mut stress = stressed(Some(3), Some("mismatch"), 5, None);
    stress.1.kernel = "reverse_tile".into();
    let ev = with_harness(
        race,
        vec![
            checked_kernel("reverse_tile", 512, false, check(false, f64::NAN, 12)),
            stress,
        ],
    );
    let a = analyze(&ev);
    let errors: Vec<&str> = a
        .diagnoses
        .iter()
        .filter(|d| d.level == Level::Error)
        .map(|d| d.rule.as_str())
        .collect();
    assert!(
        errors.iter().all(|r| *r == "shared-memory-race"),
        "{errors:?}"
    );
    let race = &a.diagnoses[0];
    assert!(
        race.explanation()
            .markdown()
            .contains("Seen downstream: NaN outputs"),
        "{}",
        race.explanation()
    );
    assert!(
        race.evidence.iter().any(|e| e.stage == "check"),
        "{:#?}",
        race.evidence
    );

    // initcheck's uninitialised read explains why launches after the first differ.
    let uninit = evidence(
        "uninit_symptoms",
        &[sanitizer(
            StageKind::Initcheck,
            "cfg",
            "compute-sanitizer/initcheck_uninit.log",
        )],
        &[],
    );
    let mut stress = stressed(Some(2), Some("mismatch"), 199, None);
    stress.1.kernel = "sum_uninitialized".into();
    let ev = with_harness(uninit, vec![stress]);
    let a = analyze(&ev);
    assert_eq!(
        a.diagnoses
            .iter()
            .filter(|d| d.level == Level::Error)
            .count(),
        1,
        "{:#?}",
        a.diagnoses
    );
    assert_eq!(a.diagnoses[0].rule, "uninitialized-read");
}

#[test]
fn a_fault_that_needs_several_launches_is_its_own_root_cause() {
    // One launch is clean (check passes); launch 6 of 200 fails with an illegal address.
    let ev = harness_run(vec![
        checked(512, false, check(true, 1e-4, 0)),
        stressed(
            Some(6),
            Some("error"),
            0,
            Some("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"),
        ),
    ]);
    let a = analyze(&ev);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "repeated-launch-failure");
    assert!(
        d.fix().markdown().contains("Reset per-launch state"),
        "{}",
        d.fix()
    );
    insta::assert_snapshot!(
        "repeated_launch",
        redact(&render(&ev, OutputFormat::Markdown))
    );
}

/// A check within its tolerance that failed on something else: harness results as the
/// uninit_row_sum fault's check wrote them (the reference run's figures), with and without the
/// harness's figures beyond the check's fields.
fn within_tolerance(seq_len: u32, figures: bool) -> (StageKind, HarnessResult) {
    let (kind, mut r) = checked(
        seq_len,
        false,
        Check {
            passed: false,
            max_abs_err: 1.573e-4,
            rel_l2_err: 2.737e-4,
            tolerance: 1e-3,
            nan_count: 0,
            unwritten: 0,
            canaries_corrupted: Vec::new(),
        },
    );
    if figures {
        r.figures.repeat_elements_differing = Some(352256);
        r.figures.elements_total = Some(524288);
        r.figures.elements_over_bound = Some(0);
    }
    (kind, r)
}

#[test]
fn a_check_failed_within_tolerance_says_what_failed_it() {
    let ev = harness_run(vec![within_tolerance(512, true)]);
    let a = analyze(&ev);
    let d = a
        .diagnoses
        .iter()
        .find(|d| d.rule == "wrong-output")
        .unwrap_or_else(|| panic!("{:#?}", a.diagnoses));
    assert_eq!(
        d.title,
        "Output differs between two launches on the same inputs"
    );
    assert!(
        d.explanation()
            .markdown()
            .contains("failed although the error is within tolerance"),
        "{}",
        d.explanation()
    );
    let line = &d.evidence[0].summary.markdown();
    assert!(
        line.ends_with(
            "failed (max abs err 1.6e-4, rel L2 2.7e-4, tolerance 0.001, 0 NaN, 0 unwritten) \
             although the error is within tolerance: a second launch on the same inputs gave \
             different output in 352256 of 524288 elements"
        ),
        "{line}"
    );
    let md = render(&ev, OutputFormat::Markdown);
    assert!(
        md.contains(
            "| ❌ fail within tolerance: a second launch on the same inputs gave different output \
             in 352256 of 524288 elements | 1.6e-4 | 2.7e-4 | 0.001 |"
        ),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&ev, OutputFormat::Json)).expect("JSON");
    assert!(
        json["checks"][0]["failed_within_tolerance"]
            .as_str()
            .is_some_and(|s| s.starts_with("a second launch")),
        "{}",
        json["checks"]
    );

    // Without the harness's figures, the report says it has no other reason, not one made up.
    let ev = harness_run(vec![within_tolerance(512, false)]);
    let md = render(&ev, OutputFormat::Markdown);
    assert!(
        md.contains("although the error is within tolerance: the harness recorded no other reason"),
        "{md}"
    );
    assert!(!md.contains("second launch"), "{md}");

    // An error over the tolerance is the failure: nothing more is said.
    let ev = harness_run(vec![checked(512, false, check(false, 0.5, 0))]);
    let md = render(&ev, OutputFormat::Markdown);
    assert!(md.contains("| ❌ fail |"), "{md}");
    assert!(!md.contains("within tolerance"), "{md}");
}
