//! The fold: how the rules' drafts become one diagnosis per root cause. It is the one place
//! that decides a draft's fate; it reads only the drafts and each rule's [`Role`].
//!
//! In order:
//! 1. **Absorption.** A draft whose rule absorbs another rule's note ([`crate::rules::Rule::absorbs`]) takes
//!    over that note for the same kernel and config.
//! 2. **Symptoms to their faults.** A draft that names the fault it is a symptom of
//!    ([`Scope`]) joins the first fault ([`Role::SitedFault`]) that matches.
//! 3. **One cause per fault, per config.** Within one config, every error that is not a fault
//!    of its own joins the config's leading fault (the lowest rank), or, without one, the
//!    symptom that says most; two faults at one line are one.
//! 4. **Merge.** Drafts of one rule at one place with one key are one root cause, whichever
//!    configs, kernels and template instantiations show it.
//! 5. **Rank.** Errors, then measured gain, confidence, evidence, rule order.
//!
//! Performance causes ([`Role::Performance`]) are never attached: they stand beside faults.
//! Absences this module keeps: no rule sets another draft's parent; no rule silences a draft;
//! no list of rule ids outside [`crate::rules::RULES`].

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::diagnosis::{Diagnosis, Draft, Helper, Level, Scope};
use crate::rules::{Role, RuleId};
use crate::text::{kernel_base, md_code, short_hash};

/// What the fold knows of the run besides the drafts.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Logs (relative to the run directory) of stages that launched the kernel several times:
    /// a fault found only there does not explain a symptom of a single launch.
    pub repeated_logs: BTreeSet<String>,
}

/// The most evidence items a merged diagnosis keeps.
const MAX_EVIDENCE: usize = 12;

/// Whether a draft is a fault of its own that symptoms may attach to: an error of a rule whose
/// role is [`Role::SitedFault`].
pub fn is_fault(d: &Draft) -> bool {
    matches!(d.rule.role(), Role::SitedFault { .. }) && d.level == Level::Error
}

/// A draft with the fold's own bookkeeping, which no rule sees.
struct Node {
    draft: Draft,
    /// The draft it joins (an index into the nodes).
    attach_to: Option<usize>,
    /// Accounted for without being reported.
    silent: bool,
}

/// Folds drafts into diagnoses: one per root cause, ranked.
pub fn fold(drafts: Vec<Draft>, facts: &Facts) -> Vec<Diagnosis> {
    let mut nodes: Vec<Node> = drafts
        .into_iter()
        .map(|draft| Node {
            draft,
            attach_to: None,
            silent: false,
        })
        .collect();
    absorb(&mut nodes);
    attach_scoped(&mut nodes, facts);
    one_cause_per_fault(&mut nodes);
    attach_symptoms(&mut nodes);
    merge(nodes)
}

/// Step 1: each draft that absorbs its rule's note takes the first such note of its kernel and
/// config, which goes.
fn absorb(nodes: &mut [Node]) {
    for cause in 0..nodes.len() {
        let d = &nodes[cause].draft;
        let Some((rule, take)) = d.rule.rule().absorbs.filter(|_| d.absorbs) else {
            continue;
        };
        let (kernel, config) = (d.kernel.clone(), d.config.clone());
        let Some(note) = nodes.iter().position(|n| {
            n.draft.rule == rule
                && n.draft.level == Level::Note
                && !n.silent
                && n.draft.kernel == kernel
                && n.draft.config == config
        }) else {
            continue;
        };
        nodes[note].silent = true;
        let note = nodes[note].draft.clone();
        take(&mut nodes[cause].draft, &note);
    }
}

/// Step 2: a symptom that names its fault's scope joins the first fault there.
fn attach_scoped(nodes: &mut [Node], facts: &Facts) {
    let one_launch = |d: &Draft| d.evidence.iter().all(|e| !facts.repeated_logs.contains(&e.log));
    for i in 0..nodes.len() {
        let Some(scope) = nodes[i].draft.symptom_of.clone() else {
            continue;
        };
        let config = nodes[i].draft.config.clone();
        let same_config = |d: &Draft| d.config == config;
        let root = nodes.iter().position(|n| {
            let d = &n.draft;
            is_fault(d)
                && match &scope {
                    Scope::Kernel {
                        kernel,
                        single_launch,
                    } => {
                        same_config(d)
                            && d.kernel
                                .as_deref()
                                .is_none_or(|k| kernel_base(k) == kernel_base(kernel))
                            && (!single_launch || one_launch(d))
                    }
                    Scope::Config | Scope::Test(_) => same_config(d),
                    Scope::Log(log) => d.evidence.iter().any(|e| &e.log == log),
                }
        });
        // A failing test is not the symptom of a fault a tool found in another test run alone.
        let root = root.filter(|&r| match &scope {
            Scope::Test(test) => nodes[r]
                .draft
                .figures
                .get("test")
                .and_then(|t| t.as_str())
                .is_none_or(|tool_test| tool_test == test),
            _ => true,
        });
        nodes[i].attach_to = root;
    }
}

