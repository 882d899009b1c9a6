//! JUnit XML, as test frameworks write it: `pytest --junitxml=F`, GoogleTest's
//! `--gtest_output=xml:F`, Catch2's `-r junit -o F`, `ctest --output-junit F`.
//!
//! Every `<testcase>` becomes a [`TestCase`] (its id, status, time, message and, when the
//! framework says, file and line); a failed or errored one is also a
//! [`FindingKind::CheckFailed`] finding at that file and line. Suites may nest (`<testsuites>`
//! around `<testsuite>`s, or a lone `<testsuite>`); what the frameworks differ in is read from
//! each one's own shape, checked against their real output in `fixtures/junit/`:
//! - pytest (xunit2): `classname="tests.test_x"` and `name="test_y[200]"`; no file attribute; the
//!   failure's text is the traceback, ending in `tests/test_x.py:27: AssertionError`.
//! - GoogleTest: `file` and `line` attributes (the test's definition); the failure's message
//!   starts with the failing assertion's `path:line`.
//! - Catch2: the failure's text ends in `at file:line`.
//! - ctest: one test case per registered test, its message a bare `Failed`; the program's own
//!   output in `<system-out>`: a GoogleTest binary's first `path:line: Failure` is read from
//!   there, and the test is named by the GoogleTest test that was running.

use std::io::BufRead;
use std::sync::LazyLock;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};
use regex::Regex;

use crate::facts::{TestFacts, TestOutcome};
use crate::model::{Finding, FindingKind, Format, ParsedLog, Severity, TestCase};
use crate::site::{Record, Site, Sites};

/// Elements nested deeper than this are passed over.
const MAX_DEPTH: usize = 64;
/// The most text kept of one element (a traceback, a program's output).
const MAX_TEXT: usize = 64 * 1024;

/// A source location in a failure's text: `path/file.ext:LINE`.
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[\s(])((?:[A-Za-z]:)?[\w./\\-]*\.(?:py|cu|cuh|cc|cpp|cxx|c|h|hh|hpp|hxx|inl)):(\d+)",
    )
    .unwrap_or_else(|e| panic!("static regex: {e}"))
});

/// One test case while it is read.
#[derive(Default)]
struct Open {
    classname: String,
    name: String,
    file: Option<String>,
    line: Option<u32>,
    time_s: Option<f64>,
    outcome: Option<TestOutcome>,
    message: Option<String>,
    text: String,
    system_out: String,
    param: Option<String>,
    /// GoogleTest's `result` attribute (`completed`, `skipped`), which only it writes.
    result: Option<String>,
}

