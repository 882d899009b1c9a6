//! `slow-kernel`: why a kernel is slow, from Nsight Compute's own rules and its source page.
//! ncu's rules (OPT with an estimated speedup over the whole kernel, "global") name a cause;
//! the source page (counters per source line) names where the cost sits: the line with the most
//! excessive shared wavefronts for bank conflicts, the most excessive global sectors for
//! uncoalesced access, the most warp-stall samples otherwise. The generic rules that fire on
//! fast kernels too (under-utilised pipes, issue slots, stall CPI, L2 compression) never make a
//! cause by themselves, and a kernel of a few microseconds is too small to call slow.

mod baseline;
mod tensor_cores;
mod words;

use baseline::against_baseline;
use parsers::{OccupancyLimiter, ProfilerRule, SourceLine, SpeedupType};
use tensor_cores::no_tensor_cores;
use words::{Weight, describe, word_weight};

use crate::measure::Measure;
use crate::hypothesis::{ExperimentKind, Hypothesis};
use serde_json::json;

use crate::join::FindingRef;

use super::profile::{Scope, duration_us, metric, microseconds, most, rounded, source_lines};
use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level};
use crate::kernel_id::KernelId;
use crate::message::{Message, code, figure, msg};
use crate::text::relative_path;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::SlowKernel,
    Role::Performance,
    "Slow kernel",
    "Nsight Compute's rules that name a cause (bank conflicts, uncoalesced \
        access, too few blocks, low theoretical occupancy) with an estimated \
        speedup over the whole kernel of 20% or more, at the source line that \
        holds the cost (its source page), weighed by the kernel's share of the \
        profiled GPU time; under 10% of the program, or a launch under 50 µs, is \
        a note.",
    "crates/report/src/rules/slow_kernel.rs",
    run,
)
.slowing(true)
.absorbing((RuleId::OccupancyLimit, absorb_occupancy_limit));

/// ncu's rules whose estimate comes from counters per instruction (the excessive sectors or
/// wavefronts the source page lists), rather than from a unit's overall traffic: they lead
/// their class when present (`MemoryCacheAccessPattern` can estimate 42% for a kernel whose
/// excessive sectors ncu itself puts at 4%).
const MEASURED_RULES: &[&str] = &["UncoalescedGlobalAccess", "UncoalescedSharedAccess"];

/// Whether the kernel's source page, where there is one, shows excess global sectors worth a
/// cause: at least a tenth of the sectors its lines move. Without a source page, ncu's rule
/// stands on its own.
fn excess_shown(ctx: &Ctx, scope: Scope, kernel: Option<&KernelId>) -> bool {
    let lines = source_lines(ctx, scope, kernel);
    let moved: u64 = lines.iter().map(|l| l.global_sectors).sum();
    let excess: u64 = lines.iter().map(|l| l.global_excessive).sum();
    moved == 0 || excess.saturating_mul(10) >= moved
}

/// The smallest estimated speedup (percent of the kernel's time) that makes a cause.
const MIN_SPEEDUP: f64 = 20.0;

/// The least a cause must be worth to the whole program (its estimated speedup times its
/// kernel's share of the profiled GPU time, in percent) to be a warning rather than a note.
const MIN_PROGRAM_GAIN: f64 = 10.0;

/// Below this duration (µs) a launch is too small to judge: a tiny problem leaves the GPU
/// idle whatever the kernel does, and launch overhead weighs as much as the kernel.
const MIN_DURATION_US: f64 = 50.0;

/// What a cause is called and how it is found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    BankConflicts,
    Uncoalesced,
    FewBlocks,
    Occupancy,
    /// Warps stalled on local and global memory in a kernel ptxas gave a stack frame: an array
    /// indexed at run time (or spills) in local memory.
    LocalMemory,
}

