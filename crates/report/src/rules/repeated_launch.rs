//! `repeated-launch-failure`: the stress stage's first failing launch comes after the first, so
//! one launch is clean and a later one errors, differs or overwrites a canary. Told apart from a
//! single-launch fault (launch 1 already fails: other rules and `launch-failure` take that) and
//! from scattered non-determinism (some later launches differ, not all).

use parsers::FindingKind;
use serde_json::json;

use super::{Ctx, Proposes, Role, Rule, RuleId, is_harness_kind};
use crate::diagnosis::{Confidence, Draft, Level, Scope};
use crate::text::{md_text, plural};

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::RepeatedLaunchFailure,
    role: Role::Symptom { rank: 1 },
    name: "Failure after repeated launches",
    description: "stress: the first failing launch is after the first (error, output mismatch \
                  or corrupted canary), told apart from a fault on the first launch.",
    module: "crates/report/src/rules/repeated_launch.rs",
    run: Some(run),
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};

/// One draft per failing stress result, and per launch search of a target's program.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let mut out = harness_stress(ctx);
    out.extend(searches(ctx));
    out
}

/// A target program's stress search that found a failing count after a clean one: "clean at
/// 8 launches, fails at 9", with memcheck's finding at the failing count as the place.
fn searches(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for stage in j.stages() {
        let Some(search) = &stage.launch_search else {
            continue;
        };
        let (Some(clean), Some(fails)) = (search.clean_at, search.fails_at) else {
            continue;
        };
        let config = stage.config.as_deref();
        let sources: Vec<usize> = j
            .sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.stage.is_some_and(|st| std::ptr::eq(st, stage)))
            .map(|(i, _)| i)
            .collect();
        // memcheck's errors at the failing count: the access the failure ends in.
        let found: Vec<usize> = j
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                sources.contains(&f.source)
                    && j.source(f.source)
                        .is_some_and(|s| s.log.format == parsers::Format::ComputeSanitizer)
                    && super::is_error(f.finding)
            })
            .map(|(i, _)| i)
            .collect();
        let first = found.first().and_then(|&i| j.findings.get(i));
        let kernel = first.and_then(|f| f.kernel.clone());
        let failure = md_text(search.failure.as_deref().unwrap_or("failed"));
        let mut d = Draft::new(
            RuleId::RepeatedLaunchFailure,
            Level::Error,
            format!(
                "Fails only after repeated launches: clean at {}, fails at {fails}",
                plural(clean, "launch", "launches")
            ),
        );
        d.key = "search".into();
        d.config = stage.config.clone();
        d.arch = stage.arch.clone();
        d.kernel = kernel.clone().map(String::from);
        d.location = first.and_then(|f| ctx.place(f));
        d.figures.insert("clean_at".into(), json!(clean));
        d.figures.insert("fails_at".into(), json!(fails));
        d.figures.insert("limit".into(), json!(search.limit));
        let tried: Vec<String> = search
            .attempts
            .iter()
            .map(|a| {
                format!(
                    "{} {}",
                    a.launches,
                    if a.passed { "clean" } else { "fails" }
                )
            })
            .collect();
        d.evidence.push(ctx.source_evidence(
            sources.first().copied(),
            config,
            format!(
                "stress: the program ran clean with {} and failed with {fails} ({failure}); \
                 counts tried: {}",
                plural(clean, "launch", "launches"),
                tried.join(", ")
            ),
        ));
        let mut signals = 2;
        if let Some(f) = first {
            signals += 1;
            d.evidence.push(ctx.finding_evidence(f));
            d.explains = found.clone();
        }
        // The failed checks of the attempts are this search's own evidence.
        d.explains
            .extend(j.findings.iter().enumerate().filter_map(|(i, f)| {
                (sources.contains(&f.source) && f.finding.kind == FindingKind::CheckFailed)
                    .then_some(i)
            }));
        d.confidence = Confidence::from_signals(signals);
        d.explanation = format!(
            "The same program, run with more launches, is clean up to {clean} and fails from \
             {fails} on (a search over launch counts, which assumes a failure once seen \
             persists at higher counts). State that survives a launch (a device-side counter, a workspace \
             slot or index that is never reset or wrapped) walks one step per launch until it \
             leaves its buffer.{}",
            match (first, &d.location) {
                (Some(_), Some(loc)) => format!(
                    " memcheck at {fails} launches names the access{}.",
                    super::at_location(Some(loc))
                ),
                _ => format!(" memcheck at {fails} launches reported no error."),
            }
        ).into();
        d.fix = "Reset or wrap per-launch state (index modulo the slot count, or reset it from \
                 the host before each launch) and derive indices only from the launch's own \
                 arguments; keep the stress stage at a count above the failing one as a \
                 regression test."
            .to_string().into();
        d.symptom_of = kernel.clone().map(|kernel| Scope::Kernel {
            kernel,
            single_launch: false,
        });
        out.push(d);
    }
    out
}

