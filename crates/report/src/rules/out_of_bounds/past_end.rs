//! An access past the end of a buffer, worded by what its records show: a slot a pointer stores
//! past, an unguarded tail, an off-by-one, an index meant for another buffer, or a wrong stride.

use parsers::Access;
use serde_json::json;

use crate::diagnosis::{Draft, Figure};
use crate::message::{Message, msg};
use crate::text::bytes;

use super::spread::{Slot, Spread, Tail};
use super::{Words, past_the_end, triton_fix};
use parsers::harness::Shape;

/// An unguarded tail: the records of one or two blocks reaching past the end of an `m`-byte
/// buffer ([`Spread::tail`]).
fn unguarded_tail(d: &mut Draft, w: &Words, spread: &Spread, tail: &Tail, m: u64) {
    Figure::OvershootBytes.set(&mut d.figures, json!(tail.reach));
    d.figures.insert("threads".into(), json!(spread.threads));
    let one_block = spread.blocks <= 1;
    d.title = msg!(
        "Unguarded tail: {} {}{}{} up to {} past the end of a {}-byte buffer",
        &tail.who,
        w.access_word,
        if one_block { "s" } else { "" },
        &w.of_array,
        bytes(tail.reach),
        m.to_string()
    );
    let within = (tail.reach <= m / 100).then_some(", within a hundredth of the buffer");
    let who = if one_block {
        "no record comes from any other block: the block that covers the end of \
         the buffer runs past it"
    } else {
        "no record comes from any block before them: the last blocks of a grid \
         sized past the data run past its end"
    };
    d.explanation = msg!(
        "{} from {} in {}. Together they start at {} of a {}-byte buffer and reach {} beyond \
         it{}{}, and {} unguarded, as the last tile does when the length is not a multiple of \
         the tile. memcheck stops a thread at its first bad access, so the overshoot may reach \
         further than this.{}",
        w.caught(),
        crate::text::plural(spread.threads, "thread", "threads"),
        &tail.who,
        past_the_end(spread.after.0.saturating_sub(1)),
        m.to_string(),
        bytes(tail.reach),
        (w.size.filter(|s| *s > 0))
            .map(|s| msg!(
                " ({} {}-byte elements)",
                tail.reach.div_ceil(s).to_string(),
                s.to_string()
            ))
            .unwrap_or_default(),
        within.unwrap_or_default(),
        who,
        &w.the_line
    );
    d.fix = msg!(
        "Guard the last tile: skip (or mask) the rows or elements past the end with the real \
         length (`if (row < rows)`) around the access, or pad the buffer to a whole number of \
         tiles; re-run memcheck with a length that is not a multiple of the tile."
    );
}

/// An access just past the end of an `m`-byte buffer, `past` bytes beyond it: an off-by-one
/// or an unguarded tail (`lone`: one thread's access within one element of the end); `tensor`,
/// the stage's tensor and its row's bytes where it is the buffer.
fn just_past_end(
    d: &mut Draft,
    w: &Words,
    (m, past): (u64, u64),
    lone: bool,
    tensor: Option<(&Shape, u64)>,
) {
    d.title = if lone && !w.builtin && !w.triton {
        msg!(
            "Off-by-one: a {} {} of the element just past the end of a {}-byte buffer",
            w.space_word,
            w.access_word,
            m.to_string()
        )
    } else {
        msg!(
            "{} just past the end of a buffer (off-by-one or unguarded tail)",
            w.title()
        )
    };
    // Triton vectorises its loads: the access size is no element size.
    let index = match w.size {
        Some(s) if s > 0 && m.is_multiple_of(s) && !w.triton => msg!(
            " With {}-byte elements it is element {} of a {}-element buffer{}.",
            s.to_string(),
            (m / s).saturating_add(past / s).to_string(),
            (m / s).to_string(),
            if past < s { ": one past the last" } else { "" }
        ),
        _ => Message::new(),
    };
    let row_hint = match tensor {
        Some((s, row)) => msg!(
            " It lands in row {} of the last head, whose rows end at {}: what an unguarded \
             last tile or a `<=` bound reads.",
            u64::from(s.seq_len)
                .saturating_add(past / row.max(1))
                .to_string(),
            (s.seq_len - 1).to_string()
        ),
        None => Message::new(),
    };
    d.explanation.append(if w.triton {
        msg!(
            " The last program's block reaches past the end: its offsets are not masked \
             against the tensor's size."
        )
    } else {
        msg!(
            "{} An index a step too far, not a wild pointer.{}",
            index,
            row_hint
        )
    });
    d.fix = if w.triton {
        triton_fix(d.location.as_ref())
    } else if w.builtin {
        msg!(
            "Guard the access with the real bound: mask rows and columns with index >= \
             seq_len in the last (partial) tile, and check loop bounds use `<`, not `<=`. \
             Re-run memcheck, and check with S not a multiple of the tile."
        )
    } else {
        msg!(
            "Guard the access with the real bound (`if (i < n)`, loop bounds with `<`, not \
             `<=`), including the last partial block; re-run memcheck with a size that is not \
             a multiple of the block size."
        )
    };
}

