//! `repeated-launch-failure`: the stress stage's first failing launch comes after the first, so
//! one launch is clean and a later one errors, differs or overwrites a canary. Told apart from a
//! single-launch fault (launch 1 already fails: other rules and `launch-failure` take that) and
//! from scattered non-determinism (some later launches differ, not all).

use parsers::FindingKind;
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level, Scope};
use crate::message::{Message, msg, quote};
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::RepeatedLaunchFailure,
    Role::Symptom { rank: 1 },
    "Failure after repeated launches",
    "stress: the first failing launch is after the first (error, output mismatch \
        or corrupted canary), told apart from a fault on the first launch.",
    "crates/report/src/rules/repeated_launch.rs",
    run,
);

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
        let sources = super::stage_sources(j, stage);
        let of_stage = || {
            let all = j.findings.iter().enumerate();
            all.filter(|(_, f)| sources.contains(&f.source))
        };
        // memcheck's errors at the failing count: the access the failure ends in.
        let found: Vec<usize> = of_stage()
            .filter(|(_, f)| {
                j.source(f.source)
                    .is_some_and(|s| s.log.format == parsers::Format::ComputeSanitizer)
                    && super::is_error(f.finding)
            })
            .map(|(i, _)| i)
            .collect();
        let first = found.first().and_then(|&i| j.findings.get(i));
        let kernel = first.and_then(|f| f.kernel.clone());
        let mut d = Draft::new(RuleId::RepeatedLaunchFailure, Level::Error, Message::new());
        d.key = "search".into();
        d.config = stage.config.clone();
        d.arch = stage.arch.clone();
        d.kernel = kernel.clone().map(String::from);
        d.location = first.and_then(|f| ctx.place(f));
        d.figures.insert("clean_at".into(), json!(clean));
        d.figures.insert("fails_at".into(), json!(fails));
        d.figures.insert("limit".into(), json!(search.limit));
        d.evidence.push(ctx.source_evidence(
            sources.first().copied(),
            config,
            search_summary(search, clean, fails),
        ));
        d.evidence.extend(first.map(|f| ctx.finding_evidence(f)));
        d.confidence = Confidence::from_signals(2 + usize::from(first.is_some()));
        // The failed checks of the attempts are this search's own evidence.
        d.explains = found;
        let checks = of_stage().filter(|(_, f)| f.finding.kind == FindingKind::CheckFailed);
        d.explains.extend(checks.map(|(i, _)| i));
        word_search(&mut d, clean, fails, first.is_some());
        d.symptom_of = kernel.map(|kernel| Scope::Kernel {
            kernel,
            single_launch: false,
        });
        out.push(d);
    }
    out
}

/// The search's evidence: the counts it tried, clean and failing.
fn search_summary(search: &crate::run::LaunchSearch, clean: u64, fails: u64) -> Message {
    let tried = search.attempts.iter().map(|a| {
        msg!(
            "{} {}",
            a.launches.to_string(),
            if a.passed { "clean" } else { "fails" }
        )
    });
    msg!(
        "stress: the program ran clean with {} and failed with {} ({}); counts tried: {}",
        plural(clean, "launch", "launches"),
        fails.to_string(),
        quote(search.failure.as_deref().unwrap_or("failed")),
        Message::join(tried, ", ")
    )
}

/// A search's words: clean at `clean` launches, fails at `fails`; `found` when memcheck
/// reported an error at the failing count (the draft's location is already set).
fn word_search(d: &mut Draft, clean: u64, fails: u64, found: bool) {
    d.title = msg!(
        "Fails only after repeated launches: clean at {}, fails at {}",
        plural(clean, "launch", "launches"),
        fails.to_string()
    );
    d.explanation = msg!(
        "The same program, run with more launches, is clean up to {} and fails from {} on (a \
         search over launch counts, which assumes a failure once seen persists at higher \
         counts). State that survives a launch (a device-side counter, a workspace slot or index \
         that is never reset or wrapped) walks one step per launch until it leaves its buffer.{}",
        clean.to_string(),
        fails.to_string(),
        match (found, &d.location) {
            (true, Some(loc)) => msg!(
                " memcheck at {} launches names the access{}.",
                fails.to_string(),
                super::at_location(Some(loc))
            ),
            _ => msg!(" memcheck at {} launches reported no error.", fails.to_string()),
        }
    );
    d.fix = msg!(
        "Reset or wrap per-launch state (index modulo the slot count, or reset it from the host \
         before each launch) and derive indices only from the launch's own arguments; keep the \
         stress stage at a count above the failing one as a regression test."
    );
}

