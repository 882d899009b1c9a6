//! The program's kernel set beside the baseline's, figure by figure: what separates the two.
//!
//! When the program and its baseline are both profiled, the program's longest kernel and the
//! baseline's longest are compared on the figures that explain time: sectors per global load
//! and store request (coalescing), shared-memory wavefronts per request (bank conflicts),
//! tensor-core instructions, waves of blocks per SM and warps active per SM, global atomics
//! and local-memory bytes per thread, floating-point operations per byte loaded. A cause whose
//! figure the baseline shares is not why the program is slower; a figure far worse than the
//! baseline's is. Counts are per thread launched, so two launches of different sizes still
//! compare; ratios of requests compare as they are.

use serde_json::json;

use crate::diagnosis::{Confidence, Draft, Figure, Level};
use crate::join::Joined;
use crate::kernel_id::KernelId;
pub use crate::measure::Measure;
use crate::message::{Message, code, figure, msg};
use crate::resources::KernelFigures;
use crate::rules::RuleId;

/// One figure of the program's kernel and the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Contrast {
    pub measure: Measure,
    pub ours: f64,
    pub theirs: f64,
}

impl Contrast {
    /// How many times worse the program's figure is than the baseline's (1: the same; below 1:
    /// better; infinite where the baseline's is none and the program's is some, or the other
    /// way for a figure whose lack costs).
    pub fn worse_by(&self) -> f64 {
        let (over, under) = if self.measure.higher_is_worse() {
            (self.ours, self.theirs)
        } else {
            (self.theirs, self.ours)
        };
        match (over > 0.0, under > 0.0) {
            (false, false) => 1.0,
            (false, true) => 0.0,
            (true, false) => f64::INFINITY,
            (true, true) => over / under,
        }
    }

    /// Whether the figure separates the program from the baseline.
    pub fn separates(&self) -> bool {
        self.worse_by() >= self.measure.separates_at()
    }

    /// Whether the baseline's figure is as bad, or nearly: a cause standing on it is shared.
    pub fn shared(&self) -> bool {
        self.worse_by() < 1.5
    }

    /// The two figures as a table shows them, without the unit: "8.0" and "1.0", "46.2%".
    pub fn shown(&self) -> (String, String) {
        let show = |v: f64| match self.measure {
            Measure::WavesPerSm => crate::text::waves(v),
            Measure::Occupancy | Measure::DramThroughput | Measure::L2Throughput => {
                format!("{}%", crate::text::fixed(v, 1))
            }
            _ => value(v),
        };
        (show(self.ours), show(self.theirs))
    }

    /// How the program's figure stands against the baseline's, in words: "8.0x worse; separates
    /// the two", "about the same", "none in the baseline"; throughputs are higher or lower, not
    /// worse, and two under 1% of the peak are both idle.
    pub fn against(&self) -> String {
        let (ours, theirs) = (self.ours, self.theirs);
        let throughput = matches!(
            self.measure,
            Measure::DramThroughput | Measure::L2Throughput
        );
        let worse = self.worse_by();
        let said = if throughput && ours < 1.0 && theirs < 1.0 {
            "both under 1%".to_string()
        } else if ours == 0.0 && theirs > 0.0 {
            "none in the program".to_string()
        } else if theirs == 0.0 && ours > 0.0 {
            "none in the baseline".to_string()
        } else if (1.0 / 1.5..1.5).contains(&worse) {
            "about the same".to_string()
        } else if throughput {
            let r = ours / theirs;
            let (by, way) = if r > 1.0 {
                (r, "higher")
            } else {
                (1.0 / r, "lower")
            };
            format!("{}x {way}", ratio(by))
        } else if worse >= 1.5 {
            format!("{}x worse", ratio(worse))
        } else {
            format!("{}x better", ratio(1.0 / worse))
        };
        if self.measure.names_cause() && self.separates() {
            format!("{said}; separates the two")
        } else {
            said
        }
    }
}

