//! `slow-kernel`: why a kernel is slow, from Nsight Compute's own rules and its source page.
//! ncu's rules (OPT with an estimated speedup over the whole kernel, "global") name a cause;
//! the source page (counters per source line) names where the cost sits: the line with the most
//! excessive shared wavefronts for bank conflicts, the most excessive global sectors for
//! uncoalesced access, the most warp-stall samples otherwise. The generic rules that fire on
//! fast kernels too (under-utilised pipes, issue slots, stall CPI, L2 compression) never make a
//! cause by themselves, and a kernel of a few microseconds is too small to call slow.

use parsers::{OccupancyLimiter, ProfilerRule, SourceLine, SpeedupType};

use crate::hypothesis::{ExperimentKind, Hypothesis};
use serde_json::json;

use crate::join::FindingRef;

use super::profile::{Scope, duration_us, metric, microseconds, source_lines};
use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Figure, Level, SourceLocation};
use crate::kernel_id::KernelId;
use crate::text::{md_code, relative_path};

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
    let (moved, excess) = lines.iter().fold((0u64, 0u64), |(m, e), l| {
        (m + l.global_sectors, e + l.global_excessive)
    });
    lines.is_empty() || moved == 0 || excess.saturating_mul(10) >= moved
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

    fn key(self) -> &'static str {
        match self {
            Class::BankConflicts => "bank-conflicts",
            Class::Uncoalesced => "uncoalesced",
            Class::FewBlocks => "few-blocks",
            Class::Occupancy => "occupancy",
            Class::LocalMemory => "local-memory",
        }
    }

    /// The source line that holds this cause's cost.
    fn hottest<'l>(self, lines: &[&'l SourceLine]) -> Option<&'l SourceLine> {
        let by = |f: fn(&SourceLine) -> u64| {
            lines
                .iter()
                .copied()
                .filter(|l| f(l) > 0)
                .max_by_key(|l| f(l))
        };
        match self {
            Class::BankConflicts => by(|l| l.shared_excessive),
            Class::Uncoalesced => by(|l| l.global_excessive),
            Class::FewBlocks | Class::Occupancy | Class::LocalMemory => by(|l| l.stall_samples),
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
    // ncu's other suggestions: (finding, estimated speedup, rule).
    let mut minor: Vec<(usize, f64, String)> = Vec::new();
    // (finding, its launch's duration, whether ncu measured it per instruction, its estimate)
    let mut rules: Vec<(usize, f64, bool, f64)> = j
        .findings
        .iter()
        .enumerate()
        .filter_map(|(index, f)| {
            let rule = profiler_rule(f)?;
            let us = duration_us(ctx, scope_of(f), f.kernel.as_ref());
            Some((
                index,
                us.unwrap_or(0.0),
                MEASURED_RULES.contains(&rule.name.as_str()),
                rule.estimated_speedup.unwrap_or(0.0),
            ))
        })
        .collect();
    // Where ncu measured an access pattern per instruction, its rule speaks for the class in
    // that profiling run: (log, kernel, class) of each such rule.
    let measured: Vec<(usize, Option<KernelId>, Class)> = rules
        .iter()
        .filter(|r| r.2)
        .filter_map(|r| {
            let f = j.findings.get(r.0)?;
            let class = Class::of(profiler_rule(f)?)?;
            Some((f.source, f.kernel.clone(), class))
        })
        .collect();
    // The lead of a class: the longest launch's rule; within it, the one ncu measured per
    // instruction (its excessive sectors or wavefronts), else the largest estimate.
    rules.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(b.2.cmp(&a.2))
            .then(b.3.total_cmp(&a.3))
            .then(a.0.cmp(&b.0))
    });
    for (index, ..) in rules {
        let Some((f, ncu)) = j
            .findings
            .get(index)
            .and_then(|f| Some((f, profiler_rule(f)?)))
        else {
            continue;
        };
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
        let speedup = ncu.estimated_speedup.unwrap_or(0.0);
        let class = Class::of(ncu);
        let base = f.kernel.clone();
        // Where the kernel stands against the GPU's peaks decides which rules can be its
        // cause (ncu's own 60% mark): too few resident warps only cost a latency-bound kernel
        // (for which ncu's occupancy estimate, "local" or not, is the kernel's time), and an
        // access pattern moving excess bytes costs little in a compute-bound one.
        let sol = throughput(ctx, scope, base.as_ref());
        let latency = sol
            .filter(|&(memory, compute)| memory < LATENCY_BOUND_PCT && compute < LATENCY_BOUND_PCT);
        let compute_bound =
            sol.is_some_and(|(memory, compute)| compute >= LATENCY_BOUND_PCT && compute > memory);
        let shadowed = |class: &Class| {
            !MEASURED_RULES.contains(&rule)
                && measured
                    .iter()
                    .any(|(log, k, c)| *log == f.source && *k == base && c == class)
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
                    && (MEASURED_RULES.contains(&rule) || excess_shown(ctx, scope, base.as_ref()))
            }
            Class::FewBlocks | Class::LocalMemory => global,
        };
        let Some(class) = class.filter(|c| counts(c) && speedup >= MIN_SPEEDUP) else {
            // ncu's other suggestions with an estimate: listed, collapsed, under one note.
            if ncu.rule_type == "OPT" && speedup > 0.0 {
                minor.push((index, speedup, rule.to_string()));
            }
            continue;
        };
        let stack = kernel_stack(ctx, f.config.as_deref(), base.as_deref());
        // Stalls on local and global memory say local memory only where ptxas gave a stack.
        if class == Class::LocalMemory && stack.is_none() {
            continue;
        }
        let kernel = base;
        // The strongest rule of a class makes the cause; the others are its evidence.
        if let Some(d) = out.iter_mut().find(|d| {
            d.key == class.key() && d.kernel.as_deref() == kernel.as_deref() && d.config == f.config
        }) {
            d.evidence.push(ctx.finding_evidence(f));
            d.explains.push(index);
            continue;
        }
        let duration = duration_us(ctx, scope, kernel.as_ref());
        let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, String::new());
        d.config = f.config.clone();
        d.kernel = kernel.clone().map(String::from);
        d.key = class.key().to_string();
        // An occupancy cause takes over `occupancy-limit`'s note for its kernel.
        d.absorbs = class == Class::Occupancy;
        d.explains.push(index);
        d.evidence.push(ctx.finding_evidence(f));
        if let Some(us) = duration {
            d.figures.insert("duration_us".into(), json!(us));
        }
        let lines = source_lines(ctx, scope, kernel.as_ref());
        let hot = class.hottest(&lines);
        if let Some(line) = hot {
            d.location = Some(ctx.tool_place(&line.file, line.line, f.config.as_deref()));
        }
        describe(ctx, &mut d, class, (f, ncu), hot, &lines, scope);
        let named = kernel
            .as_deref()
            .map(md_code)
            .unwrap_or_else(|| "the kernel".into());
        Figure::EstimatedSpeedup.set(&mut d.figures, json!(speedup));
        if duration.is_some_and(|us| us < MIN_DURATION_US) {
            d.level = Level::Note;
            d.explanation.push_str(&format!(
                " The profiled launch of {named} took {:.1} µs: too short a launch to judge \
                 its speed, whatever a rule estimates; profile a larger one.",
                duration.unwrap_or_default()
            ));
        }
        d.confidence = match (
            hot.is_some(),
            speedup >= 50.0 || class == Class::LocalMemory,
        ) {
            (true, true) => Confidence::High,
            (true, false) | (false, true) => Confidence::Medium,
            (false, false) => Confidence::Low,
        };
        match latency.filter(|_| class == Class::Occupancy) {
            Some((memory, compute)) => d.explanation.push_str(&format!(
                " {named} is latency-bound: it ran at {memory:.0}% of the GPU's peak memory \
                 throughput and {compute:.0}% of its compute throughput, both under ncu's 60% \
                 mark, so its warps wait rather than any unit being busy, and its speed follows \
                 the warps resident. Nsight Compute estimates up to {speedup:.0}% for the \
                 occupancy it lacks."
            )),
            None => d.explanation.push_str(&format!(
                " Nsight Compute estimates {named} could run up to {speedup:.0}% faster without \
                 it."
            )),
        }
        // How far from the GPU's peak the kernel runs: its throughput, in ncu's own terms.
        let peak = |name: &str| metric(ctx, scope, kernel.as_ref(), name);
        if let (Some(memory), Some(compute), Some(dram), None) = (
            peak("Memory Throughput"),
            peak("Compute (SM) Throughput"),
            peak("DRAM Throughput"),
            latency,
        ) {
            d.figures
                .insert("memory_throughput_pct".into(), json!(memory));
            d.figures
                .insert("compute_throughput_pct".into(), json!(compute));
            d.explanation.push_str(&format!(
                " It ran at {memory:.0}% of the GPU's peak memory throughput (DRAM {dram:.0}%) \
                 and {compute:.0}% of its compute throughput."
            ));
        }
        // Weighed by the kernel's share of the profiled GPU time: a cause in a kernel that is a
        // small part of the program is a note, however large its own estimate.
        if let Some(share) = time_share(ctx, scope, kernel.as_ref()) {
            let gain = speedup * share;
            d.figures.insert("time_share".into(), json!(share));
            Figure::ProgramGain.set(&mut d.figures, json!(gain));
            if share < 0.999 {
                d.explanation.push_str(&format!(
                    " {named} takes {:.0}% of the GPU time of the profiled launches, so the \
                     program could gain up to {gain:.0}%.",
                    share * 100.0
                ));
            }
            if gain < MIN_PROGRAM_GAIN && d.level == Level::Warning {
                d.level = Level::Note;
            }
        }
        out.push(d);
    }
    no_tensor_cores(ctx, &mut out);
    super::tensor_path::run(ctx, &mut out);
    against_the_limit(ctx, &mut out);
    against_baseline(ctx, &mut out);
    minor_suggestions(ctx, &minor, &mut out);
    out
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
        d.figures.insert(
            "of_peak".into(),
            json!((p.of_peak * 1000.0).round() / 1000.0),
        );
        d.figures.insert(
            "attainable".into(),
            json!((p.attainable * 1000.0).round() / 1000.0),
        );
        // The tensor-core cause says its FP32 rate against both peaks already.
        if d.figures.contains_key("tensor_peak_gflops") {
            continue;
        }
        d.explanation.push_str(&format!(
            " Against the limit: {} runs {}.",
            md_code(&kernel),
            p.phrase()
        ));
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
    cause.notes.push(format!(
        "From ptxas's figures: {}",
        crate::text::lowercase_first(&note.explanation)
    ));
    // The note hedges ("if latency hiding is short"); the cause has shown it is.
    if let Some(budget) = note.fix.strip_prefix("If latency hiding is short: ") {
        cause.help.push(crate::text::uppercase_first(budget));
    }
    cause.evidence.extend(note.evidence.iter().cloned());
}