/// Parses a JUnit XML document from a reader.
pub(crate) fn parse<R: BufRead>(reader: R) -> ParsedLog {
    let mut log = ParsedLog::new(Format::JUnit, None);
    let mut xml = Reader::from_reader(reader);
    let mut buf = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut open: Option<Open> = None;
    let mut text = String::new();
    let mut errors = crate::util::XmlErrors::default();
    let mut closed_root = false;
    loop {
        buf.clear();
        let event = match xml.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) if errors.note(&mut log, &e) => continue,
            Err(_) => break,
        };
        match event {
            Event::Start(e) => {
                if path.len() >= MAX_DEPTH {
                    continue;
                }
                let name = e.name().0.to_string();
                element(&name, &e, &mut open);
                path.push(name);
                text.clear();
            }
            Event::Empty(e) => {
                let name = e.name().0.to_string();
                element(&name, &e, &mut open);
                if name == "testcase"
                    && let Some(case) = open.take()
                {
                    finish(case, &mut log);
                } else if (name == "testsuites" || name == "testsuite") && path.is_empty() {
                    closed_root = true;
                }
            }
            Event::End(_) => {
                let Some(name) = path.pop() else { continue };
                match name.as_str() {
                    "testcase" => {
                        if let Some(case) = open.take() {
                            finish(case, &mut log);
                        }
                    }
                    "failure" | "error" | "skipped" => {
                        if let Some(case) = open.as_mut() {
                            case.text = std::mem::take(&mut text);
                        }
                    }
                    "system-out" | "system-err" => {
                        if let Some(case) = open.as_mut() {
                            case.system_out.push_str(&text);
                        }
                    }
                    "testsuites" | "testsuite" if path.is_empty() => closed_root = true,
                    _ => {}
                }
                text.clear();
            }
            Event::Text(t) if text.len() < MAX_TEXT => text.push_str(&t.xml10_content()),
            Event::CData(t) if text.len() < MAX_TEXT => {
                text.push_str(&t.into_inner());
            }
            Event::GeneralRef(r) => {
                if let Some(c) = crate::util::xml_entity(&r.into_inner())
                    && text.len() < MAX_TEXT
                {
                    text.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // A case cut off by the end of the file is still reported.
    if let Some(case) = open.take() {
        finish(case, &mut log);
    }
    log.complete = closed_root && errors.none();
    if !closed_root && log.tests.is_empty() && log.unparsed_examples.is_empty() {
        log.unparsed_examples
            .push("no <testsuites> or <testsuite> element: not a JUnit document".into());
    }
    log.findings = findings(&log.tests, &log.tests_framework);
    log
}

/// Reads the attributes of an element that opens or describes a test case.
fn element(name: &str, e: &BytesStart<'_>, open: &mut Option<Open>) {
    let attrs: Vec<(String, String)> = e
        .attributes()
        .flatten()
        .map(|a| {
            (
                a.key.0.to_string(),
                a.normalized_value(XmlVersion::Implicit1_0)
                    .map_or_else(|_| a.value.to_string(), |v| v.into_owned()),
            )
        })
        .collect();
    let get = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    match name {
        "testcase" => {
            let mut case = Open {
                classname: get("classname").unwrap_or_default(),
                name: get("name").unwrap_or_default(),
                file: get("file"),
                line: get("line").and_then(|l| l.parse().ok()),
                time_s: get("time").and_then(|t| t.parse().ok()),
                param: get("value_param"),
                result: get("result"),
                ..Open::default()
            };
            // GoogleTest marks a test that did not run (`status="notrun"`) or was skipped.
            if get("result").as_deref() == Some("skipped")
                || get("status").as_deref() == Some("notrun")
            {
                case.outcome = Some(TestOutcome::Skipped);
            }
            *open = Some(case);
        }
        "failure" | "error" | "skipped" => {
            if let Some(case) = open.as_mut() {
                let outcome = match name {
                    "failure" => TestOutcome::Failed,
                    "error" => TestOutcome::Error,
                    _ => TestOutcome::Skipped,
                };
                // A failure beside a skip (GoogleTest reports both for a skipped test that
                // failed first) is a failure.
                if case.outcome.is_none_or(|o| o == TestOutcome::Skipped) {
                    case.outcome = Some(outcome);
                }
                if case.message.is_none() {
                    case.message = get("message");
                }
            }
        }
        _ => {}
    }
}

/// Turns a read test case into its record.
fn finish(case: Open, log: &mut ParsedLog) {
    let outcome = case.outcome.unwrap_or(TestOutcome::Passed);
    if log.tests_framework.is_empty() {
        log.tests_framework = framework(&case).to_string();
    }
    let text = format!("{}\n{}", case.message.as_deref().unwrap_or(""), case.text);
    let failed = matches!(outcome, TestOutcome::Failed | TestOutcome::Error);
    // Where it failed: the failure's own location (the innermost frame of the test's file for
    // a traceback), else the test's definition.
    // pytest names a test function `test*` and files it under its module's dotted path.
    let pytest = framework(&case) == "pytest";
    let own_file = pytest.then(|| module_file(&case.classname)).flatten();
    let mut location = failed
        .then(|| failure_location(&text, own_file.as_deref()))
        .flatten();
    let catch2 = ["FAILED:", "SKIPPED"]
        .iter()
        .any(|m| case.text.trim_start().starts_with(m));
    let mut message = if catch2 {
        // Catch2: the assertion, its expansion and the INFO lines are in the text.
        Some(catch2_summary(&case.text))
    } else {
        case.message
            .clone()
            .or_else(|| (!case.text.trim().is_empty()).then(|| case.text.clone()))
            .map(|m| summary(&m))
    };
    // ctest: a bare "Failed"; the program's own output says which GoogleTest test failed, where
    // and how: that test is the one to name.
    let mut id_override = None;
    if failed
        && case.message.as_deref().is_none_or(|m| m.trim() == "Failed")
        && let Some(failure) = gtest_console_failure(&case.system_out)
    {
        location = location.or(Some(failure.at));
        message = Some(failure.said);
        id_override = failure.test;
    }
    if location.is_none() && (failed || case.file.is_some()) {
        location = case.file.clone().map(|f| (f, case.line));
    }
    let id = id_override.unwrap_or_else(|| test_id(&case, own_file.as_deref()));
    log.tests.push(TestCase {
        id,
        suite: (!case.classname.is_empty()).then(|| case.classname.clone()),
        outcome,
        time_s: case.time_s,
        message: message.filter(|m| !m.is_empty()),
        file: location.as_ref().map(|(f, _)| f.clone()),
        line: location.and_then(|(_, l)| l),
        param: case.param,
        mismatch: failed
            .then(|| crate::mismatch::element_mismatch(&text))
            .flatten(),
    });
}

/// The framework that wrote a document, told from a test case's shape.
fn framework(case: &Open) -> &'static str {
    if case.result.is_some() {
        "GoogleTest"
    } else if case.classname.ends_with(".global") {
        "Catch2"
    } else if case.classname == case.name && !case.name.is_empty() {
        // ctest files each registered test under its own name.
        "ctest"
    } else if case.name.starts_with("test") {
        "pytest"
    } else {
        "the test suite"
    }
}

/// Catch2's failure text (`FAILED:`, the assertion, `with expansion:`, its values, the INFO
/// lines, `at file:line`) as one line.
fn catch2_summary(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line == "FAILED:"
            || line == "SKIPPED"
            || (line.starts_with("at ") && LOCATION.is_match(line))
        {
            continue;
        }
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    crate::util::scrub_addresses(&out.chars().take(400).collect::<String>())
}

/// The Python file a pytest classname names (`tests.test_x.TestY` → `tests/test_x.py`), when it
/// names one.
fn module_file(classname: &str) -> Option<String> {
    let parts: Vec<&str> = classname.split('.').collect();
    let module = parts
        .iter()
        .rposition(|p| p.starts_with("test_") || p.ends_with("_test") || *p == "tests")?;
    Some(format!("{}.py", parts.get(..=module)?.join("/")))
}

/// The test's id as its framework names it on its command line: pytest's node id
/// (`tests/test_x.py::TestY::test_z[200]`), GoogleTest's `Suite.Name`, Catch2's test name.
fn test_id(case: &Open, own_file: Option<&str>) -> String {
    if let Some(file) = own_file {
        let module = file.trim_end_matches(".py").replace('/', ".");
        let rest = case
            .classname
            .strip_prefix(&module)
            .map(|r| r.trim_start_matches('.'))
            .unwrap_or("");
        let mut id = file.to_string();
        for part in rest.split('.').filter(|p| !p.is_empty()) {
            id.push_str("::");
            id.push_str(part);
        }
        id.push_str("::");
        id.push_str(&case.name);
        return id;
    }
    if case.classname.is_empty()
        || case.classname.ends_with(".global")
        || case.classname == case.name
    {
        return case.name.clone();
    }
    format!("{}.{}", case.classname, case.name)
}

/// The location a failure's text names: in a traceback, the last frame in the test's own file
/// (else the last frame); elsewhere the first `file:line`.
fn failure_location(text: &str, own_file: Option<&str>) -> Option<(String, Option<u32>)> {
    let found: Vec<(String, Option<u32>)> = LOCATION
        .captures_iter(text)
        .filter_map(|c| {
            Some((
                c.get(1)?.as_str().to_string(),
                c.get(2)?.as_str().parse().ok(),
            ))
        })
        .collect();
    if let Some(own) = own_file
        && let Some(hit) = found.iter().rev().find(|(f, _)| f.ends_with(own))
    {
        return Some(hit.clone());
    }
    if own_file.is_some() {
        return found.last().cloned();
    }
    found.first().cloned()
}

/// A failure message as one line: its lines without the location line a framework puts first
/// (GoogleTest's `path:line`), joined.
fn summary(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| {
            !LOCATION
                .find(l)
                .is_some_and(|m| m.start() == 0 && m.end() == l.len())
        })
        .collect();
    let joined = lines.join("; ");
    crate::util::scrub_addresses(&joined.chars().take(400).collect::<String>())
}

