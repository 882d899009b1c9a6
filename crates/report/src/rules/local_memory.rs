//! `register-spills`: ptxas spilled registers to local memory, or gave the kernel a stack frame
//! (a thread-local array it could not keep in registers), with the LDL/STL that costs in SASS.

use parsers::FindingKind;
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, GiveWay, Level};
use crate::message::{Message, code, msg};

pub(crate) const RULE: Rule = Rule::new(
    RuleId::RegisterSpills,
    Role::Performance,
    "Register spills and local memory",
    "ptxas spill stores/loads or a stack frame, with LDL/STL in the SASS.",
    "crates/report/src/rules/local_memory.rs",
    run,
);

/// One draft per launched kernel and config with spills or a stack frame used by LDL/STL.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for view in j.target_kernels() {
        let Some(k) = view.resources else { continue };
        let config = view.config.as_deref();
        if ctx.debug_build(config) {
            // A -G build keeps every local in local memory: its frames are no finding.
            continue;
        }
        let stores = k.spill_store_bytes.unwrap_or(0);
        let loads = k.spill_load_bytes.unwrap_or(0);
        let stack = k.stack_frame_bytes.unwrap_or(0);
        let (ldl, stl) = view.sass.map(|s| (s.ldl, s.stl)).unwrap_or((0, 0));
        let spilled = stores.saturating_add(loads) > 0;
        let local_array = !spilled && stack > 0 && ldl.saturating_add(stl) > 0;
        if !spilled && !local_array {
            continue;
        }
        let warnings: Vec<_> = j
            .findings_in(config)
            .filter(|(_, f)| {
                f.finding.kind == FindingKind::RegisterSpill
                    && f.kernel.as_ref().is_none_or(|n| *n == view.name)
            })
            .collect();
        let mut d = Draft::new(RuleId::RegisterSpills, Level::Warning, Message::new());
        d.stands_on = vec![crate::measure::Measure::LocalBytes];
        d.config = view.config.clone();
        d.kernel = Some(view.name.to_string());
        // The local array of a fragment-on-local-memory fault is the stack frame: one
        // diagnosis says it.
        d.gives_way
            .push(GiveWay::Drafted(RuleId::WmmaLocalMemory, view.name.clone()));
        d.arch = view.arch.clone();
        d.location = ctx.kernel_file(config);
        d.key = if spilled { "spills" } else { "local-array" }.to_string();
        d.explains.extend(warnings.iter().map(|(i, _)| *i));
        let fact = Local {
            kernel: &view.name,
            arch: view.arch.as_deref(),
            registers: k.registers,
            stores,
            loads,
            stack,
            ldl,
            stl,
        };
        d.evidence.push(ctx.source_evidence(
            view.resources_source,
            config,
            word_ptxas(&fact),
        ));
        if let Some((_, f)) = warnings.first() {
            d.evidence.push(ctx.finding_evidence(f));
        }
        if view.sass.is_some() {
            d.evidence.push(ctx.source_evidence(
                view.sass_source,
                config,
                msg!(
                    "SASS of {}: {} LDL, {} STL",
                    code(view.name.as_str()),
                    ldl.to_string(),
                    stl.to_string()
                ),
            ));
        }
        let signals =
            1 + usize::from(ldl.saturating_add(stl) > 0) + usize::from(!warnings.is_empty());
        d.confidence = Confidence::from_signals(signals);
        d.figures.insert("spill_store_bytes".into(), json!(stores));
        d.figures.insert("spill_load_bytes".into(), json!(loads));
        d.figures.insert("stack_frame_bytes".into(), json!(stack));
        d.figures.insert("ldl".into(), json!(ldl));
        d.figures.insert("stl".into(), json!(stl));
        if spilled {
            // A register cap the build imposed: the spills are the price of that cap.
            let compile = |s: &&crate::run::Stage| s.kind == crate::run::StageKind::Compile;
            let build = config.and_then(|_| j.stages_in(config).find(compile));
            let cap = k.max_registers_override.or(build.and_then(|s| s.unit().max_registers));
            if let Some(cap) = cap {
                d.figures.insert("maxrregcount".into(), json!(cap));
            }
            word_spills(&mut d, &fact, cap);
        } else {
            // The compiler's figures say the array is there, not that it costs: a note, until
            // a profile of the kernel measures its warps waiting on local memory (the
            // `slow-kernel` rule's local-memory cause).
            d.level = Level::Note;
            // Profiled, with no ncu rule on its local memory (LG throttle, a local access
            // pattern): the profile found no cost to speak of.
            let profiled = crate::resources::ncu_summary(j, config, &view.name).is_some();
            let flagged = j.findings_in(config).any(|(_, f)| {
                f.kernel.as_ref() == Some(&view.name)
                    && f.finding.profiler_rule.as_deref().is_some_and(|r| {
                        r.lg_throttle || r.access_space == Some(parsers::MemorySpace::Local)
                    })
            });
            let cost = match (profiled, flagged) {
                (false, _) => Cost::NotMeasured,
                (true, false) => Cost::NoneFound,
                (true, true) => Cost::Waiting,
            };
            word_local_array(&mut d, &fact, cost);
        }
        out.push(d);
    }
    out
}

/// ptxas's and the SASS's figures for a kernel's local memory.
struct Local<'k> {
    kernel: &'k str,
    arch: Option<&'k str>,
    registers: Option<u32>,
    /// Spill stores and loads, and the stack frame, in bytes.
    stores: u64,
    loads: u64,
    stack: u64,
    /// LDL and STL instructions in the SASS.
    ldl: u64,
    stl: u64,
}

