//! A diagnosis: a root cause named by a rule, with the evidence it rests on, how sure it is,
//! where in the source it points and what to change.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::text::{md_code, short_hash};

/// One diagnosed root cause. Its `title`, `explanation` and `fix` (and its evidence's
/// `summary`) are inline Markdown: identifiers in code spans, text quoted from a tool escaped
/// ([`crate::text::md_text`]), so every renderer can show them as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The rule's id, e.g. `wmma-local-memory` (see [`crate::rules::RULES`]).
    pub rule: String,
    pub title: String,
    pub level: Level,
    pub confidence: Confidence,
    /// The kernel's name as matched across logs.
    pub kernel: Option<String>,
    /// The first config it was seen in (see `configs` for all).
    pub config: Option<String>,
    /// Every config it was seen in, in order.
    pub configs: Vec<String>,
    pub arch: Option<String>,
    /// The `file:line` in the kernel's source it points at.
    pub location: Option<SourceLocation>,
    /// The host line the faulting launch came from, when the tool printed the host stack: the
    /// first frame in the user's own Python code (`oracle.py:49`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_site: Option<SourceLocation>,
    pub evidence: Vec<EvidenceItem>,
    pub explanation: String,
    pub fix: String,
    /// Stable across runs: rule, location (or kernel, without one) and the rule's own key;
    /// never counts, addresses or config lists.
    pub fingerprint: String,
    /// Every kernel it was seen in, in order.
    pub kernels: Vec<String>,
    /// The device functions inlined into the kernel where the tool located the accesses (a
    /// race between `cp_async_16` and `ldmatrix_x4` in `attention_fwd_f16`); empty when the
    /// accesses are in the kernel's own body.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub helpers: Vec<Helper>,
    /// Figures for machine-readable output, e.g. `hazards`, `blocks_per_sm`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, serde_json::Value>,
}

/// A device function inlined into a kernel, and where in it the tool located an access.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Helper {
    /// Its name as matched across logs ([`crate::text::kernel_base`]).
    pub name: String,
    pub location: Option<SourceLocation>,
}

/// "in the inlined helper `f` (`file:line`)", "in the inlined helpers `f` (`a.cu:1`) and `g`
/// (`a.cu:2`)", or nothing without helpers.
pub fn inlined_in(helpers: &[Helper]) -> Option<String> {
    if helpers.is_empty() {
        return None;
    }
    let named: Vec<String> = helpers
        .iter()
        .map(|h| match &h.location {
            Some(loc) => format!("{} ({})", md_code(&h.name), md_code(&loc.to_string())),
            None => md_code(&h.name),
        })
        .collect();
    Some(format!(
        "in the inlined {} {}",
        if helpers.len() == 1 {
            "helper"
        } else {
            "helpers"
        },
        crate::text::join_words(&named)
    ))
}

