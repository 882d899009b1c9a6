//! `shared-memory-race`: racecheck's hazard between a write and a read (or two writes) of the
//! same shared-memory address with no barrier between them. A race between lanes of one warp
//! (racecheck's warp-level programming hazard, the finding's `sync_scope` of warp) is missing a
//! `__syncwarp()`; a race between warps of a block is missing a `__syncthreads()`.

mod merge;

use parsers::facts::HazardType;
use parsers::{Access, FindingKind, Severity};
use serde_json::json;

use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Helper, Level, SourceLocation, inlined_in};
use crate::kernel_id::KernelId;
use crate::text::{md_code, md_text};
use merge::{merge_adjacent_writes, merge_sites_of_one_barrier};

/// One draft per distinct pair of sites.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let mut out = Vec::new();
    for (index, f) in j.findings.iter().enumerate() {
        if f.finding.kind != FindingKind::Race {
            continue;
        }
        let race = Race::of(ctx, f);
        let sides = sides_of(ctx, &race);
        let pairs = sides.len();
        for (side, pair) in sides.into_iter().enumerate() {
            out.push(pair_draft(ctx, index, f, &race, side, pair, pairs));
        }
    }
    merge_adjacent_writes(merge_sites_of_one_barrier(out, &j.repo_files))
}

/// One side of a race besides the finding's own site: its access, its place, and the helper
/// it is in when that is not the kernel.
type Side = (Option<Access>, Option<SourceLocation>, Option<Helper>);

/// What one racecheck finding says for every pair of sites it names.
struct Race<'f> {
    finding: &'f parsers::Finding,
    first_access: Option<Access>,
    fallback_access: Option<Access>,
    /// The finding's own site.
    first: Option<SourceLocation>,
    hazards: u64,
    hazard_type: Option<HazardType>,
    warp: bool,
    cp_async: bool,
    /// Two asynchronous copies into the same bytes.
    async_copy: bool,
    kernel: Option<String>,
    helpers: Vec<Helper>,
    /// The tool's own count per side, in order.
    per_side: Vec<u64>,
}

