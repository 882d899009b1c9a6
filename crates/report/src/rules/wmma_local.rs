//! `wmma-local-memory`: a tensor-core fragment (WMMA or ldmatrix) loaded from or stored to a
//! thread-local array. The compiler warns; on sm_90 it emits `BPT.TRAP` and memcheck reports a
//! "Trace/breakpoint trap" per thread, where sm_89 reports "Invalid __local__ read". Both
//! signatures lead here, and each corroborating signal raises the confidence.

use std::collections::BTreeSet;

use parsers::{FindingKind, MemorySpace};
use serde_json::json;

use super::Ctx;
use crate::diagnosis::{Confidence, Draft, Level};
use crate::join::is_sanitizer;
use crate::text::{join_words, kernel_base, plural};

/// One draft per config and kernel with the compiler's warning, or with a local-memory fault in
/// a kernel whose SASS holds both tensor-core instructions and traps or local memory.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for config in j.config_names() {
        let c = config.as_deref();
        let in_config = |i: &usize| j.findings.get(*i).is_some_and(|f| f.config.as_deref() == c);
        let warnings: Vec<usize> = (0..j.findings.len())
            .filter(in_config)
            .filter(|&i| j.findings[i].finding.kind == FindingKind::WmmaLocalMemory)
            .collect();
        let faults: Vec<usize> = (0..j.findings.len())
            .filter(in_config)
            .filter(|&i| {
                let f = &j.findings[i];
                let from_sanitizer = j.source(f.source).is_some_and(|s| is_sanitizer(s.kind));
                from_sanitizer
                    && (f.finding.kind == FindingKind::Trap
                        || (f.finding.kind == FindingKind::InvalidAccess
                            && f.finding.space == Some(MemorySpace::Local)))
            })
            .collect();
        if warnings.is_empty() && faults.is_empty() {
            continue;
        }

        let mut kernels: BTreeSet<String> = BTreeSet::new();
        for &i in warnings.iter().chain(&faults) {
            if let Some(k) = &j.findings[i].finding.kernel {
                kernels.insert(kernel_base(k));
            }
        }
        if !warnings.is_empty() {
            for kv in j.kernels.iter().filter(|k| k.config.as_deref() == c) {
                if kv.sass.is_some_and(|s| s.bpt_trap > 0) && j.is_target(&kv.name) {
                    kernels.insert(kv.name.clone());
                }
            }
        }
        if kernels.is_empty() {
            // A warning with no kernel named and no SASS to place it: a config-level draft.
            out.push(draft(ctx, c, None, &warnings, &[]));
            continue;
        }
        for kernel in &kernels {
            let of_kernel = |i: &&usize| {
                j.findings[**i]
                    .finding
                    .kernel
                    .as_deref()
                    .is_none_or(|k| kernel_base(k) == *kernel)
            };
            let w: Vec<usize> = warnings.iter().filter(of_kernel).copied().collect();
            let f: Vec<usize> = faults.iter().filter(of_kernel).copied().collect();
            let view = j.kernel(c, kernel);
            let tensor = view.and_then(|v| v.tensor_instructions()).unwrap_or(0) > 0
                || view.and_then(|v| v.sass).is_some_and(|s| s.ldsm > 0);
            let local = view
                .and_then(|v| v.sass)
                .is_some_and(|s| s.bpt_trap > 0 || s.ldl + s.stl > 0);
            if w.is_empty() && !(local && tensor) {
                // A trap or local fault alone is not this root cause; other rules take it.
                continue;
            }
            out.push(draft(ctx, c, Some(kernel), &w, &f));
        }
    }
    out
}