impl Class {
    /// The class of an ncu rule result, when it names a specific cause.
    fn of(rule: &ProfilerRule) -> Option<Class> {
        match rule.name.as_str() {
            "SharedMemoryConflicts" | "UncoalescedSharedAccess" => Some(Class::BankConflicts),
            "UncoalescedGlobalAccess" => Some(Class::Uncoalesced),
            // The cache-pattern rule speaks of one memory space: local loads and stores are
            // the stack frame's, not the program's global arrays.
            "MemoryCacheAccessPattern" => match rule.access_space {
                Some(parsers::MemorySpace::Local) => Some(Class::LocalMemory),
                Some(parsers::MemorySpace::Shared) => None,
                _ => Some(Class::Uncoalesced),
            },
            "LaunchConfiguration" if rule.fewer_blocks_than_sms => Some(Class::FewBlocks),
            "SOLBottleneck" if rule.grid_too_small => Some(Class::FewBlocks),
            "TheoreticalOccupancy" => Some(Class::Occupancy),
            "CPIStall" if rule.lg_throttle => Some(Class::LocalMemory),
            _ => None,
        }
    }

    /// Its key, and the profile's figures it stands on for the comparison with the baseline.
    fn row(self) -> (&'static str, &'static [Measure]) {
        match self {
            Class::BankConflicts => ("bank-conflicts", &[Measure::SharedWavefronts]),
            Class::Uncoalesced => ("uncoalesced", &[Measure::LoadSectors, Measure::StoreSectors]),
            Class::FewBlocks => ("few-blocks", &[Measure::WavesPerSm]),
            Class::Occupancy => ("occupancy", &[Measure::WarpsPerSm]),
            Class::LocalMemory => ("local-memory", &[Measure::LocalBytes]),
        }
    }

    /// The source line that holds this cause's cost.
    fn hottest<'l>(self, lines: &[&'l SourceLine]) -> Option<&'l SourceLine> {
        match self {
            Class::BankConflicts => most(lines, |l| l.shared_excessive),
            Class::Uncoalesced => most(lines, |l| l.global_excessive),
            Class::FewBlocks | Class::Occupancy | Class::LocalMemory => {
                most(lines, |l| l.stall_samples)
            }
        }
    }
}

/// The typed rule result of an ncu rule's finding (the parser reads its figures; none are read
/// here from ncu's wording).
fn profiler_rule<'f>(f: &'f FindingRef<'_>) -> Option<&'f ProfilerRule> {
    f.finding.profiler_rule.as_deref()
}

/// The scope of an ncu rule's finding: its config and its log.
fn scope_of<'f>(f: &'f FindingRef<'_>) -> Scope<'f> {
    Scope {
        config: f.config.as_deref(),
        log: Some(f.source),
    }
}