impl<'f> Race<'f> {
    fn of(ctx: &Ctx, f: &crate::join::FindingRef<'f>) -> Race<'f> {
        let j = ctx.joined;
        let finding = f.finding;
        let (first_access, fallback_access) = accesses(finding);
        let first = ctx.finding_location(finding);
        let hazards = finding.facts.race_hazards().unwrap_or(finding.count);
        let hazard_type = finding.facts.race.as_deref().and_then(|r| r.hazard_type);
        let warp = is_warp_level(finding);
        let cp_async = has_cp_async(ctx, f);
        // A write by an asynchronous copy (cp.async): the finding's own site or a side's, by
        // the copy primitive's name or the user's line there.
        // Two copies into the same bytes: the finding's own write and a side's write, both by
        // the asynchronous copy at one line. (A copy racing only with reads may as well be a
        // missing barrier after a correct wait: the barrier advice covers it.)
        let async_copy = first_access != Some(Access::Read)
            && copies_async(ctx, first.as_ref(), finding.kernel.as_deref())
            && finding.sides.iter().any(|r| {
                r.access == Some(Access::Write)
                    && r.location.line == first.as_ref().and_then(|l| l.line)
                    && copies_async(ctx, None, r.location.function.as_deref())
                    || copies_async(ctx, first.as_ref(), None)
            });
        // One pair per other side the tool named ("... and Write access at X", "and ... at Y").
        let (mut kernel, mut helpers) = ctx.kernel_site(f);
        // A helper's frame (the toolkit's copy primitive, a device function) named where the
        // kernel the other side names is one the build compiled: that kernel is the launch.
        if let Some(named) = f.kernel.as_ref()
            && j.kernel(f.config.as_deref(), named).is_none()
            && let Some(launched) = finding
                .sides
                .iter()
                .filter_map(|r| r.location.function.as_deref())
                .map(KernelId::of)
                .find(|k| j.kernel(f.config.as_deref(), k).is_some())
        {
            kernel = Some(launched.into());
            let helper = Helper {
                name: named.clone().into(),
                location: first.clone(),
            };
            if !helpers.contains(&helper) {
                helpers.push(helper);
            }
        }
        // The tool's own count per side ("and Write access at ... [512 hazards]"), in order.
        let per_side: Vec<u64> = finding
            .sides
            .iter()
            .filter(|r| r.location.file.is_some() || r.location.line.is_some())
            .filter_map(|r| r.hazards)
            .collect();
        Race {
            finding,
            first_access,
            fallback_access,
            first,
            hazards,
            hazard_type,
            warp,
            cp_async,
            async_copy,
            kernel,
            helpers,
            per_side,
        }
    }
}

/// One pair per other side the tool named ("... and Write access at X", "and ... at Y"); one
/// side with no place when it named none.
fn sides_of(ctx: &Ctx, race: &Race) -> Vec<Side> {
    let j = ctx.joined;
    let Race {
        finding,
        fallback_access,
        ..
    } = *race;
    let Race {
        kernel, helpers, ..
    } = race;
    let mut sides: Vec<(Option<Access>, Option<SourceLocation>, Option<Helper>)> = finding
        .sides
        .iter()
        .filter(|r| r.location.file.is_some() || r.location.line.is_some())
        .map(|r| {
            let access = r.access.or(fallback_access);
            let loc = r.location.file.as_ref().map(|file| SourceLocation {
                file: crate::text::relative_path(file, &j.repo_files),
                line: r.location.line,
            });
            // The function of the other side (`attn::ldmatrix_x4(...)`), when it is a
            // helper inlined into the kernel rather than the kernel itself.
            let helper = r
                .location
                .function
                .as_deref()
                .map(KernelId::of)
                .filter(|name| !helpers.is_empty() && Some(name.as_str()) != kernel.as_deref())
                .map(|name| Helper {
                    name: name.into(),
                    location: loc.clone(),
                });
            (access, loc, helper)
        })
        .collect();
    if sides.is_empty() {
        sides.push((fallback_access, None, None));
    }
    sides
}

/// Both sides of the hazard (the one the diagnosis points at is its primary span), and where the
/// program's own code brought the write in, when it sits in an inlined helper (a header's copy
/// primitive, a wrapper): the SASS line table's inlining.
fn spans(
    ctx: &Ctx,
    config: Option<&str>,
    write: &Option<SourceLocation>,
    other: &Option<SourceLocation>,
    other_word: &str,
) -> Vec<crate::diagnosis::Span> {
    let mut spans: Vec<crate::diagnosis::Span> = [
        (write.clone(), "the write".to_string()),
        (other.clone(), format!("the {other_word}")),
    ]
    .into_iter()
    .filter_map(|(loc, label)| Some(crate::diagnosis::Span::secondary(loc?, label)))
    .collect();
    if let Some(at) = write {
        for call in ctx.inlined_into(config, at) {
            if !spans.iter().any(|s| s.location == call) {
                spans.push(crate::diagnosis::Span::secondary(
                    call,
                    "the program's call that inlines the write",
                ));
            }
        }
    }
    spans
}

/// What the wording of one pair reads: its two sites, how they race, and the counts and
/// kernel already worded.
#[derive(Clone, Copy)]
struct Pair<'p> {
    write: &'p Option<SourceLocation>,
    other: &'p Option<SourceLocation>,
    other_access: Access,
    other_word: &'static str,
    same_file: bool,
    write_line: Option<u32>,
    other_line: Option<u32>,
    hazards_text: &'p str,
    kernel_text: &'p str,
    /// The two sites as the advice names them (`line 17`, `` `common.cuh:17` ``).
    ws: &'p str,
    os: &'p str,
    warp: bool,
    cp_async: bool,
    async_copy: bool,
}