/// Where a draft stands when one config's errors are ordered: faults by rank, failing tests,
/// symptoms by rank, bare symptoms last.
fn precedence(d: &Draft) -> u16 {
    if d.bare {
        return 300;
    }
    match d.rule.role() {
        Role::SitedFault { rank } => u16::from(rank),
        Role::FailingTest => 100,
        Role::Symptom { rank } => 200 + u16::from(rank),
        Role::CatchAll | Role::Performance | Role::Comparison => 300,
    }
}

/// Step 3: one fault, one root cause. Within one config (one build of the code), every error
/// that names no site of its own becomes evidence under the config's leading fault, or,
/// without one, under the symptom that says most; drafts of two rules at one line (an
/// out-of-bounds read and the uninitialised value it reads) are one fault. Sites at different
/// places stay apart: two root causes only where the evidence shows two.
fn one_cause_per_fault(nodes: &mut [Node]) {
    let open = |n: &Node| n.draft.level == Level::Error && !n.silent && n.attach_to.is_none();
    let configs: BTreeSet<String> = nodes
        .iter()
        .filter(|n| open(n))
        .filter_map(|n| n.draft.config.clone())
        .collect();
    for config in configs {
        let members: Vec<usize> = (0..nodes.len())
            .filter(|&i| open(&nodes[i]) && nodes[i].draft.config.as_deref() == Some(&config))
            .collect();
        let located = |i: usize, tests: bool| {
            let d = &nodes[i].draft;
            match d.rule.role() {
                Role::SitedFault { .. } => {
                    !tests && (d.location.is_some() || d.rule == RuleId::LaunchRejected)
                }
                Role::FailingTest => tests && d.location.is_some(),
                _ => false,
            }
        };
        let tool_sites: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| located(i, false))
            .collect();
        // A failing test is a fault of its own unless a tool located one it may be the symptom
        // of: where each tool site was found in a test run alone, only a site in this test.
        let test_of = |i: usize| nodes[i].draft.figures.get("test");
        let own_fault = |i: usize| {
            located(i, true)
                && tool_sites
                    .iter()
                    .all(|&t| test_of(t).is_some_and(|tool_test| Some(tool_test) != test_of(i)))
        };
        let order = |i: usize| precedence(&nodes[i].draft);
        let mut sites: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| located(i, false) || own_fault(i))
            .collect();
        sites.sort_by_key(|&i| order(i));
        // Two rules at one line: one fault. (The same rule's drafts merge across kernels and
        // configs in `merge`.) Failing checks at one line (one assertion failing for several
        // shapes) are one fault too.
        let mut kept: Vec<usize> = Vec::new();
        let mut moves: Vec<(usize, usize)> = Vec::new();
        for i in sites {
            let d = &nodes[i].draft;
            let same = kept.iter().copied().find(|&k| {
                let other = &nodes[k].draft;
                d.location.is_some()
                    && other.location == d.location
                    && (other.rule != d.rule || other.rule.role() == Role::FailingTest)
            });
            match same {
                Some(k) => moves.push((i, k)),
                None => kept.push(i),
            }
        }
        let lead = kept
            .first()
            .copied()
            .or_else(|| members.iter().copied().min_by_key(|&i| order(i)));
        if let Some(lead) = lead {
            for &i in &members {
                if i != lead && !kept.contains(&i) && !moves.iter().any(|(from, _)| *from == i) {
                    moves.push((i, lead));
                }
            }
        }
        for (from, to) in moves {
            nodes[from].attach_to = Some(to);
        }
    }
}

/// Step 3, continued: moves each symptom's evidence into the root cause it joins, and says so
/// in the root cause's explanation. A symptom of a symptom joins the root cause at the chain's
/// end; a symptom whose target is missing stands alone.
fn attach_symptoms(nodes: &mut [Node]) {
    let end_of = |mut i: usize| {
        for _ in 0..nodes.len() {
            match nodes[i].attach_to {
                Some(next) if next != i && next < nodes.len() => i = next,
                _ => break,
            }
        }
        i
    };
    let moves: Vec<(usize, usize)> = (0..nodes.len())
        .filter(|&i| nodes[i].attach_to.is_some())
        .map(|i| (i, end_of(i)))
        .filter(|(i, end)| i != end)
        .collect();
    // The stages each root cause cites itself, before symptoms join it.
    let own_stages: BTreeMap<usize, Vec<String>> = moves
        .iter()
        .map(|&(_, to)| {
            let stages = nodes[to].draft.evidence.iter().map(|e| e.stage.clone());
            (to, stages.collect())
        })
        .collect();
    let mut stages: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut seen: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for &(from, to) in &moves {
        nodes[from].silent = true;
        let symptom = &mut nodes[from].draft;
        if !symptom.bare && symptom.rule.role() != Role::CatchAll {
            let titles = seen.entry(to).or_default();
            let title = symptom.title.trim_end_matches('.').to_string();
            if !titles.contains(&title) {
                titles.push(title);
            }
        }
        let evidence = std::mem::take(&mut symptom.evidence);
        let target = &mut nodes[to].draft;
        for item in evidence {
            let named = stages.entry(to).or_default();
            if !item.stage.is_empty() && !named.contains(&item.stage) {
                named.push(item.stage.clone());
            }
            // Each stage once: the same stage's log is already there.
            let known = target
                .evidence
                .iter()
                .any(|e| e.log == item.log || (e.stage == item.stage && e.config == item.config));
            if !known && target.evidence.len() < MAX_EVIDENCE {
                target.evidence.push(item);
            }
        }
    }
    for (to, titles) in seen {
        let target = &mut nodes[to].draft;
        for title in titles {
            let said = format!(" Seen downstream: {title}.");
            if !target.explanation.contains(&said) && target.title != title {
                target.explanation.push_str(&said);
            }
        }
    }
    for (to, named) in stages {
        let target = &mut nodes[to].draft;
        let own: Vec<String> = named
            .into_iter()
            .filter(|s| !own_stages.get(&to).is_some_and(|o| o.contains(s)))
            .map(|s| md_code(&s))
            .collect();
        if !own.is_empty() {
            target.explanation.push_str(&format!(
                " The failures of {} in this config follow from it and are listed under it.",
                crate::text::join_words(&own)
            ));
        }
    }
}

