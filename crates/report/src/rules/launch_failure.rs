//! `launch-failure`: the harness could not launch the kernel, or a launch returned an error,
//! and no earlier rule names a cause for that config and kernel.

mod rounding;

use parsers::cuda::CudaError;
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level, Scope};
use crate::message::{Message, ToMessage, code, figure, msg, quote};

pub(crate) const RULE: Rule = Rule::new(
    RuleId::LaunchFailure,
    Role::Symptom { rank: 0 },
    "Launch failure",
    "The harness could not launch the kernel or a launch returned an error that \
        no other diagnosis explains.",
    "crates/report/src/rules/launch_failure.rs",
    run,
);

/// One draft per config, kernel and error text.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = harness_launches(ctx);
    out.extend(programs(ctx));
    out
}

/// A target's program that failed (its exit status, a signal, a failed check it reported) in a
/// stage whose logs name no error of their own: a symptom of the config's root cause when one
/// was found, else a finding of its own with the program's words.
fn programs(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    for stage in j.stages() {
        if stage.unit().target != crate::run::TargetKind::Program
            || stage.status != crate::run::StageStatus::Findings
            || stage.launch_search.is_some()
        {
            continue;
        }
        let sources = super::stage_sources(j, stage);
        // A tool's error, or a test framework's report (or the program's own
        // `exhibit.results/1`) that names the failing tests, each a finding of its own.
        let reported = j.findings_of(&sources).any(|f| {
            if f.finding.kind != parsers::FindingKind::CheckFailed {
                return super::is_error(f.finding);
            }
            j.source(f.source).is_some_and(|s| {
                matches!(
                    s.log.format,
                    parsers::Format::JUnit | parsers::Format::ProgramResults
                )
            })
        });
        // A sanitizer that failed the run on a library's hazards alone (cuDNN's kernel, run as
        // the program's reference): the program itself ran to its end, and the library's note
        // says what was seen.
        let library_only = stage.exit_code == Some(crate::run::SANITIZER_ERROR_EXITCODE)
            && j.library_findings
                .iter()
                .any(|f| sources.contains(&f.source) && super::is_error(f.finding));
        if reported || library_only {
            continue;
        }
        let reason = crate::text::scrub(
            stage.reason.as_deref().unwrap_or("the program failed"),
            &j.repo_files,
        );
        let config = stage.config.as_deref();
        let mut d = Draft::new(RuleId::LaunchFailure, Level::Error, Message::new());
        d.config = stage.config.clone();
        d.arch = stage.arch.clone();
        d.key = reason.clone();
        // A stage's exit status: the least telling symptom of a fault (the fold attaches it to
        // the config's fault).
        d.bare = true;
        d.confidence = Confidence::Medium;
        let mut item = ctx.source_evidence(
            sources.first().copied(),
            config,
            msg!("{}: {}", quote(&stage.name), quote(&reason)),
        );
        item.stage.clone_from(&stage.name);
        d.evidence.push(item);
        let all = j.findings.iter().enumerate();
        d.explains.extend(all.filter(|(_, f)| sources.contains(&f.source)).map(|(i, _)| i));
        word_program_failed(&mut d, &stage.name, &reason);
        // The values it printed beside those it expected, read together.
        let logs = || stage.logs.iter().map(|l| &l.path);
        let pairs = logs().find_map(|p| j.program_pairs.get(p));
        if let Some(r) = pairs.and_then(|p| rounding::dropped_remainder(p)) {
            as_wrong_output(&mut d);
            d.figures.insert("dropped_group".into(), json!(r.group));
            d.title = msg!(
                "Wrong output: each wrong value is its expectation rounded down to a multiple \
                 of {}",
                figure(r.group.to_string())
            );
            d.explanation.append(msg!(" {}", r.mechanism()));
            d.fix = r.fix();
        }
        // The wrong elements the program's standard comparison listed (numpy's, torch's).
        let listed = logs().find_map(|p| j.program_mismatches.get(p));
        // The program's own comparison, failing: its output is wrong, by its own figure.
        let measured = parsers::program::mismatch(&reason);
        if let (Some(m), None) = (listed, &measured) {
            elements_wrong(&mut d, m);
        }
        if let Some(m) = measured {
            // A fault a tool located in this config after the program had printed this line.
            let late = j
                .findings_in(config)
                .find(|(i, _)| j.model.after_failure.contains(i))
                .map(|(_, f)| ctx.place(f));
            wrong_output(&mut d, &m, &reason, late);
            // Which elements, where the comparison listed them.
            if let Some(listed) = listed {
                super::check_failed::word_mismatch(&mut d, listed);
            }
        }
        if !out.iter().any(|o| o.config == d.config && o.key == d.key) {
            out.push(d);
        }
    }
    out
}