/// The draft of one pair: the finding's own site and one other side.
fn pair_draft(
    ctx: &Ctx,
    index: usize,
    f: &crate::join::FindingRef,
    race: &Race,
    side: usize,
    (second_access, second, other_helper): Side,
    pairs: usize,
) -> Draft {
    let Race {
        finding,
        first_access,
        hazards,
        warp,
        cp_async,
        async_copy,
        ..
    } = *race;
    let Race {
        first,
        hazard_type,
        kernel,
        helpers,
        per_side,
        ..
    } = race;
    let side_hazards = if per_side.len() == pairs {
        per_side.get(side).copied()
    } else {
        None
    };
    // Name the write site and the other side.
    let (write, other, other_access) = match (first_access, second_access) {
        (Some(Access::Read), Some(Access::Write)) => (second.clone(), first.clone(), Access::Read),
        (_, Some(b)) => (first.clone(), second.clone(), b),
        (Some(Access::Read), None) => (second.clone(), first.clone(), Access::Read),
        _ => (first.clone(), second.clone(), Access::Read),
    };
    let other_word = match other_access {
        Access::Read => "read",
        Access::Write => "write",
    };

    // racecheck's own severity, kept: an Error is a race; a Warning between two writes
    // (lanes writing the value every other lane holds) may be benign and never
    // outranks a failing check. A Warning with a read on one side is a read that may
    // see the old value: a race that can explain a wrong output.
    let level = if finding.severity == Severity::Error || other_access == Access::Read {
        Level::Error
    } else {
        Level::Warning
    };
    let mut d = Draft::new(
        RuleId::SharedMemoryRace,
        level,
        if warp {
            "Shared-memory race within a warp: missing `__syncwarp()`"
        } else {
            "Shared-memory race: missing barrier"
        },
    );
    d.config = f.config.clone();
    d.kernel = kernel.clone();
    d.helpers = helpers.clone();
    d.helpers
        .extend(other_helper.filter(|h| !helpers.contains(h)));
    d.evidence.push(ctx.finding_evidence(f));
    d.explains.push(index);
    d.spans = spans(ctx, f.config.as_deref(), &write, &other, other_word);
    d.figures
        .insert("hazards".into(), json!(side_hazards.unwrap_or(hazards)));
    if let Some(t) = hazard_type {
        d.figures.insert("hazard_type".into(), json!(t.word()));
    }
    if warp {
        d.figures.insert("scope".into(), json!("warp"));
    }
    let both_sides = write.is_some() && other.is_some();
    d.confidence = match (finding.severity, both_sides) {
        (Severity::Error, true) => Confidence::High,
        (Severity::Error, false) | (_, true) => Confidence::Medium,
        _ => Confidence::Low,
    };

    let same_file = match (&write, &other) {
        (Some(a), Some(b)) => a.file == b.file,
        _ => false,
    };
    let write_line = write.as_ref().and_then(|l| l.line);
    let other_line = other.as_ref().and_then(|l| l.line);
    let hazards_text = match side_hazards {
        Some(n) => crate::text::plural(n, "hazard", "hazards"),
        None if pairs > 1 => format!(
            "{} between this site and {pairs} others",
            crate::text::plural(hazards, "hazard", "hazards")
        ),
        None => crate::text::plural(hazards, "hazard", "hazards"),
    };
    let kernel_text = match (&d.kernel, inlined_in(&d.helpers)) {
        (Some(k), Some(inlined)) => format!(" in {}, {inlined}", md_code(k)),
        (Some(k), None) => format!(" in {}", md_code(k)),
        (None, Some(inlined)) => format!(" {inlined}"),
        (None, None) => String::new(),
    };
    // "line 17", or "`common.cuh:17`" when the two sites are in different files.
    let spot = |l: &Option<SourceLocation>| match l {
        Some(loc) if !same_file => md_code(&format!(
            "{}:{}",
            loc.file.rsplit('/').next().unwrap_or(&loc.file),
            loc.line.map(|n| n.to_string()).unwrap_or_default()
        )),
        Some(loc) => format!(
            "line {}",
            loc.line.map(|n| n.to_string()).unwrap_or_default()
        ),
        None => "an unnamed site".to_string(),
    };
    let (ws, os) = (spot(&write), spot(&other));
    let pair = Pair {
        write: &write,
        other: &other,
        other_access,
        other_word,
        same_file,
        write_line,
        other_line,
        hazards_text: &hazards_text,
        kernel_text: &kernel_text,
        ws: &ws,
        os: &os,
        warp,
        cp_async,
        async_copy,
    };
    word_pair(ctx, &mut d, &pair);
    finish_pair(ctx, &mut d, finding, &pair, pairs);
    d
}