/// The identity of a root cause: one place in the source (a line, or the kernel's file for
/// whole-kernel rules) with one rule-specific key is one root cause, whichever kernels and
/// configs show it; without a location, each kernel is its own.
fn identity(d: &Draft) -> (RuleId, String, String) {
    let place = match &d.location {
        Some(loc) => loc.to_string(),
        None => format!("kernel:{}", d.kernel.as_deref().unwrap_or("")),
    };
    (d.rule, place, d.key.clone())
}

/// Step 4 and 5: merges the drafts still standing that share an identity, then ranks.
fn merge(nodes: Vec<Node>) -> Vec<Diagnosis> {
    let mut groups: BTreeMap<(RuleId, String, String), Vec<Draft>> = BTreeMap::new();
    for node in nodes.into_iter().filter(|n| !n.silent) {
        groups
            .entry(identity(&node.draft))
            .or_default()
            .push(node.draft);
    }
    let mut out = Vec::new();
    for ((rule, place, key), mut group) in groups {
        // The representative: the most certain, most severe, best evidenced draft.
        group.sort_by(|a, b| {
            b.confidence
                .cmp(&a.confidence)
                .then(b.level.cmp(&a.level))
                .then(b.evidence.len().cmp(&a.evidence.len()))
                .then(a.config.cmp(&b.config))
        });
        let mut configs: Vec<String> = group.iter().filter_map(|d| d.config.clone()).collect();
        configs.sort();
        configs.dedup();
        let mut kernels: Vec<String> = group.iter().filter_map(|d| d.kernel.clone()).collect();
        kernels.sort();
        kernels.dedup();
        let call_site = group.iter().find_map(|d| d.call_site.clone());
        let mut helpers: Vec<Helper> = Vec::new();
        for h in group.iter().flat_map(|d| &d.helpers) {
            if !helpers.contains(h) {
                helpers.push(h.clone());
            }
        }
        let mut iter = group.into_iter();
        let Some(first) = iter.next() else { continue };
        let mut evidence = first.evidence.clone();
        for other in iter {
            for item in other.evidence {
                let duplicate = evidence.iter().any(|e| {
                    e.stage == item.stage && e.excerpt == item.excerpt && e.summary == item.summary
                });
                if !duplicate && evidence.len() < MAX_EVIDENCE {
                    evidence.push(item);
                }
            }
        }
        let fingerprint = short_hash(&[rule.as_str(), &place, &key]);
        out.push(Diagnosis {
            rule,
            title: first.title,
            level: first.level,
            confidence: first.confidence,
            kernel: first.kernel,
            config: first.config,
            configs,
            arch: first.arch,
            location: first.location,
            call_site,
            evidence,
            explanation: first.explanation,
            fix: first.fix,
            fingerprint,
            kernels,
            helpers,
            figures: first.figures,
        });
    }
    out.sort_by(rank);
    out
}

/// The ranking order of diagnoses: most severe, most certain and best evidenced first.
pub fn rank(a: &Diagnosis, b: &Diagnosis) -> Ordering {
    // Measured performance causes rank by the time they cost (ncu's estimated speedup).
    // What a cause is worth to the whole program when known, else to its kernel.
    let gain = |d: &Diagnosis| {
        d.figures
            .get("program_gain")
            .or_else(|| d.figures.get("estimated_speedup"))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    b.level
        .cmp(&a.level)
        .then(gain(b).total_cmp(&gain(a)))
        .then(b.confidence.cmp(&a.confidence))
        .then(b.evidence.len().cmp(&a.evidence.len()))
        .then(a.rule.cmp(&b.rule))
        .then(a.kernel.cmp(&b.kernel))
        .then(a.location.cmp(&b.location))
        .then(a.config.cmp(&b.config))
        .then(a.fingerprint.cmp(&b.fingerprint))
}
