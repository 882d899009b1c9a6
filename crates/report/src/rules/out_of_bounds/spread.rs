//! What all of a memcheck finding's records say together: the spread of "bytes after", threads
//! and blocks, and the shapes it reads as: an unguarded tail, or a slot a pointer stores past.

use serde_json::json;

use super::{Words, past_the_end};
use crate::diagnosis::Draft;
use crate::message::{Message, ToMessage, code, msg};

/// What all of a finding's records say together (the parser keeps their spread): the range of
/// "bytes after", how many threads and blocks made them.
pub(super) struct Spread {
    /// Smallest and largest "N bytes after" over the records (memcheck counts from 1).
    pub(super) after: (u64, u64),
    pub(super) threads: u64,
    pub(super) blocks: u64,
    /// The blocks seen, as memcheck prints them, when few.
    pub(super) block_names: Vec<String>,
}

/// A tail overshoot: who made it and how far past the end it reaches.
pub(super) struct Tail {
    pub(super) who: Message,
    pub(super) reach: u64,
}

impl Spread {
    pub(super) fn of(finding: &parsers::Finding, first: u64) -> Spread {
        let spread = finding.facts.spread.as_deref();
        let after = spread.and_then(|s| s.bytes_after);
        Spread {
            after: after.map_or((first, first), |r| (r.min, r.max)),
            threads: spread.and_then(|s| s.distinct_threads).unwrap_or(1),
            blocks: spread.and_then(|s| s.distinct_blocks).unwrap_or(1),
            block_names: (spread.map_or(&[][..], |s| s.blocks.as_slice()).iter())
                .map(|[x, y, z]| format!("({x},{y},{z})"))
                .collect(),
        }
    }

    /// An unguarded tail: many threads of one or two blocks, starting at the first element past
    /// the end and reaching further, within a small part of the buffer (a tile, not a stride).
    /// An overshoot within a hundredth of the buffer is a tail whichever blocks made it (the
    /// last few blocks of a grid sized past the data) and wherever its first printed record
    /// lies (memcheck's print limit can leave out the nearest ones).
    pub(super) fn tail(&self, element: u64, allocation: u64) -> Option<Tail> {
        let (lo, hi) = self.after;
        let reach = hi.saturating_sub(1).saturating_add(element);
        let hundredth = reach <= allocation / 100;
        let starts_at_end = lo.saturating_sub(1) < element || hundredth;
        let several = self.threads > 1 && reach > element;
        let few_blocks = self.blocks <= 2 || hundredth;
        let within_a_tile = reach <= allocation / 2 || reach <= 64 * 1024;
        (starts_at_end && several && few_blocks && within_a_tile).then(|| Tail {
            who: match self.block_names.as_slice() {
                [one] => msg!("block {}", one),
                [a, b] => msg!("blocks {} and {}", a, b),
                _ => msg!("{}", crate::text::plural(self.blocks, "block", "blocks")),
            },
            reach,
        })
    }
}

/// An access past the end that no index explains: one value stored (or loaded) through a
/// pointer, by one thread per block. Read from the quoted line (`*out = v`,
/// `tl.store(loss_ptr, loss)`: nothing on it to mask or guard) and from the records (one
/// thread per block; several blocks at the same address past the end).
pub(super) struct Slot {
    /// The pointer the line stores through, when the line was read.
    pointer: Option<String>,
    /// How the blocks met the end.
    shape: SlotShape,
    blocks: u64,
    /// Bytes past the end where the nearest record lies (0: the first byte past it).
    past: u64,
    /// The size in bytes of the buffer it runs past.
    allocation: u64,
}

pub(super) enum SlotShape {
    /// Several blocks, one thread each, at one address past the end: each block stores to more
    /// slots than it owns (a pointer moved on per loop iteration), so the last blocks' later
    /// stores run past the buffer.
    Shared,
    /// Several blocks, one thread each, at addresses one after another: one slot per block and
    /// more blocks than slots.
    PerBlock,
    /// A scalar store past the end, from too few records to tell which.
    Past,
}

impl Slot {
    pub(super) fn read(
        spread: &Spread,
        pointer: Option<String>,
        write: bool,
        element: u64,
        allocation: u64,
    ) -> Option<Slot> {
        let (lo, hi) = spread.after;
        let one_per_block = spread.blocks >= 2 && spread.threads == spread.blocks && write;
        // Within a few slots of the end: a pointer a step or a few past its slot, not a stride.
        let close = hi.saturating_sub(1) < element.saturating_mul(spread.blocks.max(1) + 1);
        let shape = if one_per_block && lo == hi && close {
            SlotShape::Shared
        } else if one_per_block && pointer.is_some() && close {
            SlotShape::PerBlock
        } else if pointer.is_some() && spread.threads <= 1 && hi.saturating_sub(1) < allocation {
            SlotShape::Past
        } else {
            return None;
        };
        Some(Slot {
            pointer,
            shape,
            blocks: spread.blocks,
            past: lo.saturating_sub(1),
            allocation,
        })
    }

