//! `wmma-local-memory`: a tensor-core fragment (WMMA or ldmatrix) loaded from or stored to a
//! thread-local array. The compiler warns; on sm_90 it emits `BPT.TRAP` and memcheck reports a
//! "Trace/breakpoint trap" per thread, where sm_89 reports "Invalid __local__ read". In a `-G`
//! build the compiler does not warn and nothing is inlined: memcheck's invalid `__local__`
//! access inside the toolkit's `load_matrix_sync`, `store_matrix_sync` or `ldmatrix` is then
//! the evidence on its own, in the kernel the host frames name. Every signature leads here, and
//! each corroborating signal raises the confidence.

use std::collections::BTreeSet;

use parsers::{FindingKind, MemorySpace};
use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, Level, SourceLocation, Span};
use crate::join::FindingRef;
use crate::kernel_id::KernelId;
use crate::message::{Message, code, msg, path, quote};
use crate::text::plural;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::WmmaLocalMemory,
    Role::sited(2),
    "Tensor-core fragment on local memory",
    "The compiler's 'cannot perform wmma load or store on local memory' warning, \
        corroborated by memcheck's trap (sm_90) or invalid `__local__` access (sm_89) \
        and BPT.TRAP or LDL/STL in the kernel's SASS.",
    "crates/report/src/rules/wmma_local.rs",
    run,
);

/// A finding and its index in [`crate::join::Joined::findings`].
type Hit<'j, 'a> = (usize, &'j FindingRef<'a>);

/// What a place at a trap's line is, and how to get the call's: the note of a draft whose place
/// stands in for the call's ([`Draft::stands_in`]), which a place from another build of the same
/// kernel replaces.
fn trap_note(at: &SourceLocation) -> Message {
    msg!(
        "{} is where the compiler put the trap, not the call: a release build keeps no line of \
         the fragment access it replaced. A `-G` build of the same kernel keeps \
         `load_matrix_sync` a function of its own, and its line table names the call: with a \
         config built with `-G` beside this one, the report places this root cause there.",
        path(at)
    )
}

