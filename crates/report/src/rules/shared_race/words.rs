//! The words of the `shared-memory-race` diagnoses: one `word_*` function per diagnosis of a
//! pair of sites (its [`Pair`] and [`super::PairKind`] decided in the rule), the labels of its spans,
//! and the mechanism and fix of a race with an asynchronous copy.

use parsers::Access;

use super::{Mark, Pair, short_site};
use crate::diagnosis::{Draft, Helper, SourceLocation, inlined_in};
use crate::message::{Message, code, msg, quote};
use crate::rules::access_word;
use crate::text::plural;

/// A span's label: what it marks, in a few words.
pub(super) fn word_mark(mark: Mark) -> Message {
    match mark {
        Mark::Access(access) => msg!("the {}", access_word(Some(access))),
        Mark::InliningCall => msg!("the program's call that inlines the write"),
    }
}

/// " in `kernel`", with the inlined helpers the sites are in (followed by `after`), or nothing.
pub(super) fn word_kernel_of(kernel: Option<&str>, helpers: &[Helper], after: &str) -> Message {
    match (kernel, inlined_in(helpers)) {
        (Some(k), Some(inlined)) => msg!(" in {}, {}{}", code(k), inlined, after),
        (Some(k), None) => msg!(" in {}", code(k)),
        (None, Some(inlined)) => msg!(" {}{}", inlined, after),
        (None, None) => Message::new(),
    }
}

/// What racecheck reports of a pair, as an explanation opens: its hazards (the tool's count for
/// it, or the finding's count between this site and the others where the tool did not count per
/// side) and its kernel, with the inlined helpers its sites are in.
fn word_reports(p: &Pair) -> Message {
    let pairs = p.race.sides.len();
    let hazards = plural(
        p.side_hazards.unwrap_or(p.race.hazards),
        "hazard",
        "hazards",
    );
    let others = match p.side_hazards {
        None if pairs > 1 => msg!(" between this site and {} others", pairs.to_string()),
        _ => Message::new(),
    };
    let kernel = word_kernel_of(p.race.kernel.as_deref(), &p.helpers, "");
    msg!("racecheck reports {}{}{}", hazards, others, kernel)
}

/// A site as the advice names it: "line 17", or `common.cuh:17` when the two sites are in
/// different files, or "an unnamed site".
fn word_spot(p: &Pair, l: &Option<SourceLocation>) -> Message {
    let line = |loc: &SourceLocation| loc.line.map(|n| n.to_string()).unwrap_or_default();
    match l {
        Some(loc) if !p.same_file => {
            Message::from(short_site(&format!("{}:{}", loc.file, line(loc))))
        }
        Some(loc) => msg!("line {}", line(loc)),
        None => msg!("an unnamed site"),
    }
}

/// The write and the other side as the advice names them: "the write at line 12 and the read
/// at line 17".
fn word_write_and_other(p: &Pair) -> Message {
    msg!(
        "the write at {} and the {} at {}",
        word_spot(p, &p.write),
        access_word(Some(p.other_access)),
        word_spot(p, &p.other)
    )
}

/// The two lines a title names (`w`, the write's; `o`, the other side's): "line 12 and line
/// 17" in one file, else the write and the other side with their files.
fn word_between(p: &Pair, w: u32, o: u32) -> Message {
    if p.same_file {
        msg!(
            "line {} and line {}",
            w.min(o).to_string(),
            w.max(o).to_string()
        )
    } else {
        word_write_and_other(p)
    }
}

/// A read at line `o` before a write at line `w`, as a title names them.
fn word_read_then_write(w: u32, o: u32) -> Message {
    msg!(
        "the read at line {} and the write at line {}",
        o.to_string(),
        w.to_string()
    )
}

/// A site as an explanation names it, or "an unnamed site".
fn word_site(l: &Option<SourceLocation>) -> Message {
    l.as_ref()
        .map(|l| Message::from(quote(l.to_string())))
        .unwrap_or_else(|| msg!("an unnamed site"))
}

