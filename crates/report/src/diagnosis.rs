//! A diagnosis: a root cause named by a rule, with the evidence it rests on, how sure it is,
//! where in the source it points and what to change.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::{Message, code, msg, path};
use crate::rule_id::RuleId;

/// One diagnosed root cause, shaped like a compiler diagnostic: a primary message (`title`),
/// labelled spans (the user's line first, then the sites that support it), notes (the
/// mechanism, what follows from it), help (the fix) and the evidence. Its text (title, span
/// labels, notes, help, the evidence's `summary`) is [`Message`]s, styled parts that each
/// emitter renders for its format.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The rule's id, e.g. `wmma-local-memory` (see `rules::RULES`).
    pub rule: RuleId,
    pub title: Message,
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
    /// Labelled places in the source: the primary span (the user's line, as `location`) first,
    /// then supporting sites (the other side of a race, an inlined helper, the host line of the
    /// launch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
    pub evidence: Vec<EvidenceItem>,
    /// The mechanism, then what follows from it: each a few sentences.
    pub notes: Vec<Message>,
    /// What to change.
    pub help: Vec<Message>,
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
    /// The prediction it rests on, where it is a suggestion a knob can test rather than a
    /// measurement: its experiment's outcome, or what one more run needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypothesis: Option<crate::hypothesis::Hypothesis>,
}

impl Diagnosis {
    /// A suggestion no run has settled.
    pub fn untested(&self) -> bool {
        self.hypothesis.as_ref().is_some_and(|h| h.untested())
    }

    /// The notes as one paragraph.
    pub fn explanation(&self) -> Message {
        Message::join(self.notes.iter().cloned(), " ")
    }

    /// The help as one paragraph.
    pub fn fix(&self) -> Message {
        Message::join(self.help.iter().cloned(), " ")
    }

    /// The supporting spans: every span but the primary one.
    pub fn secondary_spans(&self) -> impl Iterator<Item = &Span> {
        self.spans.iter().filter(|s| !s.primary)
    }
}

/// A labelled place in the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    pub location: SourceLocation,
    /// What is at this place, in a few words.
    pub label: Message,
    /// The place the diagnosis is about (one per diagnosis), rather than one that supports it.
    pub primary: bool,
}

impl Span {
    /// A supporting place, labelled.
    pub fn secondary(location: SourceLocation, label: impl Into<Message>) -> Span {
        Span {
            location,
            label: label.into(),
            primary: false,
        }
    }
}

/// A device function inlined into a kernel, and where in it the tool located an access.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Helper {
    /// Its name as matched across logs (a [`crate::kernel_id::KernelId`]'s).
    pub name: String,
    pub location: Option<SourceLocation>,
}

/// "in the inlined helper `f` (`file:line`)", "in the inlined helpers `f` (`a.cu:1`) and `g`
/// (`a.cu:2`)", or nothing without helpers.
pub fn inlined_in(helpers: &[Helper]) -> Option<Message> {
    if helpers.is_empty() {
        return None;
    }
    let named: Vec<Message> = helpers
        .iter()
        .map(|h| match &h.location {
            Some(loc) => msg!("{} ({})", code(&h.name), path(loc)),
            None => code(&h.name).into(),
        })
        .collect();
    let noun = if helpers.len() == 1 {
        "helper"
    } else {
        "helpers"
    };
    Some(msg!("in the inlined {} {}", noun, Message::words(named)))
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceItem {
    /// The stage's name (or kind, without a run).
    pub stage: String,
    pub config: Option<String>,
    /// The log, relative to the run directory.
    pub log: String,
    /// One line saying what this evidence shows, with its figure.
    pub summary: Message,
    /// Raw lines quoted from the log (volatile values scrubbed).
    pub excerpt: Vec<String>,
}

/// What a rule returns: one draft per fault, symptom or cause it sees, before the fold
/// (`fold`) attaches symptoms to their faults and merges what several configs,
/// kernels and template instantiations share.
#[derive(Debug, Clone)]
pub struct Draft {
    pub rule: RuleId,
    pub title: Message,
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
    /// Supporting places beside `location` (the other side of a race), labelled.
    pub spans: Vec<Span>,
    pub evidence: Vec<EvidenceItem>,
    /// The rule's account of the mechanism: its first note.
    pub explanation: Message,
    /// The rule's fix: its first help.
    pub fix: Message,
    /// Further notes after the explanation (what the fold and absorbed notes add).
    pub notes: Vec<Message>,
    /// Further help after the fix.
    pub help: Vec<Message>,
    /// Distinguishes root causes of one rule at one kernel and location. Drafts with the same
    /// rule, kernel, location and key are one root cause seen in several configs.
    pub key: String,
    /// Figures for machine-readable output, e.g. `hazards`, `blocks_per_sm`.
    pub figures: BTreeMap<String, serde_json::Value>,
    /// The findings (indices into `join::Joined::findings`) this draft accounts for.
    pub explains: Vec<usize>,
    /// Which fault this draft is a symptom of, when the evidence shows one (the fold finds it);
    /// `None` for a fault of its own, or a symptom whose fault the fold looks for in its config.
    pub symptom_of: Option<Scope>,
    /// Only a stage's exit status or a tool's generic complaint: under a fault it is evidence,
    /// never a sentence of its own, and it leads a config's symptoms last.
    pub bare: bool,
    /// Takes over the note its rule absorbs (`rules::Rule::absorbs`) for the same
    /// kernel and config.
    pub absorbs: bool,
    /// See [`Diagnosis::hypothesis`].
    pub hypothesis: Option<crate::hypothesis::Hypothesis>,
    /// Its place stands in for the fault's own, which no tool gave (a release build's trap
    /// line, where the compiler replaced the access it traps for): the fold puts the place
    /// another build gives for the same fault there instead, and drops this note with it.
    pub stand_in: Option<StandIn>,
    /// What an earlier rule's draft would make this one a repetition of: the registry
    /// (`drafting`) drops it when any holds. The rule states the condition; it never
    /// reads another rule's drafts.
    pub gives_way: Vec<GiveWay>,
    /// An `occupancy-limit` note's budget for one more block, without the fix's hedge ("if
    /// latency hiding is short"): the help of a cause that has shown the kernel latency-bound
    /// ([`crate::rules::slow_kernel::absorb_occupancy_limit`]).
    pub next_block: Option<Message>,
    /// The figures of the profile the cause stands on, which the comparison with the
    /// baseline's profile weighs ([`crate::contrast::weigh`]): a cause whose figures the
    /// baseline shares is no reason the program is slower.
    pub stands_on: Vec<crate::measure::Measure>,
}

/// A condition on the drafts of earlier rules (in `rules::RULES`' order), each of the
/// draft's own config, under which the draft gives way: a typed key the registry evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GiveWay {
    /// An error, in this kernel when one is named (an error naming no kernel counts for any).
    Error(Option<crate::kernel_id::KernelId>),
    /// An error in this kernel, unless a fault is located there: then this draft is that
    /// fault's symptom, and the fold attaches it.
    ErrorWithoutFault(crate::kernel_id::KernelId),
    /// A fault located in the config.
    Fault,
    /// No fault located in the config: the draft stands only as a fault's symptom.
    NoFault,
    /// An error that rests on this log (relative to the run directory).
    ErrorOnLog(String),
    /// A warning of a rule that accounts for a kernel's time (`rules::Rule::accounts_for_time`),
    /// of this kernel when one is named.
    TimeAccounted(Option<crate::kernel_id::KernelId>),
    /// A draft of this rule for this kernel (or naming none).
    Drafted(RuleId, crate::kernel_id::KernelId),
}