/// One draft per stress result whose first failure is after launch 1.
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
        // Where the harness names no kind: a mismatch where launches differ, else an error.
        let failure = match stress.failure_kind.as_deref() {
            Some("canary") => Failure::Canary(&stress.canaries_corrupted),
            Some("mismatch") => Failure::Mismatch,
            None if mismatched > 0 => Failure::Mismatch,
            _ => Failure::Error(r.result.error.as_deref()),
        };

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
        let first_wrong = checks
            .iter()
            .filter(same_problem)
            .find(|c| c.result.check.as_ref().is_some_and(wrong));
        let first_launch_right = checks
            .iter()
            .filter(same_problem)
            .any(|c| c.result.check.as_ref().is_some_and(|k| k.passed));

        // Every launch from the first mismatch on differs, after correct ones: state that
        // accumulates. Only some differ, or launch 1 was already wrong: output that depends on
        // timing, the signature of a race.
        let launches = stress.launches;
        let progressive = n > 1 && launches >= n && mismatched > launches - n;
        let scattered =
            matches!(failure, Failure::Mismatch) && (!progressive || first_wrong.is_some());

        // Single-launch evidence for the same config: a passing check and a clean memcheck;
        // and, where launches differ at random, a single launch that is already wrong.
        let passed = passing_checks(ctx, &checks);
        let clean = clean_memcheck(ctx, config);
        let first_wrong = first_wrong.filter(|_| scattered);
        let seen = Stress {
            launches,
            first: n,
            mismatched,
            failure,
            sync: &stress.sync,
            first_launch_wrong: first_wrong.is_some(),
            first_launch_right,
            checks_pass: passed.is_some(),
            memcheck_clean: clean.is_some(),
            memcheck_found: j.findings.iter().any(|f| {
                f.config.as_deref() == config
                    && j.source(f.source).is_some_and(|s| s.kind.is_sanitizer())
                    && f.finding.kind == FindingKind::InvalidAccess
            }),
            blind: scattered
                .then(|| super::blind_sanitizers(ctx, config, "the stress mode"))
                .flatten(),
        };
        let mut d = ctx.result_draft(RuleId::RepeatedLaunchFailure, r);
        d.figures.insert("launches".into(), json!(launches));
        d.figures.insert("first_failure".into(), json!(first));
        d.figures
            .insert("mismatched_launches".into(), json!(mismatched));
        d.evidence.push(ctx.result_evidence(r, stress_summary(&seen)));
        d.evidence.extend(passed);
        d.evidence.extend(clean);
        d.evidence.extend(first_wrong.map(|c| {
            ctx.result_evidence(
                c,
                msg!(
                    "check: a single launch of this problem already fails against the CPU \
                     reference"
                ),
            )
        }));
        if scattered {
            d.key = "nondeterministic".into();
            word_nondeterministic(&mut d, &seen);
        } else {
            d.key = "repeated".into();
            word_repeated(&mut d, &seen);
        }
        let signals = [seen.checks_pass, seen.memcheck_clean, seen.first_launch_wrong];
        d.confidence = Confidence::from_signals(1 + signals.iter().filter(|&&s| s).count());
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

