//! `perf-improvement`: a kernel's p50 faster than another run's beyond both runs' noise. Its
//! drafts are written where two runs are compared (`diff::perf`); this module holds its row.

use super::{Proposes, Role, Rule, RuleId};

/// This rule's row in the registry ([`super::RULES`]).
pub(crate) const RULE: Rule = Rule {
    id: RuleId::PerfImprovement,
    role: Role::Comparison,
    name: "Performance improvement",
    description: "A kernel's p50 faster than the other run's by more than both runs' \
                  measured noise.",
    module: "crates/report/src/diff/perf.rs",
    run: None,
    absorbs: None,
    slows: false,
    accounts_for_time: false,
    proposes: Proposes::Hypothesis,
};