fn harness_stress(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for r in &j.results {
        let Some(stress) = &r.result.stress else {
            continue;
        };
        let kernel = &r.kernel;
        let config = r.config.as_deref();
        let first = stress.first_failure;
        let mismatched = stress.mismatched_launches;
        if first.is_none() && mismatched == 0 && stress.canaries_corrupted.is_empty() {
            continue;
        }
        let n = first.unwrap_or(0);
        if n == 1 {
            // A fault on the first launch is a single-launch fault: not this rule's.
            continue;
        }
        let harness_findings: Vec<usize> = j
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| f.source == r.source && is_harness_kind(f.finding.kind))
            .map(|(i, _)| i)
            .collect();
        let kind = stress.failure_kind.as_deref().unwrap_or(if mismatched > 0 {
            "mismatch"
        } else {
            "error"
        });

        // Single-launch checks of the same config, and those of this very problem (shape, dtype,
        // mask): a failed one means launch 1 was already wrong.
        let checks: Vec<_> = j
            .results
            .iter()
            .filter(|c| c.config == r.config && c.kernel == *kernel)
            .filter(|c| c.result.check.is_some())
            .collect();
        let same_problem = |c: &&&crate::join::ResultRef| {
            c.result.shape == r.result.shape
                && c.result.dtype == r.result.dtype
                && c.result.causal == r.result.causal
        };
        // Wrong against the reference, not merely a failed check (a check also fails when a
        // second launch differs within tolerance).
        let wrong = |k: &parsers::harness::Check| {
            !k.passed && (k.max_abs_err > k.tolerance || k.nan_count > 0 || k.unwritten > 0)
        };
        let first_launch_wrong = checks
            .iter()
            .filter(same_problem)
            .any(|c| c.result.check.as_ref().is_some_and(wrong));
        let first_launch_right = checks
            .iter()
            .filter(same_problem)
            .any(|c| c.result.check.as_ref().is_some_and(|k| k.passed));

        // Every launch from the first mismatch on differs, after correct ones: state that
        // accumulates. Only some differ, or launch 1 was already wrong: output that depends on
        // timing, the signature of a race.
        let launches = stress.launches;
        let progressive = n > 1 && launches >= n && mismatched > launches - n;
        let scattered = kind == "mismatch" && (!progressive || first_launch_wrong);

        let mut d = Draft::new(RuleId::RepeatedLaunchFailure, Level::Error, "");
        d.config = r.config.clone();
        d.kernel = Some(kernel.to_string());
        d.explains = harness_findings;
        d.location = ctx.kernel_file(config);
        d.figures.insert("launches".into(), json!(launches));
        d.figures.insert("first_failure".into(), json!(first));
        d.figures
            .insert("mismatched_launches".into(), json!(mismatched));
        let what = match kind {
            "canary" => format!(
                "overwrote a guard region ({})",
                md_text(&stress.canaries_corrupted.join(", "))
            ),
            "mismatch" => format!(
                "produced output that differs bitwise from launch 1 ({} of {launches} launches differ)",
                mismatched
            ),
            _ => format!(
                "failed{}",
                r.result
                    .error
                    .as_deref()
                    .map(|e| format!(": {}", md_text(e)))
                    .unwrap_or_default()
            ),
        };
        let summary = format!(
            "stress ({launches} launches, sync {}): launch {n} {what}",
            md_text(&stress.sync)
        );
        d.evidence.push(ctx.result_evidence(r, summary));
        let mut signals = 1;

        // Single-launch evidence for the same config: a passing check and a clean memcheck.
        let checks_pass = !checks.is_empty()
            && checks
                .iter()
                .all(|c| c.result.check.as_ref().is_some_and(|k| k.passed));
        if checks_pass {
            signals += 1;
            d.evidence.push(ctx.result_evidence(
                checks[0],
                format!(
                    "check: {} single-launch {} passed against the CPU reference",
                    checks.len(),
                    if checks.len() == 1 { "shape" } else { "shapes" }
                ),
            ));
        }
        let memcheck_clean = j.sources.iter().enumerate().any(|(i, s)| {
            s.kind == crate::run::StageKind::Memcheck
                && s.config == config
                && s.log.complete
                && !j
                    .findings
                    .iter()
                    .any(|f| f.source == i && super::is_error(f.finding))
        });
        if memcheck_clean {
            signals += 1;
            if let Some((i, s)) = j
                .sources
                .iter()
                .enumerate()
                .find(|(_, s)| s.kind == crate::run::StageKind::Memcheck && s.config == config)
            {
                d.evidence.push(ctx.source_evidence(
                    Some(i),
                    config,
                    format!(
                        "memcheck: 0 errors on a single launch ({})",
                        md_text(s.path)
                    ),
                ));
            }
        }
        let memcheck_found = j.findings.iter().any(|f| {
            f.config.as_deref() == config
                && j.source(f.source).is_some_and(|s| s.kind.is_sanitizer())
                && f.finding.kind == FindingKind::InvalidAccess
        });

        if scattered {
            d.title = format!(
                "Non-deterministic output: {} of {launches} launches differ from the first",
                mismatched
            ).into();
            d.key = "nondeterministic".into();
            d.explanation = if first_launch_wrong {
                if let Some(c) = checks
                    .iter()
                    .find(|c| same_problem(c) && c.result.check.as_ref().is_some_and(wrong))
                {
                    signals += 1;
                    d.evidence.push(
                        ctx.result_evidence(
                            c,
                            "check: a single launch of this problem already fails against the CPU \
                         reference"
                                .to_string(),
                        ),
                    );
                }
                format!(
                    "Identical inputs, {launches} launches: {} differ bitwise from launch 1, the \
                     first at launch {n}, and a single launch of this problem already fails the \
                     check, so this is not a fault that needs repeated launches. Output that is \
                     wrong and changes from launch to launch depends on timing: a race (on shared \
                     memory, or with asynchronous copies that a barrier wait should order) or a \
                     read of memory nothing wrote.",
                    plural(mismatched, "launch", "launches")
                ).into()
            } else {
                format!(
                    "Identical inputs, {launches} launches: {} differ bitwise from launch 1, the \
                     first at launch {n}, and not every launch after it. Scattered differences \
                     are what a race (shared memory or global atomics in varying order) or a read \
                     of uninitialised memory produce.",
                    plural(mismatched, "launch", "launches")
                ).into()
            };
            if let Some(blind) = super::blind_sanitizers(ctx, config, "the stress mode") {
                d.explanation.push_str(" ");
                d.explanation.append(blind);
                d.fix = "Order shared-memory accesses with barriers, wait on the barrier of every \
                         asynchronous copy (cp.async, TMA) before reading its data, and make \
                         reductions deterministic (fixed order, no float atomics)."
                    .to_string().into();
            } else {
                d.fix = "Run racecheck and initcheck on this config; order shared-memory \
                         accesses with barriers (and wait on the barrier of every asynchronous \
                         copy before reading its data), and make reductions deterministic (fixed \
                         order, no float atomics)."
                    .to_string().into();
            }
        } else {
            d.title = format!(
                "Fails only after repeated launches (first failure at launch {n} of {launches})"
            ).into();
            d.key = "repeated".into();
            let single = match (checks_pass, memcheck_clean) {
                (true, true) => " A single launch is clean: it passes check and memcheck.",
                (true, false) => " A single launch passes check.",
                (false, true) => " A single launch is clean under memcheck.",
                (false, false) => "",
            };
            // Launch 1 is known right only from a passing check of this problem; the stress
            // mode itself compares launches with each other.
            let before = match (first_launch_right, n) {
                (true, 2) => format!("Launch 1 ran correctly, then launch 2 {what}."),
                (true, _) => format!(
                    "Launches 1 to {} ran correctly, then launch {n} {what}.",
                    n.saturating_sub(1)
                ),
                (false, _) => format!("Launch {n} was the first that {what}."),
            };
            d.explanation = format!(
                "{before}{single} A fault that needs several launches is state that survives a \
                 launch: a global counter, workspace or index that is not reset, or memory reused \
                 without reinitialisation, walking a little further each time until it leaves \
                 its buffer.{}",
                if memcheck_found {
                    " memcheck's out-of-bounds finding for this config is the access it ends in."
                } else {
                    ""
                }
            ).into();
            d.fix = format!(
                "Reset per-launch state at the start of every launch (or from the host before it) \
                 and derive indices only from blockIdx, threadIdx and the arguments. To catch the \
                 access, run memcheck around the stress mode with at least {n} launches."
            ).into();
        }
        d.confidence = Confidence::from_signals(signals);
        d.level = Level::Error;
        // A root cause a sanitizer found on one launch (a race, an uninitialised read) explains
        // what repeated launches show; a fault that needs several launches stands on its own.
        d.symptom_of = Some(Scope::Kernel {
            kernel: kernel.clone(),
            single_launch: true,
        });
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture, repo_file};
    use crate::{diagnosis::Level, run::StageKind};

    /// The stress stage of the `launch_counter_ring` attention build in the committed reference
    /// run (`artifacts/reference/20261122T040220Z-de24d653/stress/launch_counter_ring/sm_90/seed-f16/harness.json`):
    /// launches 1 to 5 clean, launch 6 of 20 ends in `CUDA_ERROR_ILLEGAL_ADDRESS`.
    #[test]
    fn fires_on_a_stress_run_whose_first_failure_is_its_sixth_launch() {
        let d = only(
            Case::new()
                .log(
                    StageKind::Stress,
                    "launch_counter_ring",
                    "sm_90",
                    repo_file!(
                        "artifacts/reference/20261122T040220Z-de24d653/stress/launch_counter_ring/sm_90/seed-f16/harness.json"
                    ),
                )
                .drafts(RuleId::RepeatedLaunchFailure),
        );
        assert_eq!(d.rule, RuleId::RepeatedLaunchFailure);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.config.as_deref(), Some("launch_counter_ring"));
        assert_eq!(d.kernel.as_deref(), Some("attention_fwd_f16"));
        assert_eq!(d.location, None);
        assert_eq!(d.figures["first_failure"], 6);
    }

    /// The harness's stress run of the `wmma_local_q` build (`harness/stress_wmma_local_q.json`):
    /// the very first launch fails, a single-launch fault that is not this rule's.
    #[test]
    fn stays_silent_when_the_first_launch_already_fails() {
        let drafts = Case::new()
            .log(
                StageKind::Stress,
                "wmma_local_q",
                "sm_90",
                parsers_fixture!("harness/stress_wmma_local_q.json"),
            )
            .drafts(RuleId::RepeatedLaunchFailure);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