/// One draft per kernel and cause class. Of ncu's rules of a class, the one from the longest
/// profiled launch leads (a bench shape's, not a smoke test's); the others are its evidence.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out: Vec<Draft> = Vec::new();
    // ncu's other suggestions: (finding, estimated speedup, rule, whether only for its section).
    let mut minor: Vec<Suggestion> = Vec::new();
    // (its launch's duration, whether ncu measured it per instruction, its estimate, finding,
    // its rule)
    let mut rules: Vec<(f64, bool, f64, usize, &FindingRef, &ProfilerRule)> = j
        .findings
        .iter()
        .enumerate()
        .filter_map(|(index, f)| {
            let rule = profiler_rule(f)?;
            let us = duration_us(ctx, scope_of(f), f.kernel.as_ref());
            Some((
                us.unwrap_or(0.0),
                MEASURED_RULES.contains(&rule.name.as_str()),
                rule.estimated_speedup.unwrap_or(0.0),
                index,
                f,
                rule,
            ))
        })
        .collect();
    // Where ncu measured an access pattern per instruction, its rule speaks for the class in
    // that profiling run: (log, kernel, class) of each such rule.
    let measured: Vec<(usize, Option<KernelId>, Class)> = rules
        .iter()
        .filter(|r| r.1)
        .filter_map(|&(.., f, rule)| Some((f.source, f.kernel.clone(), Class::of(rule)?)))
        .collect();
    // The lead of a class: the longest launch's rule; within it, the one ncu measured per
    // instruction (its excessive sectors or wavefronts), else the largest estimate.
    rules.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(b.2.total_cmp(&a.2))
            .then(a.3.cmp(&b.3))
    });
    for (_, per_instruction, speedup, index, f, ncu) in rules {
        let scope = scope_of(f);
        // A kernel the process launched that the program does not own (a framework's, measured
        // because it ran beside the program's own) is no cause of the program's.
        if let Some(kernel) = &f.kernel
            && !j.is_own(f.config.as_deref(), kernel)
        {
            continue;
        }
        let rule = ncu.name.as_str();
        let global = ncu.speedup_type == Some(SpeedupType::Global);
        let base = f.kernel.as_ref();
        // Where the kernel stands against the GPU's peaks decides which rules can be its
        // cause (ncu's own 60% mark): too few resident warps only cost a latency-bound kernel
        // (for which ncu's occupancy estimate, "local" or not, is the kernel's time), and an
        // access pattern moving excess bytes costs little in a compute-bound one. Its memory
        // and compute throughput, in percent of the GPU's peak (ncu's Speed Of Light):
        let sol = metric(ctx, scope, base, "Memory Throughput")
            .zip(metric(ctx, scope, base, "Compute (SM) Throughput"));
        let latency = sol
            .filter(|&(memory, compute)| memory < LATENCY_BOUND_PCT && compute < LATENCY_BOUND_PCT);
        let compute_bound =
            sol.is_some_and(|(memory, compute)| compute >= LATENCY_BOUND_PCT && compute > memory);
        let shadowed = |class: &Class| {
            !per_instruction
                && measured
                    .iter()
                    .any(|(log, k, c)| *log == f.source && k.as_ref() == base && c == class)
        };
        let counts = |class: &Class| match class {
            Class::Occupancy => latency.is_some() || (global && sol.is_none()),
            // Shared-memory replays lengthen every dependent access; excess global sectors
            // cost time where memory bandwidth is what the kernel waits on.
            Class::BankConflicts => global && !compute_bound && !shadowed(class),
            // Excess sectors where the source page shows them: ncu's cache-pattern rule alone
            // estimates large gains for a store of one word per block (cuda-samples'
            // reductions: "4.0 of 32 bytes", 66%) that moves no traffic to speak of.
            Class::Uncoalesced => {
                global
                    && !compute_bound
                    && !shadowed(class)
                    && (per_instruction || excess_shown(ctx, scope, base))
            }
            Class::FewBlocks | Class::LocalMemory => global,
        };
        let Some(class) = Class::of(ncu).filter(|c| counts(c) && speedup >= MIN_SPEEDUP) else {
            // ncu's other suggestions with an estimate: listed, collapsed, under one note.
            if ncu.rule_type == "OPT" && speedup > 0.0 {
                let local = ncu.speedup_type == Some(SpeedupType::Local);
                minor.push((index, f, speedup, rule, local));
            }
            continue;
        };
        let stack = kernel_stack(ctx, f.config.as_deref(), f.kernel.as_deref());
        // Stalls on local and global memory say local memory only where ptxas gave a stack.
        if class == Class::LocalMemory && stack.is_none() {
            continue;
        }
        // The strongest rule of a class makes the cause; the others are its evidence.
        if let Some(d) = out.iter_mut().find(|d| {
            d.key == class.row().0
                && d.kernel.as_deref() == f.kernel.as_deref()
                && d.config == f.config
        }) {
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(index);
            continue;
        }
        out.push(cause(ctx, (index, f, ncu), class, speedup, sol, latency, stack));
    }
    no_tensor_cores(ctx, &mut out);
    against_the_limit(ctx, &mut out);
    against_baseline(ctx, &mut out);
    minor_suggestions(ctx, &minor, &mut out);
    out
}

