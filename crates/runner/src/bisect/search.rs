//! The search for the first bad commit, as `git bisect` does it, over *groups*: runs of
//! consecutive commits that leave the pipeline's inputs unchanged. A commit that touches only a
//! README is in its predecessor's group and is never run; a group with the inputs of a group
//! already judged takes its verdict (a revert back to GOOD's sources is good).
//!
//! GOOD is the first commit of the search, not an assumption: unless its run already showed it
//! good, it is tested like the others when the search narrows to it, so the answer always rests
//! on a run on each side. That costs nothing in the worst case: with n commits after GOOD, the
//! first bad one is one of n + 1 (GOOD included), ceil(log2(n + 1)) tests, where taking GOOD on
//! trust and checking it at the end takes ceil(log2(n)) + 1 when the answer is GOOD's child.
//!
//! Pure: signatures in, the next group to test or the answer out.

/// What is known of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Unknown,
    Good,
    Bad,
    /// Tested without a verdict (it does not build, a unit failed).
    Skip,
}

/// Consecutive commits with one signature of the inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The index of its first commit: the commit that made the change.
    pub first: usize,
    pub len: usize,
    pub signature: String,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Test this group.
    Test(usize),
    /// The first bad group (0: GOOD's own).
    Found(usize),
    /// The first bad group is one of these (all but the last were skipped).
    OneOf(Vec<usize>),
}

#[derive(Debug, Clone)]
pub struct Search {
    pub groups: Vec<Group>,
    marks: Vec<Mark>,
}

impl Search {
    /// `signatures` are the commits' in order, GOOD's first and BAD's last; BAD is bad (its run
    /// showed it).
    pub fn new(signatures: &[String]) -> Search {
        let mut groups: Vec<Group> = Vec::new();
        for (i, signature) in signatures.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if &g.signature == signature => g.len += 1,
                _ => groups.push(Group {
                    first: i,
                    len: 1,
                    signature: signature.clone(),
                }),
            }
        }
        let mut search = Search {
            marks: vec![Mark::Unknown; groups.len()],
            groups,
        };
        if let Some(last) = search.groups.len().checked_sub(1) {
            search.mark(last, Mark::Bad);
        }
        search
    }

    pub fn mark_of(&self, group: usize) -> Mark {
        self.marks.get(group).copied().unwrap_or(Mark::Unknown)
    }

    /// Records a group's verdict, and gives it to every unjudged group with the same inputs.
    pub fn mark(&mut self, group: usize, mark: Mark) {
        let Some(signature) = self.groups.get(group).map(|g| g.signature.clone()) else {
            return;
        };
        for (i, g) in self.groups.iter().enumerate() {
            if i == group || (g.signature == signature && self.marks[i] == Mark::Unknown) {
                self.marks[i] = mark;
            }
        }
    }

    /// The next group to test (the unknown one nearest the middle of the range left), or the
    /// answer.
    pub fn next(&self) -> Next {
        let hi = self
            .marks
            .iter()
            .position(|m| *m == Mark::Bad)
            .unwrap_or(self.groups.len().saturating_sub(1));
        let lo = self.marks[..hi].iter().rposition(|m| *m == Mark::Good);
        let start = lo.map_or(0, |l| l + 1);
        let unknown: Vec<usize> = (start..hi)
            .filter(|&i| self.marks[i] == Mark::Unknown)
            .collect();
        if unknown.is_empty() {
            let mut skipped: Vec<usize> = (start..hi)
                .filter(|&i| self.marks[i] == Mark::Skip)
                .collect();
            if skipped.is_empty() {
                return Next::Found(hi);
            }
            skipped.push(hi);
            return Next::OneOf(skipped);
        }
        // The middle of the open range (lo, hi); with no good group yet, of [0, hi).
        let middle = (lo.map_or(-1, |l| l as i64) + hi as i64) as f64 / 2.0;
        let best = unknown
            .iter()
            .copied()
            .min_by(|&a, &b| {
                let da = (a as f64 - middle).abs();
                let db = (b as f64 - middle).abs();
                da.total_cmp(&db).then(b.cmp(&a))
            })
            .unwrap_or(start);
        Next::Test(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigs(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    /// Runs the search over commits whose first bad one is `first_bad` (0: GOOD itself), where
    /// `skip` cannot be judged; returns the answer and the groups tested.
    fn search(signatures: &[String], first_bad: usize, skip: &[usize]) -> (Next, Vec<usize>) {
        let mut s = Search::new(signatures);
        let mut tested = Vec::new();
        loop {
            match s.next() {
                Next::Test(g) => {
                    tested.push(g);
                    let first = s.groups[g].first;
                    let mark = if skip.contains(&first) {
                        Mark::Skip
                    } else if first >= first_bad {
                        Mark::Bad
                    } else {
                        Mark::Good
                    };
                    s.mark(g, mark);
                    assert!(tested.len() < 64, "no end");
                }
                answer => return (answer, tested),
            }
        }
    }

    #[test]
    fn thirty_commits_after_good_take_at_most_five_tests_good_included() {
        // GOOD and 30 commits: the first bad one is one of 31.
        let signatures = sigs(31);
        for first_bad in 0..31 {
            let (answer, tested) = search(&signatures, first_bad, &[]);
            assert_eq!(answer, Next::Found(first_bad), "first bad {first_bad}");
            assert!(tested.len() <= 5, "{first_bad}: {tested:?}");
            // GOOD is run only when the search narrows to it.
            assert_eq!(
                tested.contains(&0),
                first_bad <= 1,
                "{first_bad}: {tested:?}"
            );
        }
    }

    #[test]
    fn commits_that_leave_the_inputs_alone_are_never_tested() {
        // GOOD, then 30 commits of which only 3 change the inputs (at 8, 16 and 24).
        let signatures: Vec<String> = (0..31).map(|i| format!("s{}", i / 8)).collect();
        let s = Search::new(&signatures);
        assert_eq!(s.groups.len(), 4);
        let (answer, tested) = search(&signatures, 16, &[]);
        assert_eq!(answer, Next::Found(2));
        assert_eq!(s.groups[2].first, 16);
        assert!(tested.len() <= 2, "{tested:?}");
    }

    #[test]
    fn a_skipped_neighbour_makes_the_answer_one_of_two() {
        let signatures = sigs(11);
        let (answer, _) = search(&signatures, 6, &[5]);
        assert_eq!(answer, Next::OneOf(vec![5, 6]));
        // A skipped commit elsewhere costs a test but not the answer.
        let (answer, _) = search(&signatures, 6, &[2]);
        assert_eq!(answer, Next::Found(6));
    }

    #[test]
    fn a_revert_to_goods_inputs_takes_goods_verdict() {
        // Commit 3 reverts to GOOD's inputs: once GOOD is judged, so is it.
        let signatures: Vec<String> = ["g", "a", "b", "g", "c", "d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut s = Search::new(&signatures);
        s.mark(0, Mark::Good);
        assert_eq!(s.mark_of(3), Mark::Good);
        // A verdict of its own is not overwritten by a later one of the same inputs.
        s.mark(3, Mark::Bad);
        assert_eq!(s.mark_of(0), Mark::Good);
    }

    #[test]
    fn goods_own_fault_is_found_at_group_zero() {
        let (answer, tested) = search(&sigs(9), 0, &[]);
        assert_eq!(answer, Next::Found(0));
        assert!(tested.contains(&0));
    }
}