/// One draft per config and kernel with the compiler's warning, or with a local-memory fault in
/// a kernel whose SASS holds both tensor-core instructions and local loads or stores.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for config in j.config_names() {
        let c = config.as_deref();
        let in_config = || j.findings_in(c);
        let warnings: Vec<Hit> = in_config()
            .filter(|(_, f)| is_local_memory_warning(f.finding.kind))
            .collect();
        let faults: Vec<Hit> = in_config()
            .filter(|(_, f)| {
                j.source(f.source).is_some_and(|s| s.kind.is_sanitizer())
                    && (f.finding.kind == FindingKind::Trap
                        || (f.finding.kind == FindingKind::InvalidAccess
                            && f.finding.space == Some(MemorySpace::Local)))
            })
            .collect();
        if warnings.is_empty() && faults.is_empty() {
            continue;
        }
        // The kernel a fault is in: the one the record names, or, for an access inside a
        // tensor-core intrinsic (not inlined in a -G build), the one its host frames launched.
        let fault_kernel = |f: &FindingRef| -> Option<KernelId> {
            if in_intrinsic(f.finding) {
                return launched_kernel(ctx, c, f.finding);
            }
            f.kernel.clone()
        };
        let mut kernels: BTreeSet<KernelId> = warnings
            .iter()
            .filter_map(|(_, f)| f.kernel.clone())
            .chain(faults.iter().filter_map(|(_, f)| fault_kernel(f)))
            .collect();
        if !warnings.is_empty() {
            // The warning names no kernel (its place is the toolkit's header): it belongs to
            // the kernels whose SASS holds the trap the compiler planted for it, never to every
            // kernel of the build. Only where no kernel holds a trap (an arch that keeps the
            // local access) does local memory next to tensor-core instructions show it.
            let of_config = || j.kernels.iter().filter(|k| k.config.as_deref() == c);
            let any_trap = of_config().any(|kv| kv.sass.is_some_and(|s| s.bpt_trap > 0));
            kernels.extend(
                of_config()
                    .filter(|kv| {
                        kv.sass.is_some_and(|s| {
                            if any_trap {
                                s.bpt_trap > 0
                            } else {
                                local_ops(s)
                                    && s.hmma.saturating_add(s.hgmma).saturating_add(s.ldsm) > 0
                            }
                        })
                    })
                    .map(|kv| kv.name.clone()),
            );
        }
        // Kernels whose trap never fired in a run of the program: latent faults, one note.
        let mut latent: Vec<(KernelId, Vec<Hit>)> = Vec::new();
        if kernels.is_empty() {
            // A warning with no kernel named and no SASS to place it: a config-level draft.
            out.push(draft(ctx, c, None, &warnings, &[]));
            continue;
        }
        for kernel in &kernels {
            let of_kernel = |(_, f): &&Hit| f.kernel.as_ref().is_none_or(|k| k == kernel);
            let w: Vec<Hit> = warnings.iter().filter(of_kernel).copied().collect();
            let f: Vec<Hit> = faults
                .iter()
                .filter(|(_, f)| fault_kernel(f).is_none_or(|k| k == *kernel))
                .copied()
                .collect();
            // Without the compiler's warning, a trap in the SASS says nothing of fragments (an
            // assert, a cp.async the compiler could not emit): only local loads and stores do.
            let shows = j.kernel(c, kernel).and_then(|v| v.sass).is_some_and(|s| {
                local_ops(s)
                    && (s.hmma.saturating_add(s.hgmma).saturating_add(s.imma) > 0 || s.ldsm > 0)
            });
            // A local access inside the tensor-core intrinsic itself is this fault, whatever
            // else the build shows.
            if w.is_empty() && !shows && !f.iter().any(|(_, f)| in_intrinsic(f.finding)) {
                // A trap or local fault alone is not this root cause; other rules take it.
                continue;
            }
            // No record of it faulting, where the program ran under memcheck (or passed its
            // check): the kernel never ran, or never reached the trap. It changes no verdict.
            if f.is_empty() && ran_without_trapping(j, c) {
                latent.push((kernel.clone(), w));
                continue;
            }
            out.push(draft(ctx, c, Some(kernel), &w, &f));
        }
        if !latent.is_empty() {
            out.push(latent_draft(ctx, c, &latent));
        }
        // One warning, one source line: an entry without a located fault of its own (the bf16
        // entry that computes through local memory instead of trapping) points where its
        // sibling's trap does.
        let located = out
            .iter()
            .filter(|d| d.config.as_deref() == c)
            .find_map(|d| {
                let at = d.location.clone().filter(|l| l.line.is_some())?;
                Some((at, d.stand_in.is_some()))
            });
        if let Some((loc, trap)) = located {
            for d in out.iter_mut().filter(|d| d.config.as_deref() == c) {
                if d.location
                    .as_ref()
                    .is_none_or(|l| l.line.is_none() && l.file == loc.file)
                {
                    d.location = Some(loc.clone());
                    // The sibling's place is its trap's line: so is this one's.
                    if trap {
                        d.stands_in(trap_note(&loc));
                    }
                }
            }
        }
    }
    out
}

/// Whether a kernel's SASS loads or stores local memory (LDL, STL).
fn local_ops(s: &parsers::SassCounts) -> bool {
    s.ldl.saturating_add(s.stl) > 0
}

/// Whether the warnings are of the compiler-planted-trap family.
fn is_local_memory_warning(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::WmmaLocalMemory | FindingKind::LocalMemoryOperation
    )
}

/// What the compiler could not do on local memory, as its warnings say ("atomic", "wmma load or
/// store"), WMMA's words when they name none.
fn operation(warnings: &[Hit]) -> String {
    warnings
        .iter()
        .find_map(|(_, f)| parsers::local_memory_operation(&f.finding.message))
        .unwrap_or("wmma load or store")
        .to_string()
}

/// Whether the operation is a tensor-core fragment access (the rule's first case).
fn is_fragment(warnings: &[Hit]) -> bool {
    warnings.is_empty()
        || warnings
            .iter()
            .any(|(_, f)| f.finding.kind == FindingKind::WmmaLocalMemory)
}