/// A ratio as a table says it: "8.0", "936", "15,888".
fn ratio(r: f64) -> String {
    if r >= 100.0 {
        crate::text::thousands(r.round() as u64)
    } else {
        crate::text::fixed(r, 1)
    }
}

/// The program's kernel beside the baseline's, and their figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    pub kernel: KernelId,
    pub config: Option<String>,
    /// The baseline's kernel, as ncu named it.
    pub baseline_kernel: String,
    /// The two launches' durations (µs), when ncu measured both.
    #[serde(rename = "durations_us")]
    pub durations: Option<(f64, f64)>,
    /// Of the program kernel's threads' memory traffic (global loads and local bytes), the
    /// share that is local memory's.
    #[serde(skip)]
    pub local_share: Option<f64>,
    /// Whether the program kernel's global atomics are a spin-wait: one thread at a time
    /// (under two lanes per atomic instruction) issuing many per block (32 or more).
    #[serde(skip)]
    pub spins: bool,
    pub contrasts: Vec<Contrast>,
}

impl Comparison {
    /// The program's longest profiled kernel beside the baseline's longest, when both were
    /// profiled.
    pub fn of(joined: &Joined) -> Option<Comparison> {
        let (own, theirs) = crate::resources::beside_baseline(joined)?;
        let ours = own.first()?;
        // The baseline's kernel of the same name (another build of the same function), else
        // its longest.
        let best = theirs
            .iter()
            .find(|k| KernelId::of(&k.summary.kernel) == KernelId::of(&ours.summary.kernel))
            .or(theirs.first())?;
        Some(Comparison {
            kernel: KernelId::of(&ours.summary.kernel),
            config: ours.summary.config.clone(),
            baseline_kernel: best.summary.kernel.clone(),
            durations: ours.summary.duration_us.zip(best.summary.duration_us),
            local_share: ours.mix.as_ref().and_then(|m| m.local_share()),
            spins: ours.mix.as_ref().is_some_and(|m| {
                let (n, lanes) = (m.memory.global_atomics, m.memory.global_atomic_lanes);
                let blocks = ours.summary.grid_size.unwrap_or(0);
                n > 0 && lanes < 2 * n && blocks > 0 && n >= 32 * blocks
            }),
            contrasts: contrasts(ours, best, problem_elements(joined)),
        })
    }

    pub fn get(&self, measure: Measure) -> Option<&Contrast> {
        self.contrasts.iter().find(|c| c.measure == measure)
    }
}

/// The problem's size in elements, where the profile stage gives it (`elements:`): the same
/// for the program and its baseline, which run the same problem.
fn problem_elements(joined: &Joined) -> Option<u64> {
    joined
        .stages()
        .iter()
        .filter(|s| s.kind == crate::run::StageKind::Profile)
        .find_map(|s| s.unit.elements)
        .filter(|&n| n > 0)
}