/// A failure read from a GoogleTest binary's console output.
struct ConsoleFailure {
    /// The `path:line` of its `Failure` line.
    at: (String, Option<u32>),
    /// The test that was running (its `[ RUN      ]` line).
    test: Option<String>,
    /// What it printed after the `Failure` line, on one line.
    said: String,
}

/// GoogleTest's console output, as ctest keeps it: where the first `path:line: Failure` was,
/// the test that was running then, and the lines after it up to the next test's marker.
fn gtest_console_failure(output: &str) -> Option<ConsoleFailure> {
    let mut lines = output.lines();
    let mut test = None;
    let start = lines.by_ref().find(|l| {
        if let Some(name) = l.strip_prefix("[ RUN      ] ") {
            test = Some(name.trim().to_string());
        }
        l.trim_end().ends_with(": Failure")
    })?;
    let location = LOCATION.captures(start).and_then(|c| {
        Some((
            c.get(1)?.as_str().to_string(),
            c.get(2)?.as_str().parse().ok(),
        ))
    })?;
    let said: Vec<&str> = lines
        .take_while(|l| !l.starts_with('['))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Some(ConsoleFailure {
        at: location,
        test,
        said: summary(&said.join("\n")),
    })
}

/// One finding per failed or errored test: its id, message and location.
fn findings(tests: &[TestCase], framework: &str) -> Vec<Finding> {
    let mut sites = Sites::default();
    for test in tests {
        let verb = match test.outcome {
            TestOutcome::Failed => "failed",
            TestOutcome::Error => "errored",
            _ => continue,
        };
        let message = match &test.message {
            Some(m) => format!("test {} {verb}: {m}", test.id),
            None => format!("test {} {verb}", test.id),
        };
        let (index, _) = sites.add(Record {
            site: Site {
                kind: FindingKind::CheckFailed,
                kernel: None,
                file: test.file.as_deref(),
                line: test.line,
                space: None,
                size: None,
                discriminator: &test.id,
            },
            severity: Severity::Error,
            access: None,
            message: &message,
            example: None,
            excerpt: &[],
            occurrences: 1,
        });
        if let Some(f) = sites.get_mut(index) {
            f.facts.test = Some(Box::new(TestFacts {
                name: test.id.clone(),
                program: Some(framework.to_string()),
                outcome: Some(test.outcome),
                message: test.message.clone(),
                param: test.param.clone(),
                max_abs_err: test.mismatch.as_ref().and_then(|m| m.greatest_abs),
                mismatch: test.mismatch.clone(),
            }));
        }
    }
    sites.into_findings()
}