/// Whether the config's program ran to its end under memcheck, or passed its check: a planted
/// trap that fired would have stopped it with a record.
fn ran_without_trapping(j: &crate::join::Joined, config: Option<&str>) -> bool {
    use crate::{run::StageKind, run::StageStatus};
    // Logs without a run (`exhibit explain`): a memcheck log that ran to its summary.
    let completed_memcheck = j.run.is_none()
        && j.sources_in(config).any(|s| s.kind == StageKind::Memcheck && s.log.complete);
    completed_memcheck
        || j.stages_in(config).any(|s| match s.kind {
            StageKind::Memcheck => matches!(s.status, StageStatus::Passed | StageStatus::Findings),
            StageKind::Check => s.status == StageStatus::Passed,
            _ => false,
        })
}

/// One note for the kernels whose planted trap never fired: the build's latent faults.
fn latent_draft(ctx: &Ctx, config: Option<&str>, latent: &[(KernelId, Vec<Hit>)]) -> Draft {
    let warnings: Vec<Hit> = latent.iter().flat_map(|(_, w)| w.iter().copied()).collect();
    let mut d = Draft::new(RuleId::WmmaLocalMemory, Level::Note, Message::new());
    d.config = config.map(str::to_string);
    d.key = "latent".into();
    if let Some((_, first)) = warnings.first() {
        d.evidence.push(ctx.finding_evidence(first));
        d.location = ctx.kernel_file(config).filter(|l| !l.file.starts_with('<'));
    }
    for (kernel, _) in latent.iter().take(4) {
        if let Some(view) = ctx.joined.kernel(config, kernel)
            && let Some(sass) = view.sass
        {
            d.evidence.push(ctx.source_evidence(
                view.sass_source,
                config,
                msg!(
                    "SASS of {}: {} BPT.TRAP",
                    code(kernel.as_str()),
                    sass.bpt_trap.to_string()
                ),
            ));
        }
    }
    d.explains.extend(warnings.iter().map(|(i, _)| *i));
    d.figures
        .insert("latent_kernels".into(), json!(latent.len()));
    d.confidence = Confidence::Medium;
    // What the run's own records say of each: a kernel a tool saw run reached no trap; of the
    // others, no record says whether they launched.
    let kernels: Vec<&KernelId> = latent.iter().map(|(k, _)| k).collect();
    let launched: Vec<&KernelId> =
        kernels.iter().copied().filter(|k| ctx.joined.model.ran(config, k)).collect();
    word_latent(&mut d, &operation(&warnings), is_fragment(&warnings), &kernels, &launched);
    d
}

/// Kernels as a list of code: "`a`, `b` and `c`".
fn kernel_list(kernels: &[&KernelId]) -> Message {
    Message::words(kernels.iter().map(|k| code(k.as_str()).into()).collect())
}

/// The words of the latent note: `op` on local memory in `kernels`, of which `launched` ran.
fn word_latent(
    d: &mut Draft,
    op: &str,
    fragment: bool,
    kernels: &[&KernelId],
    launched: &[&KernelId],
) {
    d.title = msg!(
        "Latent: {} on local memory in {} that no run reached",
        op,
        plural(kernels.len() as u64, "kernel", "kernels")
    );
    let how = if launched.is_empty() {
        msg!("they were never launched, or never reached the operation")
    } else if launched.len() == kernels.len() {
        msg!("each was launched (a tool recorded it) and never reached the operation")
    } else {
        msg!(
            "{} launched and never reached the operation; no record says whether the others \
             launched",
            kernel_list(launched)
        )
    };
    d.explanation = msg!(
        "The compiler warned that it cannot perform {} on local memory and planted a trap \
         (BPT.TRAP) in {}. The program ran under memcheck (or passed its check) with no trap \
         record in any of them: {}. A launch that does reach it fails with an unspecified \
         launch failure.",
        op,
        kernel_list(kernels),
        how
    );
    d.fix = if fragment {
        msg!(
            "Before launching them, pass the fragment operation a pointer into shared (or \
             global) memory, not a thread-local array; or stop instantiating the variants no \
             caller uses."
        )
    } else {
        msg!(
            "Before launching them, give the {} a shared- or global-memory address (a \
             per-thread array is private, so the operation needs no atomicity there: a plain \
             update does); or stop instantiating the variants no caller uses.",
            op
        )
    };
}