/// Every figure both kernels' profiles hold; per element of the problem, where its size is
/// known.
pub fn contrasts(
    ours: &KernelFigures,
    theirs: &KernelFigures,
    elements: Option<u64>,
) -> Vec<Contrast> {
    let threads = |k: &KernelFigures| {
        let n = k.summary.grid_size? * u64::from(k.summary.block_size?);
        (n > 0).then_some(n as f64)
    };
    let per_thread = |k: &KernelFigures, f: fn(&parsers::MemoryMix) -> u64| {
        Some(f(&k.mix.as_ref()?.memory) as f64 / threads(k)?)
    };
    let memory = |k: &KernelFigures| k.mix.as_ref().map(|m| m.memory);
    let per_element = |k: &KernelFigures| Some(k.mix.as_ref()?.executed as f64 / elements? as f64);
    let pairs: [(Measure, Option<f64>, Option<f64>); 14] = [
        (
            Measure::LoadSectors,
            memory(ours).and_then(|m| m.load_sectors_per_ideal()),
            memory(theirs).and_then(|m| m.load_sectors_per_ideal()),
        ),
        (
            Measure::StoreSectors,
            memory(ours).and_then(|m| m.store_sectors_per_ideal()),
            memory(theirs).and_then(|m| m.store_sectors_per_ideal()),
        ),
        (
            Measure::SharedWavefronts,
            memory(ours).and_then(|m| m.shared_wavefronts_per_ideal()),
            memory(theirs).and_then(|m| m.shared_wavefronts_per_ideal()),
        ),
        (
            Measure::TensorInstructions,
            ours.tensor_instructions.map(|n| n as f64),
            theirs.tensor_instructions.map(|n| n as f64),
        ),
        (Measure::WavesPerSm, ours.waves_per_sm, theirs.waves_per_sm),
        (
            Measure::WarpsPerSm,
            ours.active_warps_per_sm,
            theirs.active_warps_per_sm,
        ),
        (
            Measure::Atomics,
            per_thread(ours, |m| m.global_atomic_lanes),
            per_thread(theirs, |m| m.global_atomic_lanes),
        ),
        (
            Measure::LocalBytes,
            per_thread(ours, |m| m.local_bytes),
            per_thread(theirs, |m| m.local_bytes),
        ),
        (
            Measure::Reuse,
            ours.flops_per_load_byte,
            theirs.flops_per_load_byte,
        ),
        (
            Measure::Occupancy,
            ours.summary.achieved_occupancy_pct,
            theirs.summary.achieved_occupancy_pct,
        ),
        (
            Measure::DramThroughput,
            ours.summary.dram_throughput_pct,
            theirs.summary.dram_throughput_pct,
        ),
        (
            Measure::L2Throughput,
            ours.l2_throughput_pct,
            theirs.l2_throughput_pct,
        ),
        (
            Measure::Instructions,
            ours.mix.as_ref().map(|m| m.executed as f64),
            theirs.mix.as_ref().map(|m| m.executed as f64),
        ),
        (
            Measure::InstructionsPerElement,
            per_element(ours),
            per_element(theirs),
        ),
    ];
    pairs
        .into_iter()
        .filter_map(|(measure, ours, theirs)| {
            Some(Contrast {
                measure,
                ours: ours?,
                theirs: theirs?,
            })
        })
        .collect()
}

