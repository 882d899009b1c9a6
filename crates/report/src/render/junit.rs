//! JUnit XML for CI dashboards: a test suite per stage, a test case per stage execution. A
//! stage with findings fails with the diagnoses that cite it; a stage that broke, timed out or
//! could not conclude is an error; a skipped stage is skipped with its reason. The tests a
//! program's own JUnit XML reported follow their stage execution in its suite, each a test case
//! of its own, the passing ones beside the failing ones.

use std::collections::BTreeMap;
use std::fmt::Write;

use parsers::{TestCase, TestOutcome};

use crate::analysis::{Analysis, CoverageRow, stage_status_word};

struct Parts<'p> {
    coverage: &'p [CoverageRow],
    diagnoses: &'p [Diagnosis],
}
use crate::diagnosis::{Diagnosis, Level};
use crate::text::xml_escape;
use crate::{run::Run, run::StageStatus};

/// Renders the JUnit XML document.
pub fn render(a: &Analysis, run: Option<&Run>) -> String {
    render_parts(&a.coverage, &a.diagnoses, run)
}

/// Renders JUnit XML from coverage rows (each with its program's tests) and diagnoses (a
/// run's, those `explain` found, or a diff's new ones without rows).
pub fn render_parts(
    coverage: &[CoverageRow],
    diagnoses: &[Diagnosis],
    run: Option<&Run>,
) -> String {
    let a = Parts {
        coverage,
        diagnoses,
    };
    let all_tests = || a.coverage.iter().flat_map(|r| &r.tests);
    let tally = |outcomes: &[TestOutcome]| {
        all_tests()
            .filter(|t| outcomes.contains(&t.outcome))
            .count()
    };
    // Each row with its program tests, by stage.
    let mut suites: Vec<(String, Vec<&CoverageRow>)> = Vec::new();
    for row in a.coverage {
        match suites.iter_mut().find(|(name, _)| *name == row.stage) {
            Some((_, rows)) => rows.push(row),
            None => suites.push((row.stage.clone(), vec![row])),
        }
    }
    let name = run
        .map(|r| format!("exhibit {}", r.id))
        .unwrap_or_else(|| "exhibit".to_string());
    let total = if a.coverage.is_empty() {
        a.diagnoses.len()
    } else {
        a.coverage.len() + all_tests().count()
    };
    let failures = if a.coverage.is_empty() {
        a.diagnoses.iter().filter(|d| d.level > Level::Note).count()
    } else {
        a.coverage.iter().filter(|r| is_failure(&a, r)).count() + tally(&[TestOutcome::Failed])
    };
    let errors = a.coverage.iter().filter(|r| is_error(r)).count() + tally(&[TestOutcome::Error]);
    let durations = durations(run);
    let mut out = String::new();
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        // The JUnit schema (junit-10) counts skips per suite only: no `skipped` here.
        r#"<testsuites name="{}" tests="{total}" failures="{failures}" errors="{errors}">"#,
        xml_escape(&name)
    );
    for (suite, rows) in &suites {
        let count = |outcome: TestOutcome| {
            rows.iter()
                .flat_map(|r| &r.tests)
                .filter(|t| t.outcome == outcome)
                .count()
        };
        let f = rows.iter().filter(|r| is_failure(&a, r)).count() + count(TestOutcome::Failed);
        let e = rows.iter().filter(|r| is_error(r)).count() + count(TestOutcome::Error);
        let s = rows
            .iter()
            .filter(|r| r.status == StageStatus::Skipped)
            .count()
            + count(TestOutcome::Skipped);
        let n = rows.len() + rows.iter().map(|r| r.tests.len()).sum::<usize>();
        let _ = writeln!(
            out,
            r#"  <testsuite name="{}" tests="{n}" failures="{f}" errors="{e}" skipped="{s}">"#,
            xml_escape(suite),
        );
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for &row in rows {
            let mut case = row.config.clone().unwrap_or_else(|| "run".to_string());
            if let Some(c) = &row.case {
                case.push_str(&format!(" [{c}]"));
            }
            let n = seen.entry(case.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                case.push_str(&format!(" #{n}"));
            }
            let time = durations
                .iter()
                .find(|(stage, config, case_label, _)| {
                    stage == &row.stage && config == &row.config && case_label == &row.case
                })
                .map(|(_, _, _, ms)| *ms as f64 / 1000.0)
                .unwrap_or(0.0);
            let _ = write!(
                out,
                r#"    <testcase name="{}" classname="{}" time="{:.3}""#,
                xml_escape(&case),
                xml_escape(&format!("exhibit.{suite}")),
                time
            );
            let diagnoses = citing(&a, row);
            out.push_str(&site(diagnoses.first().copied(), run));
            stage_outcome(&mut out, row, &diagnoses);
            let classname = format!("exhibit.{suite}.{}", row.config.as_deref().unwrap_or("run"));
            for test in &row.tests {
                program_test(&mut out, test, &classname);
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    if a.coverage.is_empty() {
        diagnosis_suite(&mut out, a.diagnoses, run);
    }
    let _ = writeln!(out, "</testsuites>");
    out
}

/// The rest of a stage row's `<testcase>`: closed at once when it passed with nothing cited,
/// else a `<skipped>`, a `<failure>` with the diagnoses that cite it, or an `<error>`.
fn stage_outcome(out: &mut String, row: &CoverageRow, diagnoses: &[&Diagnosis]) {
    match row.status {
        StageStatus::Passed if diagnoses.is_empty() => {
            let _ = writeln!(out, "/>");
        }
        StageStatus::Skipped => {
            let _ = writeln!(out, ">");
            let _ = writeln!(
                out,
                r#"      <skipped message="{}"/>"#,
                xml_escape(row.reason.as_deref().unwrap_or("skipped"))
            );
            let _ = writeln!(out, "    </testcase>");
        }
        StageStatus::Passed | StageStatus::Findings => {
            let _ = writeln!(out, ">");
            let headline = diagnoses
                .first()
                .map(|d| d.title.plain())
                .unwrap_or_else(|| {
                    format!(
                        "{}: {}",
                        stage_status_word(row.status),
                        row.reason.as_deref().unwrap_or(&row.figure)
                    )
                });
            let _ = writeln!(
                out,
                r#"      <failure message="{}" type="{}">"#,
                xml_escape(&headline),
                diagnoses
                    .first()
                    .map(|d| d.rule.as_str())
                    .unwrap_or("findings")
            );
            let mut body = String::new();
            for d in diagnoses {
                body.push_str(&format!(
                    "[{}] {}\n{}\nFix: {}\n",
                    d.level.as_str(),
                    d.title.plain(),
                    d.explanation().plain(),
                    d.fix().plain()
                ));
                for e in d.evidence.iter().filter(|e| row.logs.contains(&e.log)) {
                    for line in &e.excerpt {
                        body.push_str(line);
                        body.push('\n');
                    }
                }
                body.push('\n');
            }
            if body.is_empty() {
                body = row.reason.clone().unwrap_or_else(|| row.figure.clone());
            }
            let _ = writeln!(out, "{}", xml_escape(body.trim_end()));
            let _ = writeln!(out, "      </failure>");
            let _ = writeln!(out, "    </testcase>");
        }
        _ => {
            let _ = writeln!(out, ">");
            let _ = writeln!(
                out,
                r#"      <error message="{}" type="{}"/>"#,
                xml_escape(&format!(
                    "{}{}",
                    stage_status_word(row.status),
                    row.reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )),
                stage_status_word(row.status)
            );
            let _ = writeln!(out, "    </testcase>");
        }
    }
}

/// One test a program's JUnit XML reported, as a test case of its stage's suite: passed,
/// failed or errored with its message and the line it failed at, or skipped.
fn program_test(out: &mut String, test: &TestCase, classname: &str) {
    let _ = write!(
        out,
        r#"    <testcase name="{}" classname="{}" time="{:.3}""#,
        xml_escape(&test.id),
        xml_escape(classname),
        test.time_s.unwrap_or(0.0)
    );
    let message = test.message.as_deref().unwrap_or_default();
    let place = match (&test.file, test.line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.clone(),
        _ => String::new(),
    };
    let element = match test.outcome {
        TestOutcome::Passed => {
            let _ = writeln!(out, "/>");
            return;
        }
        TestOutcome::Skipped => {
            let _ = writeln!(out, ">");
            let _ = writeln!(out, r#"      <skipped message="{}"/>"#, xml_escape(message));
            let _ = writeln!(out, "    </testcase>");
            return;
        }
        TestOutcome::Failed => "failure",
        TestOutcome::Error => "error",
    };
    let _ = writeln!(out, ">");
    let _ = writeln!(
        out,
        r#"      <{element} message="{}" type="test">{}</{element}>"#,
        xml_escape(message),
        xml_escape(&place)
    );
    let _ = writeln!(out, "    </testcase>");
}

/// Without stages (a diff), each root cause is a test case of its own.
fn diagnosis_suite(out: &mut String, diagnoses: &[Diagnosis], run: Option<&Run>) {
    let failing: Vec<&Diagnosis> = diagnoses.iter().filter(|d| d.level > Level::Note).collect();
    let _ = writeln!(
        out,
        r#"  <testsuite name="diagnoses" tests="{}" failures="{}" errors="0" skipped="0">"#,
        diagnoses.len(),
        failing.len()
    );
    for d in diagnoses {
        let _ = write!(
            out,
            r#"    <testcase name="{}" classname="exhibit.{}" time="0.000"{}"#,
            xml_escape(&d.title.plain()),
            xml_escape(d.rule.as_str()),
            site(Some(d), run)
        );
        if d.level > Level::Note {
            let _ = writeln!(out, ">");
            let _ = writeln!(
                out,
                r#"      <failure message="{}" type="{}">{}</failure>"#,
                xml_escape(&d.title.plain()),
                xml_escape(d.rule.as_str()),
                xml_escape(&format!(
                    "{}\nFix: {}",
                    d.explanation().plain(),
                    d.fix().plain()
                ))
            );
            let _ = writeln!(out, "    </testcase>");
        } else {
            let _ = writeln!(out, "/>");
        }
    }
    let _ = writeln!(out, "  </testsuite>");
}

/// ` file="..." line="N"` for a test case whose diagnosis the evidence places at a line of a
/// repository file (relative to the repository root, as annotators place them); nothing else.
fn site(d: Option<&Diagnosis>, run: Option<&Run>) -> String {
    let base = run.map(crate::render::pipeline_dir).unwrap_or_default();
    d.and_then(|d| d.location.as_ref())
        .and_then(|l| Some((crate::render::in_repository(&base, &l.file)?, l.line?)))
        .map(|(file, line)| format!(r#" file="{}" line="{line}""#, xml_escape(&file)))
        .unwrap_or_default()
}

fn durations(run: Option<&Run>) -> Vec<(String, Option<String>, Option<String>, u64)> {
    run.map(|r| {
        r.stages
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.config.clone(),
                    crate::tables::case_label(s),
                    s.duration_ms,
                )
            })
            .collect()
    })
    .unwrap_or_default()
}

/// The error- and warning-level diagnoses whose evidence cites one of this row's logs.
fn citing<'d>(a: &Parts<'d>, row: &CoverageRow) -> Vec<&'d Diagnosis> {
    a.diagnoses
        .iter()
        .filter(|d| d.level > Level::Note)
        .filter(|d| d.evidence.iter().any(|e| row.logs.contains(&e.log)))
        .collect()
}

fn is_failure(a: &Parts, row: &CoverageRow) -> bool {
    match row.status {
        StageStatus::Findings => true,
        StageStatus::Passed => !citing(a, row).is_empty(),
        _ => false,
    }
}

fn is_error(row: &CoverageRow) -> bool {
    matches!(
        row.status,
        StageStatus::Failed
            | StageStatus::TimedOut
            | StageStatus::Inconclusive
            | StageStatus::Interrupted
    )
}