/// A failed program's draft as wrong output: more than its exit status (no longer bare), a
/// symptom of a fault in its config.
fn as_wrong_output(d: &mut Draft) {
    d.rule = RuleId::WrongOutput;
    d.bare = false;
    d.symptom_of = Some(crate::diagnosis::Scope::Config);
}

/// A failed program whose standard comparison listed its wrong elements: wrong output, titled
/// by how many elements differ, with the pattern they make ([`super::check_failed`]'s words).
fn elements_wrong(d: &mut Draft, m: &parsers::mismatch::ElementMismatch) {
    as_wrong_output(d);
    // One comparison, whichever stage ran it.
    d.key = format!("elements|{}|{}", m.mismatched, m.total);
    if m.total > 0 {
        d.title = msg!(
            "Wrong output: {} of {} elements differ from the reference ({})",
            figure(crate::text::thousands(m.mismatched)),
            figure(crate::text::thousands(m.total)),
            super::check_failed::percent_differing(m)
        );
    } else {
        d.title = msg!("Wrong output: the program's comparison lists elements that differ");
    }
    d.explanation = msg!(
        "The program compared its output with its reference, and the comparison failed."
    );
    d.fix = msg!(
        "Compare the kernel's output with the reference element by element on the smallest \
         failing case: the first wrong rows and columns say which loop, guard or index is off."
    );
    super::check_failed::word_mismatch(d, m);
}

/// A failed program's words: the stage that ran it and the program's reason (scrubbed).
fn word_program_failed(d: &mut Draft, stage: &str, reason: &str) {
    d.title = msg!("The program fails: {}", quote(reason));
    d.explanation = msg!(
        "The {} stage ran the program and it failed ({}). No tool in that stage located the \
         fault.",
        quote(stage),
        quote(reason)
    );
    d.fix = msg!("Run the sanitizer stages on this config: their file:line is where to look.");
}

/// A failed program whose telling line is its own failing comparison: wrong output, with the
/// figure and the limit it printed. One root cause whichever stage saw it.
/// `said`: the runner's reason, scrubbed. `late`: where a tool located a fault in this config
/// after the program printed its failure (`Some(None)` when the fault has no line).
fn wrong_output(
    d: &mut Draft,
    m: &parsers::program::Mismatch,
    said: &str,
    late: Option<Option<crate::diagnosis::SourceLocation>>,
) {
    as_wrong_output(d);
    // One comparison, whichever config or stage failed it: the measure and the words of the
    // line without its figures (two programs' different checks stay two root causes).
    // The runner's reason is "the program failed (exit 1) with no memcheck error: LINE" or
    // "the program exited with status 1: LINE": the line alone is the program's.
    let line = said
        .strip_prefix("the program ")
        .and_then(|rest| rest.split_once(": "))
        .map_or(said, |(_, line)| line);
    let words: String = line
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    d.key = format!("mismatch|{}|{words}", m.measure.to_lowercase());
    d.figures.insert("program_measure".into(), json!(m.measure));
    d.figures.insert("program_value".into(), json!(m.value));
    if let Some(limit) = m.limit {
        d.figures.insert("program_limit".into(), json!(limit));
    }
    // The program's own element against its reference: a clean factor between them (1/32,
    // 2x) points at a reduction over equal values or a term counted twice.
    let factor = parsers::program::got_expected(said).and_then(|(got, want)| {
        d.figures.insert("program_got".into(), json!(got));
        d.figures.insert("program_expected".into(), json!(want));
        clean_factor(got, want)
    });
    if let Some(f) = &factor {
        d.figures.insert("program_factor".into(), json!(f.got / f.want));
    }
    word_wrong_output(d, m, said, factor.as_ref(), late.as_ref());
}