/// The draft of a cause: the lead rule's finding (`index`, with its ncu rule), its class, ncu's
/// estimate, the kernel's memory and compute throughput (`sol`, and again as `latency` where
/// the kernel is latency-bound) and ptxas's stack frame for it.
fn cause(
    ctx: &Ctx,
    (index, f, ncu): (usize, &FindingRef, &ProfilerRule),
    class: Class,
    speedup: f64,
    sol: Option<(f64, f64)>,
    latency: Option<(f64, f64)>,
    stack: Option<u64>,
) -> Draft {
    let scope = scope_of(f);
    let kernel = f.kernel.as_ref();
    let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, Message::new());
    d.config = f.config.clone();
    d.kernel = kernel.map(KernelId::to_string);
    let (key, stands_on) = class.row();
    d.key = key.to_string();
    d.stands_on = stands_on.to_vec();
    // An occupancy cause takes over `occupancy-limit`'s note for its kernel.
    d.absorbs = class == Class::Occupancy;
    d.explains.push(index);
    d.evidence.push(ctx.finding_evidence(f));
    let lines = source_lines(ctx, scope, kernel);
    let hot = class.hottest(&lines);
    d.location = hot.map(|l| ctx.tool_place(&l.file, l.line, f.config.as_deref()));
    // Weighed by the kernel's share of the profiled GPU time: a cause in a kernel that is a
    // small part of the program is a note, however large its own estimate.
    let (short_launch, share) = weigh(ctx, &mut d, scope, kernel, Some(speedup));
    // Confident with the line that holds the cost, and with a large estimate (or a stack frame
    // ptxas gave).
    let large = speedup >= 50.0 || class == Class::LocalMemory;
    d.confidence = Confidence::from_signals(1 + usize::from(hot.is_some()) + usize::from(large));
    // How far from the GPU's peak the kernel runs: its throughput, in ncu's own terms.
    let dram = metric(ctx, scope, kernel, "DRAM Throughput");
    let peaks = sol.zip(dram).filter(|_| latency.is_none());
    if let Some(((memory, compute), _)) = peaks {
        let figures = &mut d.figures;
        figures.insert("memory_throughput_pct".into(), json!(memory));
        figures.insert("compute_throughput_pct".into(), json!(compute));
    }
    describe(ctx, &mut d, class, (f, ncu), hot, &lines, stack);
    let weight = Weight {
        kernel,
        short_launch,
        speedup,
        latency: latency.filter(|_| class == Class::Occupancy),
        peaks: peaks.map(|((memory, compute), dram)| (memory, dram, compute)),
        share,
    };
    word_weight(&mut d, &weight);
    d
}

/// Weighs a cause of `kernel` in `scope`: a launch under [`MIN_DURATION_US`] is a note; with an
/// estimate (percent of the kernel's time), the launch's duration, the kernel's share of the
/// profiled GPU time and the program's gain are its figures, and a gain under
/// [`MIN_PROGRAM_GAIN`] is a note. Returns the duration where the launch is too short to judge,
/// and the share and gain where the kernel is not all of the GPU time.
fn weigh(
    ctx: &Ctx,
    d: &mut Draft,
    scope: Scope,
    kernel: Option<&KernelId>,
    estimate: Option<f64>,
) -> (Option<f64>, Option<(f64, f64)>) {
    let duration = duration_us(ctx, scope, kernel);
    let short_launch = duration.filter(|&us| us < MIN_DURATION_US);
    if short_launch.is_some() {
        d.level = Level::Note;
    }
    let Some(estimate) = estimate else {
        return (short_launch, None);
    };
    Figure::EstimatedSpeedup.set(&mut d.figures, json!(estimate));
    if let Some(us) = duration {
        d.figures.insert("duration_us".into(), json!(us));
    }
    let Some(share) = time_share(ctx, scope, kernel) else {
        return (short_launch, None);
    };
    let gain = estimate * share;
    d.figures.insert("time_share".into(), json!(share));
    Figure::ProgramGain.set(&mut d.figures, json!(gain));
    if gain < MIN_PROGRAM_GAIN {
        d.level = Level::Note;
    }
    (short_launch, (share < 0.999).then_some((share, gain)))
}

/// How far each cause's kernel is from what the GPU can do: its floating-point rate against the
/// peak of its precision and the roofline at its intensity, or its DRAM bandwidth.
fn against_the_limit(ctx: &Ctx, drafts: &mut [Draft]) {
    for d in drafts.iter_mut() {
        let Some(kernel) = d.kernel.as_deref().map(KernelId::of) else {
            continue;
        };
        let Some(p) = crate::roofline::of_kernel(ctx.joined, d.config.as_deref(), &kernel) else {
            continue;
        };
        let figures = &mut d.figures;
        figures.insert("of_peak".into(), rounded(p.of_peak, 1000.0));
        figures.insert("attainable".into(), rounded(p.attainable, 1000.0));
        // The tensor-core cause says its FP32 rate against both peaks already.
        if figures.contains_key("tensor_peak_gflops") {
            continue;
        }
        let said = msg!(" Against the limit: {} runs {}.", code(kernel.as_str()), p.phrase());
        d.explanation.append(said);
    }
}