/// An access within reach of the end of the allocation memcheck names, but more than one
/// element past it: the index may be meant for another buffer.
fn near_allocation(d: &mut Draft, w: &Words, past: u64, m: u64) {
    // `past` counts from the first byte past the end, 0 (memcheck's "1 bytes after").
    d.title = msg!(
        "{}{}{} {} past the end of the nearest allocation",
        w.title(),
        &w.of_array,
        if w.of_array.is_empty() { "" } else { ":" },
        bytes(past)
    );
    // With whole elements of the access's size: which element, counted from the buffer's first.
    let element = match w.size {
        Some(s) if s > 0 && m.is_multiple_of(s) && past.is_multiple_of(s) && !w.triton => msg!(
            " (with {}-byte elements, element {} of a {}-element buffer)",
            s.to_string(),
            (m / s).saturating_add(past / s).to_string(),
            (m / s).to_string()
        ),
        _ => Message::new(),
    };
    d.explanation.append(msg!(
        " memcheck names the allocation nearest the address, which need not be the buffer \
         the index was meant for: {} past the end of a {}-byte buffer{} is beyond the first \
         element past its end, so either the index runs several elements past this buffer or \
         it was computed for another one.",
        bytes(past),
        m.to_string(),
        element
    ));
    d.fix = if w.triton {
        triton_fix(d.location.as_ref())
    } else {
        msg!(
            "Check which buffer the access at the named line means to read, and the index \
             against that buffer's size (a table indexed with a value meant for another \
             array, a stale index, a size in bytes used as a count)."
        )
    };
}

/// An access far past the end: a wrong stride, base pointer or dimension.
fn far_past_end(d: &mut Draft, w: &Words) {
    d.explanation.append(msg!(
        " That is far past the end: a wrong stride, a wrong base pointer or an index \
         computed from the wrong dimension."
    ));
    let against = if w.builtin {
        "tensor's [batch, heads, seq_len, head_dim] strides"
    } else {
        "buffer's dimensions and strides"
    };
    d.fix = msg!(
        "Check the index arithmetic at the named line against the {}, and that the pointer is \
         the buffer the launch passed.",
        against
    );
}

/// An access `n` bytes past the end of an `m`-byte buffer: a slot a pointer stores past, an
/// unguarded tail, an off-by-one, or an index meant for another buffer. Returns the signals
/// it adds.
pub(super) fn past_end(
    d: &mut Draft,
    w: &Words,
    finding: &parsers::Finding,
    line: Option<&str>,
    (n, m): (u64, u64),
    shape: Option<&(Shape, u64)>,
) -> usize {
    d.figures.insert("bytes_after".into(), json!(n));
    d.figures.insert("allocation_size".into(), json!(m));
    // memcheck counts from 1: "1 bytes after" is the first byte past the end.
    let past = n.saturating_sub(1);
    // Within one row (or, without a shape, 256 bytes) of the end: an index one step
    // too far, the classic off-by-one or unmasked tail.
    let rows = shape.map(|(s, elem)| (s, u64::from(s.head_dim) * elem));
    let near = past < rows.map_or(256, |(_, row)| row).max(w.size.unwrap_or(1));
    // The stage's tensor and its row's bytes, where the buffer is that tensor.
    let tensor = rows.filter(|(s, row)| {
        [s.batch, s.heads, s.seq_len]
            .iter()
            .fold(*row, |t, &n| t * u64::from(n))
            == m
    });
    let what = match tensor {
        Some((s, _)) => msg!(
            "{} ({})",
            format!(
                "a [{}, {}, {}, {}] tensor",
                s.batch, s.heads, s.seq_len, s.head_dim
            ),
            bytes(m)
        ),
        None => msg!("a {}-byte buffer", m.to_string()),
    };
    d.explanation = msg!(
        "{}, \"{} bytes after\" the end of {} (memcheck counts the first byte past the end as \
         1).",
        w.caught(),
        n.to_string(),
        what
    );
    // Off by one only when the access starts within one element of the end; the
    // attention kernel's rows (its tail tile) are its own, known layout.
    let element = w.size.unwrap_or(1).max(1);
    let one_element = past < element;
    let spread = Spread::of(finding, n);
    let write = finding.access == Some(Access::Write);
    let scalar = line.and_then(|l| crate::source_line::scalar_pointer(l, write));
    if let Some(slot) = Slot::read(&spread, scalar, write, element, m) {
        slot.diagnose(d, w);
        2
    } else if !w.builtin
        && !w.triton
        && let Some(tail) = spread.tail(element, m)
    {
        unguarded_tail(d, w, &spread, &tail, m);
        2
    } else if near && (w.builtin || one_element) {
        let lone = one_element && spread.threads <= 1;
        just_past_end(d, w, (m, past), lone, tensor);
        1
    } else if near {
        near_allocation(d, w, past, m);
        1
    } else {
        far_past_end(d, w);
        0
    }
}
