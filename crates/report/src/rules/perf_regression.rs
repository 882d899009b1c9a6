//! `perf-regression`: a kernel's p50 slower than another run's beyond both runs' noise. Its
//! drafts are written where two runs are compared (`diff::perf`); this module holds its row.

use super::{Rule, RuleId};

pub(crate) const RULE: Rule = Rule::comparison(
    RuleId::PerfRegression,
    "Performance regression",
    "A kernel's p50 slower than the other run's by more than both runs' \
        measured noise.",
    "crates/report/src/diff/perf.rs",
);
