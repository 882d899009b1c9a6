//! The search over the commits after GOOD up to BAD, as `git bisect` does it, over *groups*:
//! runs of consecutive commits that leave the pipeline's inputs unchanged. A commit that touches
//! only a README is in its predecessor's group and is never run; a group with the inputs of a
//! group already judged takes its verdict (a revert back to GOOD's sources is good).
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

/// Consecutive candidates with one signature of the inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The index of its first commit among the candidates: the commit that made the change.
    pub first: usize,
    pub len: usize,
    pub signature: String,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Test this group.
    Test(usize),
    /// The first bad group.
    Found(usize),
    /// The first bad group is one of these (all but the last were skipped).
    OneOf(Vec<usize>),
}

#[derive(Debug, Clone)]
pub struct Search {
    pub groups: Vec<Group>,
    marks: Vec<Mark>,
    /// Marked good only because its inputs are GOOD's, which no run has checked yet.
    assumed: Vec<bool>,
    good_signature: String,
}

impl Search {
    /// `signatures` are the candidates' in order, BAD's last; BAD is bad (its run showed it) and
    /// GOOD, before the first, is taken as good until a run says otherwise.
    pub fn new(signatures: &[String], good_signature: &str) -> Search {
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
            assumed: vec![false; groups.len()],
            groups,
            good_signature: good_signature.to_string(),
        };
        for i in 0..search.groups.len() {
            if search.groups[i].signature == good_signature {
                search.marks[i] = Mark::Good;
                search.assumed[i] = true;
            }
        }
        if let Some(last) = search.groups.len().checked_sub(1) {
            search.mark(last, Mark::Bad);
        }
        search
    }

    pub fn mark_of(&self, group: usize) -> Mark {
        self.marks.get(group).copied().unwrap_or(Mark::Unknown)
    }

    /// Records a group's verdict, and gives it to every group with the same inputs.
    pub fn mark(&mut self, group: usize, mark: Mark) {
        let Some(signature) = self.groups.get(group).map(|g| g.signature.clone()) else {
            return;
        };
        for (i, g) in self.groups.iter().enumerate() {
            if g.signature == signature {
                self.marks[i] = mark;
                self.assumed[i] = false;
            }
        }
    }

    /// GOOD's run showed it bad or good: the groups with its inputs follow.
    pub fn good_judged(&mut self, mark: Mark) {
        for i in 0..self.groups.len() {
            if self.groups[i].signature == self.good_signature {
                self.marks[i] = mark;
                self.assumed[i] = false;
            }
        }
    }

    /// The first bad group, and the last good one before it (`None`: GOOD).
    fn bounds(&self) -> (Option<usize>, usize) {
        let hi = self
            .marks
            .iter()
            .position(|m| *m == Mark::Bad)
            .unwrap_or(self.groups.len().saturating_sub(1));
        let lo = self.marks[..hi].iter().rposition(|m| *m == Mark::Good);
        (lo, hi)
    }

    /// The next group to test (the unknown one nearest the middle of the range left), or the
    /// answer.
    pub fn next(&self) -> Next {
        let (lo, hi) = self.bounds();
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
        // The middle of the open range (lo, hi), GOOD being -1.
        let middle = (lo.map_or(-1, |l| l as i64) + hi as i64) as f64 / 2.0;
        let best = unknown
            .iter()
            .copied()
            .min_by(|&a, &b| {
                let da = (a as f64 - middle).abs();
                let db = (b as f64 - middle).abs();
                da.total_cmp(&db).then(a.cmp(&b))
            })
            .unwrap_or(start);
        Next::Test(best)
    }

    /// Whether the answer rests on GOOD being good without a run that showed it: the last good
    /// group before the answer is GOOD itself or only has GOOD's inputs.
    pub fn rests_on_good(&self) -> bool {
        match self.bounds().0 {
            None => true,
            Some(lo) => self.assumed[lo],
        }
    }

    /// The last good group before the first bad one (`None`: GOOD).
    pub fn last_good(&self) -> Option<usize> {
        self.bounds().0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigs(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    /// Runs the search against a history whose first bad candidate is `first_bad`, where
    /// `skip` cannot be judged; returns the answer and the groups tested.
    fn search(signatures: &[String], first_bad: usize, skip: &[usize]) -> (Next, Vec<usize>) {
        let mut s = Search::new(signatures, "GOOD");
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
    fn thirty_distinct_commits_take_at_most_five_tests() {
        let signatures = sigs(30);
        for first_bad in 0..30 {
            let (answer, tested) = search(&signatures, first_bad, &[]);
            assert_eq!(answer, Next::Found(first_bad), "first bad {first_bad}");
            assert!(tested.len() <= 5, "{first_bad}: {tested:?}");
        }
    }

    #[test]
    fn commits_that_leave_the_inputs_alone_are_never_tested() {
        // 30 commits, only 4 of which change the inputs: s0 (1 commit), then README commits.
        let mut signatures = Vec::new();
        for i in 0..30 {
            signatures.push(format!("s{}", i / 8));
        }
        let s = Search::new(&signatures, "GOOD");
        assert_eq!(s.groups.len(), 4);
        let (answer, tested) = search(&signatures, 16, &[]);
        assert_eq!(answer, Next::Found(2));
        assert_eq!(s.groups[2].first, 16);
        assert!(tested.len() <= 2, "{tested:?}");
    }

    #[test]
    fn a_skipped_neighbour_makes_the_answer_one_of_two() {
        let signatures = sigs(10);
        let (answer, _) = search(&signatures, 6, &[5]);
        assert_eq!(answer, Next::OneOf(vec![5, 6]));
        // A skipped commit elsewhere costs a test but not the answer.
        let (answer, _) = search(&signatures, 6, &[2]);
        assert_eq!(answer, Next::Found(6));
    }

    #[test]
    fn inputs_equal_to_goods_are_good_until_good_is_judged() {
        // A revert: candidate 3 has GOOD's inputs again.
        let signatures: Vec<String> = ["a", "b", "c", "GOOD", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut s = Search::new(&signatures, "GOOD");
        assert_eq!(s.mark_of(3), Mark::Good);
        s.good_judged(Mark::Bad);
        assert_eq!(s.mark_of(3), Mark::Bad);
    }

    #[test]
    fn an_answer_next_to_good_rests_on_good() {
        let signatures = sigs(8);
        let mut s = Search::new(&signatures, "GOOD");
        while let Next::Test(g) = s.next() {
            s.mark(g, Mark::Bad);
        }
        assert_eq!(s.next(), Next::Found(0));
        assert!(s.rests_on_good());
        let (answer, _) = search(&signatures, 4, &[]);
        assert_eq!(answer, Next::Found(4));
    }
}