/// The comparison's part in drafting, after every rule ran: each cause of the compared kernel
/// that stands on a figure the baseline shares becomes a note that says so; each that stands
/// on a figure separating the two says both figures and is costed by the comparison when its
/// rule gave it no cost; and each separating figure no cause names becomes a cause of its own,
/// at the user's line that holds it, costed by what the profile measured there.
/// Returns the causes it added. Before the comparison, each cause its rule gave no cost is
/// costed by its own profile where it can be ([`cost_alone`]).
pub fn weigh(ctx: &crate::rules::Ctx, drafts: &mut [Draft]) -> Vec<Draft> {
    for d in drafts.iter_mut() {
        if Figure::EstimatedSpeedup.of(&d.figures).is_none() {
            set_cost(d, cost_alone(ctx, d));
        }
    }
    let mut added = Vec::new();
    let Some(cmp) = Comparison::of(ctx.joined) else {
        return added;
    };
    // Only a kernel slower than the baseline's has something that separates it.
    if !cmp.durations.is_some_and(|(ours, theirs)| ours > theirs) {
        return added;
    }
    let lines = kernel_lines(ctx.joined, &cmp);
    let of_kernel = |d: &Draft| {
        d.config == cmp.config
            && d.kernel
                .as_deref()
                .is_some_and(|k| crate::rules::draft_kernel_is(k, &cmp.kernel))
    };
    let mut named: Vec<Measure> = Vec::new();
    for d in drafts.iter_mut().filter(|d| of_kernel(d)) {
        let rows: Vec<&Contrast> = d.stands_on.iter().filter_map(|m| cmp.get(*m)).collect();
        if rows.is_empty() {
            continue;
        }
        if rows.iter().all(|c| c.shared()) {
            if d.level == Level::Warning {
                d.level = Level::Note;
            }
            d.explanation.append(msg!(
                " The baseline's {} shares it ({}), so it is not what makes {} slower than the \
                 baseline.",
                code(KernelId::of(&cmp.baseline_kernel)),
                Message::words(rows.iter().map(|c| both(c)).collect()),
                code(cmp.kernel.as_str())
            ));
            continue;
        }
        let apart: Vec<&Contrast> = rows.iter().copied().filter(|c| c.separates()).collect();
        if let Some(top) = apart.first() {
            named.extend(apart.iter().map(|c| c.measure));
            d.explanation.append(msg!(
                " Beside the baseline's {}: {}.",
                code(KernelId::of(&cmp.baseline_kernel)),
                Message::words(apart.iter().map(|c| both(c)).collect())
            ));
            let pct = cost(ctx, top, &cmp, &lines);
            if Figure::EstimatedSpeedup.of(&d.figures).is_none() {
                set_cost(d, pct);
            }
            // A note its rule weighed down stands as a cause where the comparison measured
            // that it costs time; a suggestion no run tested stays a note.
            let untested = d.hypothesis.as_ref().is_some_and(|h| h.untested());
            if d.level == Level::Note && !untested && pct.is_some_and(|p| p >= MIN_COST) {
                set_cost(d, pct);
                d.level = Level::Warning;
            }
        }
    }
    for c in cmp
        .contrasts
        .iter()
        .filter(|c| c.separates() && c.measure.names_cause())
    {
        if named.contains(&c.measure) {
            continue;
        }
        if let Some(d) = cause(ctx, &cmp, c, &lines) {
            named.push(c.measure);
            added.push(d);
        }
    }
    added
}

/// The least a figure must cost (percent of its kernel's time) to be a cause rather than a
/// note.
const MIN_COST: f64 = 10.0;

impl Measure {
    /// What the figure is called in a table's row.
    pub fn label(self) -> &'static str {
        match self {
            Measure::LoadSectors => "Global load sectors per ideal sector",
            Measure::StoreSectors => "Global store sectors per ideal sector",
            Measure::SharedWavefronts => "Shared-memory wavefronts per ideal one",
            Measure::TensorInstructions => "Tensor-core instructions",
            Measure::WavesPerSm => "Waves of blocks per SM",
            Measure::WarpsPerSm => "Warps active per SM",
            Measure::Atomics => "Global atomics per thread",
            Measure::LocalBytes => "Local-memory bytes per thread",
            Measure::Reuse => "Floating-point operations per byte loaded",
            Measure::Occupancy => "Achieved occupancy",
            Measure::DramThroughput => "DRAM throughput (of peak)",
            Measure::L2Throughput => "L2 throughput (of peak)",
            Measure::Instructions => "Warp instructions executed",
            Measure::InstructionsPerElement => "Warp instructions per element",
        }
    }

    /// What the figure is called after its value.
    fn unit(self) -> &'static str {
        match self {
            Measure::LoadSectors => "global load sectors for each one the bytes need",
            Measure::StoreSectors => "global store sectors for each one the bytes need",
            Measure::SharedWavefronts => "shared-memory wavefronts per ideal one",
            Measure::TensorInstructions => "tensor-core instructions",
            Measure::WavesPerSm => "waves of blocks per SM",
            Measure::WarpsPerSm => "warps active per SM",
            Measure::Atomics => "global atomics per thread",
            Measure::LocalBytes => "local-memory bytes per thread",
            Measure::Reuse => "floating-point operations per byte loaded",
            Measure::Occupancy => "% achieved occupancy",
            Measure::DramThroughput => "% of DRAM bandwidth",
            Measure::L2Throughput => "% of L2 bandwidth",
            Measure::Instructions => "warp instructions executed",
            Measure::InstructionsPerElement => "warp instructions per element",
        }
    }
}

