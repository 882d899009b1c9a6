//! `launch-failure`: the harness could not launch the kernel, or a launch returned an error,
//! and no earlier rule names a cause for that config and kernel.

use serde_json::json;

use super::{Ctx, RuleId, is_harness_kind};
use crate::diagnosis::{Confidence, Draft, Level, Scope};
use crate::text::{md_code, md_text};

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
        let unit = stage.unit();
        if unit.target != crate::TargetKind::Program
            || stage.status != crate::StageStatus::Findings
            || stage.launch_search.is_some()
        {
            continue;
        }
        let sources: Vec<usize> = j
            .sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.stage.is_some_and(|st| std::ptr::eq(st, stage)))
            .map(|(i, _)| i)
            .collect();
        let tool_errors = j.findings.iter().any(|f| {
            sources.contains(&f.source)
                && super::is_error(f.finding)
                && f.finding.kind != parsers::FindingKind::CheckFailed
        });
        // A test framework's report (or the program's own `exhibit.results/1`) names the
        // failing tests, each a finding of its own.
        let failed_tests = j.findings.iter().any(|f| {
            sources.contains(&f.source)
                && f.finding.kind == parsers::FindingKind::CheckFailed
                && j.source(f.source).is_some_and(|s| {
                    matches!(
                        s.log.format,
                        parsers::Format::JUnit | parsers::Format::ProgramResults
                    )
                })
        });
        if tool_errors || failed_tests {
            continue;
        }
        let reason = crate::text::scrub(
            stage.reason.as_deref().unwrap_or("the program failed"),
            &j.repo_files,
        );
        let config = stage.config.as_deref();
        let said = md_text(&reason);
        let mut d = Draft::new(
            RuleId::LaunchFailure,
            Level::Error,
            format!("The program fails: {said}"),
        );
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
            format!("{}: {said}", md_text(&stage.name)),
        );
        item.stage.clone_from(&stage.name);
        d.evidence.push(item);
        for (i, f) in j.findings.iter().enumerate() {
            if sources.contains(&f.source) {
                d.explains.push(i);
            }
        }
        d.explanation = format!(
            "The {} stage ran the program and it failed ({said}). No tool in that stage \
             located the fault.",
            md_text(&stage.name)
        );
        d.fix = "Run the sanitizer stages on this config: their file:line is where to look."
            .to_string();
        // The program's own comparison, failing: its output is wrong, by its own figure.
        if let Some(m) = parsers::program::mismatch(&reason) {
            wrong_output(&mut d, &m, &said);
        }
        if out.iter().any(|o| o.config == d.config && o.key == d.key) {
            continue;
        }
        out.push(d);
    }
    out
}

/// A failed program whose telling line is its own failing comparison: wrong output, with the
/// figure and the limit it printed. One root cause whichever stage saw it.
fn wrong_output(d: &mut Draft, m: &parsers::program::Mismatch, said: &str) {
    d.rule = RuleId::WrongOutput;
    d.bare = false;
    d.symptom_of = Some(crate::diagnosis::Scope::Config);
    d.key = format!("mismatch|{}", m.measure.to_lowercase());
    let value = two_digits(m.value);
    let measure = m.measure.to_lowercase();
    d.title = match m.limit {
        Some(limit) => format!(
            "Wrong output: the program's own check fails, {measure} {value} against a \
             threshold of {limit}"
        ),
        None => format!("Wrong output: the program's own check fails, {measure} {value}"),
    };
    d.figures.insert("program_measure".into(), json!(m.measure));
    d.figures.insert("program_value".into(), json!(m.value));
    if let Some(limit) = m.limit {
        d.figures.insert("program_limit".into(), json!(limit));
    }
    let over = m
        .limit
        .filter(|l| *l > 0.0)
        .map(|l| format!(", {}x what it allows", two_digits(m.value / l)))
        .unwrap_or_default();
    d.explanation = format!(
        "The program compared its output with its own reference and failed: {said}. The \
         output differs by {value}{over}, far past rounding: the kernel computes a different \
         function on these inputs. No tool in this config located a memory fault, so the \
         difference is in the arithmetic (indexing, masking, scaling, the softmax's running \
         maximum and sum, accumulation), not a crash."
    );
    d.fix = "Compare the kernel's output with the reference element by element on the \
             smallest failing case: the first wrong row and column say which loop or mask is \
             off. Keep the comparison as a test."
        .to_string();
}

