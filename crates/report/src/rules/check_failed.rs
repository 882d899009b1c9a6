//! `check-failed`: a user's program said one of its checks failed (`exhibit.results/1`
//! `"passed": false`), or one of its Google Benchmark benchmarks stopped with an error. The
//! program's own verdict is the evidence; the diagnosis names the test and quotes its message.

mod geometry;
mod pattern;

use parsers::{FindingKind, Format, TestOutcome};
use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level, Scope};
use crate::message::{Message, Part, code, figure, msg, path, quote};
use crate::text::scrub;
use crate::kernel_id::KernelId;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::CheckFailed,
    Role::FailingTest,
    "Failed program check",
    "A user's program reported a check as failed (exhibit.results/1 \
        `passed: false`), a test framework a failing test (JUnit XML: pytest, \
        GoogleTest, Catch2, ctest), or a Google Benchmark benchmark stopped with an \
        error: the test is named with its message and, for a test, its line.",
    "crates/report/src/rules/check_failed.rs",
    run,
)
.proposing(Proposes::Sizes);

/// One draft per failed check or benchmark error (the same test in several configs merges).
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    // The check stage's own report of a test first: it leads the draft the others (the same
    // test run under a sanitizer, ncu or the stress search) merge into.
    let mut order: Vec<_> = ctx.unexplained(FindingKind::CheckFailed).collect();
    order.sort_by_key(|&(i, f)| {
        let stage = j.source(f.source).and_then(|s| s.stage);
        (stage.is_none_or(|st| st.kind != crate::run::StageKind::Check), i)
    });
    for (index, f) in order {
        let finding = f.finding;
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
        let format = j.source(f.source).map(|s| s.log.format);
        // A test framework's failing test case (JUnit XML).
        let test_case = format == Some(Format::JUnit);
        let test = facts.map_or("?", |t| t.name.as_str()).to_string();
        let said = facts
            .and_then(|t| t.message.as_deref())
            .map(|m| scrub(m, &j.repo_files));
        // A figure of the draft, quoted in its wording as JSON spells it.
        let max_abs_err = facts.and_then(|t| t.max_abs_err).map(|e| json!(e));
        let mut d = Draft::new(RuleId::CheckFailed, Level::Error, Message::new());
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
        let kind = if test_case {
            Kind::Test {
                errored: facts.and_then(|t| t.outcome) == Some(TestOutcome::Error),
                param: facts.and_then(|t| t.param.as_deref()),
            }
        } else if format == Some(Format::GoogleBenchmark) {
            Kind::Benchmark
        } else {
            Kind::Check
        };
        let failed = Failed {
            kind,
            test: &test,
            said: said.as_deref(),
            program: facts.and_then(|t| t.program.as_deref()),
            max_abs_err: max_abs_err.as_ref(),
        };
        word_failed(&mut d, &failed);
        if let Some(m) = facts.and_then(|t| t.mismatch.as_ref()) {
            word_mismatch(&mut d, m);
            if let Some((said, fix)) = geometry::against(m, &own_launches(ctx, d.config.as_deref()))
            {
                d.explanation.append(said);
                d.fix = fix;
            }
        }
        out.push(d);
    }
    out
}

/// The profiled launches of the program's own kernels in `config`, longest first.
fn own_launches(ctx: &Ctx, config: Option<&str>) -> Vec<geometry::Launch> {
    let j = ctx.joined;
    let mut summaries: Vec<crate::resources::NcuSummary> = crate::resources::ncu_summaries(j)
        .into_iter()
        .filter(|s| s.config.as_deref() == config)
        .filter(|s| j.is_own(config, &KernelId::of(&s.kernel)))
        .collect();
    summaries.sort_by(|a, b| b.duration_us.partial_cmp(&a.duration_us).unwrap_or(std::cmp::Ordering::Equal));
    summaries
        .into_iter()
        .filter_map(|s| {
            Some(geometry::Launch {
                kernel: KernelId::of(&s.kernel).to_string(),
                blocks: s.grid_size?,
                threads: u64::from(s.block_size?),
            })
        })
        .collect()
}

