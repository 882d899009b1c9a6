//! Users' programs' JSON: pytest-benchmark and Google Benchmark timings (real captures made by
//! `fixtures/programs/capture_bench.sh`) and `exhibit.results/1` checks (hand-written, as their
//! sidecars say). Expected values are read from the fixture JSON itself, independently of the
//! parser. The `malformed` and `truncated` files are hand-made bad input.

use parsers::bench_json::{RESULTS_SCHEMA, ResultsDocument};
use parsers::{Format, ParsedLog, ProgramCheck, Severity, Timing};
use serde_json::Value;

use crate::{fixture, fixtures, parse_fixture};

/// A fixture as a JSON value, for reading the expected numbers.
fn json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

fn timing<'a>(log: &'a ParsedLog, name: &str) -> &'a Timing {
    log.timings
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no timing {name} in {:?}", log.timings))
}

/// Equal to a few ulps: the parser multiplies by the unit's factor as the test does.
fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1e-12))
}

/// The Google Benchmark rows of a fixture named `name` (an iteration row or an aggregate).
fn google_rows<'a>(doc: &'a Value, name: &str) -> Vec<&'a Value> {
    doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["name"] == name)
        .collect()
}

fn google_us(row: &Value) -> f64 {
    let factor = match row["time_unit"].as_str().unwrap() {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        other => panic!("unit {other}"),
    };
    row["real_time"].as_f64().unwrap() * factor
}

#[test]
fn pytest_benchmark_stats_are_read_in_microseconds() {
    for name in [
        "pytest-benchmark/fast.json",
        "pytest-benchmark/baseline.json",
    ] {
        let log = parse_fixture(name);
        assert!(log.complete, "{name}: {:?}", log.unparsed_examples);
        assert_eq!(log.unparsed_lines, 0);
        assert!(log.findings.is_empty());
        let doc = json(name);
        let benchmarks = doc["benchmarks"].as_array().unwrap();
        assert_eq!(log.timings.len(), benchmarks.len());
        for b in benchmarks {
            let t = timing(&log, b["name"].as_str().unwrap());
            let s = &b["stats"];
            assert_eq!(t.format, Format::PytestBenchmark);
            assert_eq!(t.samples, s["rounds"].as_u64());
            assert_eq!(t.iterations, s["iterations"].as_u64());
            for (got, key) in [
                (t.min_us, "min"),
                (t.median_us, "median"),
                (t.mean_us, "mean"),
                (t.stdev_us, "stddev"),
                (t.max_us, "max"),
            ] {
                let seconds = s[key].as_f64().unwrap();
                assert!(
                    close(got, seconds * 1e6),
                    "{name} {key}: {got:?} vs {seconds} s"
                );
            }
        }
    }
    // The pedantic benchmark's fixed rounds and iterations, as bench_pytest.py asks for them.
    let fast = parse_fixture("pytest-benchmark/fast.json");
    let sort = timing(&fast, "test_sort_reversed");
    assert_eq!((sort.samples, sort.iterations), (Some(20), Some(10)));
    assert!(close(sort.median_us, 1.68450000046505));
}

#[test]
fn google_benchmark_rows_use_real_time_in_every_unit() {
    let name = "google-benchmark/basic.json";
    let log = parse_fixture(name);
    assert!(log.complete, "{:?}", log.unparsed_examples);
    assert_eq!(log.unparsed_lines, 0);
    let doc = json(name);
    // One timing per benchmark that ran; the failing one is a finding instead.
    let names: Vec<&str> = log.timings.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sum_squares",
            "sort_reversed/256",
            "sort_reversed/4096",
            "build_dict"
        ]
    );
    for t in &log.timings {
        let rows = google_rows(&doc, &t.name);
        let [row] = rows.as_slice() else {
            panic!("{} rows for {}", rows.len(), t.name)
        };
        assert_eq!(t.format, Format::GoogleBenchmark);
        assert!(close(t.mean_us, google_us(row)), "{}", t.name);
        assert_eq!(t.iterations, row["iterations"].as_u64());
        assert_eq!(t.samples, Some(1));
        assert_eq!((t.median_us, t.stdev_us, t.min_us), (None, None, None));
    }
    // ns, us and ms, each converted: the file's own numbers.
    assert!(close(
        timing(&log, "sum_squares").mean_us,
        72.31950759887695
    ));
    assert!(close(
        timing(&log, "sort_reversed/256").mean_us,
        2.352698898026067
    ));
    assert!(close(timing(&log, "build_dict").mean_us, 5433.138679055607));
}

