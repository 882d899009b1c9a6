//! A suggestion's hypothesis: what a root cause predicts that one more run would show, the
//! experiment that tests it, and how it came out. A leaf of the crate: [`crate::diagnosis`] and
//! `experiment` both build on it.

use serde::{Deserialize, Serialize};

/// What a knob sets: the program's size, the build's register budget, the threads per block,
/// or the tile each block computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobRole {
    Size,
    Registers,
    Block,
    Tile,
}

impl KnobRole {
    pub fn as_str(self) -> &'static str {
        match self {
            KnobRole::Size => "size",
            KnobRole::Registers => "registers",
            KnobRole::Block => "block",
            KnobRole::Tile => "tile",
        }
    }

    /// The `knobs:` entry a user adds for this role, as an example to adapt.
    pub fn example(self) -> &'static str {
        match self {
            KnobRole::Size => "size: { env: N, tile: 32 }",
            KnobRole::Registers => "registers: { flag: \"-maxrregcount={value}\" }",
            KnobRole::Block => "block: { define: BLOCK_SIZE }",
            KnobRole::Tile => "tile: { define: TILE }",
        }
    }
}

/// What an experiment tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentKind {
    /// An unguarded tail: sizes around the failing one.
    Tail,
    /// A race: identical runs, outputs compared.
    Race,
    /// A register budget: the capped build benched against the one that ran.
    Registers,
    /// Threads per block: the build or run at twice the block size, benched.
    BlockSize,
    /// The tile each block computes: at half the tile (half the shared memory), benched.
    Tile,
    /// A wrong output: the failing check again at smaller sizes, for the smallest that fails.
    Sizes,
}

impl ExperimentKind {
    /// The knob a trial of this kind sets (a race's runs set none).
    pub fn knob(self) -> Option<KnobRole> {
        match self {
            ExperimentKind::Tail | ExperimentKind::Sizes => Some(KnobRole::Size),
            ExperimentKind::Race => None,
            ExperimentKind::Registers => Some(KnobRole::Registers),
            ExperimentKind::BlockSize => Some(KnobRole::Block),
            ExperimentKind::Tile => Some(KnobRole::Tile),
        }
    }
}

/// A cause that rests on a prediction, not on the kernel's own measurement: "one more resident
/// block hides latency" is a suggestion (ptxas's occupancy, Nsight Compute's occupancy rule)
/// until a run at another register budget, block size or tile says whether it pays. Until
/// then it is marked untested and never outranks a cause measured in the kernel's own stall
/// samples or throughput (see `fold::rank`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    /// The experiment that tests it.
    pub kind: ExperimentKind,
    /// The value its trial sets, where the evidence gives one (the register budget at which
    /// one more block fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// How its experiment came out; `None` while untested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// While untested: what one more run needs (a knob, a bench stage, experiments on), and
    /// the `knobs:` line to paste into `pipeline.yaml`, where one is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
}

impl Hypothesis {
    pub fn new(kind: ExperimentKind, value: Option<u64>) -> Hypothesis {
        Hypothesis {
            kind,
            value,
            outcome: None,
            settle: None,
        }
    }

    /// Not settled by a run: untested, or its trials concluded nothing.
    pub fn untested(&self) -> bool {
        !matches!(self.outcome, Some(Outcome::Confirmed | Outcome::Refuted))
    }
}

/// What it takes to test a hypothesis in one more run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settle {
    /// Why this run did not test it, in a few words.
    pub why: String,
    /// The knob `pipeline.yaml` must name first, where it names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_knob: Option<KnobRole>,
    /// Whether `experiments: auto` must be added.
    #[serde(default)]
    pub turn_on: bool,
}

impl Settle {
    /// The lines to add to `pipeline.yaml`, as YAML; empty when nothing is missing from it.
    pub fn yaml(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(role) = self.add_knob {
            lines.push("knobs:".to_string());
            lines.push(format!("  {}", role.example()));
        }
        if self.turn_on {
            lines.push("experiments: auto".to_string());
        }
        lines
    }

    /// The same, each entry on one line: `knobs: registers: { flag: ... }`, `experiments: auto`.
    pub fn inline(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(role) = self.add_knob {
            lines.push(format!("knobs: {}", role.example()));
        }
        if self.turn_on {
            lines.push("experiments: auto".to_string());
        }
        lines
    }
}

/// How an experiment came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every trial did what the hypothesis predicts.
    Confirmed,
    /// A trial did otherwise: the hypothesis (or the suggestion) is withdrawn.
    Refuted,
    /// The runs show nothing either way (a race whose output has not varied yet).
    NotSeen,
    /// A trial could not conclude (failed to build, timed out, skipped).
    Inconclusive,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Confirmed => "confirmed",
            Outcome::Refuted => "refuted",
            Outcome::NotSeen => "not seen",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}