/// The evidence that every single-launch check of the config passed, where there are any
/// and all did.
fn passing_checks(
    ctx: &Ctx,
    checks: &[&crate::join::ResultRef],
) -> Option<crate::diagnosis::EvidenceItem> {
    let passed = checks
        .iter()
        .all(|c| c.result.check.as_ref().is_some_and(|k| k.passed));
    let first = checks.first().filter(|_| passed)?;
    Some(ctx.result_evidence(
        first,
        msg!(
            "check: {} passed against the CPU reference",
            plural(checks.len() as u64, "single-launch shape", "single-launch shapes")
        ),
    ))
}

/// Where memcheck saw a single launch of the config clean (a complete memcheck log of it names
/// no error), the evidence: a summary of the config's first memcheck log.
fn clean_memcheck(ctx: &Ctx, config: Option<&str>) -> Option<crate::diagnosis::EvidenceItem> {
    let j = ctx.joined;
    let memcheck = |s: &&crate::join::Source| {
        s.kind == crate::run::StageKind::Memcheck && s.config == config
    };
    let clean = j.sources.iter().enumerate().any(|(i, s)| {
        memcheck(&s) && s.log.complete && !j.findings_of(&[i]).any(|f| super::is_error(f.finding))
    });
    let (i, s) = j.sources.iter().enumerate().find(|(_, s)| clean && memcheck(s))?;
    Some(ctx.source_evidence(
        Some(i),
        config,
        msg!("memcheck: 0 errors on a single launch ({})", quote(s.path)),
    ))
}

/// How the failing launch failed.
enum Failure<'a> {
    /// It overwrote these guard regions.
    Canary(&'a [String]),
    /// Its output differs bitwise from launch 1's.
    Mismatch,
    /// It failed, with the harness's error where it gave one.
    Error(Option<&'a str>),
}

/// What a stress result and the config's single-launch evidence show: its draft's words come
/// from this.
struct Stress<'a> {
    launches: u64,
    /// The first failing launch.
    first: u64,
    /// How many launches differ from launch 1.
    mismatched: u64,
    failure: Failure<'a>,
    /// The stress mode's synchronisation.
    sync: &'a str,
    /// A single launch of this problem already fails its check.
    first_launch_wrong: bool,
    /// A single launch of this problem passes its check.
    first_launch_right: bool,
    /// Every single-launch check of the config passed.
    checks_pass: bool,
    /// memcheck ran clean on a single launch of the config.
    memcheck_clean: bool,
    /// A sanitizer found an out-of-bounds access in the config.
    memcheck_found: bool,
    /// What the sanitizers did not see, where every one that ran was clean.
    blind: Option<Message>,
}

/// What the failing launch did: "overwrote a guard region (...)".
fn what_failed(s: &Stress) -> Message {
    match s.failure {
        Failure::Canary(guards) => msg!(
            "overwrote a guard region ({})",
            quote(guards.join(", "))
        ),
        Failure::Mismatch => msg!(
            "produced output that differs bitwise from launch 1 ({} of {} launches differ)",
            s.mismatched.to_string(),
            s.launches.to_string()
        ),
        Failure::Error(error) => msg!(
            "failed{}",
            error.map(|e| msg!(": {}", quote(e))).unwrap_or_default()
        ),
    }
}

/// The stress result's evidence: its launches, its sync and what the failing launch did.
fn stress_summary(s: &Stress) -> Message {
    msg!(
        "stress ({} launches, sync {}): launch {} {}",
        s.launches.to_string(),
        quote(s.sync),
        s.first.to_string(),
        what_failed(s)
    )
}

