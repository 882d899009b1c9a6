//! JUnit XML as pytest, GoogleTest, ctest and Catch2 wrote it (real captures of the programs in
//! `fixtures/programs/junit/`, one failing test each; their sidecars give the commands), and one
//! hand-made file cut short.

use parsers::{FindingKind, Format, ParsedLog, Severity, TestCase, TestOutcome};

use crate::{fixture, parse_fixture};

fn test<'a>(log: &'a ParsedLog, id: &str) -> &'a TestCase {
    log.tests
        .iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("no test {id} in {:#?}", log.tests))
}

fn count(log: &ParsedLog, outcome: TestOutcome) -> usize {
    log.tests.iter().filter(|t| t.outcome == outcome).count()
}

#[test]
fn pytest_names_the_failing_test_by_its_node_id_at_its_assertion() {
    let log = parse_fixture("junit/pytest.xml");
    assert!(log.complete);
    assert_eq!(log.tests_framework, "pytest");
    // The document's own counts: tests="9" failures="1" errors="1" skipped="2".
    let xml = fixture("junit/pytest.xml");
    assert!(xml.contains(r#"errors="1" failures="1" skipped="2" tests="9""#));
    assert_eq!(log.tests.len(), 9);
    assert_eq!(count(&log, TestOutcome::Failed), 1);
    assert_eq!(count(&log, TestOutcome::Error), 1);
    assert_eq!(count(&log, TestOutcome::Skipped), 2);
    assert_eq!(count(&log, TestOutcome::Passed), 5);
    let tail = test(&log, "tests/test_softmax.py::test_tail_tile[200]");
    assert_eq!(tail.outcome, TestOutcome::Failed);
    // The traceback ends in `tests/test_softmax.py:27: AssertionError`.
    assert!(xml.contains("tests/test_softmax.py:27: AssertionError"));
    assert_eq!(
        (tail.file.as_deref(), tail.line),
        (Some("tests/test_softmax.py"), Some(27))
    );
    assert_eq!(
        tail.message.as_deref(),
        Some(
            "AssertionError: max abs error 2.851e-03 at n=200 (tail of 8); assert \
             0.002851047785080253 < 1e-06"
        )
    );
    let setup = test(&log, "tests/test_softmax.py::test_uses_device");
    assert_eq!(setup.outcome, TestOutcome::Error);
    assert!(
        setup
            .message
            .as_deref()
            .is_some_and(|m| m.contains("CUDA error: an illegal memory access")),
        "{setup:?}"
    );
    // One finding per failed or errored test, at its location.
    assert_eq!(log.findings.len(), 2, "{:#?}", log.findings);
    let f = &log.findings[0];
    assert_eq!(
        (f.kind, f.severity, f.file.as_deref(), f.line),
        (
            FindingKind::CheckFailed,
            Severity::Error,
            Some("tests/test_softmax.py"),
            Some(27)
        )
    );
    let test = f.facts.test.as_deref().expect("the test's facts");
    assert_eq!(test.name, "tests/test_softmax.py::test_tail_tile[200]");
    assert_eq!(test.program.as_deref(), Some("pytest"));
    assert_eq!(test.outcome, Some(parsers::TestOutcome::Failed));
}

#[test]
fn googletest_gives_the_failing_assertion_and_the_parameter() {
    let log = parse_fixture("junit/gtest.xml");
    assert!(log.complete);
    assert_eq!(log.tests_framework, "GoogleTest");
    assert_eq!(log.tests.len(), 5);
    assert_eq!(count(&log, TestOutcome::Skipped), 1);
    assert_eq!(count(&log, TestOutcome::Passed), 3);
    let tail = test(&log, "Shapes/TailTile.MatchesReference/2");
    assert_eq!(tail.outcome, TestOutcome::Failed);
    assert_eq!(tail.param.as_deref(), Some("200"));
    // The assertion's line (39), not the test's definition (33).
    assert!(fixture("junit/gtest.xml").contains("softmax_test.cc:39&#x0A;Expected"));
    assert!(
        tail.file
            .as_deref()
            .is_some_and(|f| f.ends_with("/softmax_test.cc"))
    );
    assert_eq!(tail.line, Some(39));
    assert_eq!(
        tail.message.as_deref(),
        Some(
            "Expected: (err) < (1e-6), actual: 0.0028510477850802532 vs 1e-06; max abs error at \
             n=200 (tail of 8)"
        )
    );
    assert_eq!(log.findings.len(), 1);
}

#[test]
fn ctest_reads_the_failure_from_the_programs_own_output() {
    let log = parse_fixture("junit/ctest.xml");
    assert!(log.complete);
    assert_eq!(log.tests_framework, "ctest");
    // ctest's one case for the binary, named by the GoogleTest test that failed in it.
    assert_eq!(log.tests.len(), 1);
    let only = test(&log, "Shapes/TailTile.MatchesReference/2");
    assert_eq!(only.outcome, TestOutcome::Failed);
    assert_eq!(only.suite.as_deref(), Some("softmax_test"));
    assert_eq!(only.line, Some(39));
    assert!(
        only.message
            .as_deref()
            .is_some_and(|m| m
                .starts_with("Expected: (err) < (1e-6), actual: 0.0028510477850802532 vs 1e-06")),
        "{only:?}"
    );
}

#[test]
fn catch2_keeps_the_expansion_and_the_info_lines() {
    let log = parse_fixture("junit/catch2.xml");
    assert!(log.complete);
    assert_eq!(log.tests_framework, "Catch2");
    assert_eq!(log.tests.len(), 3);
    let tail = test(&log, "tail tile matches the reference");
    assert_eq!(tail.outcome, TestOutcome::Failed);
    assert_eq!(
        (tail.file.as_deref(), tail.line),
        (Some("softmax_test.cpp"), Some(38))
    );
    assert_eq!(
        tail.message.as_deref(),
        Some(
            "CHECK( err < 1e-6 ); with expansion: 0.00285104778508025 < 0.000001; n = 200, tail \
             of 8"
        )
    );
    let skipped = test(&log, "wgmma path");
    assert_eq!(skipped.outcome, TestOutcome::Skipped);
    assert_eq!(skipped.message.as_deref(), Some("needs sm_90a"));
}

#[test]
fn a_document_cut_short_keeps_what_it_read_and_says_it_is_incomplete() {
    let log = parse_fixture("junit/truncated.xml");
    assert!(!log.complete);
    assert_eq!(log.tests.len(), 2, "{:#?}", log.tests);
    assert_eq!(
        test(&log, "tests/test_softmax.py::test_tail_tile[200]").outcome,
        TestOutcome::Failed
    );
}

/// pytest's JUnit XML of a run whose tests all passed (the passing cases of `junit/pytest.xml`,
/// in the same shape).
const ALL_PASSED: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="4" time="0.031" timestamp="2026-11-24T19:15:19.155500+00:00" hostname="vm"><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[1]" time="0.000" /><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[7]" time="0.000" /><testcase classname="tests.test_softmax" name="test_rows_sum_to_one[64]" time="0.000" /><testcase classname="tests.test_softmax" name="test_tail_tile[64]" time="0.000" /></testsuite></testsuites>"#;

/// Test cases are what a JUnit file holds: one whose tests all passed has no finding, yet does
/// not hold nothing; one whose tests were all skipped ran none of them.
#[test]
fn test_cases_are_what_a_junit_file_holds() {
    let log = parsers::parse(Format::JUnit, ALL_PASSED);
    assert!(log.complete);
    assert!(log.findings.is_empty(), "{:#?}", log.findings);
    assert_eq!(count(&log, TestOutcome::Passed), 4);
    assert!(!log.holds_nothing());
    assert!(!log.every_test_skipped());

    let skipped = ALL_PASSED.replace(
        r#"time="0.000" />"#,
        r#"time="0.000"><skipped type="pytest.skip" message="needs sm_100" /></testcase>"#,
    );
    let log = parsers::parse(Format::JUnit, &skipped);
    assert_eq!(count(&log, TestOutcome::Skipped), 4);
    assert!(!log.holds_nothing());
    assert!(log.every_test_skipped());

    let mut none = log.clone();
    none.tests.clear();
    assert!(none.holds_nothing());
}

/// pytest's JUnit XML of three failing comparisons (`programs/test_mismatch.py`, on the GPU
/// machine): each test keeps which elements its comparison found wrong, from the message
/// `torch.testing` or `numpy.testing` printed. numpy's listing of the first mismatches shows
/// the 40 wrong elements of 1000 are exactly the last 40.
#[test]
fn a_standard_comparisons_mismatch_summary_is_kept_with_its_test() {
    let log = parsers::parse(
        parsers::Format::JUnit,
        &fixture("junit/pytest_mismatch.xml"),
    );
    let of = |id: &str| {
        test(&log, id)
            .mismatch
            .clone()
            .unwrap_or_else(|| panic!("{id}: {:#?}", test(&log, id)))
    };
    let rows = of("test_mismatch.py::test_rows_of_a_tile_wrong");
    assert_eq!((rows.mismatched, rows.total), (2048, 4096));
    assert_eq!(rows.greatest_abs, Some(0.5));
    assert_eq!(rows.greatest_at, vec![1, 0]);
    assert_eq!(rows.tail(), None);
    let tail = of("test_mismatch.py::test_tail_wrong_numpy");
    assert_eq!((tail.mismatched, tail.total), (40, 1000));
    assert_eq!(tail.first.first(), Some(&vec![960]));
    assert_eq!(tail.greatest_abs, Some(2.0));
    assert_eq!(tail.tail(), Some((960, 40)));
    let all = of("test_mismatch.py::test_everything_scaled");
    assert_eq!((all.mismatched, all.total), (256, 256));
    assert_eq!(all.greatest_at, vec![255]);
}

/// pytest's JUnit XML of plain asserts (`programs/test_assert_rewrite.py`, on an H200): the
/// rewritten `assert got == expected` of two lists names the first index that differs and both
/// values; `torch.equal` names none.
#[test]
fn pytests_rewritten_assert_keeps_the_first_differing_element() {
    let log = parsers::parse(parsers::Format::JUnit, &fixture("junit/pytest_rewrite.xml"));
    let of = |id: &str| test(&log, id).mismatch.clone();
    let one = of("test_assert_rewrite.py::test_list_one_slot_wrong").expect("one slot");
    assert_eq!(one.first, vec![vec![37]]);
    assert_eq!(one.values, vec![[0.0, 18.5]]);
    assert_eq!(one.total, 0, "pytest does not count the compared elements");
    let tail = of("test_assert_rewrite.py::test_list_tail_wrong").expect("tail");
    assert_eq!(tail.first, vec![vec![96]]);
    assert_eq!(of("test_assert_rewrite.py::test_tensor_equal"), None);
}

/// GoogleTest's `EXPECT_NEAR` over a kernel's outputs (`programs/gtest_near.cu`, on an H200):
/// each failure's two operands, and the index the test streamed after it.
#[test]
fn googletests_expect_near_failures_are_listed_with_their_indices() {
    let m = parsers::mismatch::element_mismatch(&fixture("program-output/gtest_near.stdout.log"))
        .expect("a mismatch");
    assert_eq!(m.mismatched, 4);
    assert_eq!(m.first, vec![vec![96], vec![97], vec![98], vec![99]]);
    assert_eq!(m.values[0], [0.0, 48.0]);
    assert!(m.values.iter().all(|[got, _]| *got == 0.0));
}