/// "8.0 global load sectors for each one the bytes need (the baseline: 1.0)".
fn both(c: &Contrast) -> Message {
    let shown = |v: f64| {
        if c.measure == Measure::WavesPerSm {
            crate::text::waves(v)
        } else {
            value(v)
        }
    };
    msg!(
        "{} {} (the baseline: {})",
        figure(shown(c.ours)),
        c.measure.unit(),
        figure(shown(c.theirs))
    )
}

/// A figure as the report prints it: whole numbers with thousands separators, small ones to
/// one decimal or three significant places.
fn value(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v.abs() >= 1000.0 && v.fract() == 0.0 {
        crate::text::thousands(v as u64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 0.1 {
        format!("{v:.1}")
    } else {
        crate::text::sig3(v)
    }
}

/// The compared kernel's source-page lines.
fn kernel_lines<'j>(joined: &'j Joined, cmp: &Comparison) -> Vec<&'j parsers::SourceLine> {
    joined
        .sources
        .iter()
        .filter(|s| s.config == cmp.config.as_deref())
        .filter(|s| {
            s.stage
                .is_none_or(|st| st.unit().target != crate::run::TargetKind::Baseline)
        })
        .flat_map(|s| &s.log.source_lines)
        .filter(|l| KernelId::of(&l.function) == cmp.kernel)
        .collect()
}

/// Whether a source-page line is in the user's own files (not a toolkit header's).
fn is_own(ctx: &crate::rules::Ctx, l: &parsers::SourceLine) -> bool {
    let j = ctx.joined;
    j.repo_files
        .contains(&crate::text::relative_path(&l.file, &j.repo_files))
}

/// The user's lines that hold a figure's cost: those that hold it themselves, and those a
/// toolkit header's line that holds it was inlined into (`atomicAdd`'s body is the header's;
/// the statement that calls it is the user's). A header's lines where no user line is known.
fn cause_lines<'l>(
    ctx: &crate::rules::Ctx,
    config: Option<&str>,
    measure: Measure,
    lines: &[&'l parsers::SourceLine],
) -> Vec<&'l parsers::SourceLine> {
    let direct: Vec<&parsers::SourceLine> = lines
        .iter()
        .copied()
        .filter(|l| holds(measure, l))
        .collect();
    let mut out: Vec<&parsers::SourceLine> = Vec::new();
    for l in &direct {
        if is_own(ctx, l) {
            out.push(l);
            continue;
        }
        let at = ctx.tool_place(&l.file, l.line, config);
        for up in ctx.inlined_into(config, &at) {
            out.extend(lines.iter().copied().filter(|u| {
                is_own(ctx, u)
                    && u.line == up.line.unwrap_or(0)
                    && crate::text::relative_path(&u.file, &ctx.joined.repo_files) == up.file
            }));
        }
    }
    if out.is_empty() {
        return direct;
    }
    out.sort_by_key(|l| (l.file.clone(), l.line));
    out.dedup_by_key(|l| (l.file.clone(), l.line));
    out
}

/// The lines that hold a figure's cost: those with excess sectors, excess wavefronts, atomics;
/// none for a figure of the whole launch.
fn holds(measure: Measure, l: &parsers::SourceLine) -> bool {
    match measure {
        Measure::LoadSectors | Measure::StoreSectors => l.global_excessive > 0,
        Measure::SharedWavefronts => l.shared_excessive > 0,
        Measure::Atomics => l.atomics > 0,
        _ => false,
    }
}