#[test]
fn google_benchmark_aggregates_fold_into_one_timing() {
    let name = "google-benchmark/repetitions.json";
    let log = parse_fixture(name);
    assert!(log.complete, "{:?}", log.unparsed_examples);
    let doc = json(name);
    assert_eq!(log.timings.len(), 4, "{:#?}", log.timings);
    for t in &log.timings {
        let agg = |suffix: &str| google_us(google_rows(&doc, &format!("{}_{suffix}", t.name))[0]);
        assert!(close(t.mean_us, agg("mean")), "{}", t.name);
        assert!(close(t.median_us, agg("median")), "{}", t.name);
        assert!(close(t.stdev_us, agg("stddev")), "{}", t.name);
        assert_eq!(t.samples, Some(3));
        // Iterations per repetition, from the iteration rows.
        assert_eq!(
            t.iterations,
            google_rows(&doc, &t.name)[0]["iterations"].as_u64()
        );
    }
    let dict = timing(&log, "build_dict");
    assert!(close(dict.mean_us, 3965.914249420166));
    assert!(close(dict.median_us, 3988.8322353363037));
    assert!(close(dict.stdev_us, 222.74938595683755));

    // Aggregates only (`--benchmark_report_aggregates_only`, written by `--benchmark_out`).
    let name = "google-benchmark/aggregates_only.json";
    let log = parse_fixture(name);
    assert!(log.complete);
    let doc = json(name);
    assert_eq!(log.timings.len(), 3);
    let sum = timing(&log, "sum_squares");
    assert!(close(
        sum.median_us,
        google_us(google_rows(&doc, "sum_squares_median")[0])
    ));
    assert!(close(sum.mean_us, 67.99122167071645));
    assert_eq!((sum.samples, sum.iterations), (Some(3), None));
}

#[test]
fn google_benchmark_errors_become_findings() {
    let log = parse_fixture("google-benchmark/basic.json");
    assert_eq!(log.findings.len(), 1);
    let f = &log.findings[0];
    assert_eq!(f.kind, parsers::FindingKind::CheckFailed);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("failing_setup") && f.message.contains("reference output not found"),
        "{}",
        f.message
    );
    let test = f.facts.test.as_deref().expect("the benchmark's facts");
    assert_eq!(test.name, "failing_setup");
    assert_eq!(test.message.as_deref(), Some("reference output not found"));
    assert_eq!(
        f.excerpt,
        [
            "{\"name\": \"failing_setup\", \"error_occurred\": true, \"error_message\": \"reference output not found\"}"
        ]
    );
    // Three repetitions of the same error are one site seen three times, with one fingerprint.
    let repeated = parse_fixture("google-benchmark/repetitions.json");
    assert_eq!(repeated.findings.len(), 1);
    assert_eq!(repeated.findings[0].count, 3);
    assert_eq!(repeated.findings[0].fingerprint, f.fingerprint);
}

#[test]
fn a_skipped_benchmark_is_neither_a_timing_nor_a_finding() {
    // Hand-made: the error row of a real capture rewritten in the form Google Benchmark writes
    // for `SkipWithMessage` ("skipped" and "skip_message").
    let text = fixture("google-benchmark/basic.json")
        .replace("\"error_occurred\"", "\"skipped\"")
        .replace("\"error_message\"", "\"skip_message\"");
    let log = parsers::parse(Format::GoogleBenchmark, &text);
    assert!(log.complete);
    assert!(log.findings.is_empty());
    assert_eq!(log.timings.len(), 4);
}