/// How bad a diagnosis is. Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Worth knowing (an occupancy limiter, an improvement).
    Note,
    /// Costs performance (spills, idle tensor cores, a regression).
    Warning,
    /// The kernel is wrong or faults.
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Note => "note",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// How much independent evidence backs a diagnosis. Ordered from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    /// The confidence that `n` independent corroborating signals give: one is low, two medium,
    /// three or more high.
    pub fn from_signals(n: usize) -> Confidence {
        match n {
            0 | 1 => Confidence::Low,
            2 => Confidence::Medium,
            _ => Confidence::High,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// A place in the kernel's source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceLocation {
    /// Relative to the repository.
    pub file: String,
    pub line: Option<u32>,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// One piece of evidence: which stage and log it comes from, what it shows, and the raw lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceItem {
    /// The stage's name (or kind, without a run).
    pub stage: String,
    pub config: Option<String>,
    /// The log, relative to the run directory.
    pub log: String,
    /// One line saying what this evidence shows, with its figure (inline Markdown).
    pub summary: String,
    /// Raw lines quoted from the log (volatile values scrubbed).
    pub excerpt: Vec<String>,
}

/// What a rule returns before diagnoses of the same root cause in several configs are merged.
#[derive(Debug, Clone)]
pub struct Draft {
    pub rule: &'static str,
    pub title: String,
    pub level: Level,
    pub confidence: Confidence,
    pub kernel: Option<String>,
    pub config: Option<String>,
    pub arch: Option<String>,
    pub location: Option<SourceLocation>,
    /// See [`Diagnosis::call_site`].
    pub call_site: Option<SourceLocation>,
    /// See [`Diagnosis::helpers`].
    pub helpers: Vec<Helper>,
    pub evidence: Vec<EvidenceItem>,
    pub explanation: String,
    pub fix: String,
    /// Distinguishes root causes of one rule at one kernel and location. Drafts with the same
    /// rule, kernel, location and key are one root cause seen in several configs.
    pub key: String,
    /// Figures for machine-readable output, e.g. `hazards`, `blocks_per_sm`.
    pub figures: BTreeMap<String, serde_json::Value>,
    /// The findings (indices into [`crate::join::Joined::findings`]) this draft accounts for.
    pub explains: Vec<usize>,
    /// Accounts for findings without being reported (another draft names the root cause).
    pub silent: bool,
    /// A symptom of an earlier draft's root cause (its index in the drafts): its evidence and
    /// title join that draft instead of standing alone.
    pub attach_to: Option<usize>,
}

impl Draft {
    pub fn new(rule: &'static str, level: Level, title: impl Into<String>) -> Draft {
        Draft {
            rule,
            title: title.into(),
            level,
            confidence: Confidence::Low,
            kernel: None,
            config: None,
            arch: None,
            location: None,
            call_site: None,
            helpers: Vec::new(),
            evidence: Vec::new(),
            explanation: String::new(),
            fix: String::new(),
            key: String::new(),
            figures: BTreeMap::new(),
            explains: Vec::new(),
            silent: false,
            attach_to: None,
        }
    }

    /// The identity of the root cause: one place in the source (a line, or the kernel's file
    /// for whole-kernel rules) with one rule-specific key is one root cause, whichever kernels
    /// and configs show it; without a location, each kernel is its own.
    fn identity(&self) -> (String, String, String) {
        let place = match &self.location {
            Some(loc) => loc.to_string(),
            None => format!("kernel:{}", self.kernel.as_deref().unwrap_or("")),
        };
        (self.rule.to_string(), place, self.key.clone())
    }
}

/// The most evidence items a merged diagnosis keeps.
const MAX_EVIDENCE: usize = 12;

/// Merges drafts of the same root cause across configs, then ranks: errors before warnings
/// before notes, then by confidence, then by the amount of evidence; ties break by rule,
/// kernel, location and config so the order is deterministic.
pub fn finish(mut drafts: Vec<Draft>) -> Vec<Diagnosis> {
    one_cause_per_fault(&mut drafts);
    let drafts = attach_symptoms(drafts);
    let mut groups: BTreeMap<(String, String, String), Vec<Draft>> = BTreeMap::new();
    for draft in drafts.into_iter().filter(|d| !d.silent) {
        groups.entry(draft.identity()).or_default().push(draft);
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
        let fingerprint = short_hash(&[&rule, &place, &key]);
        out.push(Diagnosis {
            rule: first.rule.to_string(),
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

/// The rules whose drafts name a site a tool located in the source, or a refused launch: a
/// fault of its own. Everything else that fails in a config (a wrong output, a failed program,
/// a stage's exit status, a tool's unexplained error) is what such a fault looks like from
/// outside.
const SITED: &[&str] = &[
    "compile-error",
    "launch-rejected",
    "wmma-local-memory",
    "shared-memory-race",
    "out-of-bounds",
    "misaligned-access",
    "divergent-barrier",
    "uninitialized-read",
    // A test framework's failing test at its line: a site of its own only where no tool located
    // a fault in the config (then it is that fault's symptom).
    "check-failed",
];

/// When several symptoms of one config name no site, the one that says most about the fault
/// leads: the earlier in this list.
const SYMPTOMS: &[&str] = &[
    "launch-failure",
    "repeated-launch-failure",
    "wrong-output",
    "check-failed",
    "host-api-error",
    "sanitizer-error",
];

/// Whether a draft is only a stage's exit status or a tool's generic complaint: evidence, never
/// worth a sentence of its own under the root cause.
fn bare_symptom(d: &Draft) -> bool {
    d.figures.contains_key("program_exit") || d.rule == "sanitizer-error"
}

/// One fault, one root cause. Within one config (one build of the code), every error that
/// names no site of its own becomes evidence under the config's sited root cause (the first by
/// rule order), or, without one, under the symptom that says most; drafts of two rules at one
/// line (an out-of-bounds read and the uninitialised value it reads) are one fault. Sites at
/// different places stay apart: two root causes only where the evidence shows two.
fn one_cause_per_fault(drafts: &mut [Draft]) {
    let open = |d: &Draft| d.level == Level::Error && !d.silent && d.attach_to.is_none();
    let configs: std::collections::BTreeSet<String> = drafts
        .iter()
        .filter(|d| open(d))
        .filter_map(|d| d.config.clone())
        .collect();
    for config in configs {
        let members: Vec<usize> = (0..drafts.len())
            .filter(|&i| {
                drafts
                    .get(i)
                    .is_some_and(|d| open(d) && d.config.as_deref() == Some(config.as_str()))
            })
            .collect();
        let located = |i: &usize, tests: bool| {
            drafts.get(*i).is_some_and(|d| {
                SITED.contains(&d.rule)
                    && (d.rule == "check-failed") == tests
                    && (d.location.is_some() || d.rule == "launch-rejected")
            })
        };
        let tool_sites: Vec<usize> = members
            .iter()
            .copied()
            .filter(|i| located(i, false))
            .collect();
        // A failing test is a fault of its own unless a tool located one it may be the symptom
        // of: where each tool site was found in a test run alone, only a site in this test.
        let test_of = |i: usize| drafts.get(i).and_then(|d| d.figures.get("test"));
        let own_fault = |i: &usize| {
            located(i, true)
                && tool_sites
                    .iter()
                    .all(|&t| test_of(t).is_some_and(|tool_test| Some(tool_test) != test_of(*i)))
        };
        let sited = |i: &usize| located(i, false) || own_fault(i);
        let order = |i: &usize| {
            drafts.get(*i).map_or(usize::MAX, |d| {
                if bare_symptom(d) {
                    return SITED.len() + SYMPTOMS.len() + 1;
                }
                SITED.iter().position(|r| *r == d.rule).unwrap_or_else(|| {
                    SITED.len()
                        + SYMPTOMS
                            .iter()
                            .position(|r| *r == d.rule)
                            .unwrap_or(SYMPTOMS.len())
                })
            })
        };
        let mut sites: Vec<usize> = members.iter().copied().filter(sited).collect();
        sites.sort_by_key(order);
        // Two rules at one line: one fault.
        let mut kept: Vec<usize> = Vec::new();
        let mut moves: Vec<(usize, usize)> = Vec::new();
        for i in sites {
            let place = drafts.get(i).and_then(|d| d.location.clone());
            let rule = drafts.get(i).map(|d| d.rule);
            // Another rule's draft at this line (the same rule's drafts merge across kernels
            // and configs in `finish`); failing checks at one line (one assertion failing for
            // several shapes) are one fault too.
            let same = kept.iter().copied().find(|&k| {
                place.is_some()
                    && drafts.get(k).is_some_and(|d| {
                        d.location == place && (Some(d.rule) != rule || d.rule == "check-failed")
                    })
            });
            match same {
                Some(k) => moves.push((i, k)),
                None => kept.push(i),
            }
        }
        let lead = kept
            .first()
            .copied()
            .or_else(|| members.iter().copied().min_by_key(order));
        if let Some(lead) = lead {
            for &i in &members {
                if i != lead && !kept.contains(&i) && !moves.iter().any(|(from, _)| *from == i) {
                    moves.push((i, lead));
                }
            }
        }
        for (from, to) in moves {
            if let Some(d) = drafts.get_mut(from) {
                d.attach_to = Some(to);
            }
        }
    }
}

/// Moves each symptom's evidence into the root cause it was attached to, and says so in the
/// root cause's explanation. A symptom whose target is missing stands alone.
fn attach_symptoms(mut drafts: Vec<Draft>) -> Vec<Draft> {
    // Where each symptom ends up: a symptom of a symptom joins the root cause at the chain's end.
    let end_of = |mut i: usize| {
        for _ in 0..drafts.len() {
            match drafts.get(i).and_then(|d| d.attach_to) {
                Some(next) if next != i && next < drafts.len() => i = next,
                _ => break,
            }
        }
        i
    };
    let moves: Vec<(usize, usize)> = (0..drafts.len())
        .filter(|&i| drafts.get(i).is_some_and(|d| d.attach_to.is_some()))
        .map(|i| (i, end_of(i)))
        .filter(|(i, end)| i != end)
        .collect();
    // The stages each root cause cites itself, before symptoms join it.
    let own_stages: BTreeMap<usize, Vec<String>> = moves
        .iter()
        .map(|(_, to)| {
            let stages = drafts
                .get(*to)
                .map(|d| d.evidence.iter().map(|e| e.stage.clone()).collect())
                .unwrap_or_default();
            (*to, stages)
        })
        .collect();
    let mut stages: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut seen: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (from, to) in &moves {
        let Some(symptom) = drafts.get_mut(*from) else {
            continue;
        };
        symptom.silent = true;
        if !bare_symptom(symptom) {
            let titles = seen.entry(*to).or_default();
            let title = symptom.title.trim_end_matches('.').to_string();
            if !titles.contains(&title) {
                titles.push(title);
            }
        }
        let evidence = std::mem::take(&mut symptom.evidence);
        if let Some(target) = drafts.get_mut(*to) {
            for item in evidence {
                let named = stages.entry(*to).or_default();
                if !item.stage.is_empty() && !named.contains(&item.stage) {
                    named.push(item.stage.clone());
                }
                // Each stage once: the same stage's log is already there.
                let known = target.evidence.iter().any(|e| {
                    e.log == item.log || (e.stage == item.stage && e.config == item.config)
                });
                if !known && target.evidence.len() < MAX_EVIDENCE {
                    target.evidence.push(item);
                }
            }
        }
    }
    for (to, titles) in seen {
        if let Some(target) = drafts.get_mut(to) {
            for title in titles {
                let said = format!(" Seen downstream: {title}.");
                if !target.explanation.contains(&said) && target.title != title {
                    target.explanation.push_str(&said);
                }
            }
        }
    }
    for (to, named) in stages {
        if let Some(target) = drafts.get_mut(to) {
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
    drafts
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
        .then(crate::rules::rule_order(&a.rule).cmp(&crate::rules::rule_order(&b.rule)))
        .then(a.kernel.cmp(&b.kernel))
        .then(a.location.cmp(&b.location))
        .then(a.config.cmp(&b.config))
        .then(a.fingerprint.cmp(&b.fingerprint))
}