/// What a separating figure costs, in percent of the kernel's time, from what was measured:
/// the share of the kernel's warp-stall samples on the lines that hold it (sectors,
/// wavefronts, atomics); for local memory, the share of its threads' memory traffic that is
/// the stack frame's; for a figure of the whole launch (tensor cores, waves, warps) the gap
/// between the two launches' durations. `None` where nothing measured it.
fn cost(
    ctx: &crate::rules::Ctx,
    c: &Contrast,
    cmp: &Comparison,
    lines: &[&parsers::SourceLine],
) -> Option<f64> {
    let own: Vec<&parsers::SourceLine> = lines.iter().copied().filter(|l| is_own(ctx, l)).collect();
    let total: u64 = own.iter().map(|l| l.stall_samples).sum();
    let mut on: u64 = cause_lines(ctx, cmp.config.as_deref(), c.measure, lines)
        .iter()
        .filter(|l| is_own(ctx, l))
        .map(|l| l.stall_samples)
        .sum();
    // Atomics one thread issues while its block waits: the block's warps stalled at the
    // barrier wait for it too.
    if c.measure == Measure::Atomics && cmp.spins {
        on += own
            .iter()
            .filter_map(|l| l.stalls.get("stall_barrier"))
            .sum::<u64>();
    }
    let gap = cmp
        .durations
        .map(|(ours, theirs)| 100.0 * (1.0 - theirs / ours).max(0.0));
    let pct = match c.measure {
        Measure::LoadSectors
        | Measure::StoreSectors
        | Measure::SharedWavefronts
        | Measure::Atomics => (total > 0 && on > 0).then(|| 100.0 * on as f64 / total as f64),
        Measure::LocalBytes => cmp.local_share.map(|s| 100.0 * s),
        // The SMs a grid of less than a wave leaves idle, and the warps fewer than the
        // baseline's, each no more than the gap.
        Measure::WavesPerSm => gap.map(|g| g.min(100.0 * (1.0 - c.ours.min(1.0)))),
        Measure::WarpsPerSm => gap.map(|g| g.min(100.0 * (1.0 - c.ours / c.theirs).max(0.0))),
        Measure::TensorInstructions
        | Measure::Reuse
        | Measure::Occupancy
        | Measure::DramThroughput
        | Measure::L2Throughput
        | Measure::Instructions
        | Measure::InstructionsPerElement => gap,
    }?;
    Some((pct * 10.0).round() / 10.0)
}

/// What a cause standing on a figure costs by its kernel's own profile, with no baseline: for
/// local memory, the share of the kernel's threads' memory traffic that is the stack frame's;
/// for a product on the FMA pipes, the part of the tensor peak it leaves unused (an FP16
/// product at 1.3% of the tensor peak costs 98.7%: a factor, not a percent).
fn cost_alone(ctx: &crate::rules::Ctx, d: &Draft) -> Option<f64> {
    let j = ctx.joined;
    let kernel = KernelId::of(d.kernel.as_deref()?);
    let config = d.config.as_deref();
    let pct = d.stands_on.iter().find_map(|m| match m {
        Measure::LocalBytes => {
            let mix = j
                .sources
                .iter()
                .filter(|s| s.config == config)
                .flat_map(|s| &s.log.instruction_mix)
                .find(|m| KernelId::of(&m.function) == kernel)?;
            mix.local_share().map(|s| 100.0 * s)
        }
        Measure::TensorInstructions => {
            let p = crate::roofline::of_kernel(j, config, &kernel)?;
            let peak = match p.limit {
                crate::roofline::Limit::Fp32 => p.tf32_peak_gflops,
                _ => p.tensor_peak_gflops,
            }?;
            let achieved = p.gflops?;
            (peak > 0.0).then(|| 100.0 * (1.0 - achieved / peak).max(0.0))
        }
        _ => None,
    })?;
    Some((pct * 10.0).round() / 10.0)
}

/// Sets a cause's cost: its estimated speedup, and the program's gain by its kernel's share of
/// the profiled time where the rule measured one.
fn set_cost(d: &mut Draft, pct: Option<f64>) {
    let Some(pct) = pct else { return };
    Figure::EstimatedSpeedup.set(&mut d.figures, json!(pct));
    let share = d
        .figures
        .get("time_share")
        .and_then(|v| v.as_f64())
        .unwrap_or(1.0);
    Figure::ProgramGain.set(&mut d.figures, json!(pct * share));
}