#[test]
fn program_results_become_checks_and_failures_findings() {
    let log = parse_fixture("program-results/all_passed.json");
    assert!(log.complete);
    assert_eq!(log.checks.len(), 2);
    assert!(log.checks.iter().all(|c| c.passed));
    assert!(log.findings.is_empty());
    assert_eq!(log.checks[1].max_abs_err, Some(0.00048828125));
    assert_eq!(
        log.checks[1].message.as_deref(),
        Some("within tolerance 1e-3")
    );

    let log = parse_fixture("program-results/one_failed.json");
    assert!(log.complete, "{:?}", log.unparsed_examples);
    assert_eq!(log.unparsed_lines, 0, "an unknown field is ignored");
    let passed: Vec<bool> = log.checks.iter().map(|c| c.passed).collect();
    assert_eq!(passed, [true, false, true, false]);
    assert_eq!(log.findings.len(), 2);
    let tail = &log.findings[0];
    assert_eq!(tail.kind, parsers::FindingKind::CheckFailed);
    assert_eq!(tail.severity, Severity::Error);
    assert_eq!(
        tail.message,
        "check_softmax: softmax_f16_tail_1000 failed (max abs error 0.03125): row 999 differs: \
         got 0.0, expected 0.03125"
    );
    let test = tail.facts.test.as_deref().expect("the check's facts");
    assert_eq!(test.name, "softmax_f16_tail_1000");
    assert_eq!(test.program.as_deref(), Some("check_softmax"));
    assert_eq!(test.max_abs_err, Some(0.03125));
    assert_eq!(
        log.findings[1].message,
        "check_softmax: softmax_bf16_nan_row failed"
    );
    assert_ne!(tail.fingerprint, log.findings[1].fingerprint);
}

#[test]
fn an_empty_results_list_is_complete_and_holds_nothing() {
    let log = parse_fixture("program-results/empty.json");
    assert!(log.complete);
    assert!(log.checks.is_empty() && log.findings.is_empty() && log.timings.is_empty());
    assert_eq!(log.unparsed_lines, 0);
}

#[test]
fn a_results_document_built_from_the_schema_types_reads_back() {
    let doc = ResultsDocument {
        schema: RESULTS_SCHEMA.into(),
        program: "check_gemm".into(),
        results: vec![ProgramCheck {
            name: "gemm_128".into(),
            passed: false,
            message: None,
            max_abs_err: Some(2.5),
            file: Some("tests/check_gemm.cu".into()),
            line: Some(88),
            mismatch: None,
        }],
    };
    let text = serde_json::to_string(&doc).unwrap();
    assert_eq!(parsers::detect(&text), Some(Format::ProgramResults));
    let log = parsers::parse(Format::ProgramResults, &text);
    assert!(log.complete);
    assert_eq!(log.checks, doc.results);
    assert_eq!(log.findings.len(), 1);
    // The failing check's place in the program's source is the finding's.
    assert_eq!(
        (log.findings[0].file.as_deref(), log.findings[0].line),
        (Some("tests/check_gemm.cu"), Some(88))
    );
    // Another schema version is read but never complete.
    let other = text.replace(RESULTS_SCHEMA, "exhibit.results/2");
    let log = parsers::parse(Format::ProgramResults, &other);
    assert!(!log.complete);
    assert_eq!(log.checks.len(), 1);
}

#[test]
fn the_streaming_reader_agrees_with_parse() {
    for (name, format) in [
        ("pytest-benchmark/fast.json", Format::PytestBenchmark),
        ("google-benchmark/repetitions.json", Format::GoogleBenchmark),
        ("nvbench/scale.json", Format::Nvbench),
        ("program-results/one_failed.json", Format::ProgramResults),
    ] {
        let text = fixture(name);
        let streamed = parsers::parse_reader(format, text.as_bytes()).unwrap();
        assert_eq!(streamed, parsers::parse(format, &text), "{name}");
    }
}

#[test]
fn a_banner_before_the_document_is_tolerated() {
    // Hand-made: a line a program printed before Google Benchmark's JSON.
    let text = format!(
        "loading model...\n{}",
        fixture("google-benchmark/basic.json")
    );
    assert_eq!(parsers::detect(&text), Some(Format::GoogleBenchmark));
    let log = parsers::parse(Format::GoogleBenchmark, &text);
    assert!(log.complete);
    assert_eq!(log.timings.len(), 4);
}