/// One draft for a config and kernel with the compiler's warning or a local-memory fault.
fn draft(
    ctx: &Ctx,
    config: Option<&str>,
    kernel: Option<&KernelId>,
    warnings: &[Hit],
    faults: &[Hit],
) -> Draft {
    let j = ctx.joined;
    // An invalid local access inside the fragment intrinsic itself names this fault twice
    // over: the space and the instruction.
    let inside = faults.iter().any(|(_, f)| in_intrinsic(f.finding));
    let fact = Wmma {
        fragment: is_fragment(warnings),
        op: operation(warnings),
        how_inside: warnings.is_empty() && inside,
    };
    let mut d = Draft::new(RuleId::WmmaLocalMemory, Level::Error, Message::new());
    d.config = config.map(str::to_string);
    d.kernel = kernel.map(KernelId::to_string);
    let view = kernel.and_then(|k| j.kernel(config, k));
    d.arch = view.and_then(|v| v.arch.clone());

    let mut said: Vec<Message> = Vec::new();
    let mut signals = usize::from(inside);
    if let Some((_, first)) = warnings.first() {
        signals += 1;
        let n = count(warnings, |_| true);
        said.push(msg!(
            "the compiler warned {} that {} on local memory",
            plural(n, "time", "times"),
            if fact.fragment {
                msg!("a WMMA load or store operates")
            } else {
                msg!("it cannot perform {}", &fact.op)
            }
        ));
        d.evidence.push(ctx.finding_evidence(first));
        d.figures.insert("compiler_warnings".into(), json!(n));
    }
    d.explains.extend(warnings.iter().map(|(i, _)| *i));
    if !faults.is_empty() {
        signals += 1;
        fault_records(ctx, &mut d, &mut said, (config, kernel), faults, &fact);
    }

    if let Some(sass) = view.and_then(|v| v.sass)
        && (sass.bpt_trap > 0 || local_ops(sass))
    {
        signals += 1;
        let ldl_stl = sass.ldl.saturating_add(sass.stl);
        let summary = msg!(
            "SASS of {}: {} BPT.TRAP, {} LDL, {} STL, {} HMMA",
            code(kernel.map_or("?", KernelId::as_str)),
            sass.bpt_trap.to_string(),
            sass.ldl.to_string(),
            sass.stl.to_string(),
            sass.hmma.to_string()
        );
        said.push(msg!(
            "its SASS holds {} BPT.TRAP and {} LDL/STL",
            sass.bpt_trap.to_string(),
            ldl_stl.to_string()
        ));
        d.evidence
            .push(ctx.source_evidence(view.and_then(|v| v.sass_source), config, summary));
        d.figures.insert("bpt_trap".into(), json!(sass.bpt_trap));
        d.figures.insert("ldl_stl".into(), json!(ldl_stl));
    }

    // The launch failure the fault causes, as the harness saw it.
    for r in &j.results {
        let same = r.config.as_deref() == config && kernel.is_none_or(|k| r.kernel == *k);
        if same && let Some(err) = &r.result.error {
            d.evidence.push(ctx.result_evidence(
                r,
                msg!(
                    "{} launch of {} failed: {}",
                    super::mode_name(r.result.mode),
                    code(r.result.kernel.as_str()),
                    quote(crate::text::scrub(err, &j.repo_files))
                ),
            ));
            break;
        }
    }

    if d.location.is_none() {
        d.location = warnings
            .first()
            .and_then(|(_, f)| ctx.place(f))
            .or_else(|| ctx.kernel_file(config));
    }
    // A toolkit header (the warning's `mma.hpp`) holds the instruction, not the mistake: it is
    // a label, and the headline points at the kernel's own file where one is known.
    if let Some(header) = d.location.take_if(|l| l.file.starts_with('<')) {
        d.spans.push(Span::secondary(header, header_label()));
        d.location = ctx.kernel_file(config).filter(|l| !l.file.starts_with('<'));
    }
    d.confidence = Confidence::from_signals(signals);
    d.figures.insert("signals".into(), json!(signals));
    word_wmma(&mut d, &fact, said);
    d
}

/// The records' counts of the findings `hits` whose kind `wanted` accepts.
fn count(hits: &[Hit], wanted: impl Fn(FindingKind) -> bool) -> u64 {
    hits.iter()
        .filter(|(_, f)| wanted(f.finding.kind))
        .map(|(_, f)| f.finding.count)
        .fold(0, u64::saturating_add)
}

/// What a draft's words turn on: a fragment access (else `op`, an operation the compiler
/// names), and whether only a `-G` build's invalid access inside the intrinsic shows it.
struct Wmma {
    fragment: bool,
    op: String,
    how_inside: bool,
}