/// Lanes of one warp racing at two lines (`w`, the write's; `o`, the other side's): a missing
/// `__syncwarp()`.
pub(super) fn word_warp_pair(d: &mut Draft, p: &Pair, w: u32, o: u32) {
    let other_word = access_word(Some(p.other_access));
    // Lanes of one warp: racecheck's warp-level programming hazard. Program order
    // says little here (a warp-synchronous loop writes at one line and the next
    // step reads at an earlier one), so the advice names both lines.
    d.title = msg!(
        "Shared-memory race within a warp: missing `__syncwarp()` between {}",
        if p.same_file && w > o && p.other_access == Access::Read {
            word_read_then_write(w, o)
        } else {
            word_between(p, w, o)
        }
    );
    d.explanation = msg!(
        "{} between threads of one warp \
         (a warp-level programming hazard): lanes {} at {} what other \
         lanes of the same warp write at {}, with no `__syncwarp()` between the \
         two. Since Volta (independent thread scheduling) the lanes of a warp are \
         not implicitly synchronous: code that assumes they run in lockstep \
         (warp-synchronous programming, `volatile` shared memory included) may \
         {} the old or a half-written value.",
        word_reports(p),
        other_word,
        word_site(&p.other),
        word_site(&p.write),
        other_word
    );
    d.fix = msg!(
        "Add `__syncwarp()` between {} (in a loop, between one step's writes and the \
         next step's reads), where every lane of the warp reaches it: outside lane-dependent \
         branches, or with a mask naming exactly the lanes that call it. The \
         racing threads are lanes of one warp, so `__syncthreads()` is not the \
         fix; keeping the values in registers with `__shfl_down_sync()` avoids \
         the shared memory altogether.",
        word_write_and_other(p)
    );
}

/// A write after a read in program order (`w`, the write's line; `o`, the read's): the next
/// iteration overwrites what a slower warp still reads.
pub(super) fn word_write_after_read(d: &mut Draft, p: &Pair, w: u32, o: u32) {
    d.title = msg!(
        "Shared-memory race: missing barrier between {}",
        word_read_then_write(w, o)
    );
    d.explanation = msg!(
        "{} between the read at {} and the \
         later write at {} (write-after-read): a warp that finished its read moves on \
         and overwrites the shared data while another warp may still be reading it.",
        word_reports(p),
        word_site(&p.other),
        word_site(&p.write)
    );
    d.fix = msg!(
        "Add `__syncthreads()` after the read at line {} and before the write at \
         line {} (in a loop, before the next iteration's write; or double-buffer \
         the tile and wait on the stage you are about to overwrite).",
        o.to_string(),
        w.to_string()
    );
}

/// Threads racing at two lines (`w`, the write's; `o`, the other side's) with no barrier
/// between them: a missing `__syncthreads()`.
pub(super) fn word_barrier_pair(d: &mut Draft, p: &Pair, w: u32, o: u32) {
    let other_word = access_word(Some(p.other_access));
    d.title = msg!(
        "Shared-memory race: missing barrier between {}",
        word_between(p, w, o)
    );
    d.explanation = msg!(
        "{}: threads {} at {} \
         what other threads write at {}, with no barrier between the two, so the \
         {} may see the old or a half-written value.",
        word_reports(p),
        other_word,
        word_site(&p.other),
        word_site(&p.write),
        other_word
    );
    let after_cp_async = if p.race.cp_async {
        msg!(
            " (after cp.async writes: `cp.async.wait_group` / \
             `__pipeline_wait_prior` first, then the barrier)"
        )
    } else {
        Message::new()
    };
    d.fix = msg!(
        "Add `__syncthreads()` between {}{}.",
        word_write_and_other(p),
        after_cp_async
    );
}

/// Two writes by the same asynchronous copy instruction: two copies into one destination are
/// in flight at once.
pub(super) fn word_async_copies(d: &mut Draft, p: &Pair) {
    let the_line = p
        .site_line
        .map(|l| msg!(" (the line: {})", code(l)))
        .unwrap_or_default();
    d.title = msg!(
        "cp.async race: two asynchronous copies into the same shared address in \
         flight at once at {}",
        word_site(&p.write)
    );
    d.explanation = msg!(
        "{} between two writes of the asynchronous copy at {}{}: {}",
        word_reports(p),
        word_site(&p.write),
        the_line,
        async_mechanism()
    );
    d.fix = async_fix();
}

