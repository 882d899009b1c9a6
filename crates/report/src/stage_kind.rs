//! The stage kinds pipeline.yaml knows, each one row of [`KINDS`]: its spelling, what it runs
//! and needs, how long it may take and how the scheduler places it. The runner plans, schedules
//! and checks from the row; the report names and reads a stage by it.

use serde::{Deserialize, Serialize};

/// The stage types pipeline.yaml knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    Compile,
    Sass,
    Memcheck,
    Racecheck,
    Initcheck,
    Synccheck,
    Check,
    Stress,
    Bench,
    Baseline,
    Profile,
    Report,
}

/// Where a stage's units run, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On the CPU: any number at once, up to `-j`.
    Cpu,
    /// On a GPU beside other such units (`--gpu-jobs`).
    SharedGpu,
    /// Alone on the machine: timings and profiles that others would disturb.
    Alone,
}

/// A stage kind's row.
#[derive(Debug, Clone, Copy)]
pub struct KindRow {
    pub kind: StageKind,
    /// Its pipeline.yaml spelling.
    pub name: &'static str,
    /// Runs the program under one of compute-sanitizer's tools.
    pub sanitizer: bool,
    /// Launches the kernel (through the harness, or the user's program).
    pub launches: bool,
    /// Runs the harness under another tool (a sanitizer, ncu).
    pub wraps: bool,
    /// Reads the compile stage's products (the cubin) without launching (SASS).
    pub reads_cubin: bool,
    /// Needs a GPU, unless pipeline.yaml says otherwise.
    pub gpu: bool,
    /// The tools it needs, unless pipeline.yaml says otherwise.
    pub tools: &'static [&'static str],
    /// Its timeout, unless pipeline.yaml gives one (minutes).
    pub timeout_min: u64,
    pub placement: Placement,
}

/// Every stage kind, one row each, in [`StageKind`]'s order.
pub const KINDS: &[KindRow] = &[
    row(
        StageKind::Compile,
        "compile",
        Placement::Cpu,
        5,
        false,
        &["nvcc"],
    ),
    KindRow {
        reads_cubin: true,
        ..row(
            StageKind::Sass,
            "sass",
            Placement::Cpu,
            1,
            false,
            &["cuobjdump"],
        )
    },
    sanitizer(StageKind::Memcheck, "memcheck"),
    sanitizer(StageKind::Racecheck, "racecheck"),
    sanitizer(StageKind::Initcheck, "initcheck"),
    sanitizer(StageKind::Synccheck, "synccheck"),
    launch(StageKind::Check, "check", Placement::SharedGpu, 5),
    launch(StageKind::Stress, "stress", Placement::SharedGpu, 10),
    launch(StageKind::Bench, "bench", Placement::Alone, 10),
    row(
        StageKind::Baseline,
        "baseline",
        Placement::Alone,
        10,
        true,
        &["python3", "torch"],
    ),
    KindRow {
        wraps: true,
        ..launch(StageKind::Profile, "profile", Placement::Alone, 10)
    }
    .with_tools(&["ncu", "harness"]),
    row(StageKind::Report, "report", Placement::Cpu, 1, false, &[]),
];

const fn row(
    kind: StageKind,
    name: &'static str,
    placement: Placement,
    timeout_min: u64,
    gpu: bool,
    tools: &'static [&'static str],
) -> KindRow {
    KindRow {
        kind,
        name,
        sanitizer: false,
        launches: false,
        wraps: false,
        reads_cubin: false,
        gpu,
        tools,
        timeout_min,
        placement,
    }
}

/// A kind that launches the kernel through the harness, on a GPU.
const fn launch(
    kind: StageKind,
    name: &'static str,
    placement: Placement,
    timeout_min: u64,
) -> KindRow {
    KindRow {
        launches: true,
        ..row(kind, name, placement, timeout_min, true, &["harness"])
    }
}

/// A compute-sanitizer tool over the harness.
const fn sanitizer(kind: StageKind, name: &'static str) -> KindRow {
    KindRow {
        sanitizer: true,
        wraps: true,
        ..launch(kind, name, Placement::SharedGpu, 10)
    }
    .with_tools(&["compute-sanitizer", "harness"])
}

impl KindRow {
    const fn with_tools(self, tools: &'static [&'static str]) -> KindRow {
        KindRow { tools, ..self }
    }
}

impl StageKind {
    /// Every kind, in order.
    pub fn all() -> impl Iterator<Item = StageKind> {
        KINDS.iter().map(|r| r.kind)
    }

    /// Its row of [`KINDS`].
    pub fn row(self) -> &'static KindRow {
        // The table lists every kind once, in declaration order (a unit test checks it).
        &KINDS[self as usize]
    }

    /// Its pipeline.yaml spelling.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The kind pipeline.yaml spells so.
    pub fn of_name(name: &str) -> Option<StageKind> {
        KINDS.iter().find(|r| r.name == name).map(|r| r.kind)
    }

    /// Whether the stage runs the program under a compute-sanitizer tool.
    pub fn is_sanitizer(self) -> bool {
        self.row().sanitizer
    }
}

#[cfg(test)]
mod tests {
    use super::{KINDS, StageKind};

    #[test]
    fn the_table_lists_every_kind_once_in_order_under_its_serde_name() {
        for (i, row) in KINDS.iter().enumerate() {
            assert_eq!(row.kind as usize, i, "{:?} out of order", row.kind);
            assert_eq!(
                serde_json::to_value(row.kind).unwrap(),
                serde_json::json!(row.name)
            );
            assert_eq!(StageKind::of_name(row.name), Some(row.kind));
        }
        assert_eq!(KINDS.len(), StageKind::Report as usize + 1);
    }
}