/// Which kind of check failed: what reported it decides the draft's words.
enum Kind<'a> {
    /// A test framework's failing test case (JUnit XML); `errored` when it raised before its
    /// assertions could decide, `param` its parameter where the framework named one.
    Test {
        errored: bool,
        param: Option<&'a str>,
    },
    /// A Google Benchmark benchmark that stopped itself with an error.
    Benchmark,
    /// The program's own check against its reference (`exhibit.results/1`).
    Check,
}

/// What the program said about one failed check: the words of its draft come from this.
struct Failed<'a> {
    kind: Kind<'a>,
    /// The test's or benchmark's name.
    test: &'a str,
    /// The program's message, scrubbed.
    said: Option<&'a str>,
    /// The program that reported it, where it named itself.
    program: Option<&'a str>,
    /// The largest absolute error a check reported.
    max_abs_err: Option<&'a serde_json::Value>,
}

/// The share of compared elements that differ, as a figure: `12.5%` (`m.total` is not zero).
pub(super) fn percent_differing(m: &parsers::mismatch::ElementMismatch) -> Part {
    let pct = 100.0 * m.mismatched as f64 / m.total as f64;
    figure(format!("{}%", crate::text::sig3(pct)))
}

/// Which elements the comparison found wrong, and what that pattern says: every element (a
/// systematic error), exactly the last ones (a tail no block covers), else the fraction and
/// where the greatest difference is.
pub(super) fn word_mismatch(d: &mut Draft, m: &parsers::mismatch::ElementMismatch) {
    let count = |n: u64| crate::text::thousands(n);
    d.figures.insert("mismatched".into(), json!(m.mismatched));
    d.figures.insert("compared".into(), json!(m.total));
    let index = |i: &[u64]| code(format!("[{}]", listing(i)));
    let greatest = m
        .greatest_abs
        .map(|v| {
            let at = if m.greatest_at.is_empty() {
                Message::new()
            } else {
                msg!(" at index {}", index(&m.greatest_at))
            };
            msg!(
                "; the greatest absolute difference is {}{}",
                figure(crate::text::sig3(v)),
                at
            )
        })
        .unwrap_or_default();
    if m.total > 0 && m.mismatched == m.total {
        d.explanation.append(msg!(
            " Every element differs ({} of {}){}: a systematic error (the formula, a scale, the \
             layout or the index map), not a tail, a mask or a race, which leave elements right.",
            figure(count(m.mismatched)),
            figure(count(m.total)),
            greatest
        ));
        d.fix = msg!(
            "Compare the kernel's formula, scale and layout with the reference's on a small \
             input: every element is off, so the error is in what every thread computes."
        );
    } else if let Some((start, n)) = m.tail() {
        d.explanation.append(msg!(
            " The wrong elements are exactly the last {} of {}, from index {}{}: a tail that \
             no block covers, or a guard that stops short of it.",
            figure(count(n)),
            figure(count(m.total)),
            index(&[start]),
            greatest
        ));
        d.fix = msg!(
            "Cover the tail: launch enough blocks for all {} elements (a grid of \
             `ceil(n / block)`) and guard with `i < n`, then write every element up to the end.",
            figure(count(m.total))
        );
    } else if m.total > 0 {
        d.explanation.append(msg!(
            " {} of {} elements differ ({}){}.",
            figure(count(m.mismatched)),
            figure(count(m.total)),
            percent_differing(m),
            greatest
        ));
        unwritten(d, m, 2);
    } else if !m.values.is_empty() {
        listed(d, m);
    }
    // Where the program recorded the comparison itself: which rows and columns, zeros, NaN.
    if let Some(p) = pattern::of(m) {
        d.explanation.append(p.said);
        if let Some(fix) = p.fix {
            d.fix = fix;
        }
    }
}

