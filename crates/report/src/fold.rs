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
//! 5. **Rank.** Errors, then measured gain, then among faults the one that stops the program
//!    first (its rank), then confidence, evidence, rule order.
//!
//! Performance causes ([`Role::Performance`]) are never attached: they stand beside faults.
//! Absences this module keeps: no rule sets another draft's parent; no rule silences a draft;
//! no list of rule ids outside [`crate::rules::RULES`].

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::diagnosis::{Diagnosis, Draft, Figure, Helper, Level, Scope, SourceLocation, Span};
use crate::message::{Message, code, msg};
use crate::rules::{Role, RuleId};
use crate::text::short_hash;

/// What the fold knows of the run besides the drafts.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Logs (relative to the run directory) of stages that launched the kernel several times:
    /// a fault found only there does not explain a symptom of a single launch.
    pub repeated_logs: BTreeSet<String>,
    /// Findings (by index) whose first record came after the program printed the line its
    /// check failed on ([`crate::model::ProgramModel::after_failure`]): a fault made only of
    /// them does not explain that failure.
    pub after_failure: BTreeSet<usize>,
}

impl Facts {
    /// What the joined evidence says of the run for the fold.
    pub fn of(joined: &crate::join::Joined) -> Facts {
        let repeated_logs = joined
            .sources
            .iter()
            .filter(|s| {
                s.stage.is_some_and(|stage| {
                    let unit = stage.unit();
                    unit.mode() == Some(parsers::harness::Mode::Stress)
                        || unit.launches.is_some_and(|n| n > 1)
                })
            })
            .map(|s| s.path.to_string())
            .collect();
        Facts {
            repeated_logs,
            after_failure: joined.model.after_failure.clone(),
        }
    }
}

/// The most evidence items a merged diagnosis keeps.
const MAX_EVIDENCE: usize = 12;

use crate::rules::is_fault;

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
    one_cause_per_fault(&mut nodes, facts);
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
    let one_launch = |d: &Draft| {
        d.evidence
            .iter()
            .all(|e| !facts.repeated_logs.contains(&e.log))
    };
    for i in 0..nodes.len() {
        let Some(scope) = nodes[i].draft.symptom_of.clone() else {
            continue;
        };
        let config = nodes[i].draft.config.clone();
        let same_config = |d: &Draft| d.config == config;
        let symptom = &nodes[i].draft;
        // The sticky errors of a log follow the device-side error that log names, whichever
        // rule drafted it (a trap, a stack overflow, an invalid free).
        let device_error = |d: &Draft| {
            matches!(scope, Scope::Log(_))
                && d.level == Level::Error
                && d.symptom_of.is_none()
                && d.rule != symptom.rule
        };
        let root = nodes.iter().position(|n| {
            let d = &n.draft;
            (is_fault(d) || device_error(d))
                && (!after_failure(d, facts) || shares_log(symptom, d))
                && match &scope {
                    Scope::Kernel {
                        kernel,
                        single_launch,
                    } => {
                        same_config(d)
                            && d.kernel
                                .as_deref()
                                .is_none_or(|k| crate::rules::draft_kernel_is(k, kernel))
                            && (!single_launch || one_launch(d))
                    }
                    Scope::Config | Scope::Test(_) => same_config(d),
                    Scope::Log(log) => d.evidence.iter().any(|e| &e.log == log),
                }
        });
        // A failing test is not the symptom of a fault a tool found in another test run alone.
        let root = root.filter(|&r| match &scope {
            Scope::Test(test) => Figure::Test
                .of(&nodes[r].draft.figures)
                .and_then(|t| t.as_str())
                .is_none_or(|tool_test| tool_test == test),
            _ => true,
        });
        nodes[i].attach_to = root;
    }
}

/// Whether every finding a draft explains came after the program printed the line its check
/// failed on ([`Facts::after_failure`]).
fn after_failure(d: &Draft, facts: &Facts) -> bool {
    !d.explains.is_empty() && d.explains.iter().all(|e| facts.after_failure.contains(e))
}