/// A separating figure no rule named, as a cause of its own; `None` for a figure that
/// describes the two launches (throughputs, occupancy, instructions) rather than names a cause.
fn cause(
    ctx: &crate::rules::Ctx,
    cmp: &Comparison,
    c: &Contrast,
    lines: &[&parsers::SourceLine],
) -> Option<Draft> {
    const STALLS: &str = "of the kernel's warp-stall samples sit on the lines that hold it";
    let theirs = code(KernelId::of(&cmp.baseline_kernel));
    let kernel = code(cmp.kernel.as_str());
    let (title, mechanism, fix, basis) = match c.measure {
        Measure::LoadSectors | Measure::StoreSectors => {
            let what = if c.measure == Measure::LoadSectors {
                "loads"
            } else {
                "stores"
            };
            (
                msg!("Uncoalesced global {}: {}", what, both(c)),
                msg!(
                    "The warps' requests touch {} 32-byte sectors for each one their bytes fill, \
                     so the memory system moves that many times the bytes the threads use.",
                    figure(format!("{:.1}", c.ours))
                ),
                msg!(
                    "Make consecutive threads touch consecutive addresses: index the \
                     fastest-varying dimension by `threadIdx.x`, or stage the tile through shared \
                     memory and write it out in order, as the baseline's kernel does."
                ),
                STALLS,
            )
        }
        Measure::SharedWavefronts => (
            msg!("Shared-memory bank conflicts: {}", both(c)),
            msg!(
                "Each shared-memory request of a warp is replayed {} times where the baseline's \
                 takes {}: the threads of a warp hit the same banks.",
                figure(format!("{:.1}", c.ours)),
                figure(format!("{:.1}", c.theirs))
            ),
            msg!(
                "Pad the shared array's rows by one element, or swizzle its index, so that a \
                 warp's 32 accesses fall in 32 different banks."
            ),
            STALLS,
        ),
        Measure::TensorInstructions => (
            msg!(
                "No tensor cores: the baseline runs {} tensor-core instructions, {} none",
                figure(value(c.theirs)),
                kernel.clone()
            ),
            msg!(
                "The baseline's {} runs its product on the tensor cores; {} runs every \
                 multiply-add on the FMA pipes, whose peak is a fraction of theirs.",
                theirs.clone(),
                kernel.clone()
            ),
            msg!(
                "Compute the product with tensor-core instructions (WMMA or `mma.sync` fragments, \
                 `tl.dot`, or a library GEMM)."
            ),
            "of the kernel's time is what the baseline's launch does without",
        ),
        Measure::WavesPerSm => (
            msg!("A grid too small for the GPU: {}", both(c)),
            msg!(
                "Most SMs have no block to run for the launch's whole length; the baseline's \
                 grid gives every SM work."
            ),
            msg!(
                "Split the work over more blocks: at least a few times the SM count, each \
                 smaller, as the baseline's grid does."
            ),
            "of the SMs have no block to run",
        ),
        Measure::WarpsPerSm => (
            msg!("Too few warps at work: {}", both(c)),
            msg!(
                "With so few warps per SM there is too little independent work to hide the \
                 latency of memory and arithmetic."
            ),
            msg!(
                "Give each SM more warps that work: more threads per block doing work (not \
                 waiting at a barrier), or more blocks per SM."
            ),
            "fewer warps are at work than in the baseline's launch",
        ),
        Measure::Atomics if cmp.spins => (
            msg!(
                "A serialised wait: one thread spins on global atomics, {}",
                both(c)
            ),
            msg!(
                "The atomics are issued by one thread at a time, again and again: a spin-wait on \
                 a flag another block sets, so the blocks finish one after another."
            ),
            msg!(
                "Do not wait on one other block: read what the blocks before have already \
                 published (several at once, as a decoupled look-back does), or split the work \
                 into passes separated by launches."
            ),
            "of the kernel's warp-stall samples are on the spinning line or at a barrier, \
             waiting for it",
        ),
        Measure::Atomics => (
            msg!("Atomic contention: {}", both(c)),
            msg!(
                "Every thread's atomic on global memory goes to L2, and atomics to one address \
                 are applied one after another: the threads contend for a few addresses. The \
                 baseline reduces on chip first."
            ),
            msg!(
                "Reduce within the block first (warp shuffles, then shared memory, or a \
                 per-block copy of the bins) and issue one atomic per block and address, or \
                 write per-block partial results and reduce them in a second pass."
            ),
            STALLS,
        ),
        Measure::LocalBytes => (
            msg!("Local memory: {}", both(c)),
            msg!(
                "Per-thread arrays indexed at run time, or spills, live in local memory, which \
                 goes through L1 and L2 like global memory."
            ),
            msg!(
                "Keep per-thread arrays in registers (constant indices, unrolled loops) or move \
                 them to shared memory."
            ),
            "of its threads' memory traffic is the stack frame's",
        ),
        // Figures that describe the two launches rather than name a cause
        // ([`Measure::names_cause`]).
        _ => return None,
    };
    let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, title);
    d.config = cmp.config.clone();
    d.kernel = Some(cmp.kernel.to_string());
    d.key = format!("baseline-{:?}", c.measure).to_lowercase();
    d.stands_on = vec![c.measure];
    // Atomics sit where most are executed; the other figures where the stalls are.
    let hot = cause_lines(ctx, cmp.config.as_deref(), c.measure, lines)
        .into_iter()
        .max_by_key(|l| {
            if c.measure == Measure::Atomics {
                (l.atomics, l.stall_samples)
            } else {
                (l.stall_samples, 0)
            }
        });
    d.location = hot.map(|l| ctx.user_place(cmp.config.as_deref(), l));
    d.confidence = if d.location.is_some() {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let pct = cost(ctx, c, cmp, lines);
    let costed = pct
        .map(|p| msg!(" {} {}.", figure(format!("{p:.0}%")), basis))
        .unwrap_or_default();
    d.explanation = msg!(
        "Beside the baseline's {}, {} differs most in this: {}. {}{}",
        theirs.clone(),
        kernel.clone(),
        both(c),
        mechanism,
        costed
    );
    d.fix = fix;
    d.figures.insert("baseline_figure".into(), json!(c.theirs));
    d.figures.insert("figure".into(), json!(c.ours));
    set_cost(&mut d, pct);
    if pct.is_some_and(|p| p < MIN_COST) {
        d.level = Level::Note;
    }
    d.evidence.push(ctx.metric_evidence(
        cmp.config.as_deref(),
        msg!("{} beside {}: {}", kernel, theirs, both(c)),
    ));
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(measure: Measure, ours: f64, theirs: f64) -> Contrast {
        Contrast {
            measure,
            ours,
            theirs,
        }
    }

    #[test]
    fn a_figure_far_worse_than_the_baselines_separates_and_a_shared_one_does_not() {
        assert!(c(Measure::LoadSectors, 8.0, 1.0).separates());
        assert!(!c(Measure::LoadSectors, 8.0, 1.0).shared());
        assert!(c(Measure::WavesPerSm, 0.01, 0.01).shared());
        assert!(!c(Measure::WavesPerSm, 0.01, 0.01).separates());
        // Fewer waves than the baseline's is worse; more is not.
        assert!(c(Measure::WavesPerSm, 0.1, 4.0).separates());
        assert!(c(Measure::WavesPerSm, 4.0, 0.1).shared());
        // None where the baseline has some.
        assert!(c(Measure::TensorInstructions, 0.0, 1e6).separates());
        assert!(c(Measure::Atomics, 1.0, 0.0).separates());
        assert!(c(Measure::Atomics, 0.0, 0.0).shared());
    }
}
