//! The wrong elements set against the launch that wrote them: where the program's own kernel
//! was profiled in the failing config, Nsight Compute's launch statistics (blocks, threads per
//! block) say whether the region no thread got right is exactly what the grid leaves out (the
//! elements past its last thread) or exactly one warp's share of each block (a block per row,
//! a thread per column). Said only where the numbers match; a coincidence of sizes is not
//! claimed as anything more.

use parsers::mismatch::ElementMismatch;

use crate::message::{Message, code, figure, msg};
use crate::text::thousands;

/// A profiled launch of one of the program's own kernels: its name, blocks and threads per
/// block.
pub(super) struct Launch {
    pub(super) kernel: String,
    pub(super) blocks: u64,
    pub(super) threads: u64,
}

/// Where the wrong elements are a flat tail `[start, total)`: numpy's listed indices, or the
/// recorded runs (the last columns of a single row, the last rows of every column).
fn tail_start(m: &ElementMismatch) -> Option<u64> {
    if let Some((start, _)) = m.tail() {
        return Some(start);
    }
    let (rows, cols) = m.rows_cols()?;
    match (m.wrong_rows.as_slice(), m.wrong_cols.as_slice()) {
        ([[0, 1]], [[first, end]]) if rows == 1 && *end == cols && !m.more_cols => Some(*first),
        ([[first, end]], [[0, c]]) if *end == rows && *c == cols && !m.more_rows => {
            Some(first * cols)
        }
        _ => None,
    }
    .filter(|&start| start > 0 && start + m.mismatched == m.total)
}

/// What the launches say of `m`'s wrong elements, and the fix it sharpens, where a launch's
/// geometry matches them exactly.
pub(super) fn against(m: &ElementMismatch, launches: &[Launch]) -> Option<(Message, Message)> {
    if let Some(start) = tail_start(m) {
        // One element per thread, the grid's threads ending exactly at the tail: a kernel that
        // takes several elements per thread matching by a multiple could be a coincidence of
        // sizes, and is not claimed.
        let l = launches.iter().find(|l| l.blocks * l.threads == start)?;
        let left = m.total - start;
        let rounded = if left < l.threads {
            msg!(
                " ({} is less than one more block's {}: the block count was rounded down)",
                figure(thousands(left)),
                figure(thousands(l.threads))
            )
        } else {
            Message::new()
        };
        let said = msg!(
            " {} was launched with {} blocks of {} threads ({} threads, Nsight Compute's launch \
             statistics): at one element per thread they end at index {}, exactly where the \
             wrong elements begin, so the last {} have no thread{}.",
            code(&l.kernel),
            figure(thousands(l.blocks)),
            figure(thousands(l.threads)),
            figure(thousands(start)),
            figure(thousands(start - 1)),
            figure(thousands(left)),
            rounded
        );
        let block = l.threads;
        let fix = msg!(
            "Launch {} with enough blocks for all {} elements, {} (the grid now stops at {}), \
             and keep its {} guard.",
            code(&l.kernel),
            figure(thousands(m.total)),
            code(format!("(n + {block} - 1) / {block}")),
            figure(thousands(start)),
            code("i < n")
        );
        return Some((said, fix));
    }
    // An aligned run of columns wrong in every row, against a block per row and a thread per
    // column: the run is one warp's (or several warps') lanes of every block.
    let (rows, cols) = m.rows_cols()?;
    let ([[0, r]], [[first, end]]) = (m.wrong_rows.as_slice(), m.wrong_cols.as_slice()) else {
        return None;
    };
    if *r != rows || m.more_cols || *end > cols || !first.is_multiple_of(32) {
        return None;
    }
    let l = launches
        .iter()
        .find(|l| l.blocks == rows && l.threads == cols && cols.is_multiple_of(32))?;
    let (w0, w1) = (first / 32, (end - 1) / 32);
    let warps = if w0 == w1 {
        msg!("warp {}", figure(w0.to_string()))
    } else {
        msg!("warps {}-{}", figure(w0.to_string()), figure(w1.to_string()))
    };
    // The wrong columns, and the threads of each block that own them: `first-last`.
    let range = format!("{first}-{}", end - 1);
    let said = msg!(
        " {} was launched with {} blocks of {} threads (Nsight Compute's launch statistics), a \
         block per row and a thread per column: columns {} are threads {} of every block, {}, \
         and every other warp's columns are right.",
        code(&l.kernel),
        figure(thousands(l.blocks)),
        figure(thousands(l.threads)),
        range.clone(),
        range.clone(),
        warps.clone()
    );
    let fix = msg!(
        "In {}, follow what {} (`threadIdx.x` {}) compute as their column and where they \
         store: they write nothing of columns {} (a column taken modulo a warp, a lane index \
         used for the thread's, a loop that stops at {}).",
        code(&l.kernel),
        warps,
        range.clone(),
        range,
        first.to_string()
    );
    Some((said, fix))
}