/// ncu's suggestions that name no cause of their own (or estimate under 20%): one note per
/// kernel and config listing them with their estimates, for the collapsed part of the report.
fn minor_suggestions(ctx: &Ctx, minor: &[(usize, f64, String)], out: &mut Vec<Draft>) {
    let j = ctx.joined;
    // (config, kernel) -> its suggestions: (finding, estimated speedup, rule).
    type Suggestions<'r> = Vec<(usize, f64, &'r str)>;
    let mut groups: std::collections::BTreeMap<(Option<String>, KernelId), Suggestions> =
        std::collections::BTreeMap::new();
    for (index, speedup, rule) in minor {
        let Some(f) = j.findings.get(*index) else {
            continue;
        };
        let Some(kernel) = f.kernel.clone() else {
            continue;
        };
        let group = groups.entry((f.config.clone(), kernel)).or_default();
        if !group.iter().any(|(_, _, r)| r == rule) {
            group.push((*index, *speedup, rule.as_str()));
        }
    }
    for ((config, kernel), mut rules) in groups {
        rules.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut d = Draft::new(
            RuleId::SlowKernel,
            Level::Note,
            format!(
                "Other suggestions from Nsight Compute for {}",
                md_code(&kernel)
            ),
        );
        // One note per config: the estimates differ from one build to the next.
        d.key = format!("minor|{}", config.as_deref().unwrap_or(""));
        d.config = config;
        d.kernel = Some(kernel.to_string());
        // ncu's "local" estimates are for the rule's own section, not the kernel's time.
        let local = |index: usize| {
            j.findings
                .get(index)
                .and_then(profiler_rule)
                .map(|r| r.speedup_type)
                == Some(Some(SpeedupType::Local))
        };
        let listed: Vec<String> = rules
            .iter()
            .map(|(index, speedup, rule)| {
                let scope = if local(*index) { " of its section" } else { "" };
                format!("{} ({speedup:.0}%{scope})", md_code(rule))
            })
            .collect();
        d.explanation = format!(
            "ncu's rules that name no cause of their own (under-used pipes, issue slots, stall \
             cycles, L2 compression, ...), estimate less than {MIN_SPEEDUP:.0}% of the kernel's \
             time, or estimate only for their own section where the kernel is not \
             latency-bound, with their estimated speedups: {}. Each is a hint about how the \
             kernel runs, not a cause.",
            crate::text::join_words(&listed)
        );
        for (index, _, _) in &rules {
            d.explains.push(*index);
            if let Some(f) = j.findings.get(*index)
                && d.evidence.len() < 4
            {
                d.evidence.push(ctx.finding_evidence(f));
            }
        }
        out.push(d);
    }
}