/// The title, explanation, fix and primary place of one pair: a race within a warp, a write
/// after a read, a missing barrier between two lines, two asynchronous copies in flight, or one
/// site.
fn word_pair(ctx: &Ctx, d: &mut Draft, p: &Pair) {
    let Pair {
        write,
        other,
        other_access,
        same_file,
        write_line,
        other_line,
        hazards_text,
        kernel_text,
        warp,
        async_copy,
        ..
    } = *p;
    match (write_line, other_line) {
        (Some(w), Some(o)) if warp && w != o => {
            warp_pair(d, p, w, o);
        }
        (Some(w), Some(o)) if same_file && w > o && other_access == Access::Read => {
            // Write after read in program order: the next iteration overwrites what a slower
            // warp still reads.
            d.title = format!(
                "Shared-memory race: missing barrier between the read at line {o} and the write at line {w}"
            );
            d.location = write.clone();
            d.explanation = format!(
                "racecheck reports {hazards_text}{kernel_text} between the read at {} and the \
             later write at {} (write-after-read): a warp that finished its read moves on \
             and overwrites the shared data while another warp may still be reading it.",
                line(other),
                line(write)
            );
            d.fix = format!(
                "Add `__syncthreads()` after the read at line {o} and before the write at \
                 line {w} (in a loop, before the next iteration's write; or double-buffer \
                 the tile and wait on the stage you are about to overwrite)."
            );
        }
        (Some(w), Some(o)) if w != o || !same_file => {
            barrier_pair(d, p, w, o);
        }
        (Some(w), Some(o))
            if w == o && same_file && other_access == Access::Write && async_copy =>
        {
            // Two writes by the same asynchronous copy instruction: two copies into one
            // destination are in flight at once.
            d.title = format!(
                "cp.async race: two asynchronous copies into the same shared address in \
                 flight at once at {}",
                line(write)
            );
            d.location = write.clone();
            d.explanation = format!(
                "racecheck reports {hazards_text}{kernel_text} between two writes of the \
                 asynchronous copy at {}{}: {ASYNC_MECHANISM}",
                line(write),
                write
                    .as_ref()
                    .and_then(|at| ctx.site_line(at))
                    .map(|l| format!(" (the line: {})", md_code(l)))
                    .unwrap_or_default()
            );
            d.fix = ASYNC_FIX.to_string();
        }
        _ => {
            d.title = if warp {
                format!("Shared-memory race within a warp at {}", line(write))
            } else {
                format!("Shared-memory race at {}", line(write))
            };
            d.location = write.clone().or(other.clone());
            d.explanation = format!(
                "racecheck reports {hazards_text}{kernel_text} at {}{}: several threads access \
             the same shared-memory address, at least one of them writing, with no barrier \
             ordering them.",
                line(write),
                other
                    .as_ref()
                    .map(|o| format!(" and {}", md_text(&o.to_string())))
                    .unwrap_or_default()
            );
            d.fix = if warp {
                "Order the accesses with `__syncwarp()` (the racing threads are lanes of \
                 one warp, which are not implicitly synchronous since Volta), or give each \
                 lane its own address."
            } else {
                "Order the accesses with `__syncthreads()` (or `__syncwarp()` within a \
                 warp), or give each thread its own address."
            }
            .to_string();
        }
    }
}

/// A site as an explanation names it, or "an unnamed site".
fn line(l: &Option<SourceLocation>) -> String {
    l.as_ref()
        .map(|l| md_text(&l.to_string()))
        .unwrap_or_else(|| "an unnamed site".to_string())
}

/// Lanes of one warp racing at two lines (`w`, the write's; `o`, the other side's): a missing
/// `__syncwarp()`.
fn warp_pair(d: &mut Draft, p: &Pair, w: u32, o: u32) {
    let Pair {
        write,
        other,
        other_access,
        other_word,
        same_file,
        hazards_text,
        kernel_text,
        ws,
        os,
        ..
    } = *p;
    // Lanes of one warp: racecheck's warp-level programming hazard. Program order
    // says little here (a warp-synchronous loop writes at one line and the next
    // step reads at an earlier one), so the advice names both lines.
    d.title = if same_file && w > o && other_access == Access::Read {
        format!(
            "Shared-memory race within a warp: missing `__syncwarp()` between the \
             read at line {o} and the write at line {w}"
        )
    } else {
        if same_file {
            format!(
                "Shared-memory race within a warp: missing `__syncwarp()` between \
                 line {} and line {}",
                w.min(o),
                w.max(o)
            )
        } else {
            format!(
                "Shared-memory race within a warp: missing `__syncwarp()` between \
                 the write at {ws} and the {other_word} at {os}"
            )
        }
    };
    d.location = other.clone();
    d.explanation = format!(
        "racecheck reports {hazards_text}{kernel_text} between threads of one warp \
         (a warp-level programming hazard): lanes {other_word} at {} what other \
         lanes of the same warp write at {}, with no `__syncwarp()` between the \
         two. Since Volta (independent thread scheduling) the lanes of a warp are \
         not implicitly synchronous: code that assumes they run in lockstep \
         (warp-synchronous programming, `volatile` shared memory included) may \
         {other_word} the old or a half-written value.",
        line(other),
        line(write)
    );
    d.fix = format!(
        "Add `__syncwarp()` between the write at {ws} and the {other_word} at \
         {os} (in a loop, between one step's writes and the next step's \
         reads), where every lane of the warp reaches it: outside lane-dependent \
         branches, or with a mask naming exactly the lanes that call it. The \
         racing threads are lanes of one warp, so `__syncthreads()` is not the \
         fix; keeping the values in registers with `__shfl_down_sync()` avoids \
         the shared memory altogether."
    );
}

