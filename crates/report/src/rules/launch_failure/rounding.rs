//! The values a failed program printed beside the values it expected, read together: where
//! every wrong value is its expected value rounded down to a multiple of a warp or a tile, and
//! the expected values that are such multiples come out right, the last partial group is
//! dropped (`n / 32` or `blockDim.x >> 5` where a round-up was meant).

use crate::message::{Message, figure, msg};

/// The group sizes a dropped remainder is looked for at: a warp, then tiles and blocks.
const GROUPS: [u64; 6] = [32, 64, 128, 256, 16, 8];

/// A dropped remainder: each wrong value is its expectation rounded down to a multiple of
/// `group`.
pub(super) struct Rounding {
    pub(super) group: u64,
    /// The wrong pairs (got, expected), as whole numbers, in the order printed, at most 4.
    pub(super) examples: Vec<(u64, u64)>,
    /// How many wrong pairs, and how many right ones at a multiple of `group`.
    pub(super) wrong: usize,
    pub(super) right_multiples: usize,
}

/// The group whose remainder the wrong values drop, where one group explains every wrong pair
/// (at least two), each wrong expectation holds at least one whole group and a remainder (so
/// zeros, or values off by another amount, are not read as a rounding), and no right pair
/// contradicts it.
pub(super) fn dropped_remainder(pairs: &[(f64, f64)]) -> Option<Rounding> {
    let whole = |v: f64| (v >= 0.0 && v.fract() == 0.0 && v < 1e15).then_some(v as u64);
    let pairs: Vec<(u64, u64)> = pairs
        .iter()
        .map(|(g, w)| Some((whole(*g)?, whole(*w)?)))
        .collect::<Option<_>>()?;
    let (wrong, right): (Vec<_>, Vec<_>) = pairs.iter().partition(|(g, w)| g != w);
    if wrong.len() < 2 {
        return None;
    }
    GROUPS.into_iter().find_map(|group| {
        let explains = wrong
            .iter()
            .all(|(g, w)| *w > group && !w.is_multiple_of(group) && *g == w / group * group);
        // A right value that is not a multiple would have lost its remainder too.
        let consistent = right.iter().all(|(_, w)| w.is_multiple_of(group));
        (explains && consistent).then(|| {
            let mut examples: Vec<(u64, u64)> = Vec::new();
            for p in &wrong {
                if !examples.contains(p) && examples.len() < 4 {
                    examples.push(*p);
                }
            }
            Rounding {
                group,
                examples,
                wrong: wrong.len(),
                right_multiples: right.len(),
            }
        })
    })
}

impl Rounding {
    /// What the values show, in a sentence.
    pub(super) fn mechanism(&self) -> Message {
        let shown: Vec<Message> = self
            .examples
            .iter()
            .map(|(g, w)| msg!("{} for {}", figure(g.to_string()), figure(w.to_string())))
            .collect();
        let right = if self.right_multiples > 0 {
            msg!(
                ", and the {} expected values that are multiples of {} come out right",
                self.right_multiples.to_string(),
                self.group.to_string()
            )
        } else {
            Message::new()
        };
        let what = if self.group == 32 {
            "the remainder past the last whole 32 is dropped (a partial warp, where the values \
             count threads)"
        } else {
            "the remainder past the last whole group is dropped (a tile's or a block's)"
        };
        msg!(
            "Each of the program's {} wrong values is its expected value rounded down to a \
             multiple of {} ({}){}: {}, as a count of groups taken as {} (or {}) drops it \
             where a round-up was meant.",
            self.wrong.to_string(),
            figure(self.group.to_string()),
            Message::words(shown),
            right,
            what,
            crate::message::code(format!("n / {}", self.group)),
            crate::message::code(format!("blockDim.x >> {}", self.group.trailing_zeros()))
        )
    }

    /// The fix the values point to.
    pub(super) fn fix(&self) -> Message {
        let g = self.group;
        msg!(
            "Count the groups rounding up, {} (not {}), and let the last, partial one take \
             part with only its lanes that exist: a mask of them for its shuffles, its partial \
             result read like the others'.",
            crate::message::code(format!("(n + {}) / {}", g - 1, g)),
            crate::message::code(format!("n / {g}"))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::dropped_remainder;

    #[test]
    fn values_rounded_down_to_a_warp_are_a_dropped_partial_warp() {
        // flashinfer's block sum and max at 129, 159, 180 and 192 threads (corpus
        // `flashinfer-blockreduce-tailwarp`).
        let pairs = [
            (128.0, 129.0),
            (128.0, 129.0),
            (128.0, 159.0),
            (128.0, 159.0),
            (160.0, 180.0),
            (160.0, 180.0),
            (192.0, 192.0),
            (192.0, 192.0),
        ];
        let r = dropped_remainder(&pairs).expect("a dropped remainder");
        assert_eq!(r.group, 32);
        assert_eq!(r.wrong, 6);
        assert_eq!(r.examples, [(128, 129), (128, 159), (160, 180)]);
        // One wrong value is not a pattern; a right value off the multiples contradicts it.
        assert!(dropped_remainder(&[(160.0, 180.0), (192.0, 192.0)]).is_none());
        let mut contradicted = pairs.to_vec();
        contradicted.push((100.0, 100.0));
        assert!(dropped_remainder(&contradicted).is_none());
        // Zeros where the values are smaller than a group: nothing was written, not rounded.
        assert!(dropped_remainder(&[(0.0, 3.0), (0.0, 5.0)]).is_none());
        // Values off by other amounts: no group explains them.
        assert!(dropped_remainder(&[(120.0, 129.0), (150.0, 159.0)]).is_none());
    }
}
