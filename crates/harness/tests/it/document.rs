use std::ffi::OsString;

use harness::cli::{Command, Mode, parse};
use harness::document::{document, summary};
use harness::exit_code_for;
use harness::float::Dtype;
use harness::modes::{Record, Verdict};
use harness::problem::{Problem, Shape};
use parsers::harness::{Check, HarnessOutput, SCHEMA};
use serde_json::Map;

fn record(verdict: Verdict) -> Record {
    let argv: Vec<OsString> = [
        "harness",
        "--cubin",
        "k",
        "--shape",
        "1,2,33,64",
        "--dtype",
        "f16",
        "--mode",
        "check",
        "--config",
        "c1",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    let Ok(Command::Run(opts)) = parse(argv) else {
        panic!("options");
    };
    let p = Problem::new(Shape::new(1, 2, 33, 64), Dtype::F16, true);
    let mut r = Record::new(Mode::Check, "attention_fwd_f16", &opts, &p);
    r.result.launched = true;
    r.result.check = Some(Check {
        passed: verdict == Verdict::Pass,
        max_abs_err: 1e-3,
        rel_l2_err: 4e-4,
        tolerance: 1e-3,
        nan_count: 0,
        unwritten: 0,
        canaries_corrupted: vec![],
    });
    r.result.figures.elements_over_bound = Some(0);
    r.verdict = verdict;
    r
}

#[test]
fn the_document_reads_back_as_the_shared_schema() {
    let records = vec![record(Verdict::Pass)];
    let doc = document(None, &records, Map::new());
    let text = serde_json::to_string(&doc).expect("serialise");
    let parsed: HarnessOutput = serde_json::from_str(&text).expect("schema");
    assert_eq!(parsed.schema, SCHEMA);
    assert_eq!(parsed.producer, "harness");
    assert_eq!(parsed.results.len(), 1);
    let r = &parsed.results[0];
    assert_eq!(
        (
            r.kernel.as_str(),
            r.config.as_deref(),
            r.dtype.as_str(),
            r.causal
        ),
        ("attention_fwd_f16", Some("c1"), "f16", true)
    );
    assert_eq!(r.shape.seq_len, 33);
    assert_eq!(doc["results"][0]["mode"], "check");
    assert_eq!(doc["results"][0]["details"]["elements_over_bound"], 0);
    assert!(doc["harness"]["version"].is_string());
}

#[test]
fn summary_has_one_line_per_result() {
    let text = summary(&[record(Verdict::Pass), record(Verdict::KernelFailure)]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with("check attention_fwd_f16 1,2,33,64 f16 causal: ok"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains(": FAIL"), "{}", lines[1]);
}

#[test]
fn the_worst_verdict_decides_the_exit_code() {
    assert_eq!(exit_code_for(&[]), 0);
    assert_eq!(exit_code_for(&[record(Verdict::Pass)]), 0);
    assert_eq!(
        exit_code_for(&[record(Verdict::Pass), record(Verdict::Infrastructure)]),
        3
    );
    assert_eq!(
        exit_code_for(&[
            record(Verdict::Infrastructure),
            record(Verdict::KernelFailure)
        ]),
        1
    );
}
