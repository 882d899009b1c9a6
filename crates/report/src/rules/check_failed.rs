//! `check-failed`: a user's program said one of its checks failed (`exhibit.results/1`
//! `"passed": false`), or one of its Google Benchmark benchmarks stopped with an error. The
//! program's own verdict is the evidence; the diagnosis names the test and quotes its message.

use parsers::{FindingKind, Format, TestOutcome};
use serde_json::json;

use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level, Scope};
use crate::text::{md_code, md_text, scrub};

/// One draft per failed check or benchmark error (the same test in several configs merges).
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    // The check stage's own report of a test first: it leads the draft the others (the same
    // test run under a sanitizer, ncu or the stress search) merge into.
    let mut order: Vec<usize> = (0..j.findings.len()).collect();
    order.sort_by_key(|&i| {
        let from_check = j
            .findings
            .get(i)
            .and_then(|f| j.source(f.source))
            .and_then(|s| s.stage)
            .is_some_and(|st| st.kind == crate::run::StageKind::Check);
        (!from_check, i)
    });
    for index in order {
        let Some(f) = j.findings.get(index) else {
            continue;
        };
        let finding = f.finding;
        if finding.kind != FindingKind::CheckFailed || ctx.explained(index) {
            continue;
        }
        // The same test of the same config, reported by another of its runs (under a
        // sanitizer, ncu, a stress search): more evidence for the draft it has already.
        if let Some(d) = out
            .iter_mut()
            .find(|d: &&mut Draft| d.config == f.config && d.key == finding.fingerprint)
        {
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(index);
            continue;
        }
        let facts = finding.facts.test.as_deref();
        let benchmark = j
            .source(f.source)
            .is_some_and(|s| s.log.format == Format::GoogleBenchmark);
        // A test framework's failing test case (JUnit XML).
        let test_case = j
            .source(f.source)
            .is_some_and(|s| s.log.format == Format::JUnit);
        let test = facts.map_or("?", |t| t.name.as_str()).to_string();
        let said = facts
            .and_then(|t| t.message.as_deref())
            .map(|m| md_text(&scrub(m, &j.repo_files)));
        let program = facts.and_then(|t| t.program.as_deref());
        let name = md_code(&test);
        let errored = facts.and_then(|t| t.outcome) == Some(TestOutcome::Error);
        // A figure of the draft, quoted in its wording as JSON spells it.
        let max_abs_err = facts.and_then(|t| t.max_abs_err).map(|e| json!(e));
        let mut d = Draft::new(
            RuleId::CheckFailed,
            Level::Error,
            match (&said, benchmark, test_case) {
                (Some(m), _, true) if errored => format!("Test {name} errored: {m}"),
                (Some(m), _, true) => format!("Test {name} failed: {m}"),
                (None, _, true) => format!("Test {name} failed"),
                (Some(m), false, _) => format!("Check {name} failed: {m}"),
                (None, false, _) => format!("Check {name} failed"),
                (Some(m), true, _) => format!("Benchmark {name} stopped with an error: {m}"),
                (None, true, _) => format!("Benchmark {name} stopped with an error"),
            },
        );
        d.config = f.config.clone();
        // A failed check in a config whose fault a tool located is that fault's symptom; a
        // failing test, not where the tool located it in another test, run alone.
        d.symptom_of = Some(if test_case {
            Scope::Test(test.clone())
        } else {
            Scope::Config
        });
        if finding.file.is_some() {
            d.location = ctx.user_location(finding);
        }
        d.key = finding.fingerprint.clone();
        d.confidence = Confidence::High;
        d.evidence.push(ctx.finding_evidence(f));
        d.explains.push(index);
        Figure::Test.set(&mut d.figures, json!(test));
        if let Some(err) = &max_abs_err {
            d.figures.insert("max_abs_err".into(), err.clone());
        }
        let by = program.map(md_code).unwrap_or_else(|| "The program".into());
        (d.explanation, d.fix) = if test_case {
            let at = d
                .location
                .as_ref()
                .map(|l| format!(" at {}", md_code(&l.to_string())))
                .unwrap_or_default();
            let param = facts
                .and_then(|t| t.param.as_deref())
                .map(|p| format!(" (parameter {})", md_code(p)))
                .unwrap_or_default();
            (
                format!(
                    "{} reported that {name}{param} {}{at}{}. Exhibit did not re-run it: the \
                     test's own verdict is the evidence.",
                    program.unwrap_or("The test suite"),
                    if errored {
                        "raised before its assertions could decide"
                    } else {
                        "failed its assertion"
                    },
                    said.as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                format!(
                    "Run {name} alone{}; a test that fails only some shapes often points at a \
                     tail tile or a mask the kernel mishandles.",
                    if d.location.is_some() {
                        " and start from the line where it failed"
                    } else {
                        ""
                    }
                ),
            )
        } else if benchmark {
            (
                format!(
                    "The benchmark {name} stopped itself with SkipWithError{}: it measured \
                     nothing, and whatever it guards did not hold.",
                    said.as_deref()
                        .map(|m| format!(" (\"{m}\")"))
                        .unwrap_or_default()
                ),
                "Run the benchmark alone and fix what its error message names; its timing is \
                 missing from the table until it runs."
                    .to_string(),
            )
        } else {
            (
                format!(
                    "{by} compared its output for {name} with its reference and reported a \
                     failure{}{}{}. Exhibit did not re-check it: the program's own verdict is the \
                     evidence.",
                    d.location
                        .as_ref()
                        .map(|l| format!(" at {}", md_code(&l.to_string())))
                        .unwrap_or_default(),
                    max_abs_err
                        .as_ref()
                        .map(|e| format!(" (max abs error {e})"))
                        .unwrap_or_default(),
                    said.as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                format!(
                    "Run {name} alone and compare the output with the reference where the \
                     message points; a kernel that fails only some cases often mishandles a tail \
                     or a mask."
                ),
            )
        };
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture, place};
    use crate::{diagnosis::Level, run::StageKind};

    /// GoogleTest's JUnit XML of `programs/junit/softmax_test.cc` (`junit/gtest.xml`):
    /// `Shapes/TailTile.MatchesReference/2` (n=200) fails its assertion at line 39; the other
    /// cases pass or are skipped.
    #[test]
    fn fires_on_the_one_failing_test_of_a_junit_report_at_its_line() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Check,
                    "default",
                    "sm_90",
                    parsers_fixture!("junit/gtest.xml"),
                )
                .drafts(RuleId::CheckFailed),
        );
        assert_eq!(d.rule, RuleId::CheckFailed);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("default"));
        assert_eq!(d.kernel, None);
        // The capture's build directory is outside the repository: redacted.
        assert_eq!(place(&d).as_deref(), Some("<abs>/softmax_test.cc:39"));
        assert!(
            d.figures["test"]
                .as_str()
                .is_some_and(|t| t.contains("MatchesReference/2")),
            "{:?}",
            d.figures
        );
    }

    /// The built-in harness's check of the clean attention kernel
    /// (`harness/check_attention.json`): its comparison with the CPU reference passed.
    #[test]
    fn stays_silent_on_a_check_that_passed() {
        let drafts = Case::new()
            .log(
                StageKind::Check,
                "default",
                "sm_90",
                parsers_fixture!("harness/check_attention.json"),
            )
            .drafts(RuleId::CheckFailed);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