/// Scattered differences between launches: non-deterministic output.
fn word_nondeterministic(d: &mut Draft, s: &Stress) {
    let launches = s.launches.to_string();
    d.title = msg!(
        "Non-deterministic output: {} of {} launches differ from the first",
        s.mismatched.to_string(),
        launches.clone()
    );
    let differ = msg!(
        "Identical inputs, {} launches: {} differ bitwise from launch 1, the first at launch {}, ",
        launches,
        plural(s.mismatched, "launch", "launches"),
        s.first.to_string()
    );
    d.explanation = differ.then(if s.first_launch_wrong {
        msg!(
            "and a single launch of this problem already fails the check, so this is not a fault \
             that needs repeated launches. Output that is wrong and changes from launch to launch \
             depends on timing: a race (on shared memory, or with asynchronous copies that a \
             barrier wait should order) or a read of memory nothing wrote."
        )
    } else {
        msg!(
            "and not every launch after it. Scattered differences are what a race (shared memory \
             or global atomics in varying order) or a read of uninitialised memory produce."
        )
    });
    if let Some(blind) = &s.blind {
        d.explanation.append(msg!(" {}", blind));
        d.fix = msg!(
            "Order shared-memory accesses with barriers, wait on the barrier of every \
             asynchronous copy (cp.async, TMA) before reading its data, and make reductions \
             deterministic (fixed order, no float atomics)."
        );
    } else {
        d.fix = msg!(
            "Run racecheck and initcheck on this config; order shared-memory accesses with \
             barriers (and wait on the barrier of every asynchronous copy before reading its \
             data), and make reductions deterministic (fixed order, no float atomics)."
        );
    }
}

/// A failure that needs several launches: state that survives a launch.
fn word_repeated(d: &mut Draft, s: &Stress) {
    let n = s.first;
    let what = what_failed(s);
    d.title = msg!(
        "Fails only after repeated launches (first failure at launch {} of {})",
        n.to_string(),
        s.launches.to_string()
    );
    let single = match (s.checks_pass, s.memcheck_clean) {
        (true, true) => " A single launch is clean: it passes check and memcheck.",
        (true, false) => " A single launch passes check.",
        (false, true) => " A single launch is clean under memcheck.",
        (false, false) => "",
    };
    // Launch 1 is known right only from a passing check of this problem; the stress mode itself
    // compares launches with each other.
    let before = match (s.first_launch_right, n) {
        (true, 2) => msg!("Launch 1 ran correctly, then launch 2 {}.", what),
        (true, _) => msg!(
            "Launches 1 to {} ran correctly, then launch {} {}.",
            n.saturating_sub(1).to_string(),
            n.to_string(),
            what
        ),
        (false, _) => msg!("Launch {} was the first that {}.", n.to_string(), what),
    };
    d.explanation = msg!(
        "{}{} A fault that needs several launches is state that survives a launch: a global \
         counter, workspace or index that is not reset, or memory reused without \
         reinitialisation, walking a little further each time until it leaves its buffer.{}",
        before,
        single,
        if s.memcheck_found {
            " memcheck's out-of-bounds finding for this config is the access it ends in."
        } else {
            ""
        }
    );
    d.fix = msg!(
        "Reset per-launch state at the start of every launch (or from the host before it) and \
         derive indices only from blockIdx, threadIdx and the arguments. To catch the access, \
         run memcheck around the stress mode with at least {} launches.",
        n.to_string()
    );
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, fixture_case, repo_file};
    use crate::{diagnosis::Level, run::StageKind};

    /// The stress stage of the `launch_counter_ring` attention build in the committed reference
    /// run (`artifacts/reference/20261122T040220Z-de24d653/stress/launch_counter_ring/sm_90/seed-f16/harness.json`):
    /// launches 1 to 5 clean, launch 6 of 20 ends in `CUDA_ERROR_ILLEGAL_ADDRESS`.
    #[test]
    fn fires_on_a_stress_run_whose_first_failure_is_its_sixth_launch() {
        let log = repo_file!(
            "artifacts/reference/20261122T040220Z-de24d653/stress/launch_counter_ring/sm_90/seed-f16/harness.json"
        );
        let case = Case::new().log(StageKind::Stress, "launch_counter_ring", "sm_90", log);
        let d = case.only(RuleId::RepeatedLaunchFailure);
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
        fixture_case!(Stress, "harness/stress_wmma_local_q.json")
            .silent(RuleId::RepeatedLaunchFailure);
    }
}