/// What a profile says a thread-local array costs.
enum Cost {
    /// No profile of the kernel.
    NotMeasured,
    /// Profiled, and no ncu rule finds warps waiting on local memory.
    NoneFound,
    /// An ncu rule finds warps waiting on local memory.
    Waiting,
}

/// "120 registers, " where ptxas gave the count.
fn word_registers(f: &Local) -> Message {
    f.registers
        .map(|r| msg!("{} registers, ", r.to_string()))
        .unwrap_or_default()
}

/// The ptxas evidence's summary.
fn word_ptxas(f: &Local) -> Message {
    msg!(
        "ptxas for {}{}: {}{} bytes spill stores, {} bytes spill loads, {} bytes stack frame",
        code(f.kernel),
        f.arch.map(|a| msg!(" ({})", a)).unwrap_or_default(),
        word_registers(f),
        f.stores.to_string(),
        f.loads.to_string(),
        f.stack.to_string()
    )
}

/// The title, explanation and fix of spilled registers (`cap`: the build's -maxrregcount).
fn word_spills(d: &mut Draft, f: &Local, cap: Option<u32>) {
    d.title = msg!("Register spills to local memory");
    let sass = if f.ldl.saturating_add(f.stl) > 0 {
        msg!(
            "; the SASS holds {} LDL and {} STL",
            f.ldl.to_string(),
            f.stl.to_string()
        )
    } else {
        Message::new()
    };
    d.explanation = msg!(
        "ptxas spilled {} bytes of stores and {} bytes of loads to local memory ({}{} bytes stack \
         frame){}. Local memory lives in global memory behind L1: every spill is a round trip in \
         the inner loop.",
        f.stores.to_string(),
        f.loads.to_string(),
        word_registers(f),
        f.stack.to_string(),
        sass
    );
    d.fix = match cap {
        Some(cap) => {
            d.explanation.append(msg!(
                " The build caps registers at {} per thread (-maxrregcount): the kernel needs \
                 more, and the rest goes to local memory.",
                cap.to_string()
            ));
            msg!(
                "Raise or drop the -maxrregcount={} cap (or use `__launch_bounds__` to give ptxas \
                 a budget per kernel), then check the bench: the cap bought occupancy at the price \
                 of these spills.",
                cap.to_string()
            )
        }
        None => msg!(
            "Cut live registers: fewer accumulator fragments per warp (smaller BLOCK_M per warp or \
             more warps), no dynamically indexed register arrays, and \
             `__launch_bounds__(threads, minBlocks)` so ptxas knows the budget it must meet; do not \
             raise -maxrregcount past what occupancy allows."
        ),
    };
}

/// The title, explanation and fix of a thread-local array in local memory.
fn word_local_array(d: &mut Draft, f: &Local, cost: Cost) {
    d.title = msg!("Thread-local array in local memory");
    d.explanation = msg!(
        "No spills, but a {}-byte stack frame with {} LDL and {} STL in the SASS: an array the \
         kernel indexes with a value the compiler cannot resolve at compile time lives in local \
         memory, not registers.",
        f.stack.to_string(),
        f.ldl.to_string(),
        f.stl.to_string()
    );
    d.fix = msg!(
        "Fully unroll the loops that index the array (`#pragma unroll` with constant trip counts) \
         so every index is a constant, or move the array to shared memory."
    );
    d.explanation.append(match cost {
        Cost::NoneFound => msg!(
            " Its profile names no cost of it: no Nsight Compute rule finds its warps waiting on \
             local memory."
        ),
        Cost::Waiting => msg!(
            " Its profile finds warps waiting on local memory: the `slow-kernel` rule weighs what \
             that costs."
        ),
        Cost::NotMeasured => msg!(
            " What it costs is not measured here: a profile of the kernel shows whether its warps \
             wait on local memory."
        ),
    });
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::diagnosis::Level;
    use crate::rules::testing::fixture_case;

    /// nvcc 13.0 with `-maxrregcount=16` on `spill.cu` (`ptxas/nvcc13.0_spill_maxrreg16.log`):
    /// `many_live_values` at 24 registers spills 660 bytes of stores and 692 of loads.
    #[test]
    fn fires_on_a_kernel_that_spills_under_a_register_cap() {
        let d = fixture_case!(Compile, "ptxas/nvcc13.0_spill_maxrreg16.log")
            .stage(|s| s.unit.max_registers = Some(16))
            .only(RuleId::RegisterSpills);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.key, "spills");
        assert_eq!(d.kernel.as_deref(), Some("many_live_values"));
        // The build records no source file.
        assert_eq!(d.location, None);
        assert_eq!(d.figures["spill_store_bytes"], 660);
        assert_eq!(d.figures["spill_load_bytes"], 692);
        assert!(d.figures.contains_key("maxrregcount"), "{:?}", d.figures);
    }

    /// nvcc 13.0 on the same `spill.cu` without a cap (`ptxas/nvcc13.0_spill_default.log`):
    /// 48 and 72 registers, no spill, no stack frame.
    #[test]
    fn stays_silent_on_the_same_kernels_built_without_a_cap() {
        fixture_case!(Compile, "ptxas/nvcc13.0_spill_default.log").silent(RuleId::RegisterSpills);
    }
}