/// The figures read beyond the rule that writes them (by the fold, the ranking, the verdict
/// and the experiments): typed keys into a draft's or a diagnosis's `figures`, one spelling
/// for writer and reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The test a finding came from, where its stage ran each test alone.
    Test,
    /// What a performance cause is worth to the whole program (percent of its time).
    ProgramGain,
    /// What a performance cause is worth to its kernel (percent, a tool's estimate).
    EstimatedSpeedup,
    /// How far past the end of a buffer the farthest access reached (bytes).
    OvershootBytes,
    /// Registers per thread.
    Registers,
    /// The percent of its binding peak a kernel reached, where the diagnosis's title states it
    /// ("... at 42.0% of the FP32 peak"): the verdict then does not say it again.
    PercentOfPeak,
}

impl Figure {
    /// Its key in `figures` (and in the JSON report).
    pub const fn key(self) -> &'static str {
        match self {
            Figure::Test => "test",
            Figure::ProgramGain => "program_gain",
            Figure::EstimatedSpeedup => "estimated_speedup",
            Figure::OvershootBytes => "overshoot_bytes",
            Figure::Registers => "registers",
            Figure::PercentOfPeak => "percent_of_peak",
        }
    }

    /// Its value in `figures`.
    pub fn of(self, figures: &BTreeMap<String, serde_json::Value>) -> Option<&serde_json::Value> {
        figures.get(self.key())
    }

    /// Sets it in `figures`.
    pub fn set(self, figures: &mut BTreeMap<String, serde_json::Value>, value: serde_json::Value) {
        figures.insert(self.key().to_string(), value);
    }
}

/// A draft's place that stands in for its fault's own ([`Draft::stand_in`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandIn {
    /// What the place is and how to get the fault's own: one of the draft's notes.
    pub note: Message,
}

/// The fault a symptom belongs to, as its rule knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The fault located in this config and kernel; with `single_launch`, only one found on a
    /// single launch (a fault that needs several launches to show is not explained by one a
    /// stress-mode sanitizer run found).
    Kernel {
        kernel: crate::kernel_id::KernelId,
        single_launch: bool,
    },
    /// Any fault located in this config.
    Config,
    /// The fault located in this config, unless a tool found it in another test, run alone.
    Test(String),
    /// The fault located in this log (relative to the run directory), any config.
    Log(String),
}

impl Draft {
    pub fn new(rule: RuleId, level: Level, title: impl Into<Message>) -> Draft {
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
            spans: Vec::new(),
            evidence: Vec::new(),
            explanation: Message::new(),
            fix: Message::new(),
            notes: Vec::new(),
            help: Vec::new(),
            key: String::new(),
            figures: BTreeMap::new(),
            explains: Vec::new(),
            symptom_of: None,
            bare: false,
            absorbs: false,
            hypothesis: None,
            stand_in: None,
            gives_way: Vec::new(),
            next_block: None,
            stands_on: Vec::new(),
        }
    }

    /// Marks its place a stand-in for the fault's own, with the note that says so.
    pub fn stands_in(&mut self, note: Message) {
        self.notes.push(note.clone());
        self.stand_in = Some(StandIn { note });
    }
}