/// Threads racing at two lines (`w`, the write's; `o`, the other side's) with no barrier
/// between them: a missing `__syncthreads()`.
fn barrier_pair(d: &mut Draft, p: &Pair, w: u32, o: u32) {
    let Pair {
        write,
        other,
        other_word,
        same_file,
        hazards_text,
        kernel_text,
        ws,
        os,
        cp_async,
        ..
    } = *p;
    d.title = if same_file {
        format!(
            "Shared-memory race: missing barrier between line {} and line {}",
            w.min(o),
            w.max(o)
        )
    } else {
        format!(
            "Shared-memory race: missing barrier between the write at {ws} and \
             the {other_word} at {os}"
        )
    };
    d.location = other.clone();
    d.explanation = format!(
        "racecheck reports {hazards_text}{kernel_text}: threads {other_word} at {} \
     what other threads write at {}, with no barrier between the two, so the \
     {other_word} may see the old or a half-written value.",
        line(other),
        line(write)
    );
    d.fix = format!(
        "Add `__syncthreads()` between the write at {ws} and the {other_word} at \
         {os}{}.",
        if cp_async {
            " (after cp.async writes: `cp.async.wait_group` / \
             `__pipeline_wait_prior` first, then the barrier)"
        } else {
            ""
        }
    );
}

/// What every pair's draft adds once worded: the advice for a warning of unsaid scope, its key,
/// the number of pairs, and for two asynchronous copies, the user's own line as its place.
fn finish_pair(ctx: &Ctx, d: &mut Draft, finding: &parsers::Finding, p: &Pair, pairs: usize) {
    let j = ctx.joined;
    let Pair {
        write,
        other,
        async_copy,
        ..
    } = *p;
    // A warning whose scope racecheck did not say (its analysis report): the threads
    // may be lanes of one warp or warps of a block. The barrier that orders both leads.
    if finding.severity == Severity::Warning && finding.sync_scope.is_none() && !async_copy {
        d.fix.push_str(
            " racecheck reports this race as a warning without saying whether the \
             racing threads are lanes of one warp or warps of a block: with blocks of \
             more than one warp, `__syncthreads()` is the fix; only where every racing \
             thread is a lane of one warp (a block of 32 threads, warp-synchronous code) \
             is `__syncwarp()` enough.",
        );
    }
    d.key = format!(
        "{}|{}",
        write.as_ref().map(|l| l.to_string()).unwrap_or_default(),
        other.as_ref().map(|l| l.to_string()).unwrap_or_default()
    );
    if pairs > 1 {
        d.figures.insert("pairs".into(), json!(pairs));
    }
    if async_copy {
        d.figures.insert("async_copy".into(), json!(true));
        // The copy primitive inside the toolkit's header is a label; the headline is
        // the user's own line on the other side, where there is one.
        if d.location
            .as_ref()
            .is_some_and(|l| !is_users(l, &j.repo_files))
            && let Some(own) = [other, write]
                .into_iter()
                .flatten()
                .find(|l| is_users(l, &j.repo_files))
        {
            d.location = Some(own.clone());
        }
    }
}

/// Whether a place is in one of the run's own input files (not a toolkit or system header).
fn is_users(at: &SourceLocation, repo_files: &[String]) -> bool {
    crate::text::is_users_file(&at.file, repo_files)
}

/// Whether racecheck reported the race between lanes of one warp (the parser's typed scope).
fn is_warp_level(finding: &parsers::Finding) -> bool {
    finding.sync_scope == Some(parsers::SyncScope::Warp)
}

/// Whether the kernel copies into shared memory with cp.async (LDGSTS in its SASS): the kernel
/// the finding names, else any kernel of its config (racecheck may name a device function).
fn has_cp_async(ctx: &Ctx, f: &crate::join::FindingRef) -> bool {
    let j = ctx.joined;
    let config = f.config.as_deref();
    let cp_async = |k: &crate::join::KernelView| k.sass.is_some_and(|s| s.ldgsts > 0);
    match f.kernel.as_ref().and_then(|k| j.kernel(config, k)) {
        Some(k) if k.sass.is_some() => cp_async(k),
        _ => j
            .kernels
            .iter()
            .filter(|k| k.config.as_deref() == config)
            .any(cp_async),
    }
}