#[test]
fn detection_keeps_each_format_apart() {
    for (name, format) in [
        ("pytest-benchmark/truncated.json", Format::PytestBenchmark),
        ("google-benchmark/truncated.json", Format::GoogleBenchmark),
        ("nvbench/truncated.json", Format::Nvbench),
        ("nvbench/scale.json", Format::Nvbench),
        ("program-results/truncated.json", Format::ProgramResults),
        ("harness/bench_attention.json", Format::Harness),
        ("harness/sdpa_b2h8s512d64.json", Format::Harness),
    ] {
        assert_eq!(parsers::detect(&fixture(name)), Some(format), "{name}");
    }
    // Hand-made: JSON of none of these shapes, and a sanitizer log whose program printed a
    // results document (the sanitizer's log it stays).
    assert_eq!(parsers::detect("{\"benchmarks\": []}"), None);
    let wrapped = format!(
        "========= COMPUTE-SANITIZER\n{}========= ERROR SUMMARY: 0 errors\n",
        fixture("program-results/one_failed.json")
    );
    assert_eq!(parsers::detect(&wrapped), Some(Format::ComputeSanitizer));
}

#[test]
fn malformed_rows_are_unparsed_and_the_rest_still_count() {
    let log = parsers::parse(
        Format::PytestBenchmark,
        &fixture("pytest-benchmark/malformed.json"),
    );
    assert!(!log.complete);
    assert_eq!(log.unparsed_lines, 1);
    assert!(log.unparsed_examples[0].starts_with("row 1: "));
    assert_eq!(log.timings.len(), 1);

    let log = parsers::parse(
        Format::GoogleBenchmark,
        &fixture("google-benchmark/malformed.json"),
    );
    assert!(!log.complete);
    assert_eq!(log.unparsed_lines, 2, "{:?}", log.unparsed_examples);
    assert!(log.unparsed_examples[0].contains("fortnights"));
    let names: Vec<&str> = log.timings.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sum_squares", "build_dict"]);
    assert_eq!(log.findings.len(), 1);

    let log = parsers::parse(
        Format::ProgramResults,
        &fixture("program-results/malformed.json"),
    );
    assert!(!log.complete);
    assert_eq!(log.unparsed_lines, 2);
    assert_eq!(log.checks.len(), 1);
}

#[test]
fn truncated_documents_are_never_complete() {
    for (name, format) in [
        ("pytest-benchmark/truncated.json", Format::PytestBenchmark),
        ("google-benchmark/truncated.json", Format::GoogleBenchmark),
        ("nvbench/truncated.json", Format::Nvbench),
        ("program-results/truncated.json", Format::ProgramResults),
    ] {
        let text = fixture(name);
        let log = parsers::parse(format, &text);
        assert!(!log.complete, "{name}");
        assert!(log.timings.is_empty() && log.checks.is_empty() && log.findings.is_empty());
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        assert_eq!(log.unparsed_lines, lines, "{name}");
        assert!(log.unparsed_examples[0].starts_with("not a"), "{name}");
    }
}