/// The words of a program's own failing comparison: its measure and limit, the clean factor
/// between its element and the reference where there is one, and whether a tool located a
/// fault after the line (`late`).
fn word_wrong_output(
    d: &mut Draft,
    m: &parsers::program::Mismatch,
    said: &str,
    factor: Option<&Factor>,
    late: Option<&Option<crate::diagnosis::SourceLocation>>,
) {
    let value = || figure(two_digits(m.value));
    d.title = match factor {
        Some(f) => msg!(
            "Wrong output: the program's element is {} of its reference ({} against {})",
            f.words().0,
            figure(crate::text::sig3(f.got)),
            figure(crate::text::sig3(f.want))
        ),
        None => msg!(
            "Wrong output: the program's own check fails, {} {}{}",
            m.measure.to_lowercase(),
            value(),
            m.limit
                .map(|l| msg!(" against a threshold of {}", figure(l.to_string())))
                .unwrap_or_default()
        ),
    };
    let over = m
        .limit
        .filter(|l| *l > 0.0)
        .map(|l| msg!(", {}x what it allows", figure(two_digits(m.value / l))))
        .unwrap_or_default();
    let arithmetic = "what the kernel computes or which elements it writes (indexing, masking, \
                      scaling, the softmax's running maximum and sum, accumulation), not a crash";
    let located = match late {
        None => msg!(
            "No tool in this config located a memory fault, so the difference is in {}.",
            arithmetic
        ),
        Some(at) => msg!(
            "The fault a tool located in this config{} came after the program had printed this \
             line (its log shows the line first) and does not explain it: the difference is in \
             {}.",
            at.as_ref()
                .map(|l| msg!(", at {},", quote(l.to_string())))
                .unwrap_or_default(),
            arithmetic
        ),
    };
    d.explanation = msg!(
        "The program compared its output with its own reference and failed: {}. The output \
         differs by {}{}, far past rounding. {}",
        quote(said),
        value(),
        over,
        located
    );
    d.fix = msg!(
        "Compare the kernel's output with the reference element by element on the smallest \
         failing case: the first wrong row and column say which loop or mask is off. Keep the \
         comparison as a test."
    );
    if let Some(f) = factor {
        let (_, note, fix) = f.words();
        d.notes.push(note);
        d.fix = fix;
    }
}

/// A value that is its reference times a whole number, or divided by one.
struct Factor {
    got: f64,
    want: f64,
    /// `k` in `1/k` (`shrunk`) or `k x`.
    k: u32,
    shrunk: bool,
}

impl Factor {
    /// The factor as a figure ("1/32", "2x"), what a value exactly `k` times (or 1/`k` of) its
    /// reference is the shape of, and where to look for the reduction or the term counted too
    /// often.
    fn words(&self) -> (Message, Message, Message) {
        let k = &self.k.to_string();
        if self.shrunk {
            (
                msg!("1/{}", k),
                msg!(
                    "The program's element is exactly 1/{} of the reference: the shape of a \
                     reduction that keeps one of {} equal partial results instead of combining \
                     them (one lane's share of a warp of {}, one block's of {}), or a sum \
                     divided {} times too often.",
                    k,
                    k,
                    k,
                    k,
                    k
                ),
                msg!(
                    "Find the reduction whose {} partial results should be combined and check \
                     that they are: a warp reduction (`__shfl_xor_sync`) or a loop over the \
                     partials before the one store, not each thread storing its own.",
                    k
                ),
            )
        } else {
            (
                msg!("{}x", k),
                msg!(
                    "The program's element is exactly {}x the reference: the shape of a term \
                     counted {} times (every lane or block adding what one should, a partial sum \
                     added again after the reduction), or a normalisation left out.",
                    k,
                    k
                ),
                msg!(
                    "Find where {} contributions add what one should: let one thread (or block) \
                     add the combined value, or divide by the count once.",
                    k
                ),
            )
        }
    }
}