/// The label of a place inside the toolkit's WMMA header.
fn header_label() -> Message {
    msg!("the fragment access, inside the toolkit's WMMA header")
}

/// The faults' records: what memcheck printed (into `said`), their evidence, the place and
/// the calls of the intrinsic they are inside, the stand-in note of a trap's line, and the
/// host-side errors that follow them.
fn fault_records(
    ctx: &Ctx,
    d: &mut Draft,
    said: &mut Vec<Message>,
    (config, kernel): (Option<&str>, Option<&KernelId>),
    faults: &[Hit],
    fact: &Wmma,
) {
    let j = ctx.joined;
    let fault_sources: BTreeSet<usize> = faults.iter().map(|(_, f)| f.source).collect();
    let traps = count(faults, |k| k == FindingKind::Trap);
    let local = count(faults, |k| k == FindingKind::InvalidAccess);
    let what: Vec<Message> = [
        (traps > 0).then(|| msg!("{} \"Trace/breakpoint trap\" records", traps.to_string())),
        (local > 0).then(|| msg!("{} invalid `__local__` accesses", local.to_string())),
    ]
    .into_iter()
    .flatten()
    .collect();
    // The printed records are capped by --print-limit; the summary counts them all.
    let reported: u64 = fault_sources
        .iter()
        .filter_map(|&s| j.source(s))
        .filter_map(|s| s.log.reported_errors)
        .fold(0, u64::saturating_add);
    let total = if reported > traps.saturating_add(local) {
        msg!(" ({} errors in the summary)", reported.to_string())
    } else {
        Message::new()
    };
    said.push(msg!(
        "memcheck printed {}{}{}",
        Message::words(what),
        kernel
            .map(|k| msg!(" in {}", code(k.as_str())))
            .unwrap_or_default(),
        total
    ));
    for (_, f) in faults.iter().take(2) {
        d.evidence.push(ctx.finding_evidence(f));
        if in_intrinsic(f.finding) {
            // The toolkit's header holds the instruction, not the mistake: a label.
            if let Some(header) = ctx.finding_location(f.finding) {
                d.spans.push(Span::secondary(header, header_label()));
            }
            said.push(msg!(
                "the accesses are inside {}, the toolkit's fragment {}",
                code(f.kernel.as_deref().unwrap_or_default()),
                if is_store(f.finding) { "store" } else { "load" }
            ));
            // Where the user calls it, from the line table of a build that keeps it a
            // function of its own (`-G`).
            let calls = user_calls(ctx, config, f.finding);
            if let Some(first) = calls.first()
                && d.location.is_none()
            {
                d.location = Some(first.clone());
                said.push(msg!(
                    "the SASS line table has {} call of it from the program's own code: {}",
                    if calls.len() == 1 { "one" } else { "each" },
                    Message::words(calls.iter().map(|c| path(c).into()).collect())
                ));
                for other in calls.iter().skip(1) {
                    let label = msg!("another call of the same fragment operation");
                    d.spans.push(Span::secondary(other.clone(), label));
                }
            }
        } else if d.location.is_none() {
            d.location = ctx.place(f);
            // A trap the compiler planted has the line it put the trap on, not the call
            // whose fragment access it replaced.
            if f.finding.kind == FindingKind::Trap
                && let Some(at) = &d.location
            {
                d.stands_in(if fact.fragment {
                    trap_note(at)
                } else {
                    msg!(
                        "{} is where the compiler put the trap: it proved the {} always reaches \
                         the local array and moved the trap up to the first place that leads \
                         to it (a loop's test, the branch before it), so the {} itself is at \
                         or just after this line.",
                        path(at),
                        &fact.op,
                        &fact.op
                    )
                });
            }
        }
    }
    d.figures.insert("trap_records".into(), json!(traps));
    d.figures
        .insert("invalid_local_accesses".into(), json!(local));
    // The host-side error that follows the trap is this fault's consequence.
    d.explains.extend(faults.iter().map(|(i, _)| *i));
    let follows = |k| matches!(k, FindingKind::HostApiError | FindingKind::DeviceException);
    for &source in &fault_sources {
        d.explains.extend(ctx.in_log(source, follows));
    }
}