#[test]
fn foreign_json_and_garbage_never_panic() {
    // Hand-made: other JSON, other formats' fixtures, and JSON of the right shape with the wrong
    // types, each given to every new parser.
    let inputs = [
        String::new(),
        "null".to_string(),
        "[1, 2, 3]".to_string(),
        "{\"machine_info\": {}, \"benchmarks\": 7}".to_string(),
        "{\"context\": {}, \"benchmarks\": [{\"name\": 1}, 5, null]}".to_string(),
        "{\"context\": {}, \"benchmarks\": [{\"name\": \"x\", \"real_time\": 1e308, \"time_unit\": \"s\"}]}"
            .to_string(),
        "{\"schema\": \"exhibit.results/1\", \"program\": \"p\", \"results\": [{\"name\": \"x\", \"passed\": false, \"max_abs_err\": -1e400}]}"
            .to_string(),
        fixture("harness/check_attention.json"),
        fixture("compute-sanitizer/memcheck_oob_read.log"),
        fixture("pytest-benchmark/fast.json"),
        fixture("google-benchmark/basic.json"),
        fixture("nvbench/one_state.json"),
        "{\"meta\": {}, \"benchmarks\": [{\"name\": \"b\", \"states\": [{\"name\": \"s\", \"summaries\": [{\"tag\": \"nv/cold/time/gpu/mean\", \"data\": [{\"name\": \"value\", \"value\": \"1e400\"}]}]}]}]}"
            .to_string(),
    ];
    for format in [
        Format::PytestBenchmark,
        Format::GoogleBenchmark,
        Format::Nvbench,
        Format::ProgramResults,
    ] {
        for text in &inputs {
            let log = parsers::parse(format, text);
            if parsers::detect(text) != Some(format) {
                assert!(!log.complete, "{format:?} on {:.60}", text);
            }
            let streamed = parsers::parse_reader(format, text.as_bytes()).unwrap();
            assert_eq!(streamed, log);
        }
    }
    // A time too large for f64 once converted is left out, never infinite.
    let log = parsers::parse(Format::GoogleBenchmark, &inputs[5]);
    assert!(log.timings.is_empty() && !log.complete);
}

#[test]
fn every_new_fixture_has_a_sidecar_and_snapshot() {
    for dir in [
        "pytest-benchmark",
        "google-benchmark",
        "program-results",
        "junit",
    ] {
        for entry in std::fs::read_dir(fixtures().join(dir)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".meta.json") {
                continue;
            }
            let stem = name.trim_end_matches(".json").trim_end_matches(".xml");
            let meta: Value = serde_json::from_str(&fixture(&format!("{dir}/{stem}.meta.json")))
                .unwrap_or_else(|e| panic!("{dir}/{name} has no sidecar: {e}"));
            assert!(meta.get("command").is_some(), "{dir}/{name}");
            let hand_written = meta.get("hand_written") == Some(&Value::Bool(true));
            // Bad input is always hand-made, and labelled so.
            if stem == "malformed" || stem == "truncated" {
                assert!(hand_written, "{dir}/{name} must be labelled hand-written");
                continue;
            }
            let rel = format!("{dir}/{name}");
            let parsed = parse_fixture(&rel);
            insta::with_settings!({ snapshot_suffix => rel.replace('/', "__"), prepend_module_to_snapshot => false }, {
                insta::assert_json_snapshot!("fixture", parsed);
            });
        }
    }
}

#[test]
fn nvbench_states_are_timings_of_cold_gpu_time_with_nvbench_noise() {
    let log = parsers::parse(Format::Nvbench, &fixture("nvbench/scale.json"));
    assert!(log.complete, "{:?}", log.unparsed_examples);
    let names: Vec<&str> = log.timings.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bench_scale Elements=2^16",
            "bench_scale Elements=2^20",
            "bench_scale Elements=2^24",
            "bench_scale_strided T=F32 Stride=1",
            "bench_scale_strided T=F32 Stride=33",
            "bench_scale_strided T=F64 Stride=1",
            "bench_scale_strided T=F64 Stride=33",
        ]
    );
    let by = |name: &str| log.timings.iter().find(|t| t.name == name).expect(name);
    // nvbench's own log line for this state: "Cold: 0.418346ms GPU ... 1196x".
    let strided = by("bench_scale_strided T=F32 Stride=33");
    assert_eq!(strided.format, Format::Nvbench);
    assert_eq!(strided.samples, Some(1196));
    assert!(
        (strided.mean_us.unwrap() - 418.346).abs() < 0.001,
        "{strided:?}"
    );
    assert!(strided.median_us.is_some() && strided.iqr_us.is_some());
    // Its noise, as nvbench's table prints it: the relative stdev, 0.13%.
    let noise = strided.stdev_us.unwrap() / strided.mean_us.unwrap();
    assert!((noise - 0.0012638).abs() < 1e-6, "{noise}");
    // The stride costs 6x.
    let coalesced = by("bench_scale_strided T=F32 Stride=1");
    assert!(strided.mean_us.unwrap() > 6.0 * coalesced.mean_us.unwrap());
}