/// The whole-number factor between a value and its reference, when there is one (2 to 1024,
/// within 0.1%).
fn clean_factor(got: f64, want: f64) -> Option<Factor> {
    if !(got.is_finite() && want.is_finite()) || got == 0.0 || want == 0.0 {
        return None;
    }
    let ratio = got / want;
    if ratio <= 0.0 {
        return None;
    }
    let (x, shrunk) = if ratio < 1.0 {
        (1.0 / ratio, true)
    } else {
        (ratio, false)
    };
    let k = x.round();
    ((2.0..=1024.0).contains(&k) && (x - k).abs() <= k * 1e-3).then_some(Factor {
        got,
        want,
        k: k as u32,
        shrunk,
    })
}

/// `x` to two significant digits, as a headline figure (0.529297 reads 0.53).
fn two_digits(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return crate::text::sig3(x);
    }
    let decimals = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// One draft per config, kernel and error of the harness's launches that failed.
fn harness_launches(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    for r in &j.results {
        if crate::join::is_baseline(r.result) || r.result.skipped.is_some() {
            continue;
        }
        let stress_first = r.result.stress.as_ref().and_then(|s| s.first_failure);
        let error = match (&r.result.error, r.result.launched) {
            (Some(e), _) => e.clone(),
            (None, false) => "the kernel was not launched".to_string(),
            (None, true) => continue,
        };
        if stress_first.is_some_and(|n| n > 1) {
            // Failing only after several launches is repeated-launch-failure's.
            continue;
        }
        let kernel = &r.kernel;
        let config = r.config.as_deref();
        let error = crate::text::scrub(&error, &j.repo_files);
        if out.iter().any(|d| {
            d.config == r.config && d.kernel.as_deref() == Some(kernel.as_str()) && d.key == error
        }) {
            continue;
        }
        let mut d = ctx.result_draft(RuleId::LaunchFailure, r);
        d.symptom_of = Some(Scope::Kernel {
            kernel: kernel.clone(),
            single_launch: false,
        });
        d.gives_way.push(GiveWay::ErrorWithoutFault(kernel.clone()));
        d.key = error.clone();
        d.confidence = Confidence::Medium;
        d.evidence.push(ctx.result_evidence(
            r,
            msg!(
                "{} launch of {}: {}",
                super::mode_name(r.result.mode),
                code(r.result.kernel.as_str()),
                quote(&error)
            ),
        ));
        d.figures
            .insert("launched".into(), json!(r.result.launched));
        let failed = if CudaError::of_launch_line(&error) == Some(CudaError::LaunchOutOfResources) {
            Failed::OutOfResources
        } else if !r.result.launched {
            Failed::NotLaunched
        } else {
            Failed::FirstLaunch {
                case: crate::tables::Case::of(r.result).label(),
                coverage: sanitizer_coverage(ctx, config, &r.result.shape),
            }
        };
        word_launch_failed(&mut d, kernel.as_str(), &error, failed);
        out.push(d);
    }
    out
}

/// How a harness launch failed, as its draft words it.
enum Failed {
    /// The runtime refused it: too many resources requested.
    OutOfResources,
    /// The harness could not launch the kernel at all.
    NotLaunched,
    /// The first launch returned an error: at `case`, with the sanitizers' `coverage`.
    FirstLaunch {
        case: String,
        coverage: Coverage,
    },
}

/// A failed harness launch's words: the kernel, the error (scrubbed) and how it failed.
fn word_launch_failed(d: &mut Draft, kernel: &str, error: &str, failed: Failed) {
    let said = || quote(error);
    match failed {
        Failed::OutOfResources => {
            d.title = msg!("Launch refused: too many resources requested");
            d.explanation = msg!(
                "The launch of {} was refused ({}): a block asks for more registers (registers \
                 x threads) or shared memory than one SM has. The occupancy diagnosis for this \
                 config shows which.",
                code(kernel),
                said()
            );
            d.fix = msg!(
                "Lower registers per thread (`__launch_bounds__`, fewer live fragments), the \
                 threads per block, or the tile sizes that set shared memory."
            );
        }
        Failed::NotLaunched => {
            d.title = msg!("Kernel did not launch: {}", said());
            d.explanation = msg!(
                "The harness could not launch {}: {}. Nothing the later stages measured for this \
                 config ran the kernel.",
                code(kernel),
                said()
            );
            d.fix = msg!(
                "Fix the load or launch error first (entry point name, cubin arch, shared-memory \
                 attribute, launch dimensions)."
            );
        }
        Failed::FirstLaunch { case, coverage } => {
            d.title = msg!("Launch fails on the first launch: {}", said());
            d.explanation = msg!(
                "A single launch of {} at {} returned {}. No sanitizer finding for this config \
                 names a site, so the fault is device-side but unlocated ({}).",
                code(kernel),
                case.as_str(),
                said(),
                word_coverage(&coverage)
            );
            d.fix = msg!(
                "Run memcheck on this config at {} to get the faulting file:line.",
                case
            );
        }
    }
}

