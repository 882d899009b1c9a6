use std::ffi::OsString;

use harness::cli::{CacheMode, Command, Mode, SyncPolicy, Timing, parse};
use harness::float::Dtype;
use harness::problem::Shape;

use crate::{harness, stderr, stdout};

fn args(list: &[&str]) -> Vec<OsString> {
    std::iter::once("harness")
        .chain(list.iter().copied())
        .map(OsString::from)
        .collect()
}

fn run_options(list: &[&str]) -> harness::cli::RunOptions {
    match parse(args(list)) {
        Ok(Command::Run(o)) => o,
        other => panic!("expected a run, got {other:?}"),
    }
}

const BASE: [&str; 8] = [
    "--cubin",
    "k.cubin",
    "--shape",
    "2,8,512,64",
    "--dtype",
    "bf16",
    "--mode",
    "check",
];

#[test]
fn a_full_command_line_parses_into_options() {
    let mut list = BASE.to_vec();
    list.extend([
        "--kernel",
        "attention_fwd_bf16",
        "--causal",
        "--config",
        "m64n64",
        "--json",
        "--out",
        "r.json",
        "--seed",
        "42",
        "--tolerance",
        "0.02",
        "--random-shapes",
        "6",
        "--guard-bytes",
        "0",
    ]);
    let o = run_options(&list);
    assert_eq!(o.shape, Shape::new(2, 8, 512, 64));
    assert_eq!(
        (o.dtype, o.mode, o.causal, o.json),
        (Dtype::Bf16, Mode::Check, true, true)
    );
    assert_eq!(o.kernel, "attention_fwd_bf16");
    assert_eq!(o.config.as_deref(), Some("m64n64"));
    assert_eq!(
        (o.seed, o.tolerance, o.random_shapes, o.guard_bytes),
        (42, Some(0.02), 6, 0)
    );
}

#[test]
fn defaults_follow_the_dtype_and_the_brief() {
    let o = run_options(&BASE);
    assert_eq!(o.kernel, "attention_fwd_bf16");
    assert_eq!((o.launches, o.sync), (100, SyncPolicy::Every));
    assert_eq!((o.cache, o.timing), (CacheMode::Warm, Timing::Events));
    assert_eq!((o.target_noise, o.max_seconds), (0.005, 10.0));
    assert_eq!(o.guard_bytes, harness::canary::DEFAULT_GUARD_BYTES);
    assert!(o.measure_peaks && !o.causal && !o.json);
    let mut f16 = BASE.to_vec();
    f16[5] = "f16";
    assert_eq!(run_options(&f16).kernel, "attention_fwd_f16");
}

#[test]
fn bench_and_stress_options_parse() {
    let mut list = BASE.to_vec();
    list[7] = "bench";
    list.extend([
        "--cache",
        "cold",
        "--timing",
        "graph",
        "--max-seconds",
        "3",
        "--target-noise",
        "0.01",
        "--no-peaks",
    ]);
    let o = run_options(&list);
    assert_eq!(
        (o.mode, o.cache, o.timing, o.max_seconds, o.target_noise),
        (Mode::Bench, CacheMode::Cold, Timing::Graph, 3.0, 0.01)
    );
    assert!(!o.measure_peaks);
    let mut list = BASE.to_vec();
    list[7] = "stress";
    list.extend(["--launches", "20", "--sync", "every:5"]);
    let o = run_options(&list);
    assert_eq!((o.launches, o.sync), (20, SyncPolicy::EveryK(5)));
}

#[test]
fn sync_policies_parse_and_schedule_synchronisations() {
    assert_eq!(SyncPolicy::parse("every"), Ok(SyncPolicy::Every));
    assert_eq!(SyncPolicy::parse("end"), Ok(SyncPolicy::End));
    assert_eq!(SyncPolicy::parse("every:1"), Ok(SyncPolicy::Every));
    assert_eq!(SyncPolicy::parse("every:4"), Ok(SyncPolicy::EveryK(4)));
    for bad in ["every:0", "every:", "every:x", "sometimes", ""] {
        assert!(SyncPolicy::parse(bad).is_err(), "{bad}");
    }
    let at = |p: SyncPolicy| {
        (1..=10)
            .filter(|&i| p.syncs_after(i, 10))
            .collect::<Vec<_>>()
    };
    assert_eq!(at(SyncPolicy::Every), (1..=10).collect::<Vec<_>>());
    assert_eq!(at(SyncPolicy::EveryK(4)), vec![4, 8, 10]);
    assert_eq!(at(SyncPolicy::End), vec![10]);
    assert_eq!(SyncPolicy::EveryK(4).window(10), 4);
    assert_eq!(SyncPolicy::EveryK(40).window(10), 10);
    assert_eq!(SyncPolicy::End.window(10), 10);
    assert_eq!(SyncPolicy::EveryK(4).name(), "every:4");
}

#[test]
fn probe_needs_nothing_else() {
    assert!(matches!(parse(args(&["--probe"])), Ok(Command::Probe(_))));
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "required"),
        (
            &["--cubin", "k", "--shape", "2,8,512,64", "--dtype", "f16"],
            "--mode",
        ),
        (
            &[
                "--cubin", "k", "--shape", "2,8,512", "--dtype", "f16", "--mode", "once",
            ],
            "B,H,S,D",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f32",
                "--mode",
                "once",
            ],
            "f32",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "fast",
            ],
            "fast",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "stress",
                "--sync",
                "every:0",
            ],
            "every:K",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "stress",
                "--launches",
                "0",
            ],
            "--launches",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "bench",
                "--random-shapes",
                "3",
            ],
            "--random-shapes",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "check",
                "--tolerance",
                "0",
            ],
            "--tolerance",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "check",
                "--guard-bytes",
                "100",
            ],
            "--guard-bytes",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "bench",
                "--target-noise",
                "2",
            ],
            "--target-noise",
        ),
        (
            &[
                "--cubin",
                "k",
                "--shape",
                "2,8,512,64",
                "--dtype",
                "f16",
                "--mode",
                "bench",
                "--cache",
                "hot",
            ],
            "hot",
        ),
        (&["--bogus"], "--bogus"),
    ];
    for (list, needle) in cases {
        let out = harness(list);
        assert_eq!(out.status.code(), Some(2), "{list:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{list:?}: {}", stderr(&out));
    }
}

#[test]
fn help_exits_0_and_lists_the_exit_codes() {
    let out = harness(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("4 no CUDA driver"));
    assert!(stdout(&out).contains("--guard-bytes"));
}

/// One command line serves every case of a pipeline: the dtype picks its entry point, and the
/// mask is a value (`{causal}` expands to `true` or `false`).
#[test]
fn the_dtype_picks_its_entry_point_and_the_mask_takes_a_value() {
    let mut list = BASE.to_vec();
    list.extend([
        "--entry-point",
        "f16=fwd_half",
        "--entry-point",
        "bf16=fwd_brain",
        "--causal",
        "false",
    ]);
    let o = run_options(&list);
    assert_eq!((o.kernel.as_str(), o.causal), ("fwd_brain", false));
    let mut masked = BASE.to_vec();
    masked.extend(["--causal", "true"]);
    assert!(run_options(&masked).causal);
    let mut bad = BASE.to_vec();
    bad.extend(["--entry-point", "fp8=x"]);
    let e = parse(args(&bad)).expect_err("fp8 is no dtype");
    assert!(e.to_string().contains("`fp8` is not a dtype"), "{e}");
}
