//! Users' own programs: their benchmark timings (real pytest-benchmark and Google Benchmark
//! captures) in the Timings table beside their baselines, and their failed checks
//! (`exhibit.results/1`, hand-written fixtures) as root causes that fail the verdict.

use parsers::Format;
use report::join::join;
use report::timings::timings;
use report::{Level, StageKind, VerdictKind, analyze};

use crate::support::{Step, assert_deterministic_text, evidence, markdown, read, step};

/// A stage of a user's program, with no config.
fn program(kind: StageKind, fixture: &'static str, format: Format) -> Step {
    Step {
        config: None,
        ..step(kind, "", fixture, format)
    }
}

/// A fixture's benchmark `stats.median` in seconds (pytest-benchmark).
fn pytest_median(fixture: &str, name: &str) -> f64 {
    let doc: serde_json::Value = serde_json::from_str(&read(fixture)).unwrap();
    doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap()["stats"]["median"]
        .as_f64()
        .unwrap()
}

#[test]
fn bench_timings_pair_with_baselines_of_the_same_name() {
    let ev = evidence(
        "pytest_vs_baseline",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
        ],
        &[],
    );
    let t = timings(&join(&ev));
    assert_eq!(t.rows.len(), 2);
    assert!(t.unpaired_baselines.is_empty());
    for row in &t.rows {
        let name = row.bench.timing.name.as_str();
        let base = row.baseline.as_ref().expect("a baseline of the same name");
        assert_eq!(base.timing.name, name);
        assert_eq!(row.statistic, Some("median"));
        let expected = pytest_median("pytest-benchmark/baseline.json", name)
            / pytest_median("pytest-benchmark/fast.json", name);
        let ratio = row.ratio.unwrap();
        assert!((ratio - expected).abs() < 1e-9 * expected, "{name}");
        // The baseline is the slower implementation in both benchmarks.
        assert!(ratio > 1.0, "{name}: {ratio}");
    }
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Clean, "{}", a.verdict.line);
    let md = markdown(&ev);
    assert!(md.contains("## Timings"), "{md}");
    // Labelled by its format, in its terms: rounds and the interquartile range.
    assert!(
        md.contains("| `test_sort_reversed` | pytest-benchmark | 20 rounds × 10 it | 1.68 | 1.71 | IQR 0.011 |"),
        "{md}"
    );
    assert_deterministic_text(&md);
    insta::assert_snapshot!("pytest_vs_baseline", md);
}

/// A program whose own benchmark is slower than its baseline (the captured baseline
/// implementation benchmarked as the program, the fast one as its baseline) is never clean: the
/// verdict is Slow with the ratio, and without a profile stage the help says `profile:` would
/// say why.
#[test]
fn a_program_slower_than_its_baseline_by_its_own_benchmark_reads_slow() {
    let ev = evidence(
        "slower_than_baseline",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
        ],
        &[],
    );
    let a = report::analyze(&ev);
    assert_eq!(
        a.verdict.kind,
        report::VerdictKind::Slow,
        "{:#?}",
        a.verdict
    );
    let slow: Vec<&report::Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.rule == "slower-than-baseline")
        .collect();
    assert_eq!(slow.len(), 1, "{:#?}", a.diagnoses);
    let d = slow[0];
    let t = timings(&join(&ev));
    let slowest = t
        .rows
        .iter()
        .filter_map(|r| r.ratio)
        .fold(f64::INFINITY, f64::min);
    let slowdown = d.figures["slowdown"].as_f64().expect("a slowdown");
    assert!(
        (slowdown - 1.0 / slowest).abs() < 1e-9,
        "{slowdown} vs {slowest}"
    );
    assert!(
        d.title
            .markdown()
            .contains("x slower than its baseline by its own benchmark"),
        "{}",
        d.title
    );
    assert!(d.fix().markdown().contains("Add `profile:`"), "{}", d.fix());
    // The fast program against the slow baseline stays clean.
    let fine = evidence(
        "faster_than_baseline",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
        ],
        &[],
    );
    assert!(
        !report::analyze(&fine)
            .diagnoses
            .iter()
            .any(|d| d.rule == "slower-than-baseline")
    );
}