    /// Words the draft by the slot's shape, and keys it apart from the rule's other drafts.
    pub(super) fn diagnose(&self, d: &mut Draft, w: &Words) {
        d.figures.insert("blocks".into(), json!(self.blocks));
        let pointer = self.pointer.as_ref().map(|p| ("pointer".into(), json!(p)));
        d.figures.extend(pointer);
        d.key = format!("{}|{}|slot", w.space_word, w.access_word);
        let (unit, blocks) = w.units();
        let blocks = format!("{} {blocks}", self.blocks);
        let [title, place, mechanism, fix] = match self.shape {
            SlotShape::Shared => self.word_shared(w, &blocks),
            SlotShape::PerBlock => self.word_per_block(w, &blocks),
            SlotShape::Past => self.word_past(unit),
        };
        let through = self.through();
        d.title = msg!("{}{}{}", w.title(), &through, title);
        // What the line shows of a scalar store: one value through a pointer that has moved.
        let scalar = match &self.pointer {
            Some(p) => msg!(
                " The line {}s one value{}, with no index and so no offset to {}; the pointer \
                 {} itself has moved past the buffer.",
                w.access_word,
                &through,
                if w.triton { "mask" } else { "guard" },
                code(p)
            ),
            None => Message::new(),
        };
        d.explanation = msg!(
            "{}, {}.{}{}{}",
            w.caught(),
            place,
            scalar,
            mechanism,
            &w.the_line
        );
        d.fix = fix;
    }

    /// " through `p`" where the line was read, else nothing.
    fn through(&self) -> Message {
        self.pointer
            .as_deref()
            .map(|p| msg!(" through {}", code(p)))
            .unwrap_or_default()
    }

    /// The words of several blocks at one slot past the end ([`SlotShape::Shared`]): the
    /// title's end, where the records lie, the mechanism and the fix.
    fn word_shared(&self, w: &Words, blocks: &str) -> [Message; 4] {
        let (unit, units) = w.units();
        let id = if w.triton {
            "program id"
        } else {
            "block index"
        };
        let (mechanism, fix) = match &self.pointer {
            Some(p) => (
                format!(
                    " Several {units} reaching one slot past the end means each {unit} writes to \
                     more slots than it owns: a pointer moved on one slot per iteration of a \
                     loop writes a slot per iteration, so each {unit} overwrites the slots of \
                     the ones after it, and the last ones run past the buffer. The wrong values \
                     in the slots inside it are the same fault."
                ),
                msg!(
                    "Store once per slot: accumulate in the loop and store the total once, \
                     after it, with {} left at the {}'s own slot; or, if every iteration is \
                     meant to have a slot of its own, allocate one per iteration and offset by \
                     the iteration as well as the {}.",
                    code(p),
                    unit,
                    id
                ),
            ),
            None => (
                format!(
                    " The index at the line names the same slot in every {unit} that reaches \
                     the end: it does not depend on the {unit} (a length used as an index), or \
                     each {unit} writes past its own slots into the next ones'."
                ),
                format!(
                    "Check the index at the named line against the buffer's length and \
                     against the {unit}: which slots each {unit} owns, and whether the last \
                     {unit}'s index stays below the length."
                )
                .to_message(),
            ),
        };
        [
            msg!(
                ": {} write the same slot past the end of a {}-byte buffer",
                blocks,
                self.allocation.to_string()
            ),
            msg!(
                "one thread in each of {}, all at one address: {} of a {}-byte buffer",
                blocks,
                past_the_end(self.past),
                self.allocation.to_string()
            ),
            mechanism.to_message(),
            fix,
        ]
    }

    /// The words of one slot per block and more blocks than slots ([`SlotShape::PerBlock`]).
    fn word_per_block(&self, w: &Words, blocks: &str) -> [Message; 4] {
        let (unit, units) = w.units();
        [
            msg!(": one slot per {}, more {} than slots", unit, units),
            msg!(
                "one thread in each of {}, at consecutive slots past the end of a {}-byte buffer",
                blocks,
                self.allocation.to_string()
            ),
            msg!(
                " Each {} {}s its own slot, and the grid has more {} than the buffer has slots.",
                unit,
                w.access_word,
                units
            ),
            msg!(
                "Size the buffer from the grid (one slot per {}), or the grid from the buffer; \
                 where the last {} have no slot, return before the store.",
                unit,
                units
            ),
        ]
    }

    /// The words of a scalar store past the end ([`SlotShape::Past`]).
    fn word_past(&self, unit: &str) -> [Message; 4] {
        let buffer = msg!(
            "past the end of a {}-byte buffer",
            self.allocation.to_string()
        );
        [
            msg!(" {}", &buffer),
            buffer,
            Message::new(),
            msg!(
                "Trace the pointer{} back to where it is set and advanced (per {}, per loop \
                 iteration) and check every value it takes against the buffer's length.",
                self.through(),
                unit
            ),
        ]
    }
}