/// What makes a cause matter: the program's own benchmark against its baseline, in the same
/// config, when the run has both. The benchmark furthest behind its baseline is named.
fn against_baseline(ctx: &Ctx, drafts: &mut [Draft]) {
    let timings = crate::timings::timings(ctx.joined);
    let harness = crate::tables::bench_rows(ctx.joined);
    for d in drafts.iter_mut() {
        let slowest = timings
            .rows
            .iter()
            .filter(|r| r.bench.config == d.config)
            .filter_map(|r| Some((r, r.ratio?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((row, ratio)) = slowest {
            d.figures.insert("baseline_ratio".into(), json!(ratio));
            let pace = if ratio > 0.0 && ratio < 1.0 {
                format!(
                    "{}x slower than its baseline",
                    crate::text::sig3(1.0 / ratio)
                )
            } else {
                format!("at {ratio:.2}x its baseline's speed")
            };
            d.explanation.push_str(&format!(
                " The program's own benchmark {} runs {pace} ({} of each).",
                md_code(&row.bench.timing.name),
                row.statistic.unwrap_or("mean")
            ));
        } else if let Some(line) = against_harness_baseline(&harness, d, profiled_case(ctx, d)) {
            d.explanation.push_str(&line);
        }
        // A kernel at least as fast as its baseline is not slow, whatever ncu still sees.
        if d.figures
            .get("baseline_ratio")
            .and_then(|v| v.as_f64())
            .is_some_and(|r| r >= 1.0)
        {
            d.level = Level::Note;
            d.explanation.push_str(
                " It already runs at least as fast as its baseline: what ncu estimates is headroom, \
                 not a slowness.",
            );
        }
    }
    what_the_baseline_does(ctx, drafts);
}

/// Ten times slower than its baseline or more: beside the kernel's largest measured cause,
/// what the baseline's own longest kernel does that this one does not, each where both
/// profiles show it: the tensor cores, on-chip reuse (floating-point operations per byte loaded
/// from global memory, four times as many or more), a grid that fills the GPU.
fn what_the_baseline_does(ctx: &Ctx, drafts: &mut [Draft]) {
    let Some((own, theirs)) = crate::resources::beside_baseline(ctx.joined) else {
        return;
    };
    let Some(best) = theirs.first() else { return };
    let far_behind = |d: &Draft| {
        d.level == Level::Warning
            && d.figures
                .get("baseline_ratio")
                .and_then(|v| v.as_f64())
                .is_some_and(|r| r > 0.0 && r <= 0.1)
    };
    let gain = |d: &Draft| {
        Figure::ProgramGain
            .of(&d.figures)
            .or_else(|| Figure::EstimatedSpeedup.of(&d.figures))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    let Some(top) = (0..drafts.len())
        .filter(|&i| far_behind(&drafts[i]))
        .max_by(|&a, &b| gain(&drafts[a]).total_cmp(&gain(&drafts[b])))
    else {
        return;
    };
    let d = &mut drafts[top];
    let Some(kernel) = d.kernel.as_deref().map(KernelId::of) else {
        return;
    };
    let Some(ours) = own
        .iter()
        .find(|k| KernelId::of(&k.summary.kernel) == kernel)
    else {
        return;
    };
    let named = md_code(&kernel);
    let mut differences: Vec<String> = Vec::new();
    if ours.tensor_instructions == Some(0) && best.tensor_instructions.is_some_and(|n| n > 0) {
        let place = best
            .summary
            .limit
            .as_ref()
            .map(|p| format!(", {}", p.cell()))
            .unwrap_or_default();
        differences.push(format!(
            "it runs on the tensor cores ({} tensor-core instructions executed{place}) where \
             {named} issues none",
            best.tensor_instructions.unwrap_or(0)
        ));
        d.figures.insert(
            "baseline_tensor_instructions".into(),
            json!(best.tensor_instructions),
        );
    }
    if let (Some(o), Some(t)) = (ours.flops_per_load_byte, best.flops_per_load_byte)
        && t >= 4.0 * o
        && t > 0.0
    {
        differences.push(format!(
            "it does {} floating-point operations per byte it loads from global memory, {named} \
             {}: it keeps on chip (shared memory, registers) what {named} loads again",
            crate::text::sig3(t),
            crate::text::sig3(o)
        ));
    }
    if let (Some(og), Some(tg), Some(sms)) = (
        ours.summary.grid_size,
        best.summary.grid_size,
        ours.summary.sm_count,
    ) && og < u64::from(sms)
        && tg >= u64::from(sms)
    {
        differences.push(format!(
            "its grid of {tg} blocks fills the {sms} SMs, where {named} launches {og}"
        ));
    }
    if differences.is_empty() {
        return;
    }
    d.explanation.push_str(&format!(
        " What the baseline does that {named} does not, by its {}: {}.",
        md_code(&best.summary.kernel),
        crate::text::join_words(&differences)
    ));
}

/// The problem the profiling run behind a cause ran: the harness result its unit kept beside
/// ncu's log, when it kept one.
fn profiled_case(ctx: &Ctx, d: &Draft) -> Option<crate::tables::Case> {
    let j = ctx.joined;
    let dir = |i: usize| j.source(i).map(|s| std::path::Path::new(s.path).parent());
    let logs: Vec<_> = d
        .explains
        .iter()
        .filter_map(|&i| j.findings.get(i))
        .filter_map(|f| dir(f.source))
        .collect();
    j.results
        .iter()
        .find(|r| dir(r.source).is_some_and(|d| logs.contains(&d)))
        .map(|r| crate::tables::Case::of(r.result))
}

/// The built-in kernel's benchmark against the baseline's (SDPA) in the same run: the profiled
/// problem when the bench ran it, else the case where the cause's config runs furthest behind
/// the fastest baseline timed the same way.
fn against_harness_baseline(
    rows: &[crate::tables::BenchRow],
    d: &mut Draft,
    profiled: Option<crate::tables::Case>,
) -> Option<String> {
    let config = d.config.as_deref()?;
    let profiled = profiled.filter(|p| {
        rows.iter()
            .any(|r| !r.baseline && r.implementation == config && r.case == *p)
    });
    let (kernel, baseline, ratio) = rows
        .iter()
        .filter(|r| !r.baseline && r.implementation == config && r.p50_us > 0.0)
        .filter(|r| profiled.as_ref().is_none_or(|p| r.case == *p))
        .filter_map(|k| {
            let fastest = rows
                .iter()
                .filter(|b| b.baseline && b.case == k.case && b.timing == k.timing)
                .filter(|b| b.cache == k.cache && b.p50_us > 0.0)
                .min_by(|a, b| a.p50_us.total_cmp(&b.p50_us))?;
            Some((k, fastest, fastest.p50_us / k.p50_us))
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))?;
    d.figures.insert("baseline_ratio".into(), json!(ratio));
    Some(format!(
        " In this run's benchmark, config {} at {} runs at {ratio:.2}x the speed of {} (p50 \
         {:.1} µs against {:.1} µs, timed the same way; below 1 it is slower), at {:.0} TFLOP/s.",
        md_code(config),
        kernel.case.label(),
        md_code(&baseline.implementation),
        kernel.p50_us,
        baseline.p50_us,
        kernel.tflops
    ))
}

/// The least a chain of multiply-adds must run to read as a dot product (a matrix product's
/// inner loop, unrolled), not an element-wise formula.
const MIN_FMA_CHAIN: u32 = 8;

/// Matrix products of half-precision values on the scalar FMA units: the kernel widens halves
/// to float (`HADD2.F32`), accumulates them in a long chain of multiply-adds and executes no
/// tensor-core instruction. ncu has no rule for this and estimates no speedup: it is said, with
/// the kernel's share of the GPU time, and ranked after the causes ncu measured.
fn no_tensor_cores(ctx: &Ctx, out: &mut Vec<Draft>) {
    let j = ctx.joined;
    for (source_index, source) in j.sources.iter().enumerate() {
        for mix in &source.log.instruction_mix {
            let gemm_like = mix.mma == 0
                && mix.fma_chain >= MIN_FMA_CHAIN
                && mix.half_to_float.saturating_mul(2) >= mix.fma
                && mix.fma > 0;
            if !gemm_like {
                continue;
            }
            // The source page's function: a tool string the join does not index.
            let kernel = KernelId::of(&mix.function);
            let config = source.config;
            if !j.is_own(config, &kernel) {
                continue;
            }
            if out.iter().any(|d| {
                d.key == "no-tensor-cores"
                    && d.kernel.as_deref() == Some(kernel.as_str())
                    && d.config.as_deref() == config
            }) {
                continue;
            }
            let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, String::new());
            d.config = config.map(str::to_string);
            d.kernel = Some(kernel.to_string());
            d.key = "no-tensor-cores".to_string();
            d.confidence = Confidence::Medium;
            // This source page's lines.
            let page = Scope {
                config,
                log: Some(source_index),
            };
            let lines = source_lines(ctx, page, Some(&kernel));
            let hot = lines
                .iter()
                .copied()
                .filter(|l| l.instructions > 0)
                // The user's loop, not a header's inlined conversion: a run's input first, then
                // a CUDA or Python source, as `Ctx::user_location` prefers.
                .max_by_key(|l| {
                    let file = relative_path(&l.file, &j.repo_files);
                    let user = if j.repo_files.contains(&file) {
                        2
                    } else {
                        u8::from([".cu", ".cuh", ".py"].iter().any(|x| file.ends_with(x)))
                    };
                    (user, l.instructions)
                });
            if let Some(line) = hot {
                d.location = Some(SourceLocation {
                    file: relative_path(&line.file, &j.repo_files),
                    line: Some(line.line),
                });
            }
            let named = md_code(&kernel);
            d.title = "No tensor cores: half-precision products on scalar FMA units".to_string();
            d.explanation = format!(
                "{named} multiplies half-precision values as floats: its SASS widens halves to \
                 float ({} executed `HADD2.F32`) and accumulates products in chains of up to {} \
                 dependent multiply-adds ({} executed FFMA), the inner loop of a matrix product, \
                 and executes no tensor-core instruction (0 HMMA or HGMMA). On an sm_80 or \
                 sm_90 GPU the tensor cores run half-precision products many times faster than \
                 the FMA units{}.",
                mix.half_to_float,
                mix.fma_chain,
                mix.fma,
                hot.map(|l| format!(
                    "; the loop is at {} ({})",
                    md_code(&format!(
                        "{}:{}",
                        relative_path(&l.file, &j.repo_files),
                        l.line
                    )),
                    md_code(&l.text)
                ))
                .unwrap_or_default()
            );
            d.fix = "Compute the product on tensor cores: tile it through shared memory and use \
                     WMMA (`nvcuda::wmma`), `mma.sync` or, on sm_90, wgmma; or call cuBLAS or \
                     CUTLASS for it."
                .to_string();
            d.evidence.push(ctx.source_evidence(
                Some(source_index),
                config,
                format!(
                    "instruction mix of {named}: {} executed, {} FFMA, {} `HADD2.F32`, 0 MMA, a \
                     chain of {} multiply-adds",
                    mix.executed, mix.fma, mix.half_to_float, mix.fma_chain
                ),
            ));
            // What tensor cores would take over: the conversions and multiply-adds, as a share
            // of the instructions the kernel executes (ncu has no estimate of its own here).
            let replaced =
                (mix.fma + mix.half_to_float) as f64 * 100.0 / mix.executed.max(1) as f64;
            d.explanation.push_str(&format!(
                " Those conversions and multiply-adds are {replaced:.0}% of the instructions \
                 {named} executes; one `mma.sync` (m16n8k16) does the multiply-adds of 64 warp-wide \
                 FFMAs."
            ));
            // The ceiling the tensor cores would give the same products on this device.
            if let Some(p) = crate::roofline::of_kernel(j, config, &kernel)
                && p.limit == crate::roofline::Limit::Fp32
                && let (Some(done), Some(fp32), Some(tensor)) =
                    (p.gflops, p.peak_gflops, p.tensor_peak_gflops)
            {
                d.figures
                    .insert("tensor_peak_gflops".into(), json!(tensor.round()));
                d.explanation.push_str(&format!(
                    " Its FMAs run at {:.0} GFLOP/s, {:.1}% of this GPU's FP32 peak ({:.0} \
                     GFLOP/s); its FP16 tensor peak is {:.0} GFLOP/s, {:.0}x higher, where the \
                     same rate would be {:.1}%.",
                    done,
                    p.of_peak * 100.0,
                    fp32,
                    tensor,
                    tensor / fp32,
                    done * 100.0 / tensor
                ));
            }
            let mut estimate = replaced;
            // The loop's own memory causes (uncoalesced loads, bank conflicts) are how an
            // untiled product reads its operands: the same fix removes them, so they support
            // this cause instead of standing beside it.
            let line = d.location.as_ref().and_then(|l| l.line);
            let (taken, kept): (Vec<Draft>, Vec<Draft>) =
                std::mem::take(out).into_iter().partition(|o| {
                    matches!(o.key.as_str(), "uncoalesced" | "bank-conflicts")
                        && o.kernel == d.kernel
                        && o.config == d.config
                        && o.location.as_ref().is_none_or(|l| l.line == line)
                });
            *out = kept;
            for t in taken {
                let speedup = Figure::EstimatedSpeedup
                    .of(&t.figures)
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0);
                estimate = estimate.max(speedup);
                d.explanation.push_str(&format!(
                    " The same loop reads its operands straight from global memory ({}; Nsight \
                     Compute estimates {speedup:.0}%); tiling the product through shared memory \
                     for the tensor cores removes that too.",
                    crate::text::lowercase_first(&t.title)
                ));
                d.evidence.extend(t.evidence);
                d.explains.extend(t.explains);
            }
            Figure::EstimatedSpeedup.set(&mut d.figures, json!(estimate));
            // The figures of the profiling run this source page came from.
            let scope = Scope {
                config,
                log: details_beside(ctx, source_index),
            };
            let duration = duration_us(ctx, scope, Some(&kernel));
            if let Some(us) = duration {
                d.figures.insert("duration_us".into(), json!(us));
            }
            if let Some(share) = time_share(ctx, scope, Some(&kernel)) {
                let gain = estimate * share;
                d.figures.insert("time_share".into(), json!(share));
                Figure::ProgramGain.set(&mut d.figures, json!(gain));
                if share < 0.999 {
                    d.explanation.push_str(&format!(
                        " {named} takes {:.0}% of the GPU time of the profiled launches.",
                        share * 100.0
                    ));
                }
                if gain < MIN_PROGRAM_GAIN {
                    d.level = Level::Note;
                }
            }
            if duration.is_some_and(|us| us < MIN_DURATION_US) {
                d.level = Level::Note;
            }
            out.push(d);
        }
    }
}

/// A kernel's share of the GPU time of every profiled launch in its profiling run (each
/// launch's Duration), when there is more than its own.
fn time_share(ctx: &Ctx, scope: Scope, kernel: Option<&KernelId>) -> Option<f64> {
    let kernel = kernel?;
    let mut total = 0.0;
    let mut own = 0.0;
    let mut seen = std::collections::BTreeSet::new();
    for m in &ctx.joined.metrics {
        if m.metric.name != "Duration" || !scope.holds(m) {
            continue;
        }
        // One Duration per launch (ncu's launch id), once even if two logs repeat it.
        if !seen.insert((m.source, m.metric.launch, m.metric.kernel.clone())) {
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

/// The title, mechanism and fix of a cause, in words from ncu's numbers.
fn describe(
    ctx: &Ctx,
    d: &mut Draft,
    class: Class,
    (finding, rule): (&FindingRef, &ProfilerRule),
    hot: Option<&SourceLine>,
    lines: &[&SourceLine],
    scope: Scope,
) {
    let config = scope.config;
    // The first figure ncu's rules state for this kernel in this profiling run, the lead
    // rule's first (a class's rules each state some of its figures).
    let kernel = finding.kernel.as_ref();
    let rules = || {
        std::iter::once(rule).chain(
            ctx.joined
                .findings
                .iter()
                .filter(|f| scope.log.is_none_or(|l| f.source == l))
                .filter(|f| f.kernel.as_ref() == kernel)
                .filter_map(profiler_rule),
        )
    };
    // " The cost sits at `file:line` (`text`)<extra>.", or nothing without a source page.
    let at = |extra: String| {
        hot.map(|l| {
            let at = ctx.tool_place(&l.file, l.line, config);
            format!(
                " The cost sits at {} ({}){extra}.",
                md_code(&format!("{}:{}", at.file, at.line.unwrap_or(l.line))),
                md_code(&l.text)
            )
        })
        .unwrap_or_default()
    };
    let share = |part: u64, all: u64| {
        if all == 0 {
            0.0
        } else {
            part as f64 * 100.0 / all as f64
        }
    };
    match class {
        Class::BankConflicts => {
            let way = rules().find_map(|r| r.bank_conflict_ways);
            d.title = match way {
                Some(w) => format!("Shared-memory bank conflicts: {w:.0}-way on average"),
                None => "Shared-memory bank conflicts".to_string(),
            };
            let excessive: u64 = lines.iter().map(|l| l.shared_excessive).sum();
            let total: u64 = lines.iter().map(|l| l.shared_wavefronts).sum();
            d.explanation = format!(
                "The lanes of a warp read shared-memory addresses in the same bank{}, so each \
                 access is replayed once per conflicting lane.{}",
                way.map(|w| format!(" ({w:.1} lanes per bank on average)"))
                    .unwrap_or_default(),
                at(hot
                    .map(|l| format!(
                        ": {:.0}% of the kernel's excessive shared wavefronts ({} of the {} \
                         shared wavefronts there, {} in the kernel)",
                        share(l.shared_excessive, excessive),
                        l.shared_excessive,
                        l.shared_wavefronts,
                        total
                    ))
                    .unwrap_or_default())
            );
            d.fix = "Make a warp's 32 lanes hit 32 banks: pad each row of the shared tile by one \
                     element (`tile[32][33]`), or swizzle the column index (XOR with the row); a \
                     column read of a 32-wide float tile is 32-way otherwise."
                .to_string();
            if let Some((what, calls)) = hot.and_then(|l| wmma_fragment(ctx, l, lines)) {
                d.explanation.push_str(&format!(
                    " That line is the toolkit's WMMA {what}, inlined into the kernel from its \
                     `wmma::{}` calls{}: a fragment moves 16 rows of the shared tile at once, and \
                     with a leading dimension (`ldm`) that is a multiple of 128 bytes every row \
                     starts in the same bank.",
                    if what.starts_with("store") {
                        "store_matrix_sync"
                    } else {
                        "load_matrix_sync"
                    },
                    if calls.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", crate::text::join_words(&calls))
                    }
                ));
                d.fix = "Pad the shared tile's rows by 16 bytes (8 halves, 4 floats): \
                         `__half tile[ROWS][COLS + 8]`, passed as `ldm = COLS + 8`, so the rows \
                         of a fragment start in different banks."
                    .to_string();
            }
        }
        Class::Uncoalesced => {
            // The class's own rules' figures: a local-memory pattern's bytes per sector are
            // another cause's.
            let own = || rules().filter(|r| Class::of(r) == Some(Class::Uncoalesced));
            let used = own().find_map(|r| r.sector_bytes_used);
            let excessive = own().find_map(|r| r.excessive.map(|e| e.percent));
            d.title = match used {
                Some(u) => format!("Uncoalesced global access: {u:.1} of 32 bytes used per sector"),
                None => "Uncoalesced global access".to_string(),
            };
            d.explanation = format!(
                "The lanes of a warp touch addresses far apart, so each memory request moves \
                 many 32-byte sectors of which it uses little{}{}.{}",
                used.map(|u| format!(" ({u:.1} bytes of each 32)"))
                    .unwrap_or_default(),
                excessive
                    .map(|p| format!("; {p}% of the sectors moved are excessive"))
                    .unwrap_or_default(),
                at(hot
                    .map(|l| format!(
                        ": {} excessive sectors of its {}",
                        l.global_excessive, l.global_sectors
                    ))
                    .unwrap_or_default())
            );
            d.fix = "Make consecutive lanes touch consecutive addresses: index with \
                     `threadIdx.x` in the fastest-moving dimension, stage a transposed tile \
                     through shared memory, or change the data layout."
                .to_string();
        }
        Class::FewBlocks => {
            let blocks = rule.grid_blocks;
            let sms = ctx
                .joined
                .run
                .and_then(|r| r.environment.gpus.first())
                .and_then(|g| g.sm_count);
            d.title = match (blocks, sms) {
                (Some(b), Some(s)) => format!("Too few blocks: {b} for {s} SMs"),
                (Some(b), None) => format!("Too few blocks: {b}"),
                _ => "Too few blocks to fill the GPU".to_string(),
            };
            d.explanation = format!(
                "The grid has fewer blocks than the GPU has multiprocessors, so most of them sit \
                 idle for the whole launch.{}",
                at(String::new())
            );
            d.fix = "Launch at least one block per SM, better several (a grid-stride loop over \
                     a grid of 2-8x the SM count), or split the work of one block across many."
                .to_string();
        }
        Class::LocalMemory => {
            let bytes = kernel_stack(ctx, config, d.kernel.as_deref()).unwrap_or(0);
            d.title = format!("Local memory: a {bytes}-byte stack frame per thread");
            d.explanation = format!(
                "ptxas gives the kernel a {bytes}-byte stack frame without spilling registers: an \
                 array indexed at run time lives in local memory, which is device memory behind \
                 the L1 cache, and warps stall on its loads and stores (ncu: {}).{}",
                md_code(&format!("{}: {}", rule.name, rule.headline)),
                at(String::new())
            );
            d.fix = "Keep the array in registers: index it only with compile-time constants \
                     (unroll the loops over it), or move a table every thread shares to shared \
                     memory; the stack frame in ptxas's output should go to 0."
                .to_string();
        }
        Class::Occupancy => {
            let warps = rule.theoretical_warps_per_scheduler;
            let limits = [
                (OccupancyLimiter::SharedMemory, "shared memory"),
                (OccupancyLimiter::Registers, "registers"),
                (OccupancyLimiter::WarpsPerBlock, "the block size"),
                (OccupancyLimiter::BlocksPerSm, "the blocks an SM can hold"),
            ];
            // ncu names the limiters ("limited by the number of blocks that can fit on the SM,
            // and the required amount of shared memory"): those it names that allow the fewest
            // blocks (its Block Limit metrics) bind, else the smallest block limit of all. With
            // small blocks the SM's block count binds, and the shared memory each block
            // reserves ties with it: larger blocks lift both, so the block count alone is named.
            let value = |l: OccupancyLimiter| {
                metric(ctx, scope, finding.kernel.as_ref(), l.block_limit_metric())
            };
            let what = |l: OccupancyLimiter| limits.iter().find(|(m, _)| *m == l).map(|(_, w)| *w);
            let candidates: Vec<(f64, &str)> = if rule.occupancy_limiters.is_empty() {
                limits
                    .iter()
                    .filter_map(|(l, w)| Some((value(*l)?, *w)))
                    .collect()
            } else {
                rule.occupancy_limiters
                    .iter()
                    .filter_map(|l| Some((value(*l)?, what(*l)?)))
                    .collect()
            };
            let fewest = candidates.iter().map(|c| c.0).min_by(f64::total_cmp);
            let mut binding: Vec<&str> = candidates
                .iter()
                .filter(|c| Some(c.0) == fewest)
                .map(|c| c.1)
                .collect();
            if binding.contains(&"the blocks an SM can hold") {
                binding = vec!["the blocks an SM can hold"];
            }
            let names =
                crate::text::join_words(&binding.iter().map(|w| w.to_string()).collect::<Vec<_>>());
            d.title = match fewest {
                Some(blocks) => format!(
                    "Occupancy limited by {names}: {} per SM",
                    crate::text::plural(blocks as u64, "block", "blocks")
                ),
                None => "Low theoretical occupancy".to_string(),
            };
            d.explanation = format!(
                "Too few warps can be resident to hide latency{}{}.{}",
                warps
                    .map(|w| format!(": {w:.1} warps per scheduler of 16"))
                    .unwrap_or_default(),
                fewest
                    .map(|b| format!(
                        ", because {names} {} only {} per SM",
                        if binding.len() > 1 || names == "registers" {
                            "allow"
                        } else {
                            "allows"
                        },
                        crate::text::plural(b as u64, "block", "blocks")
                    ))
                    .unwrap_or_default(),
                at(String::new())
            );
            let fixes: Vec<&str> = binding
                .iter()
                .map(|w| match *w {
                    "shared memory" => {
                        "Use less shared memory per block (a smaller tile, or \
                                        fewer stages), so more blocks fit on an SM."
                    }
                    "registers" => {
                        "Cap registers (`__launch_bounds__`, `-maxrregcount`) or \
                                    restructure to keep fewer values live."
                    }
                    "the blocks an SM can hold" => {
                        "Launch larger blocks: an SM holds at most \
                                                    32 blocks, so small blocks leave most of its \
                                                    warp slots empty; 128 to 256 threads per \
                                                    block lift the limit."
                    }
                    _ => "Launch larger blocks or more of them per SM.",
                })
                .collect();
            d.fix = fixes.join(" ");
            // More resident warps is a prediction, not a measurement: one more run at another
            // register budget, block size or tile tests it.
            let test = if binding.contains(&"registers") {
                Some(ExperimentKind::Registers)
            } else if binding.contains(&"shared memory") {
                Some(ExperimentKind::Tile)
            } else if binding
                .iter()
                .any(|w| matches!(*w, "the block size" | "the blocks an SM can hold"))
            {
                Some(ExperimentKind::BlockSize)
            } else {
                None
            };
            d.hypothesis = test.map(|kind| Hypothesis::new(kind, None));
        }
    }
}

/// When a hot line is the toolkit's WMMA fragment load or store (`__hmma_m16n16k16_ld_b` in
/// `crt/mma.hpp`, inlined): what it moves, and the kernel's own lines that call it, as
/// `file:line` (at most six).
fn wmma_fragment(
    ctx: &Ctx,
    hot: &SourceLine,
    lines: &[&SourceLine],
) -> Option<(&'static str, Vec<String>)> {
    let repo = &ctx.joined.repo_files;
    if repo.contains(&relative_path(&hot.file, repo)) {
        return None;
    }
    let text = &hot.text;
    let what = if !text.contains("__hmma_") {
        return None;
    } else if text.contains("_ld_a") {
        "load of a `matrix_a` fragment"
    } else if text.contains("_ld_b") {
        "load of a `matrix_b` fragment"
    } else if text.contains("_ld_c") {
        "load of an accumulator fragment"
    } else if text.contains("_st_c") {
        "store of an accumulator fragment"
    } else {
        return None;
    };
    let call = if what.starts_with("store") {
        "store_matrix_sync"
    } else {
        "load_matrix_sync"
    };
    let mut calls: Vec<String> = lines
        .iter()
        .filter(|l| l.function == hot.function && l.text.contains(call))
        .map(|l| (relative_path(&l.file, repo), l.line))
        .filter(|(file, _)| repo.contains(file))
        .map(|(file, line)| md_code(&format!("{file}:{line}")))
        .collect();
    calls.sort();
    calls.dedup();
    calls.truncate(6);
    Some((what, calls))
}

/// Below this share of the GPU's peak memory and compute throughput ncu calls a kernel
/// latency-bound (its `SOLBottleneck` rule).
const LATENCY_BOUND_PCT: f64 = 60.0;

/// A kernel's memory and compute throughput, in percent of the GPU's peak (ncu's Speed Of
/// Light).
fn throughput(ctx: &Ctx, scope: Scope, kernel: Option<&KernelId>) -> Option<(f64, f64)> {
    let memory = metric(ctx, scope, kernel, "Memory Throughput")?;
    let compute = metric(ctx, scope, kernel, "Compute (SM) Throughput")?;
    Some((memory, compute))
}

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
    use parsers::Format;

    use crate::rules::RuleId;
    use crate::rules::testing::{Case, parsers_fixture};
    use crate::{diagnosis::Level, run::StageKind};

    /// The slow-kernels example's `bank` program on the H100: ncu's details page
    /// (`ncu-csv/slow_bank_details.log`) with its shared-memory bank-conflict rule, and its
    /// source page (`ncu-source/slow_bank_source.log`).
    #[test]
    fn fires_on_shared_memory_bank_conflicts_at_the_line_that_holds_them() {
        let drafts = Case::new()
            .log_as(
                StageKind::Profile,
                "bank",
                "sm_90",
                Format::NcuCsv,
                parsers_fixture!("ncu-csv/slow_bank_details.log"),
            )
            .also(
                Format::NcuSource,
                parsers_fixture!("ncu-source/slow_bank_source.log"),
            )
            .drafts(RuleId::SlowKernel);
        let causes: Vec<_> = drafts
            .iter()
            .filter(|d| d.level == Level::Warning)
            .collect();
        let [d] = causes.as_slice() else {
            panic!("expected one cause, got {drafts:#?}");
        };
        assert_eq!(d.rule, RuleId::SlowKernel);
        assert_eq!(d.kernel.as_deref(), Some("transpose"));
        assert!(d.title.contains("bank conflicts"), "{}", d.title);
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
            .log_as(
                StageKind::Profile,
                "none",
                "sm_90",
                Format::NcuCsv,
                parsers_fixture!("ncu-csv/slow_none_details.log"),
            )
            .also(
                Format::NcuSource,
                parsers_fixture!("ncu-source/slow_none_source.log"),
            )
            .drafts(RuleId::SlowKernel);
        assert!(drafts.iter().all(|d| d.level == Level::Note), "{drafts:#?}");
    }
}