/// The words of a local-memory fault: title, explanation (on the evidence `said`) and fix.
fn word_wmma(d: &mut Draft, fact: &Wmma, said: Vec<Message>) {
    let said = Message::words(said);
    let op = fact.op.as_str();
    if !fact.fragment {
        d.title = msg!("{} on thread-local memory: the compiler planted a trap", op).capitalised();
        d.explanation = msg!(
            "Evidence: {}. An {} was given an address in a thread-local array. Local memory is \
             private to each thread, and the compiler cannot perform the operation there: it \
             warns and plants a trap (BPT.TRAP) in its place, which fires at run time as \
             \"Trace/breakpoint trap\" and fails the launch with an unspecified launch failure.",
            said,
            op
        );
        d.fix = msg!(
            "Give the {} a shared- or global-memory address: a per-block `__shared__` array \
             updated by the block's threads, then combined into global memory once per block. A \
             per-thread array needs no atomic at all: a plain update does. Re-run memcheck: the \
             trap in the SASS should be gone.",
            op
        );
        return;
    }
    d.title = msg!("Tensor-core fragment loaded from thread-local memory");
    let how = if fact.how_inside {
        msg!(
            "In a `-G` build the compiler neither warns nor plants a trap: the intrinsic runs as \
             a call and reads the thread-local address as if it were a fragment's memory, \
             outside any valid window (`Invalid __local__` access), and the launch fails with \
             an unspecified launch failure."
        )
    } else {
        msg!(
            "The compiler warns and, on sm_90, plants a trap (BPT.TRAP) that fires at run time \
             as \"Trace/breakpoint trap\"; older archs (and `-G` builds) report \"Invalid \
             `__local__` read\" instead. Either way the launch fails with an unspecified launch \
             failure."
        )
    };
    d.explanation = msg!(
        "Evidence: {}. A tensor-core fragment load or store (wmma::load_matrix_sync / \
         store_matrix_sync, or ldmatrix) was given a pointer into a thread-local array. Local \
         memory is private to each thread, so a warp-collective fragment access cannot use it. \
         {}",
        said,
        how
    );
    d.fix = msg!(
        "Stage the tile in shared memory: declare it `__shared__` (or carve it from the dynamic \
         shared-memory buffer, 16-byte aligned), fill it cooperatively from global memory, \
         `__syncthreads()`, and pass the shared-memory pointer to load_matrix_sync (or load the \
         fragment with ldmatrix from shared memory). Re-run memcheck: the trap and the LDL/STL \
         in the SASS should be gone."
    );
}

/// The tensor-core intrinsics whose pointer must be shared or global memory.
const INTRINSICS: &[&str] = &["load_matrix_sync", "store_matrix_sync", "ldmatrix"];

/// The user's calls of the intrinsic a fault is inside: the call sites the SASS line table
/// (`nvdisasm -g`) gives in this config, of the same function and fragment kind (`matrix_a`,
/// `matrix_b`, `accumulator`), in the run's own files.
fn user_calls(ctx: &Ctx, config: Option<&str>, f: &parsers::Finding) -> Vec<SourceLocation> {
    let j = ctx.joined;
    let Some(raw) = f.kernel.as_deref() else {
        return Vec::new();
    };
    let id = KernelId::of(raw);
    const KINDS: [&str; 3] = ["matrix_a", "matrix_b", "accumulator"];
    let kind = |name: &str| KINDS.iter().find(|k| name.contains(*k)).copied();
    let mut calls: Vec<SourceLocation> = j
        .sources_in(config)
        .flat_map(|s| &s.log.call_sites)
        .filter(|c| KernelId::of(&c.callee) == id && kind(&c.callee) == kind(raw))
        .filter_map(|c| {
            let file = crate::text::relative_path(c.file.as_deref()?, &j.repo_files);
            let own = j.repo_files.contains(&file)
                || (!file.starts_with('<') && [".cu", ".cuh"].iter().any(|x| file.ends_with(x)));
            own.then_some(SourceLocation { file, line: c.line })
        })
        .collect();
    calls.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    calls.dedup();
    calls
}