/// An occupancy cause takes in the `occupancy-limit` rule's note for the same kernel and
/// config (the fold pairs them, see [`super::Rule::absorbs`]): the note's figures from ptxas
/// (registers, shared memory, blocks each allows) and its budget for one more block join the
/// cause.
pub fn absorb_occupancy_limit(cause: &mut Draft, note: &Draft) {
    // ptxas's figures give the register budget for one more block, which the cause's test
    // sets.
    if let (Some(h), Some(from)) = (cause.hypothesis.as_mut(), note.hypothesis.as_ref())
        && h.kind == from.kind
        && h.value.is_none()
    {
        h.value = from.value;
    }
    for key in ["registers", "registers_for_next_block", "blocks_per_sm"] {
        if let Some(v) = note.figures.get(key) {
            cause.figures.entry(key.into()).or_insert_with(|| v.clone());
        }
    }
    cause.notes.push(msg!(
        "From ptxas's figures: {}",
        note.explanation.uncapitalised()
    ));
    // The note hedges ("if latency hiding is short"); the cause has shown it is.
    if let Some(budget) = &note.next_block {
        cause.help.push(budget.capitalised());
    }
    cause.evidence.extend(note.evidence.iter().cloned());
}

/// One of ncu's suggestions that names no cause of its own: its finding (index and finding),
/// estimated speedup, rule, and whether the estimate is for the rule's own section only (ncu's
/// "local").
type Suggestion<'r> = (usize, &'r FindingRef<'r>, f64, &'r str, bool);

/// ncu's suggestions that name no cause of their own (or estimate under 20%): one note per
/// kernel and config listing them with their estimates, for the collapsed part of the report.
fn minor_suggestions(ctx: &Ctx, minor: &[Suggestion], out: &mut Vec<Draft>) {
    // (config, kernel) -> its suggestions.
    let mut groups: std::collections::BTreeMap<(Option<String>, KernelId), Vec<Suggestion>> =
        std::collections::BTreeMap::new();
    for s in minor {
        let Some(kernel) = s.1.kernel.clone() else {
            continue;
        };
        let group = groups.entry((s.1.config.clone(), kernel)).or_default();
        if !group.iter().any(|g| g.3 == s.3) {
            group.push(*s);
        }
    }
    for ((config, kernel), mut rules) in groups {
        rules.sort_by(|a, b| b.2.total_cmp(&a.2));
        let mut d = Draft::new(RuleId::SlowKernel, Level::Note, Message::new());
        // One note per config: the estimates differ from one build to the next.
        d.key = format!("minor|{}", config.as_deref().unwrap_or(""));
        d.config = config;
        d.kernel = Some(kernel.to_string());
        word_minor(&mut d, &kernel, &rules);
        for (index, f, ..) in &rules {
            d.explains.push(*index);
            if d.evidence.len() < 4 {
                d.evidence.push(ctx.finding_evidence(f));
            }
        }
        out.push(d);
    }
}

/// The title and explanation of a kernel's other suggestions from ncu: each rule's name, its
/// estimated speedup and whether that is for its own section only.
fn word_minor(d: &mut Draft, kernel: &KernelId, listed: &[Suggestion]) {
    d.title = msg!(
        "Other suggestions from Nsight Compute for {}",
        code(kernel.as_str())
    );
    let listed = listed
        .iter()
        .map(|(_, _, speedup, rule, local)| {
            msg!(
                "{} ({}%{})",
                code(*rule),
                figure(format!("{speedup:.0}")),
                if *local { " of its section" } else { "" }
            )
        })
        .collect();
    d.explanation = msg!(
        "ncu's rules that name no cause of their own (under-used pipes, issue slots, stall \
         cycles, L2 compression, ...), estimate less than {}% of the kernel's time, or estimate \
         only for their own section where the kernel is not latency-bound, with their estimated \
         speedups: {}. Each is a hint about how the kernel runs, not a cause.",
        figure(format!("{MIN_SPEEDUP:.0}")),
        Message::words(listed)
    );
}