/// How an asynchronous copy races, whichever the other side is.
const ASYNC_MECHANISM: &str = "the copy is in flight (issued, not yet retired by \
    `cp.async.wait_group` or `__pipeline_wait_prior`) while the same bytes are copied into again \
    or read. A barrier alone does not order an asynchronous copy; only a wait on its group does. \
    It is what a pipeline does when its wait count does not match the copies in flight, or when \
    it refills a stage before the copy already filling it completed: a prologue that prefetches \
    S stages followed by a loop that loads tile n + 1 instead of n + S issues each tile twice, \
    and `wait_group<S - 1>` then no longer means that the stage read next is complete.";

/// The fix for [`ASYNC_MECHANISM`].
const ASYNC_FIX: &str = "Issue each tile's copy once: the loop loads the tile the prologue has \
    not (n + STAGES), into the stage the previous iteration's compute finished with, after a \
    `__syncthreads()`; and read a stage only after `cp.async.wait_group<N>` (or \
    `__pipeline_wait_prior(N)`) has retired the group that filled it, N being the groups \
    committed after it, followed by `__syncthreads()`.";

/// Whether a write is an asynchronous copy into shared memory, as the function racecheck names
/// there (the toolkit's `cp_async` primitive under `__pipeline_memcpy_async`, a `cp_async`
/// wrapper) or the user's line there says (`cp.async` in inline PTX, `cuda::memcpy_async`).
fn copies_async(ctx: &Ctx, at: Option<&SourceLocation>, function: Option<&str>) -> bool {
    const MARKS: [&str; 3] = ["cp.async", "cp_async", "memcpy_async"];
    let says = |text: &str| MARKS.iter().any(|m| text.contains(m));
    function.is_some_and(says) || at.and_then(|at| ctx.site_line(at)).is_some_and(says)
}

/// The two sides' access kinds: the finding's own access and the other side's, or, where the
/// record does not name both, the pair the parser read from the tool's wording or hazard type.
fn accesses(finding: &parsers::Finding) -> (Option<Access>, Option<Access>) {
    let other = finding.sides.iter().find_map(|s| s.access);
    if finding.access.is_some() && other.is_some() {
        return (finding.access, other);
    }
    match finding.race_accesses {
        Some([first, second]) => (first, second),
        None => (finding.access, other),
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, parsers_fixture, place};
    use crate::{diagnosis::Level, run::StageKind};

    /// racecheck on `race.cu` (`compute-sanitizer/racecheck_race.log`): a read at line 12
    /// races with the writes at lines 10 and 14, 512 hazards each, no barrier between them.
    #[test]
    fn fires_on_a_read_that_races_with_writes_to_the_same_shared_memory() {
        let drafts = Case::new()
            .log(
                StageKind::Racecheck,
                "release",
                "sm_90",
                parsers_fixture!("compute-sanitizer/racecheck_race.log"),
            )
            .drafts(RuleId::SharedMemoryRace);
        assert!(!drafts.is_empty());
        for d in &drafts {
            assert_eq!(d.rule, RuleId::SharedMemoryRace);
            assert_eq!(d.level, Level::Error);
            assert_eq!(d.kernel.as_deref(), Some("reverse_tile"));
        }
        let places: Vec<Option<String>> = drafts.iter().map(place).collect();
        assert!(
            places.iter().any(|p| p.as_deref() == Some("race.cu:12")),
            "{places:?}"
        );
        let hazards: u64 = drafts
            .iter()
            .filter_map(|d| d.figures.get("hazards").and_then(|h| h.as_u64()))
            .sum();
        assert!(hazards >= 512, "{drafts:?}");
    }

    /// racecheck on `issue12/warp_race.cu fixed` (`compute-sanitizer/racecheck_warp_race_fixed.log`):
    /// the same program with its barrier, 0 hazards.
    #[test]
    fn stays_silent_on_the_program_with_its_barrier_in_place() {
        let drafts = Case::new()
            .log(
                StageKind::Racecheck,
                "fixed",
                "sm_90",
                parsers_fixture!("compute-sanitizer/racecheck_warp_race_fixed.log"),
            )
            .drafts(RuleId::SharedMemoryRace);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