/// Whether a finding's access is inside a tensor-core intrinsic (the record's own function, or
/// its innermost device frame).
fn in_intrinsic(f: &parsers::Finding) -> bool {
    let named = |name: &str| {
        let base = KernelId::of(name);
        INTRINSICS
            .iter()
            .any(|i| base == *i || base.starts_with("__ldmatrix"))
    };
    f.kernel.as_deref().is_some_and(named)
        || f.device_frames
            .first()
            .and_then(|fr| fr.function.as_deref())
            .is_some_and(named)
}

fn is_store(f: &parsers::Finding) -> bool {
    f.kernel
        .as_deref()
        .is_some_and(|k| KernelId::of(k) == "store_matrix_sync")
}

/// The kernel a record's host backtrace launched: the first host frame that names a kernel of
/// this config's build (the launch stub `void kernel<...>(...)` sits just above
/// `cudaLaunchKernel`).
fn launched_kernel(ctx: &Ctx, config: Option<&str>, f: &parsers::Finding) -> Option<KernelId> {
    f.host_frames
        .iter()
        .filter_map(|fr| fr.function.as_deref())
        .map(KernelId::of)
        .find(|name| ctx.joined.kernel(config, name).is_some())
}

#[cfg(test)]
mod tests {
    use crate::diagnosis::Level;
    use crate::rules::RuleId;
    use crate::rules::testing::fixture_case;

    /// `wmma_local.cu` on the H200: nvcc 13.0 warns that it cannot perform wmma load or store
    /// on local memory (`ptxas/device_wmma_local.log`), cuobjdump's SASS of `wmma_from_local`
    /// holds HMMA and the trap planted for it (`sass/device_wmma_local_cuobjdump.log`), and
    /// memcheck reports the trap (`compute-sanitizer/memcheck_wmma_local.log`).
    #[test]
    fn fires_on_a_fragment_loaded_from_local_memory_that_traps() {
        let d = fixture_case!(
            Compile, "ptxas/device_wmma_local.log";
            Sass, "sass/device_wmma_local_cuobjdump.log";
            Memcheck, "compute-sanitizer/memcheck_wmma_local.log"
        )
        .only(RuleId::WmmaLocalMemory);
        assert_eq!(d.level, Level::Error);
        assert_eq!(d.kernel.as_deref(), Some("wmma_from_local"));
        // A release build keeps no line of the fragment access: the tool located it in the
        // toolkit's WMMA header, a supporting span.
        assert_eq!(d.location, None);
        assert!(
            d.spans
                .iter()
                .any(|s| s.location.file == "<toolkit>/include/crt/mma.hpp"),
            "{:?}",
            d.spans
        );
        assert!(
            d.figures["trap_records"].as_u64().is_some_and(|n| n > 0),
            "{:?}",
            d.figures
        );
    }

    /// `clean.cu` on the H200 (`ptxas/device_clean.log`, `sass/device_clean_cuobjdump.log`,
    /// `compute-sanitizer/memcheck_clean.log`): `wmma_shared` loads its fragments from shared
    /// memory, with HMMA in its SASS, no warning, no trap.
    #[test]
    fn stays_silent_on_fragments_loaded_from_shared_memory() {
        fixture_case!(
            Compile, "ptxas/device_clean.log";
            Sass, "sass/device_clean_cuobjdump.log";
            Memcheck, "compute-sanitizer/memcheck_clean.log"
        )
        .silent(RuleId::WmmaLocalMemory);
    }

    /// `clean.cu` on the H200 before its fix (then named `clean.cu`, now
    /// `programs/cpasync_trap.cu`): a 2-byte cp.async traps in `wmma_shared`
    /// (`compute-sanitizer/memcheck_cpasync_trap.log`, its frames in `__pipeline_commit`), with
    /// no compiler warning about fragments (`ptxas/device_cpasync_trap.log`). Its SASS
    /// (`sass/device_cpasync_trap_cuobjdump.log`) holds HMMA and the cp.async's BPT.TRAP, but
    /// no local load or store: nothing of it is a fragment on local memory.
    #[test]
    fn stays_silent_on_a_cp_async_trap_the_compiler_did_not_warn_about() {
        fixture_case!(
            Compile, "ptxas/device_cpasync_trap.log";
            Sass, "sass/device_cpasync_trap_cuobjdump.log";
            Memcheck, "compute-sanitizer/memcheck_cpasync_trap.log"
        )
        .silent(RuleId::WmmaLocalMemory);
    }
}