#[test]
fn baselines_of_other_names_are_listed_apart() {
    let ev = evidence(
        "unpaired_baseline",
        &[
            program(
                StageKind::Bench,
                "google-benchmark/aggregates_only.json",
                Format::GoogleBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
        ],
        &[],
    );
    let t = timings(&join(&ev));
    assert_eq!(t.rows.len(), 3);
    assert!(t.rows.iter().all(|r| r.baseline.is_none()));
    let names: Vec<&str> = t
        .unpaired_baselines
        .iter()
        .map(|b| b.timing.name.as_str())
        .collect();
    assert_eq!(names, ["test_sum_squares", "test_sort_reversed"]);
    let md = markdown(&ev);
    assert!(
        md.contains("Baseline timings no benchmark is named like:"),
        "{md}"
    );
    assert!(md.contains("- `test_sum_squares`: "), "{md}");
}

#[test]
fn google_benchmark_errors_fail_the_verdict_and_timings_are_listed() {
    let ev = evidence(
        "google_benchmark",
        &[program(
            StageKind::Bench,
            "google-benchmark/repetitions.json",
            Format::GoogleBenchmark,
        )],
        &[],
    );
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Failing, "{}", a.verdict.line);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "check-failed");
    assert_eq!(d.level, Level::Error);
    assert_eq!(
        d.title.markdown(),
        "Benchmark `failing_setup` stopped with an error: reference output not found"
    );
    assert_eq!(a.diagnoses.len(), 1, "{:#?}", a.diagnoses);
    let t = &a.tables.timings;
    assert_eq!(t.rows.len(), 4);
    assert!(
        t.rows
            .iter()
            .all(|r| r.baseline.is_none() && r.ratio.is_none())
    );
    let md = markdown(&ev);
    assert!(md.contains("## Timings"));
    assert_deterministic_text(&md);
    insta::assert_snapshot!("google_benchmark", md);
}

#[test]
fn a_failed_program_check_is_a_root_cause_naming_the_test() {
    let ev = evidence(
        "program_check_failed",
        &[program(
            StageKind::Check,
            "program-results/one_failed.json",
            Format::ProgramResults,
        )],
        &[],
    );
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Failing, "{}", a.verdict.line);
    let mut titles: Vec<String> = a.diagnoses.iter().map(|d| d.title.markdown()).collect();
    titles.sort();
    assert_eq!(
        titles,
        [
            "Check `softmax_bf16_nan_row` failed",
            "Check `softmax_f16_tail_1000` failed: row 999 differs: got 0.0, expected 0.03125",
        ]
    );
    assert!(a.diagnoses.iter().all(|d| d.rule == "check-failed"));
    let tail = a
        .diagnoses
        .iter()
        .find(|d| d.title.markdown().contains("tail"))
        .unwrap();
    assert_eq!(tail.figures["max_abs_err"], 0.03125);
    let md = markdown(&ev);
    assert!(!md.contains("## Timings"), "no timings, no section");
    assert_deterministic_text(&md);
    insta::assert_snapshot!("program_check_failed", md);
}

#[test]
fn passing_program_checks_are_clean() {
    let ev = evidence(
        "program_checks_passed",
        &[program(
            StageKind::Check,
            "program-results/all_passed.json",
            Format::ProgramResults,
        )],
        &[],
    );
    let a = analyze(&ev);
    assert_eq!(a.verdict.kind, VerdictKind::Clean, "{}", a.verdict.line);
    assert!(a.diagnoses.is_empty());
}

/// A performance cause carries what makes it matter: the program's own benchmark against its
/// baseline (real pytest-benchmark JSON) beside ncu's exports of a slow kernel (a bank-conflict
/// capture with its source page, on an H100). The verdict and the summary say Slow, and a
/// diff against a run without the cause shows it as new.
#[test]
fn a_slow_cause_says_how_the_program_compares_with_its_baseline() {
    // The program's benchmark slower than its baseline (the two captures, roles swapped).
    let slow = evidence(
        "slow_vs_baseline",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Profile,
                "ncu-csv/slow_bank_details.log",
                Format::NcuCsv,
            ),
            program(
                StageKind::Profile,
                "ncu-source/slow_bank_source.log",
                Format::NcuSource,
            ),
        ],
        &[],
    );
    let a = analyze(&slow);
    assert_eq!(a.verdict.kind, VerdictKind::Slow, "{}", a.verdict.line);
    let cause = a
        .diagnoses
        .iter()
        .find(|d| d.rule == "slow-kernel" && d.level == Level::Warning)
        .expect("a performance cause");
    assert!(
        cause
            .explanation()
            .markdown()
            .contains("x slower than its baseline (median of each)"),
        "{}",
        cause.explanation()
    );
    let summary = report::render_summary(&slow);
    // The verdict says how slow by the program's own benchmark, then why.
    assert!(
        summary.contains("🐢 Slow: 1625x slower than its baseline by its own benchmark")
            && summary.contains("; 1 cause, top: Shared-memory bank conflicts"),
        "{summary}"
    );
    // A program at least as fast as its baseline is not slow, whatever ncu still sees: the
    // cause stays, as a note that says so.
    let ahead = evidence(
        "fast_vs_baseline",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Baseline,
                "pytest-benchmark/baseline.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Profile,
                "ncu-csv/slow_bank_details.log",
                Format::NcuCsv,
            ),
        ],
        &[],
    );
    let a = analyze(&ahead);
    assert_ne!(a.verdict.kind, VerdictKind::Slow, "{}", a.verdict.line);
    assert!(
        a.diagnoses.iter().any(|d| d.rule == "slow-kernel"
            && d.level == Level::Note
            && d.explanation()
                .markdown()
                .contains("what ncu estimates is headroom")),
        "{:#?}",
        a.diagnoses
    );

    let quiet = evidence(
        "baseline_only",
        &[
            program(
                StageKind::Bench,
                "pytest-benchmark/fast.json",
                Format::PytestBenchmark,
            ),
            program(
                StageKind::Profile,
                "ncu-csv/slow_none_details.log",
                Format::NcuCsv,
            ),
        ],
        &[],
    );
    let d = report::diff(&quiet, &slow, &report::DiffOptions::default());
    assert!(
        d.new.iter().any(|n| n.rule == "slow-kernel"),
        "{:#?}",
        d.new
    );
}

