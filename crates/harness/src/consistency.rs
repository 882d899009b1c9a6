//! Bookkeeping of stress mode: each launch's output compared bitwise with the first launch's,
//! each launch's guard snapshots compared with their patterns, and the first failure kept.

use std::collections::BTreeSet;

use parsers::harness::figures::{Corruption, MismatchDetail};

use crate::canary::{Side, find_corruption};

/// What went wrong first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A CUDA error (at launch or at the synchronisation after it).
    Error,
    /// The output differs bitwise from the first launch's.
    Mismatch,
    /// A guard region changed.
    Canary,
}

impl FailureKind {
    /// `error`, `mismatch` or `canary`, as the schema spells it.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Error => "error",
            FailureKind::Mismatch => "mismatch",
            FailureKind::Canary => "canary",
        }
    }
}

/// One guard region and the pattern it must hold.
#[derive(Debug, Clone)]
pub struct GuardSpec {
    pub buffer: String,
    pub side: Side,
    pub expected: Vec<u8>,
}

/// Accumulates the launches of one stress run, in launch order.
#[derive(Debug, Clone)]
pub struct ConsistencyTracker {
    guards: Vec<GuardSpec>,
    first: Option<Vec<u16>>,
    verified: u64,
    mismatched: u64,
    first_failure: Option<(u64, FailureKind)>,
    first_mismatch: Option<MismatchDetail>,
    corrupted: BTreeSet<String>,
    first_corruption: Option<(u64, Corruption)>,
}

impl ConsistencyTracker {
    pub fn new(guards: Vec<GuardSpec>) -> Self {
        Self {
            guards,
            first: None,
            verified: 0,
            mismatched: 0,
            first_failure: None,
            first_mismatch: None,
            corrupted: BTreeSet::new(),
            first_corruption: None,
        }
    }

    /// The guards, in the order `observe` expects their snapshots.
    pub fn guards(&self) -> &[GuardSpec] {
        &self.guards
    }

    /// Records launch `launch` (1-based): its output and one snapshot per guard, in
    /// [`Self::guards`] order. The first observed output becomes the one all others must match.
    pub fn observe(&mut self, launch: u64, output: &[u16], snapshots: &[&[u8]]) {
        self.verified += 1;
        let mut canary = false;
        for (spec, actual) in self.guards.iter().zip(snapshots) {
            if let Some(c) = find_corruption(&spec.buffer, spec.side, &spec.expected, actual) {
                canary = true;
                self.corrupted.insert(c.region.clone());
                if self.first_corruption.is_none() {
                    self.first_corruption = Some((launch, c));
                }
            }
        }
        let mismatch = match &self.first {
            None => {
                self.first = Some(output.to_vec());
                false
            }
            Some(first) => {
                let differing = first.iter().zip(output).filter(|(a, b)| a != b).count()
                    + first.len().abs_diff(output.len());
                if differing > 0 && self.first_mismatch.is_none() {
                    let first_index = first
                        .iter()
                        .zip(output)
                        .position(|(a, b)| a != b)
                        .unwrap_or(first.len().min(output.len()));
                    self.first_mismatch = Some(MismatchDetail {
                        launch,
                        elements_differing: differing as u64,
                        first_index,
                    });
                }
                differing > 0
            }
        };
        if mismatch {
            self.mismatched += 1;
        }
        if self.first_failure.is_none() {
            if canary {
                self.first_failure = Some((launch, FailureKind::Canary));
            } else if mismatch {
                self.first_failure = Some((launch, FailureKind::Mismatch));
            }
        }
    }

    /// Records a CUDA error detected at launch `launch` (or at the synchronisation after it).
    pub fn record_error(&mut self, launch: u64) {
        if self.first_failure.is_none() {
            self.first_failure = Some((launch, FailureKind::Error));
        }
    }

    /// Launches observed so far.
    pub fn verified(&self) -> u64 {
        self.verified
    }

    /// Launches whose output differed from the first.
    pub fn mismatched(&self) -> u64 {
        self.mismatched
    }

    pub fn first_failure(&self) -> Option<(u64, FailureKind)> {
        self.first_failure
    }

    pub fn first_mismatch(&self) -> Option<&MismatchDetail> {
        self.first_mismatch.as_ref()
    }

    /// The first launch that changed a guard, and how.
    pub fn first_corruption(&self) -> Option<&(u64, Corruption)> {
        self.first_corruption.as_ref()
    }

    /// Names of every guard found changed, sorted.
    pub fn corrupted(&self) -> Vec<String> {
        self.corrupted.iter().cloned().collect()
    }

    /// The reference output (the first launch's).
    pub fn first_output(&self) -> Option<&[u16]> {
        self.first.as_deref()
    }
}