/// Whether two drafts cite a log in common.
fn shares_log(a: &Draft, b: &Draft) -> bool {
    a.evidence
        .iter()
        .any(|e| b.evidence.iter().any(|o| o.log == e.log))
}

/// Where a draft stands when one config's errors are ordered: faults by rank, failing tests,
/// symptoms by rank, bare symptoms last.
fn precedence(d: &Draft) -> u16 {
    if d.bare {
        return 300;
    }
    match d.rule.role() {
        Role::SitedFault { rank, .. } => u16::from(rank),
        Role::FailingTest => 100,
        Role::Symptom { rank } => 200 + u16::from(rank),
        Role::CatchAll | Role::Performance | Role::Context | Role::Comparison => 300,
    }
}

/// Step 3: one fault, one root cause. Within one config (one build of the code), every error
/// that names no site of its own becomes evidence under the config's leading fault, or,
/// without one, under the symptom that says most; drafts of two rules at one line (an
/// out-of-bounds read and the uninitialised value it reads) are one fault. Sites at different
/// places stay apart: two root causes only where the evidence shows two.
fn one_cause_per_fault(nodes: &mut [Node], facts: &Facts) {
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
                // A fault a tool named in a kernel is a fault of its own even where no line
                // of the user's is known (an access inside a toolkit intrinsic).
                Role::SitedFault { unplaced, .. } => {
                    !tests && (d.location.is_some() || d.kernel.is_some() || unplaced)
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
        let test_of = |i: usize| Figure::Test.of(&nodes[i].draft.figures);
        // A fault whose records all came after the program printed its failure happened after
        // it: it explains nothing the program said before.
        let late = |i: usize| after_failure(&nodes[i].draft, facts);
        let own_fault = |i: usize| {
            located(i, true)
                && tool_sites.iter().all(|&t| {
                    late(t) || test_of(t).is_some_and(|tool_test| Some(tool_test) != test_of(i))
                })
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
        // What the lead cannot explain: a draft from another log than the lead's, when the
        // lead happened after the program's failure (the failing check, its wrong output).
        // Those join the first kept fault that came before it, else the one of them that says
        // most, which stands as its own root cause.
        let rest: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| Some(i) != lead && !kept.contains(&i))
            .filter(|&i| !moves.iter().any(|(from, _)| *from == i))
            .collect();
        let unexplained = |i: usize| {
            lead.is_some_and(|l| late(l) && !shares_log(&nodes[i].draft, &nodes[l].draft))
        };
        let second = kept.iter().copied().find(|&k| !late(k)).or_else(|| {
            rest.iter()
                .copied()
                .filter(|&i| unexplained(i))
                .min_by_key(|&i| order(i))
        });
        for i in rest {
            let to = if unexplained(i) { second } else { lead };
            if let Some(to) = to.filter(|&to| to != i) {
                moves.push((i, to));
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
    let mut seen: BTreeMap<usize, Vec<Message>> = BTreeMap::new();
    for &(from, to) in &moves {
        nodes[from].silent = true;
        let symptom = &mut nodes[from].draft;
        if !symptom.bare && symptom.rule.role() != Role::CatchAll {
            let titles = seen.entry(to).or_default();
            let title = symptom.title.without_full_stop();
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
            let said = msg!("Seen downstream: {}.", &title);
            if !target.notes.contains(&said) && target.title != title {
                target.notes.push(said);
            }
        }
    }
    for (to, named) in stages {
        let target = &mut nodes[to].draft;
        let own: Vec<Message> = named
            .into_iter()
            .filter(|s| !own_stages.get(&to).is_some_and(|o| o.contains(s)))
            .map(|s| code(s).into())
            .collect();
        if !own.is_empty() {
            target.notes.push(msg!(
                "The failures of {} in this config follow from it and are listed under it.",
                Message::words(own)
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

/// A fault no tool could place in one build (a release build's trap, where the intrinsic was
/// inlined away) that another build of the same kernel places (a `-G` build's line table): the
/// same rule, kernel and key with exactly one place among the other configs is that place, so
/// the two merge into one root cause.
fn place_from_another_build(nodes: &mut [Node]) {
    // A draft placed at the line its trap was put on has no place of the fault itself.
    let at_trap = |d: &Draft| d.stand_in.is_some();
    // A fault in a template's body is at the same line in every instantiation: the place one
    // build gives for one instantiation holds for the others.
    let template = |kernel: &str| kernel.split('<').next().unwrap_or(kernel).to_string();
    let mut places: BTreeMap<(RuleId, String, String), BTreeSet<SourceLocation>> = BTreeMap::new();
    for n in nodes.iter().filter(|n| !at_trap(&n.draft)) {
        if let (Some(kernel), Some(at)) = (&n.draft.kernel, &n.draft.location) {
            places
                .entry((n.draft.rule, template(kernel), n.draft.key.clone()))
                .or_default()
                .insert(at.clone());
        }
    }
    for n in nodes.iter_mut() {
        let trap = at_trap(&n.draft);
        if n.draft.location.is_some() && !trap {
            continue;
        }
        let Some(kernel) = &n.draft.kernel else {
            continue;
        };
        if let Some(one) = places
            .get(&(n.draft.rule, template(kernel), n.draft.key.clone()))
            .filter(|p| p.len() == 1)
            .and_then(|p| p.first())
        {
            if let Some(line) = n.draft.location.replace(one.clone()).filter(|_| trap)
                && let Some(stand_in) = n.draft.stand_in.take()
            {
                n.draft.notes.retain(|n| *n != stand_in.note);
                n.draft.spans.push(crate::diagnosis::Span::secondary(
                    line,
                    msg!("where the compiler put the trap in this build"),
                ));
            }
            n.draft.notes.push(msg!(
                "No tool placed it in config {}; the place is the one another build of {} gives \
                 for the same fault (a release build may keep no line of code it inlined).",
                code(n.draft.config.as_deref().unwrap_or("-")),
                code(kernel)
            ));
        }
    }
}

/// Step 4 and 5: merges the drafts still standing that share an identity, then ranks.
fn merge(nodes: Vec<Node>) -> Vec<Diagnosis> {
    let mut nodes: Vec<Node> = nodes.into_iter().filter(|n| !n.silent).collect();
    place_from_another_build(&mut nodes);
    let mut groups: BTreeMap<(RuleId, String, String), Vec<Draft>> = BTreeMap::new();
    for node in nodes {
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
        let spans = spans_of(&first, &helpers, call_site.as_ref());
        let notes = std::iter::once(first.explanation)
            .chain(first.notes)
            .filter(|n| !n.is_empty())
            .collect();
        let help = std::iter::once(first.fix)
            .chain(first.help)
            .filter(|h| !h.is_empty())
            .collect();
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
            spans,
            evidence,
            notes,
            help,
            fingerprint,
            kernels,
            helpers,
            figures: first.figures,
            hypothesis: first.hypothesis,
        });
    }
    out.sort_by(rank);
    out
}

/// A diagnosis's labelled spans: its place (primary, labelled by the rule or with what the rule
/// finds), the
/// rule's supporting sites, the inlined helpers where the tool located the access, and the host
/// line of the launch; each place once.
fn spans_of(d: &Draft, helpers: &[Helper], call_site: Option<&SourceLocation>) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    if let Some(location) = &d.location {
        // The rule's own label for its place (the read of a race), else what the rule finds.
        let label = d
            .spans
            .iter()
            .find(|s| &s.location == location)
            .map_or_else(
                || msg!("{}", d.rule.rule().name.to_lowercase()),
                |s| s.label.clone(),
            );
        spans.push(Span {
            location: location.clone(),
            label,
            primary: true,
        });
    }
    let helpers = helpers.iter().filter_map(|h| {
        let label = msg!("in the inlined helper {}", code(&h.name));
        Some(Span::secondary(h.location.clone()?, label))
    });
    let launch =
        call_site.map(|l| Span::secondary(l.clone(), msg!("the launch, in the host code")));
    for span in d.spans.iter().cloned().chain(helpers).chain(launch) {
        if !spans.iter().any(|s| s.location == span.location) {
            spans.push(span);
        }
    }
    spans
}

/// The ranking order of diagnoses: most severe, most certain and best evidenced first.
pub fn rank(a: &Diagnosis, b: &Diagnosis) -> Ordering {
    // Measured performance causes rank by the time they cost (ncu's estimated speedup).
    // What a cause is worth to the whole program when known, else to its kernel.
    let gain = |d: &Diagnosis| {
        Figure::ProgramGain
            .of(&d.figures)
            .or_else(|| Figure::EstimatedSpeedup.of(&d.figures))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    // Among faults, the one that stops the program first leads (a trap before a race).
    let stops = |d: &Diagnosis| match d.rule.role() {
        Role::SitedFault { rank, .. } if d.level == Level::Error => rank,
        _ => u8::MAX,
    };
    // A suggestion no run has tested never outranks a cause measured in the kernel's own
    // samples or throughput, whatever a tool estimated for it.
    b.level
        .cmp(&a.level)
        .then(a.untested().cmp(&b.untested()))
        .then(gain(b).total_cmp(&gain(a)))
        .then(stops(a).cmp(&stops(b)))
        .then(b.confidence.cmp(&a.confidence))
        .then(b.evidence.len().cmp(&a.evidence.len()))
        .then(a.rule.cmp(&b.rule))
        .then(a.kernel.cmp(&b.kernel))
        .then(a.location.cmp(&b.location))
        .then(a.config.cmp(&b.config))
        .then(a.fingerprint.cmp(&b.fingerprint))
}

#[cfg(test)]
mod tests {
    //! The fold, case by case: drafts built with a small builder, the root causes they fold to.

    use super::*;
    use crate::diagnosis::{Confidence, EvidenceItem, SourceLocation};

    /// A draft under construction.
    struct B(Draft);

    fn draft(rule: RuleId, title: &str) -> B {
        let level = match rule.role() {
            Role::Performance | Role::Comparison => Level::Warning,
            _ => Level::Error,
        };
        let mut d = Draft::new(rule, level, crate::message::Part::Text(title.to_string()));
        d.confidence = Confidence::High;
        d.config = Some("release".into());
        d.kernel = Some("attn".into());
        B(d).log(&format!("{rule}.log"))
    }

    impl B {
        fn config(mut self, config: &str) -> B {
            self.0.config = Some(config.into());
            self
        }
        fn kernel(mut self, kernel: &str) -> B {
            self.0.kernel = Some(kernel.into());
            self
        }
        fn at(mut self, file: &str, line: u32) -> B {
            self.0.location = Some(SourceLocation {
                file: file.into(),
                line: Some(line),
            });
            self
        }
        fn level(mut self, level: Level) -> B {
            self.0.level = level;
            self
        }
        fn of(mut self, scope: Scope) -> B {
            self.0.symptom_of = Some(scope);
            self
        }
        fn bare(mut self) -> B {
            self.0.bare = true;
            self
        }
        fn test(mut self, test: &str) -> B {
            Figure::Test.set(&mut self.0.figures, test.into());
            self
        }
        fn absorbs(mut self) -> B {
            self.0.absorbs = true;
            self
        }
        /// Its evidence: one item from this log, in a stage named after the log.
        fn log(mut self, log: &str) -> B {
            self.0.evidence = vec![EvidenceItem {
                stage: log.trim_end_matches(".log").into(),
                config: self.0.config.clone(),
                log: log.into(),
                summary: self.0.title.clone(),
                excerpt: Vec::new(),
            }];
            self
        }
    }

    fn kernel_scope(single_launch: bool) -> Scope {
        Scope::Kernel {
            kernel: crate::kernel_id::KernelId::of("attn"),
            single_launch,
        }
    }

    /// Folds the drafts (`repeated` names the logs of repeated launches) and returns each
    /// diagnosis as `rule@place`, in rank order.
    fn check(drafts: Vec<B>, repeated: &[&str], expect: &[&str]) -> Vec<Diagnosis> {
        let facts = Facts {
            repeated_logs: repeated.iter().map(|s| s.to_string()).collect(),
            after_failure: BTreeSet::new(),
        };
        let out = fold(drafts.into_iter().map(|b| b.0).collect(), &facts);
        let got: Vec<String> = out
            .iter()
            .map(|d| {
                let place = d.location.as_ref().map(|l| l.to_string());
                format!("{}@{}", d.rule, place.as_deref().unwrap_or("-"))
            })
            .collect();
        assert_eq!(got, expect);
        out
    }

    use RuleId::*;

    #[test]
    fn a_fault_after_the_programs_failure_does_not_explain_it() {
        let fault = || {
            let mut b = draft(OutOfBounds, "Out-of-bounds write")
                .at("a.cu", 10)
                .log("memcheck.log");
            b.0.explains = vec![0];
            b
        };
        let wrong = || {
            draft(WrongOutput, "Wrong output")
                .of(Scope::Config)
                .log("check.log")
        };
        let fold_with = |after: &[usize]| {
            let facts = Facts {
                repeated_logs: BTreeSet::new(),
                after_failure: after.iter().copied().collect(),
            };
            let out = fold(vec![fault().0, wrong().0], &facts);
            out.iter().map(|d| d.rule.to_string()).collect::<Vec<_>>()
        };
        // Its records came first: the wrong output is its symptom.
        assert_eq!(fold_with(&[]), ["out-of-bounds"]);
        // The program had printed its failure before the fault's first record: two causes.
        assert_eq!(fold_with(&[0]), ["out-of-bounds", "wrong-output"]);
    }

    #[test]
    fn a_symptom_joins_the_fault_of_its_kernel_and_says_so() {
        let out = check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write").at("a.cu", 10),
                draft(WrongOutput, "Wrong output").of(kernel_scope(false)),
            ],
            &[],
            &["out-of-bounds@a.cu:10"],
        );
        assert!(
            out[0]
                .explanation()
                .markdown()
                .contains("Seen downstream: Wrong output.")
        );
        assert!(
            out[0]
                .explanation()
                .markdown()
                .contains("The failures of `wrong-output` in this config follow from it")
        );
        assert_eq!(out[0].evidence.len(), 2);
    }

    #[test]
    fn a_fault_one_build_places_is_placed_in_the_build_that_could_not() {
        // The release build's trap names no line; the -G build's line table does.
        check(
            vec![
                draft(WmmaLocalMemory, "Fragment on local memory"),
                draft(WmmaLocalMemory, "Fragment on local memory")
                    .config("debug")
                    .at("a.cu", 27),
            ],
            &[],
            &["wmma-local-memory@a.cu:27"],
        );
        // Two places elsewhere: which one is not known, so it stays apart.
        check(
            vec![
                draft(WmmaLocalMemory, "Fragment on local memory"),
                draft(WmmaLocalMemory, "Fragment on local memory")
                    .config("debug")
                    .at("a.cu", 27),
                draft(WmmaLocalMemory, "Fragment on local memory")
                    .config("debug2")
                    .at("a.cu", 40),
            ],
            &[],
            &[
                "wmma-local-memory@-",
                "wmma-local-memory@a.cu:27",
                "wmma-local-memory@a.cu:40",
            ],
        );
    }

    /// A release build's draft placed at the line its trap was put on, as `wmma_local` makes it.
    fn at_trap(line: u32) -> B {
        let mut d = draft(WmmaLocalMemory, "Fragment on local memory").at("a.cu", line);
        let trap = d.0.location.clone().expect("a place");
        d.0.stands_in(msg!(
            "{} is where the compiler put the trap.",
            crate::message::path(&trap)
        ));
        d
    }

    #[test]
    fn a_place_at_the_trap_gives_way_to_the_call_another_build_names() {
        // The release build's trap record names the line the compiler put the trap on (the
        // kernel's end, fa_s512_v3.cu:695 at the seed's 6d3506d); the -G build names the call.
        let out = check(
            vec![
                at_trap(95),
                draft(WmmaLocalMemory, "Fragment on local memory")
                    .config("debug")
                    .at("a.cu", 27),
            ],
            &[],
            &["wmma-local-memory@a.cu:27"],
        );
        let text = out[0].explanation();
        assert!(
            !text
                .markdown()
                .contains("is where the compiler put the trap"),
            "{text:?}"
        );
        assert_eq!(out[0].configs, ["debug", "release"]);
        // Alone, it stays at the trap's line and says what that line is.
        let out = check(vec![at_trap(95)], &[], &["wmma-local-memory@a.cu:95"]);
        assert!(
            out[0]
                .explanation()
                .markdown()
                .contains("`a.cu:95` is where the compiler put the trap")
        );
    }

    #[test]
    fn symptoms_of_another_config_stay_apart() {
        check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write").at("a.cu", 10),
                draft(WrongOutput, "Wrong output")
                    .config("debug")
                    .of(kernel_scope(false)),
            ],
            &[],
            &["out-of-bounds@a.cu:10", "wrong-output@-"],
        );
    }

    #[test]
    fn a_fault_seen_only_under_repeated_launches_explains_no_single_launch_symptom() {
        // Without a config, only the scope decides (no per-config fold).
        let mut fault = draft(SharedMemoryRace, "Race").at("a.cu", 5);
        fault.0.config = None;
        let mut symptom = draft(RepeatedLaunchFailure, "Fails after 3 launches");
        symptom.0.config = None;
        let stands = check(
            vec![fault, symptom.of(kernel_scope(true))],
            &["shared-memory-race.log"],
            &["shared-memory-race@a.cu:5", "repeated-launch-failure@-"],
        );
        assert_eq!(stands.len(), 2);
        let mut fault = draft(SharedMemoryRace, "Race").at("a.cu", 5);
        fault.0.config = None;
        let mut symptom = draft(RepeatedLaunchFailure, "Fails after 3 launches");
        symptom.0.config = None;
        check(
            vec![fault, symptom.of(kernel_scope(true))],
            &[],
            &["shared-memory-race@a.cu:5"],
        );
    }

    #[test]
    fn two_rules_at_one_line_are_one_fault_led_by_rank() {
        check(
            vec![
                draft(UninitializedRead, "Uninitialised read").at("a.cu", 10),
                draft(OutOfBounds, "Out-of-bounds read").at("a.cu", 10),
            ],
            &[],
            &["out-of-bounds@a.cu:10"],
        );
    }

    #[test]
    fn faults_at_two_lines_stay_two_and_symptoms_join_the_leading_one() {
        let out = check(
            vec![
                draft(SharedMemoryRace, "Race").at("a.cu", 30),
                draft(OutOfBounds, "Out-of-bounds write").at("a.cu", 10),
                draft(LaunchFailure, "The program fails: exit 1").bare(),
            ],
            &[],
            // The race leads (its rank), so it ranks first with the symptom's evidence.
            &["shared-memory-race@a.cu:30", "out-of-bounds@a.cu:10"],
        );
        // A bare symptom is evidence, never a sentence.
        assert!(!out[0].explanation().markdown().contains("Seen downstream"));
        assert!(
            out[0]
                .evidence
                .iter()
                .any(|e| e.log == "launch-failure.log")
        );
        assert_eq!(out[1].evidence.len(), 1);
    }

    #[test]
    fn without_a_fault_the_most_telling_symptom_leads() {
        check(
            vec![
                draft(SanitizerError, "memcheck: process exited").bare(),
                draft(WrongOutput, "Wrong output"),
                draft(LaunchFailure, "Launch failed: illegal address"),
            ],
            &[],
            &["launch-failure@-"],
        );
    }

    #[test]
    fn a_failing_test_the_tool_did_not_see_is_its_own_fault() {
        check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write")
                    .at("a.cu", 10)
                    .test("test_a"),
                draft(CheckFailed, "Test test_b failed")
                    .at("test_b.py", 3)
                    .test("test_b")
                    .of(Scope::Test("test_b".into())),
            ],
            &[],
            &["out-of-bounds@a.cu:10", "check-failed@test_b.py:3"],
        );
        check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write")
                    .at("a.cu", 10)
                    .test("test_a"),
                draft(CheckFailed, "Test test_a failed")
                    .at("test_a.py", 3)
                    .test("test_a")
                    .of(Scope::Test("test_a".into())),
            ],
            &[],
            &["out-of-bounds@a.cu:10"],
        );
    }

    #[test]
    fn performance_causes_stand_beside_faults() {
        check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write").at("a.cu", 10),
                draft(SlowKernel, "Bank conflicts").at("a.cu", 40),
            ],
            &[],
            &["out-of-bounds@a.cu:10", "slow-kernel@a.cu:40"],
        );
    }

    #[test]
    fn a_richer_cause_absorbs_its_rules_note_for_the_same_kernel() {
        let mut note = draft(OccupancyLimit, "2 blocks per SM").level(Level::Note);
        note.0.explanation = msg!("Registers allow 2 blocks.");
        let other = draft(OccupancyLimit, "1 block per SM")
            .kernel("other")
            .level(Level::Note);
        let out = check(
            vec![note, other, draft(SlowKernel, "Low occupancy").absorbs()],
            &[],
            &["slow-kernel@-", "occupancy-limit@-"],
        );
        assert!(
            out[0]
                .explanation()
                .markdown()
                .contains("From ptxas's figures: registers allow 2 blocks.")
        );
        assert_eq!(out[1].kernel.as_deref(), Some("other"));
    }

    #[test]
    fn one_fault_across_configs_and_kernels_is_one_root_cause() {
        let out = check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write").at("a.cu", 10),
                draft(OutOfBounds, "Out-of-bounds write")
                    .at("a.cu", 10)
                    .config("debug")
                    .kernel("attn<64>"),
            ],
            &[],
            &["out-of-bounds@a.cu:10"],
        );
        assert_eq!(out[0].configs, ["debug", "release"]);
        assert_eq!(out[0].kernels, ["attn", "attn<64>"]);
    }

    #[test]
    fn a_sticky_api_error_joins_the_fault_its_log_located() {
        check(
            vec![
                draft(OutOfBounds, "Out-of-bounds write")
                    .at("a.cu", 10)
                    .config("a")
                    .log("memcheck.log"),
                draft(HostApiError, "Every call fails")
                    .config("b")
                    .log("memcheck.log")
                    .of(Scope::Log("memcheck.log".into())),
            ],
            &[],
            &["out-of-bounds@a.cu:10"],
        );
    }

    #[test]
    fn errors_rank_before_warnings_and_notes() {
        check(
            vec![
                draft(RegisterSpills, "Spills").level(Level::Note),
                draft(SlowKernel, "No HMMA"),
                draft(CompileError, "Compile error")
                    .config("other")
                    .at("a.cu", 1),
            ],
            &[],
            &["compile-error@a.cu:1", "slow-kernel@-", "register-spills@-"],
        );
    }
}