/// A race at one site (or at sites without lines): several threads at one address, no barrier.
pub(super) fn word_one_site(d: &mut Draft, p: &Pair) {
    if p.other_access == Access::Write && p.other.is_some() {
        return word_write_after_write(d, p);
    }
    d.title = msg!(
        "Shared-memory race{} at {}",
        if p.race.warp { " within a warp" } else { "" },
        word_site(&p.write)
    );
    let and_other = p
        .other
        .as_ref()
        .map(|o| msg!(" and {}", quote(o.to_string())))
        .unwrap_or_default();
    d.explanation = msg!(
        "{} at {}{}: several threads access \
         the same shared-memory address, at least one of them writing, with no barrier \
         ordering them.",
        word_reports(p),
        word_site(&p.write),
        and_other
    );
    d.fix = if p.race.warp {
        msg!(
            "Order the accesses with `__syncwarp()` (the racing threads are lanes of \
             one warp, which are not implicitly synchronous since Volta), or give each \
             lane its own address."
        )
    } else {
        msg!(
            "Order the accesses with `__syncthreads()` (or `__syncwarp()` within a \
             warp), or give each thread its own address."
        )
    };
}

/// Two writes to one shared address with nothing ordering them, both at the same line or at
/// lines of their own: a write-after-write hazard, whose value depends on which thread wrote
/// last.
fn word_write_after_write(d: &mut Draft, p: &Pair) {
    let array = p
        .site_line
        .and_then(|l| crate::source_line::indexed_array(l, true));
    let of = |word: &str| {
        array
            .as_deref()
            .map(|a| msg!(" {} {}", word, code(a)))
            .unwrap_or_default()
    };
    let between = if p.race.warp {
        "lanes of one warp"
    } else {
        "threads of the block"
    };
    // One site when both sides read the same, whatever path each record gave it.
    let (write, other) = (word_site(&p.write), word_site(&p.other));
    let sites = if write == other {
        msg!("at {}", write)
    } else {
        msg!("at {} and {}", write, other)
    };
    d.title = msg!("Write-after-write race{} {}", of("to"), sites.clone());
    d.explanation = msg!(
        "{}: {} write the same shared-memory address{} {} with nothing \
         ordering the writes (a write-after-write hazard). Which value the address keeps \
         depends on which write lands last, so every later read of it, even after a \
         barrier, may see either.",
        word_reports(p),
        between,
        of("of"),
        sites
    );
    d.fix = msg!(
        "Decide which thread owns each element{}: index it by the thread's full index \
         (not one that repeats across {}, such as `t % 32`), or let one thread write it; if \
         several must contribute, combine them (an `atomicAdd` on the shared element, or a \
         reduction). A barrier between the writes orders them but still loses one.",
        of("of"),
        between
    );
}

/// The advice a warning of unsaid scope adds to the fix: which barrier, for which threads.
pub(super) fn word_unsaid_scope() -> Message {
    msg!(
        " racecheck reports this race as a warning without saying whether the \
         racing threads are lanes of one warp or warps of a block: with blocks of \
         more than one warp, `__syncthreads()` is the fix; only where every racing \
         thread is a lane of one warp (a block of 32 threads, warp-synchronous code) \
         is `__syncwarp()` enough."
    )
}

/// How an asynchronous copy races, whichever the other side is.
pub(super) fn async_mechanism() -> Message {
    msg!(
        "the copy is in flight (issued, not yet retired by \
         `cp.async.wait_group` or `__pipeline_wait_prior`) while the same bytes are copied into \
         again or read. A barrier alone does not order an asynchronous copy; only a wait on its \
         group does. It is what a pipeline does when its wait count does not match the copies in \
         flight, or when it refills a stage before the copy already filling it completed: a \
         prologue that prefetches S stages followed by a loop that loads tile n + 1 instead of \
         n + S issues each tile twice, and `wait_group<S - 1>` then no longer means that the \
         stage read next is complete."
    )
}

/// The fix for [`async_mechanism`].
pub(super) fn async_fix() -> Message {
    msg!(
        "Issue each tile's copy once: the loop loads the tile the prologue has \
         not (n + STAGES), into the stage the previous iteration's compute finished with, after \
         a `__syncthreads()`; and read a stage only after `cp.async.wait_group<N>` (or \
         `__pipeline_wait_prior(N)`) has retired the group that filled it, N being the groups \
         committed after it, followed by `__syncthreads()`."
    )
}
