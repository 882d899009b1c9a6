//! The registry pass: every rule of [`RULES`] over the joined evidence, in the table's order.
//! Here alone one rule's drafts meet another's before the fold: a finding belongs to the first
//! rule whose draft explains it ([`Ctx::claimed`]), and a draft gives way where an earlier
//! rule's draft meets one of its [`GiveWay`] conditions; then the comparison with the
//! baseline's profile ([`crate::contrast::weigh`]) weighs the performance causes. No rule reads
//! another rule's drafts.

use std::collections::BTreeSet;

use crate::diagnosis::{Draft, GiveWay, Level};
use crate::join::Joined;
use crate::rules::{Ctx, RULES, annotate, draft_kernel_is, is_fault};

/// Every rule's drafts that stand, in the table's order: what the fold ([`crate::fold`])
/// makes one diagnosis per root cause of.
pub fn draft_all(joined: &Joined) -> Vec<Draft> {
    let mut kept: Vec<Draft> = Vec::new();
    let mut claimed = BTreeSet::new();
    for rule in RULES {
        let ctx = Ctx {
            joined,
            claimed: &claimed,
        };
        let new: Vec<Draft> = rule
            .draft(&ctx)
            .into_iter()
            .filter(|d| !d.gives_way.iter().any(|c| holds(c, d, &kept)))
            .collect();
        claimed.extend(new.iter().flat_map(|d| d.explains.iter().copied()));
        kept.extend(new);
    }
    // The baseline's profile weighs the performance causes: what the two kernels share is no
    // cause of the difference, and what separates them is.
    // A draft that gives way where a cause accounts for its kernel's time gives way to the
    // causes the comparison adds too.
    let added = crate::contrast::weigh(
        &Ctx {
            joined,
            claimed: &claimed,
        },
        &mut kept,
    );
    kept.retain(|d| {
        !d.gives_way
            .iter()
            .any(|c| matches!(c, GiveWay::TimeAccounted(_)) && holds(c, d, &added))
    });
    kept.extend(added);
    annotate(joined, &mut kept);
    kept
}

/// Whether an earlier rule's draft meets condition `c` of draft `d`.
fn holds(c: &GiveWay, d: &Draft, earlier: &[Draft]) -> bool {
    let in_config = |e: &&Draft| e.config == d.config;
    let names = |e: &Draft, kernel: &crate::kernel_id::KernelId| {
        e.kernel
            .as_deref()
            .is_none_or(|k| draft_kernel_is(k, kernel))
    };
    let error = |e: &&Draft| e.level == Level::Error;
    let mut earlier = earlier.iter().filter(in_config);
    match c {
        GiveWay::Error(kernel) => {
            earlier.any(|e| error(&e) && kernel.as_ref().is_none_or(|k| names(e, k)))
        }
        GiveWay::ErrorWithoutFault(kernel) => {
            let here: Vec<&Draft> = earlier.filter(|e| names(e, kernel)).collect();
            !here.iter().any(|e| is_fault(e)) && here.iter().any(error)
        }
        GiveWay::Fault => earlier.any(is_fault),
        GiveWay::NoFault => !earlier.any(is_fault),
        GiveWay::ErrorOnLog(log) => {
            earlier.any(|e| error(&e) && e.evidence.iter().any(|item| item.log == *log))
        }
        GiveWay::TimeAccounted(kernel) => earlier.any(|e| {
            e.rule.rule().accounts_for_time
                && e.level == Level::Warning
                && kernel
                    .as_ref()
                    .is_none_or(|k| e.kernel.as_deref().is_some_and(|ek| draft_kernel_is(ek, k)))
        }),
        GiveWay::Drafted(rule, kernel) => earlier.any(|e| e.rule == *rule && names(e, kernel)),
    }
}

#[cfg(test)]
mod tests {
    use super::holds;
    use crate::diagnosis::{Draft, GiveWay, Level};
    use crate::kernel_id::KernelId;
    use crate::rules::RuleId;

    fn draft(rule: RuleId, level: Level, kernel: &str) -> Draft {
        let mut d = Draft::new(rule, level, crate::message::Message::new());
        d.config = Some("c".into());
        d.kernel = Some(kernel.into());
        d
    }

    #[test]
    fn a_launch_failure_gives_way_to_another_symptom_but_stands_beside_a_fault() {
        let k = KernelId::of("k");
        let mine = draft(RuleId::LaunchFailure, Level::Error, "k");
        let symptom = draft(RuleId::WrongOutput, Level::Error, "k");
        let fault = draft(RuleId::OutOfBounds, Level::Error, "k");
        let c = GiveWay::ErrorWithoutFault(k);
        assert!(holds(&c, &mine, std::slice::from_ref(&symptom)));
        assert!(!holds(&c, &mine, &[symptom, fault]));
        // Another config's error is no reason.
        let mut elsewhere = draft(RuleId::WrongOutput, Level::Error, "k");
        elsewhere.config = Some("other".into());
        assert!(!holds(&c, &mine, &[elsewhere]));
    }

    #[test]
    fn a_comparison_gives_way_only_to_a_warning_that_accounts_for_the_time() {
        let mine = draft(RuleId::SlowerThanBaseline, Level::Warning, "k");
        let c = GiveWay::TimeAccounted(None);
        assert!(holds(
            &c,
            &mine,
            &[draft(RuleId::SlowKernel, Level::Warning, "k")]
        ));
        assert!(!holds(
            &c,
            &mine,
            &[draft(RuleId::OccupancyLimit, Level::Warning, "k")]
        ));
        assert!(!holds(
            &c,
            &mine,
            &[draft(RuleId::SlowKernel, Level::Note, "k")]
        ));
        let of_k = GiveWay::TimeAccounted(Some(KernelId::of("other")));
        assert!(!holds(
            &of_k,
            &mine,
            &[draft(RuleId::SlowKernel, Level::Warning, "k")]
        ));
    }

    #[test]
    fn an_exit_records_two_readings_are_decided_by_whether_a_fault_stands() {
        let mine = draft(RuleId::SanitizerError, Level::Error, "k");
        let fault = draft(RuleId::SharedMemoryRace, Level::Error, "k");
        assert!(holds(&GiveWay::Fault, &mine, std::slice::from_ref(&fault)));
        assert!(!holds(&GiveWay::NoFault, &mine, &[fault]));
        assert!(holds(&GiveWay::NoFault, &mine, &[]));
    }
}