/// Indices (or an index's coordinates) as "3, 7, 12".
fn listing(i: &[u64]) -> String {
    let parts: Vec<String> = i.iter().map(u64::to_string).collect();
    parts.join(", ")
}

/// Where each of at least `least` wrong elements the comparison (or the program beside it)
/// lists holds exactly 0 and its reference does not: the mark of elements no thread wrote,
/// said with the fix that follows. A wrong formula seldom gives exactly 0, so that is not
/// ruled out, only made unlikely.
fn unwritten(d: &mut Draft, m: &parsers::mismatch::ElementMismatch, least: usize) {
    let n = m.values.len();
    if n < least.max(1) || !m.values.iter().all(|[got, want]| *got == 0.0 && *want != 0.0) {
        return;
    }
    let which = if n == 1 {
        msg!(" It holds 0 where the reference does not: the mark of an element")
    } else {
        msg!(
            " Each of the {} wrong elements listed holds 0 where the reference does not: the \
             mark of elements",
            figure(n.to_string())
        )
    };
    d.explanation.append(msg!(
        "{} no thread wrote (a grid or guard that stops short, an index that sends the writes \
         elsewhere, or a result copied back before the kernel wrote it); a wrong formula seldom \
         gives exactly 0.",
        which
    ));
    d.fix = msg!(
        "Find which thread should write the zero elements and why it does not: check that the \
         grid covers them (`ceil(n / block)` blocks), the guard that skips them, and that the \
         index each thread writes is its own, starting with the first one listed."
    );
}

/// Wrong elements a comparison listed without counting what it compared (pytest's first
/// differing index of two lists, GoogleTest's failed `EXPECT_NEAR`s): which, and their values
/// ([`unwritten`] where they are zeros).
fn listed(d: &mut Draft, m: &parsers::mismatch::ElementMismatch) {
    let shown = |v: f64| figure(crate::text::sig3(v));
    let n = m.values.len();
    let indices = m.flat_first().unwrap_or_default();
    let which = match indices.as_slice() {
        [] => Message::new(),
        [one] => msg!(" at index {}", code(one.to_string())),
        [first, .., last] if indices.windows(2).all(|w| w[1] == w[0] + 1) => msg!(
            " at indices {} to {}",
            code(first.to_string()),
            code(last.to_string())
        ),
        _ => msg!(" at indices {}", code(listing(&indices))),
    };
    let [got, want] = m.values[0];
    let first = if n == 1 {
        msg!(" The first element that differs is{}:", which)
    } else {
        msg!(" {} elements failed the comparison{}; the first:", figure(n.to_string()), which)
    };
    d.explanation.append(msg!("{} {} against {}.", first, shown(got), shown(want)));
    unwritten(d, m, 1);
}