/// A kernel's share of the GPU time of every profiled launch in its profiling run (each
/// launch's Duration), when there is more than its own.
fn time_share(ctx: &Ctx, scope: Scope, kernel: Option<&KernelId>) -> Option<f64> {
    let kernel = kernel?;
    let mut total = 0.0;
    let mut own = 0.0;
    let mut seen = std::collections::BTreeSet::new();
    for m in &ctx.joined.metrics {
        // One Duration per launch (ncu's launch id), once even if two logs repeat it.
        if m.metric.name != "Duration"
            || !scope.holds(m)
            || !seen.insert((m.source, m.metric.launch, m.metric.kernel.clone()))
        {
            continue;
        }
        let us = microseconds(m.metric)?;
        total += us;
        if m.kernel == *kernel {
            own += us;
        }
    }
    (total > 0.0 && own > 0.0).then(|| own / total)
}

/// The profile log with ncu's metrics written by the same profiling run as a source page (the
/// details page exported beside it).
fn details_beside(ctx: &Ctx, page: usize) -> Option<usize> {
    let j = ctx.joined;
    let dir = |i: usize| j.source(i).map(|s| std::path::Path::new(s.path).parent());
    let page_dir = dir(page)?;
    j.metrics
        .iter()
        .find(|m| dir(m.source) == Some(page_dir))
        .map(|m| m.source)
}

/// Below this share of the GPU's peak memory and compute throughput ncu calls a kernel
/// latency-bound (its `SOLBottleneck` rule).
const LATENCY_BOUND_PCT: f64 = 60.0;

/// ptxas's stack frame for a kernel, when it has one.
fn kernel_stack(ctx: &Ctx, config: Option<&str>, kernel: Option<&str>) -> Option<u64> {
    ctx.joined
        .kernels
        .iter()
        .filter(|k| k.config.as_deref() == config || config.is_none())
        .filter(|k| kernel.is_none_or(|n| k.name == n))
        .filter_map(|k| k.resources.and_then(|r| r.stack_frame_bytes))
        .find(|&b| b > 0)
}

#[cfg(test)]
mod rule_tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, only, parsers_fixture, says};

    /// The slow-kernels example's `bank` program on the H100: ncu's details page
    /// (`ncu-csv/slow_bank_details.log`) with its shared-memory bank-conflict rule, and its
    /// source page (`ncu-source/slow_bank_source.log`).
    #[test]
    fn fires_on_shared_memory_bank_conflicts_at_the_line_that_holds_them() {
        let drafts = Case::new()
            .profile(
                "bank",
                parsers_fixture!("ncu-csv/slow_bank_details.log"),
                parsers_fixture!("ncu-source/slow_bank_source.log"),
            )
            .drafts(RuleId::SlowKernel);
        let d = only(drafts.into_iter().filter(|d| d.level == Level::Warning).collect());
        assert_eq!(d.rule, RuleId::SlowKernel);
        assert_eq!(d.kernel.as_deref(), Some("transpose"));
        says(&d.title, "bank conflicts");
        assert!(
            d.location.as_ref().is_some_and(|l| l.line.is_some()),
            "{:?}",
            d.location
        );
    }

    /// The same example's `none` program (`ncu-csv/slow_none_details.log`,
    /// `ncu-source/slow_none_source.log`): ncu's rules estimate too little to name a cause.
    #[test]
    fn names_no_cause_where_ncus_estimates_are_small() {
        let drafts = Case::new()
            .profile(
                "none",
                parsers_fixture!("ncu-csv/slow_none_details.log"),
                parsers_fixture!("ncu-source/slow_none_source.log"),
            )
            .drafts(RuleId::SlowKernel);
        assert!(drafts.iter().all(|d| d.level == Level::Note), "{drafts:#?}");
    }
}