/// `x` to two significant digits, as a headline figure (0.529297 reads 0.53).
fn two_digits(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return crate::text::sig3(x);
    }
    let decimals = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

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
        let fault = ctx.has_fault(config, Some(kernel));
        if !fault && ctx.has_error_for(config, Some(kernel)) {
            continue;
        }
        let error = crate::text::scrub(&error, &j.repo_files);
        if out.iter().any(|d| {
            d.config == r.config && d.kernel.as_deref() == Some(kernel.as_str()) && d.key == error
        }) {
            continue;
        }
        let mut d = Draft::new(RuleId::LaunchFailure, Level::Error, "");
        d.symptom_of = Some(Scope::Kernel {
            kernel: kernel.clone(),
            single_launch: false,
        });
        d.config = r.config.clone();
        d.kernel = Some(kernel.to_string());
        d.location = ctx.kernel_file(config);
        d.key = error.clone();
        let error = md_text(&error);
        d.confidence = Confidence::Medium;
        d.evidence.push(ctx.result_evidence(
            r,
            format!(
                "{} launch of {}: {error}",
                super::mode_name(r.result.mode),
                md_code(&r.result.kernel)
            ),
        ));
        for (i, f) in j.findings.iter().enumerate() {
            if f.source == r.source && is_harness_kind(f.finding.kind) {
                d.explains.push(i);
            }
        }
        d.figures
            .insert("launched".into(), json!(r.result.launched));
        let lower = error.to_lowercase();
        if lower.contains("too many resources") || lower.contains("out of resources") {
            d.title = "Launch refused: too many resources requested".to_string();
            d.explanation = format!(
                "The launch of `{kernel}` was refused ({error}): a block asks for more registers \
                 (registers x threads) or shared memory than one SM has. The occupancy diagnosis \
                 for this config shows which."
            );
            d.fix = "Lower registers per thread (`__launch_bounds__`, fewer live fragments), the \
                     threads per block, or the tile sizes that set shared memory."
                .to_string();
        } else if !r.result.launched {
            d.title = format!("Kernel did not launch: {error}");
            d.explanation = format!(
                "The harness could not launch `{kernel}`: {error}. Nothing the later stages \
                 measured for this config ran the kernel."
            );
            d.fix = "Fix the load or launch error first (entry point name, cubin arch, \
                     shared-memory attribute, launch dimensions)."
                .to_string();
        } else {
            d.title = format!("Launch fails on the first launch: {error}");
            let case = crate::tables::Case::of(r.result).label();
            d.explanation = format!(
                "A single launch of `{kernel}` at {case} returned {error}. No sanitizer finding \
                 for this config names a site, so the fault is device-side but unlocated \
                 ({}).",
                sanitizer_coverage(ctx, config, &r.result.shape)
            );
            d.fix = format!("Run memcheck on this config at {case} to get the faulting file:line.");
        }
        out.push(d);
    }
    out
}

/// Where the sanitizers ran on `config`, against the shape that failed: none, other shapes
/// only, or this one too.
fn sanitizer_coverage(ctx: &Ctx, config: Option<&str>, failed: &parsers::harness::Shape) -> String {
    let j = ctx.joined;
    let mut shapes: Vec<parsers::harness::Shape> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    for (i, s) in j.sources.iter().enumerate() {
        if !crate::join::is_sanitizer(s.kind) || s.config != config {
            continue;
        }
        let tool = crate::join::kind_name(s.kind).to_string();
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
        return "no sanitizer stage ran on this config".to_string();
    }
    let tools = crate::text::join_words(&tools);
    if shapes.contains(failed) {
        return format!("{tools} ran on this config at this shape too");
    }
    let shapes: Vec<String> = shapes
        .iter()
        .map(|s| {
            format!(
                "B={} H={} S={} D={}",
                s.batch, s.heads, s.seq_len, s.head_dim
            )
        })
        .collect();
    if shapes.is_empty() {
        format!("{tools} ran on this config, at shapes the run does not record")
    } else {
        format!(
            "{tools} ran on this config only at {}",
            crate::text::join_words(&shapes)
        )
    }
}