/// A program's profile whose launches the runner chose (the stage named none): the Evidence
/// section says which launch of each kernel was measured, what profiling cost, and how to choose
/// another; a stage that chose its own launches gets the cost alone.
#[test]
fn a_profile_says_which_launches_the_runner_chose_and_what_they_cost() {
    let profiled = |launches: report::ProfileLaunches| {
        let mut ev = evidence(
            "profile_launches",
            &[program(
                StageKind::Profile,
                "ncu-csv/slow_bank_details.log",
                Format::NcuCsv,
            )],
            &[],
        );
        for stage in &mut ev.run.stages {
            stage.duration_ms = 12_345;
            stage.unit.profile_launches = Some(launches);
        }
        markdown(&ev)
    };
    let md = profiled(report::ProfileLaunches::FirstOfEachKernel { per_kernel: 2 });
    let line = |md: &str, start: &str| {
        md.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line `{start}` in\n{md}"))
            .to_string()
    };
    assert!(line(&md, "- **profile**: ").ends_with("; 12.3 s"), "{md}");
    assert_eq!(
        line(&md, "**profile**: the runner profiled"),
        "**profile**: the runner profiled the first 2 launches of each kernel, the 2nd after a warm-up (a \
         kernel launched once: its one launch), in 12.3 s. To profile another launch, give the \
         stage a launch selection of its own: `args: [--kernel-name, regex:NAME, --launch-skip, \
         N, --launch-count, 1]`."
    );
    let own = profiled(report::ProfileLaunches::Stage);
    assert!(line(&own, "- **profile**: ").ends_with("; 12.3 s"), "{own}");
    assert!(!own.contains("To profile another launch"), "{own}");
}

/// Nsight Compute's occupancy rule is a suggestion, not a measurement: more resident warps
/// hide latency only if the kernel is short of them. On the captured profiles of a kernel held
/// to few blocks by its registers (`slow_regs`) and one held by its shared memory
/// (`slow_smem_occ`), the cause says it is untested, names the knob whose one more run tests
/// it (register budget, tile) with the lines to paste, and is at most of medium confidence.
#[test]
fn an_occupancy_suggestion_is_untested_until_a_run_tests_it() {
    for (name, kind, knob) in [
        (
            "slow_regs",
            "registers",
            "registers: { flag: \"-maxrregcount={value}\" }",
        ),
        ("slow_smem_occ", "tile", "tile: { define: TILE }"),
    ] {
        let details: &'static str = format!("ncu-csv/{name}_details.log").leak();
        let source: &'static str = format!("ncu-source/{name}_source.log").leak();
        let ev = evidence(
            name,
            &[
                program(StageKind::Profile, details, Format::NcuCsv),
                program(StageKind::Profile, source, Format::NcuSource),
            ],
            &[],
        );
        let a = analyze(&ev);
        let d = a
            .diagnoses
            .iter()
            .find(|d| d.title.markdown().starts_with("Occupancy limited by"))
            .unwrap_or_else(|| panic!("{name}: an occupancy cause in {:#?}", a.diagnoses));
        assert!(d.untested(), "{name}: {d:#?}");
        let h = d.hypothesis.as_ref().expect("a hypothesis");
        let settle = h.settle.as_ref().expect("what one more run needs");
        assert_eq!(
            settle.add_knob.map(|k| k.as_str()),
            Some(kind),
            "{name}: {settle:?}"
        );
        assert!(settle.turn_on, "{name}: {settle:?}");
        assert!(d.confidence <= report::Confidence::Medium, "{name}: {d:#?}");
        let text = markdown(&ev);
        assert!(
            text.contains("untested") && text.contains(knob) && text.contains("experiments: auto"),
            "{name}: {text}"
        );
        // Whatever its estimate, it ranks after every measured cause of its level.
        let at = a.diagnoses.iter().position(|x| x == d).expect("ranked");
        assert!(
            a.diagnoses[at..]
                .iter()
                .filter(|x| x.level == d.level)
                .all(|x| x.untested()),
            "{name}: {:#?}",
            a.diagnoses.iter().map(|d| &d.title).collect::<Vec<_>>()
        );
    }
}