fn draft(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: Option<&str>,
    warnings: &[usize],
    faults: &[usize],
) -> Draft {
    let j = ctx.joined;
    let mut d = Draft::new(
        "wmma-local-memory",
        Level::Error,
        "Tensor-core fragment loaded from thread-local memory",
    );
    d.config = config.map(str::to_string);
    d.kernel = kernel.map(str::to_string);
    let view = kernel.and_then(|k| j.kernel(config, k));
    d.arch = view.and_then(|v| v.arch.clone());

    let mut said: Vec<String> = Vec::new();
    let mut signals = 0;

    if !warnings.is_empty() {
        signals += 1;
        let n: u64 = warnings.iter().map(|&i| j.findings[i].finding.count).sum();
        said.push(format!(
            "the compiler warned {} that a WMMA load or store operates on local memory",
            plural(n, "time", "times")
        ));
        if let Some(first) = warnings.first().and_then(|&i| j.findings.get(i)) {
            d.evidence.push(ctx.finding_evidence(first));
        }
        d.figures.insert("compiler_warnings".into(), json!(n));
    }

    if !faults.is_empty() {
        signals += 1;
        let traps: u64 = faults
            .iter()
            .filter(|&&i| j.findings[i].finding.kind == FindingKind::Trap)
            .map(|&i| j.findings[i].finding.count)
            .sum();
        let local: u64 = faults
            .iter()
            .filter(|&&i| j.findings[i].finding.kind == FindingKind::InvalidAccess)
            .map(|&i| j.findings[i].finding.count)
            .sum();
        let mut what = Vec::new();
        if traps > 0 {
            what.push(format!("{} \"Trace/breakpoint trap\" records", traps));
        }
        if local > 0 {
            what.push(format!("{} invalid __local__ accesses", local));
        }
        // The printed records are capped by --print-limit; the summary counts them all.
        let fault_sources: BTreeSet<usize> = faults.iter().map(|&i| j.findings[i].source).collect();
        let reported: u64 = fault_sources
            .iter()
            .filter_map(|&s| j.source(s))
            .filter_map(|s| s.log.reported_errors)
            .sum();
        let total = if reported > traps + local {
            format!(" ({reported} errors in the summary)")
        } else {
            String::new()
        };
        said.push(format!(
            "memcheck printed {}{}{total}",
            join_words(&what),
            kernel.map(|k| format!(" in `{k}`")).unwrap_or_default()
        ));
        for &i in faults.iter().take(2) {
            if let Some(f) = j.findings.get(i) {
                d.evidence.push(ctx.finding_evidence(f));
                if d.location.is_none() {
                    d.location = ctx.place(f);
                }
            }
        }
        d.figures.insert("trap_records".into(), json!(traps));
        d.figures
            .insert("invalid_local_accesses".into(), json!(local));
    }

    if let Some(sass) = view.and_then(|v| v.sass)
        && (sass.bpt_trap > 0 || sass.ldl + sass.stl > 0)
    {
        signals += 1;
        let summary = format!(
            "SASS of `{}`: {} BPT.TRAP, {} LDL, {} STL, {} HMMA",
            kernel.unwrap_or("?"),
            sass.bpt_trap,
            sass.ldl,
            sass.stl,
            sass.hmma
        );
        said.push(format!(
            "its SASS holds {} BPT.TRAP and {} LDL/STL",
            sass.bpt_trap,
            sass.ldl + sass.stl
        ));
        d.evidence
            .push(ctx.source_evidence(view.and_then(|v| v.sass_source), config, summary));
        d.figures.insert("bpt_trap".into(), json!(sass.bpt_trap));
        d.figures
            .insert("ldl_stl".into(), json!(sass.ldl + sass.stl));
    }

    // The launch failure the fault causes, as the harness saw it.
    for r in &j.results {
        let same = r.config.as_deref() == config
            && kernel.is_none_or(|k| kernel_base(&r.result.kernel) == k);
        if same && let Some(err) = &r.result.error {
            d.evidence.push(ctx.result_evidence(
                r,
                format!(
                    "{} launch of `{}` failed: {}",
                    super::mode_name(r.result.mode),
                    r.result.kernel,
                    crate::text::scrub(err, &j.repo_files)
                ),
            ));
            break;
        }
    }

    // The host-side error that follows the trap is this fault's consequence.
    let fault_sources: BTreeSet<usize> = faults.iter().map(|&i| j.findings[i].source).collect();
    let consequences: Vec<usize> = (0..j.findings.len())
        .filter(|&i| {
            let f = &j.findings[i];
            fault_sources.contains(&f.source)
                && matches!(
                    f.finding.kind,
                    FindingKind::HostApiError | FindingKind::DeviceException
                )
        })
        .collect();
    d.explains.extend(warnings);
    d.explains.extend(faults);
    d.explains.extend(consequences);

    if d.location.is_none() {
        d.location = warnings
            .first()
            .and_then(|&i| j.findings.get(i))
            .and_then(|f| ctx.place(f))
            .or_else(|| ctx.kernel_file(config));
    }
    d.confidence = Confidence::from_signals(signals);
    d.figures.insert("signals".into(), json!(signals));
    d.explanation = format!(
        "Evidence: {}. A tensor-core fragment load or store (wmma::load_matrix_sync / \
         store_matrix_sync, or ldmatrix) was given a pointer into a thread-local array. Local \
         memory is private to each thread, so a warp-collective fragment access cannot use it: \
         the compiler warns and, on sm_90, plants a trap (BPT.TRAP) that fires at run time as \
         \"Trace/breakpoint trap\"; older archs report \"Invalid __local__ read\" instead. Either \
         way the launch fails with an unspecified launch failure.",
        join_words(&said)
    );
    d.fix = "Stage the tile in shared memory: declare it `__shared__` (or carve it from the \
             dynamic shared-memory buffer, 16-byte aligned), fill it cooperatively from global \
             memory, `__syncthreads()`, and pass the shared-memory pointer to load_matrix_sync \
             (or load the fragment with ldmatrix from shared memory). Re-run memcheck: the trap \
             and the LDL/STL in the SASS should be gone."
        .to_string();
    d
}