/// Where the sanitizers ran on a config, against the shape that failed.
enum Coverage {
    /// No sanitizer stage ran on it.
    None,
    /// These tools ran at the failing shape too.
    ThisShape(Vec<&'static str>),
    /// These tools ran only at other shapes (empty where the run records none).
    OtherShapes(Vec<&'static str>, Vec<parsers::harness::Shape>),
}

/// Where the sanitizers ran on `config`, against the shape that failed: none, other shapes
/// only, or this one too.
fn sanitizer_coverage(
    ctx: &Ctx,
    config: Option<&str>,
    failed: &parsers::harness::Shape,
) -> Coverage {
    let j = ctx.joined;
    let mut shapes: Vec<parsers::harness::Shape> = Vec::new();
    let mut tools: Vec<&'static str> = Vec::new();
    for (i, s) in j.sources.iter().enumerate() {
        if !s.kind.is_sanitizer() || s.config != config {
            continue;
        }
        let tool = crate::join::kind_name(s.kind);
        if !tools.contains(&tool) {
            tools.push(tool);
        }
        if let Some((shape, _)) = super::stage_shape(ctx, i)
            && !shapes.contains(&shape)
        {
            shapes.push(shape);
        }
    }
    if tools.is_empty() {
        Coverage::None
    } else if shapes.contains(failed) {
        Coverage::ThisShape(tools)
    } else {
        Coverage::OtherShapes(tools, shapes)
    }
}

/// The sanitizers' coverage in words: "memcheck ran on this config only at B=1 H=8 S=128 D=64".
fn word_coverage(coverage: &Coverage) -> Message {
    let words = |tools: &[&str]| Message::words(tools.iter().map(|&t| t.to_message()).collect());
    match coverage {
        Coverage::None => msg!("no sanitizer stage ran on this config"),
        Coverage::ThisShape(tools) => {
            msg!("{} ran on this config at this shape too", words(tools))
        }
        Coverage::OtherShapes(tools, shapes) if shapes.is_empty() => msg!(
            "{} ran on this config, at shapes the run does not record",
            words(tools)
        ),
        Coverage::OtherShapes(tools, shapes) => {
            let shapes = shapes.iter().map(|s| {
                msg!(
                    "B={} H={} S={} D={}",
                    s.batch.to_string(),
                    s.heads.to_string(),
                    s.seq_len.to_string(),
                    s.head_dim.to_string()
                )
            });
            msg!(
                "{} ran on this config only at {}",
                words(tools),
                Message::words(shapes.collect())
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::fixture_case;

    /// The harness's stress run of the `wmma_local_q` attention build
    /// (`harness/stress_wmma_local_q.json`): the first launch ends in
    /// `CUDA_ERROR_LAUNCH_FAILED`.
    #[test]
    fn fires_on_a_harness_launch_that_returned_an_error() {
        let d =
            fixture_case!(Stress, "harness/stress_wmma_local_q.json").only(RuleId::LaunchFailure);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("release"));
        assert_eq!(d.kernel.as_deref(), Some("attention_fwd_f16"));
        // No compile stage: no source file to point at.
        assert_eq!(d.location, None);
        assert_eq!(d.figures["launched"], true);
        assert!(d.key.contains("CUDA_ERROR_LAUNCH_FAILED"), "{}", d.key);
    }

    /// The harness's check of the clean attention kernel (`harness/check_attention.json`):
    /// launched, no error.
    #[test]
    fn stays_silent_on_a_launch_that_succeeded() {
        fixture_case!(Check, "harness/check_attention.json").silent(RuleId::LaunchFailure);
    }
}
