//! The pattern of the wrong elements a program's comparison recorded (its shape, the rows and
//! columns holding a wrong element, zeros, NaN, a shared ratio), in the words a kernel engineer
//! reads it by: a column range one tile covers, a tail of rows, the first row of every segment,
//! a scale, memory nothing wrote.

use parsers::mismatch::ElementMismatch;

use crate::message::{Message, figure, msg};
use crate::text::thousands;

/// What the pattern says, and the fix it points to where it points to one.
pub(super) struct Pattern {
    pub(super) said: Message,
    pub(super) fix: Option<Message>,
}

/// `[first, end)` as "32-63" (or "32" for one).
fn span(run: [u64; 2]) -> String {
    if run[1] <= run[0] + 1 {
        run[0].to_string()
    } else {
        format!("{}-{}", run[0], run[1] - 1)
    }
}

/// Words for one run of wrong rows or columns: where it lies, what that means, the fix.
type Words = (Message, Message, Option<Message>);

/// One run of `what` (rows or columns) out of `of`: where it lies, in words, and the fix.
fn one_run(what: &str, run: [u64; 2], of: u64) -> Words {
    let width = run[1] - run[0];
    let aligned = width >= 8 && width.is_power_of_two() && run[0].is_multiple_of(width);
    let at_end = run[1] == of;
    let one = if width == 1 {
        what.trim_end_matches('s')
    } else {
        what
    };
    let place = msg!("{} {} of {}", one, figure(span(run)), figure(thousands(of)));
    if aligned {
        let lanes = if width == 32 && what == "columns" {
            " (a warp's 32 lanes)"
        } else {
            ""
        };
        return (
            place,
            msg!(
                ": an aligned block of {}{}, what one tile covers, while the {} around it are \
                 right",
                figure(width.to_string()),
                lanes,
                what
            ),
            Some(msg!(
                "Find who owns {} {} in the kernel that writes this output: the warp or block \
                 whose tile they are writes nothing there or writes another tile's values (a \
                 loop over the tile that stops at {}, lanes that cover {} of {}, a tile offset \
                 that repeats).",
                what,
                figure(span(run)),
                figure(run[0].to_string()),
                figure(run[0].to_string()),
                figure(of.to_string())
            )),
        );
    }
    if at_end && run[0] > 0 {
        return (
            place,
            msg!(": the last {} {}, a tail", figure(width.to_string()), one),
            Some(msg!(
                "Cover the last {} {}: the grid or the loop over {} stops at {} of {} (a \
                 `n / tile` that drops the remainder, a bound with `<` one short).",
                figure(width.to_string()),
                one,
                what,
                figure(run[0].to_string()),
                figure(of.to_string())
            )),
        );
    }
    (place, Message::new(), None)
}

/// Single rows (or columns) at one step: "every 128th row from row 128", the first of each
/// segment when they start a segment.
fn every_kth(what: &str, runs: &[[u64; 2]], more: bool) -> Option<Words> {
    if more || runs.len() < 3 || runs.iter().any(|r| r[1] != r[0] + 1) {
        return None;
    }
    let step = runs[1][0] - runs[0][0];
    if step < 2 || runs.windows(2).any(|w| w[1][0] - w[0][0] != step) {
        return None;
    }
    let first = runs[0][0];
    let singular = what.trim_end_matches('s');
    let segment = first.is_multiple_of(step);
    let place = msg!(
        "one {} in every {} ({} {}, {}, ..., {} of them)",
        singular,
        figure(step.to_string()),
        what,
        figure(first.to_string()),
        figure((first + step).to_string()),
        figure(runs.len().to_string())
    );
    let said = if segment {
        msg!(
            ": the first {} of each segment of {} after the first",
            singular,
            step.to_string()
        )
    } else {
        Message::new()
    };
    let fix = segment.then(|| {
        msg!(
            "Look at the boundary between segments of {} {}s: the first {} of every segment \
             but the first takes a value that belongs to the segment before it (a carry, a \
             running value or an offset not reset at the segment's start).",
            figure(step.to_string()),
            singular,
            singular
        )
    });
    Some((place, said, fix))
}

/// The pattern of `m`'s wrong elements, where the program recorded one.
pub(super) fn of(m: &ElementMismatch) -> Option<Pattern> {
    let (rows, cols) = m.rows_cols()?;
    let mut parts: Vec<Message> = Vec::new();
    let mut fix: Option<Message> = None;
    let all_rows = m.wrong_rows.as_slice() == [[0, rows]];
    let all_cols = m.wrong_cols.as_slice() == [[0, cols]];
    if m.mismatched < m.total {
        let col_words = match m.wrong_cols.as_slice() {
            [run] if !all_cols && !m.more_cols => Some(one_run("columns", *run, cols)),
            runs => every_kth("columns", runs, m.more_cols),
        };
        let row_words = match m.wrong_rows.as_slice() {
            [run] if !all_rows && !m.more_rows => Some(one_run("rows", *run, rows)),
            runs => every_kth("rows", runs, m.more_rows),
        };
        // Wrong columns in every row, wrong rows in every column.
        let in_rows = (all_rows && rows > 1)
            .then(|| msg!(" in every one of the {} rows", figure(thousands(rows))));
        let in_cols = all_cols.then(|| msg!(" in all {} columns", figure(thousands(cols))));
        for (words, within) in [(col_words, in_rows), (row_words, in_cols)] {
            if let Some((place, said, f)) = words {
                parts.push(msg!("{}{}{}", place, within.unwrap_or_default(), said));
                fix = fix.or(f);
            }
        }
    }
    let wrong = m.mismatched;
    if let Some(r) = m.ratio.filter(|r| r.abs() > 1e-6) {
        parts.push(msg!(
            "every wrong element is {}x its reference: a scale applied twice or never (a \
             1/sqrt(d), a count, a norm), not a wrong index",
            figure(crate::text::sig3(r))
        ));
        fix = fix.or(Some(msg!(
            "Find the factor of {} between the kernel and the reference: a scale the kernel \
             applies that the reference does not, or the other way round.",
            figure(crate::text::sig3(r))
        )));
    }
    match (m.zeros, m.nan.unwrap_or(0) + m.inf.unwrap_or(0)) {
        (Some(z), _) if z == wrong && wrong > 0 => {
            parts.push(msg!(
                "every wrong element is exactly 0 where the reference is not: never written \
                 (a zero-filled buffer no thread stored to), or summed from nothing"
            ));
        }
        (_, bad) if bad > 0 => {
            parts.push(msg!(
                "{} of them NaN or infinite: a division by zero, an overflow, or memory nothing \
                 wrote",
                figure(thousands(bad))
            ));
        }
        (Some(z), _) if z > 0 => {
            parts.push(msg!(
                "{} of them exactly 0 where the reference is not",
                figure(thousands(z))
            ));
        }
        _ => {}
    }
    if parts.is_empty() {
        return None;
    }
    let mut said = msg!(" The program's comparison recorded which:");
    for (i, part) in parts.into_iter().enumerate() {
        said.append(msg!("{}{}", if i == 0 { " " } else { "; " }, part));
    }
    said.append(msg!("."));
    Some(Pattern { said, fix })
}