/// The draft's title, explanation and fix for a failed check (its location is already set).
fn word_failed(d: &mut Draft, f: &Failed) {
    let name = code(f.test);
    let said = f.said.map(quote);
    let at = d
        .location
        .as_ref()
        .map(|l| msg!(" at {}", path(l)))
        .unwrap_or_default();
    let colon_said = said.clone().map(|m| msg!(": {}", m)).unwrap_or_default();
    let (what, ended) = match f.kind {
        // A test that errored without a message reads as failed.
        Kind::Test { errored: true, .. } if said.is_some() => ("Test", "errored"),
        Kind::Test { .. } => ("Test", "failed"),
        Kind::Check => ("Check", "failed"),
        Kind::Benchmark => ("Benchmark", "stopped with an error"),
    };
    d.title = msg!("{} {} {}{}", what, name.clone(), ended, colon_said.clone());
    (d.explanation, d.fix) = match f.kind {
        Kind::Test { errored, param } => (
            msg!(
                "{} reported that {}{} {}{}{}. Exhibit did not re-run it: the test's own \
                 verdict is the evidence.",
                // The suite's name as the framework wrote it, rendered as it always was.
                f.program.unwrap_or("The test suite"),
                name.clone(),
                param
                    .map(|p| msg!(" (parameter {})", code(p)))
                    .unwrap_or_default(),
                if errored {
                    "raised before its assertions could decide"
                } else {
                    "failed its assertion"
                },
                at,
                colon_said
            ),
            msg!(
                "Run {} alone{}; a test that fails only some shapes often points at a tail tile \
                 or a mask the kernel mishandles.",
                name,
                if d.location.is_some() {
                    " and start from the line where it failed"
                } else {
                    ""
                }
            ),
        ),
        Kind::Benchmark => (
            msg!(
                "The benchmark {} stopped itself with SkipWithError{}: it measured nothing, and \
                 whatever it guards did not hold.",
                name,
                said.map(|m| msg!(" (\"{}\")", m)).unwrap_or_default()
            ),
            msg!(
                "Run the benchmark alone and fix what its error message names; its timing is \
                 missing from the table until it runs."
            ),
        ),
        Kind::Check => (
            msg!(
                "{} compared its output for {} with its reference and reported a failure{}{}{}. \
                 Exhibit did not re-check it: the program's own verdict is the evidence.",
                f.program
                    .map(|p| Message::from(code(p)))
                    .unwrap_or_else(|| msg!("The program")),
                name.clone(),
                at,
                f.max_abs_err
                    .map(|e| msg!(" (max abs error {})", figure(e.to_string())))
                    .unwrap_or_default(),
                colon_said
            ),
            msg!(
                "Run {} alone and compare the output with the reference where the message \
                 points; a kernel that fails only some cases often mishandles a tail or a mask.",
                name
            ),
        ),
    };
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::diagnosis::Level;
    use crate::rules::testing::{fixture_case, place, says};

    /// GoogleTest's JUnit XML of `programs/junit/softmax_test.cc` (`junit/gtest.xml`):
    /// `Shapes/TailTile.MatchesReference/2` (n=200) fails its assertion at line 39; the other
    /// cases pass or are skipped.
    #[test]
    fn fires_on_the_one_failing_test_of_a_junit_report_at_its_line() {
        let d = fixture_case!(Check, "junit/gtest.xml").only(RuleId::CheckFailed);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("release"));
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

    /// pytest's JUnit XML of `programs/test_mismatch.py` (`junit/pytest_mismatch.xml`, run on
    /// the GPU machine): what each comparison found wrong decides the words. Every element
    /// halved is a systematic error; the last 40 of 1000 elements wrong is a tail; half the
    /// elements is a fraction with the greatest difference's index.
    #[test]
    fn a_failed_comparison_says_which_elements_are_wrong() {
        let drafts = fixture_case!(Check, "junit/pytest_mismatch.xml").drafts(RuleId::CheckFailed);
        let of = |test: &str| {
            drafts
                .iter()
                .find(|d| d.figures["test"].as_str().is_some_and(|t| t.ends_with(test)))
                .unwrap_or_else(|| panic!("{test}: {drafts:#?}"))
        };
        let all = of("test_everything_scaled");
        says(&all.explanation, "Every element differs (256 of 256)");
        says(&all.explanation, "systematic error");
        let tail = of("test_tail_wrong_numpy");
        says(&tail.explanation, "exactly the last 40 of 1,000, from index `[960]`");
        says(&tail.fix, "`i < n`");
        let rows = of("test_rows_of_a_tile_wrong");
        says(
            &rows.explanation,
            "2,048 of 4,096 elements differ (50.0%); the greatest absolute difference is 0.500 at \
             index `[1, 0]`",
        );
        assert_eq!(rows.figures["mismatched"], 2048);
    }

    /// The built-in harness's check of the clean attention kernel
    /// (`harness/check_attention.json`): its comparison with the CPU reference passed.
    #[test]
    fn stays_silent_on_a_check_that_passed() {
        fixture_case!(Check, "harness/check_attention.json").silent(RuleId::CheckFailed);
    }
}
