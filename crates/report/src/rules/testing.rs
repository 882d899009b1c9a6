//! A test-only builder of evidence from real tool output, and one rule run over it: each rule
//! module's unit tests say which logs a run left and what the rule drafts from them.
//!
//! ```ignore
//! let drafts = Case::new()
//!     .log(StageKind::Memcheck, "release", "sm_90", include_str!("memcheck_oob_write.log"))
//!     .drafts(RuleId::OutOfBounds);
//! ```
//!
//! Each log is parsed as the runner parses it (its format detected, then `parsers::parse`),
//! placed under a stage of its kind, config and arch, joined with [`crate::join::join`], and the
//! one rule runs with no earlier drafts.

use std::collections::BTreeMap;

use parsers::{Format, ParsedLog, Severity, Tool};

use super::{Ctx, RuleId};
use crate::diagnosis::Draft;
use crate::{
    evidence::Evidence, run::Environment, run::Gpu, run::Log, run::Run, run::Stage, run::StageKind,
    run::StageStatus, run::TargetKind, run::Unit, run::Wrapper,
};

/// A run under construction: its stages, each with one log, and the files it read.
#[derive(Default)]
pub struct Case {
    stages: Vec<Stage>,
    logs: BTreeMap<String, ParsedLog>,
    inputs: Vec<String>,
    gpus: Vec<Gpu>,
}

impl Case {
    pub fn new() -> Case {
        Case::default()
    }

    /// A stage of `kind` for `config` on `arch` whose one log is `text`, its format detected as
    /// the runner's `exhibit explain` detects it.
    pub fn log(self, kind: StageKind, config: &str, arch: &str, text: &str) -> Case {
        let format = parsers::detect(text).unwrap_or_else(|| panic!("no format detected"));
        self.log_as(kind, config, arch, format, text)
    }

    /// [`Case::log`] with the format given: for a format that is not detected from its text.
    pub fn log_as(
        mut self,
        kind: StageKind,
        config: &str,
        arch: &str,
        format: Format,
        text: &str,
    ) -> Case {
        let parsed = parsers::parse(format, text);
        let path = format!(
            "{}/{config}/{}.log",
            crate::join::kind_name(kind),
            self.stages.len()
        );
        let status = status_of(kind, &parsed);
        let unit = Unit {
            target: match kind {
                StageKind::Compile | StageKind::Sass | StageKind::Report => TargetKind::Tool,
                StageKind::Baseline => TargetKind::Baseline,
                _ => TargetKind::Harness,
            },
            wrapper: sanitizer_tool(kind)
                .map(|check| Wrapper::ComputeSanitizer { check })
                .or((kind == StageKind::Profile).then_some(Wrapper::Ncu)),
            arch: Some(arch.to_string()),
            ..Unit::default()
        };
        self.stages.push(Stage {
            name: crate::join::kind_name(kind).to_string(),
            kind,
            config: Some(config.to_string()),
            arch: Some(arch.to_string()),
            status,
            reason: None,
            command: Vec::new(),
            exit_code: None,
            duration_ms: 1000,
            cached_from: None,
            input_hash: None,
            logs: vec![Log {
                path: path.clone(),
                format: Some(format),
            }],
            unit,
            launch_search: None,
            leftovers: Vec::new(),
            missing: Vec::new(),
            device: None,
            outputs: BTreeMap::new(),
            cut: BTreeMap::new(),
            split: Vec::new(),
            site_lines: BTreeMap::new(),
            seal: None,
        });
        self.logs.insert(path, parsed);
        self
    }

    /// Another log of the last stage, of `format` (a profile's source page beside its details
    /// page).
    pub fn also(mut self, format: Format, text: &str) -> Case {
        let stage = self.stages.last_mut().expect("a stage to add a log to");
        let path = format!("{}.{}.log", stage.logs[0].path, stage.logs.len());
        stage.logs.push(Log {
            path: path.clone(),
            format: Some(format),
        });
        self.logs.insert(path, parsers::parse(format, text));
        self
    }

    /// A profile stage for `config` on `sm_90`: ncu's details page `details` and its source
    /// page `page`.
    pub fn profile(self, config: &str, details: &str, page: &str) -> Case {
        self.log_as(StageKind::Profile, config, "sm_90", Format::NcuCsv, details)
            .also(Format::NcuSource, page)
    }

    /// The GPU the run recorded: its name, SM count and compute capability (`9.0`).
    pub fn gpu(mut self, name: &str, sm_count: u32, compute_capability: &str) -> Case {
        self.gpus.push(Gpu {
            name: name.to_string(),
            sm_count: Some(sm_count),
            compute_capability: Some(compute_capability.to_string()),
            ..Gpu::default()
        });
        self
    }

    /// Changes the last stage's record: what its unit ran, how it ended.
    pub fn stage(mut self, change: impl FnOnce(&mut Stage)) -> Case {
        let stage = self.stages.last_mut().expect("a stage to change");
        change(stage);
        self
    }

    /// The last stage's unit launched this kernel (the built-in harness's `--entry-point`).
    pub fn kernel(self, name: &str) -> Case {
        self.stage(|s| s.unit.kernel = Some(name.to_string()))
    }

    /// A file of the run's own, relative to the repository (what tools' paths are made relative
    /// to, and the user's code is told by).
    pub fn input(mut self, path: &str) -> Case {
        self.inputs.push(path.to_string());
        self
    }

    /// The evidence of the run so far.
    pub fn evidence(&self) -> Evidence {
        let run = Run {
            schema: crate::run::RUN_SCHEMA.to_string(),
            id: "20261122T024505Z-00000000".to_string(),
            pipeline: "pipeline.yaml".to_string(),
            started: "2026-11-22T02:45:05Z".to_string(),
            finished: Some("2026-11-22T02:47:00Z".to_string()),
            interrupted: false,
            git: None,
            environment: Environment {
                gpus: self.gpus.clone(),
                ..Environment::default()
            },
            inputs: self
                .inputs
                .iter()
                .map(|i| (i.clone(), "sha256".to_string()))
                .collect(),
            stages: self.stages.clone(),
            wall_ms: None,
            links: BTreeMap::new(),
            knobs: Vec::new(),
            experiments: Vec::new(),
            source_maps: Vec::new(),
        };
        Evidence {
            run,
            logs: self.logs.clone(),
            missing: BTreeMap::new(),
            source_maps: Vec::new(),
            program_pairs: Default::default(),
            program_mismatches: Default::default(),
        }
    }

    /// What `rule` drafts from the run's evidence, run alone: no earlier rule's drafts.
    pub fn drafts(&self, rule: RuleId) -> Vec<Draft> {
        self.drafts_of(rule.rule().run.expect("a rule that runs on one run"))
    }

    /// The one draft `rule` drafts from the run's evidence, asserted to be that rule's; fails,
    /// listing them, when it drafted none or several.
    pub fn only(&self, rule: RuleId) -> Draft {
        let d = only(self.drafts(rule));
        assert_eq!(d.rule, rule);
        d
    }

    /// Asserts that `rule` drafts nothing from the run's evidence, listing what it drafted.
    pub fn silent(&self, rule: RuleId) {
        let drafts = self.drafts(rule);
        assert!(drafts.is_empty(), "{drafts:?}");
    }

    /// What a rule's function (or a part of one, such as a cause `slow-kernel` drafts through
    /// a module of its own) drafts from the run's evidence, with no earlier rule's drafts.
    pub fn drafts_of(&self, run: impl Fn(&Ctx) -> Vec<Draft>) -> Vec<Draft> {
        let evidence = self.evidence();
        let joined = crate::join::join(&evidence);
        run(&Ctx {
            joined: &joined,
            claimed: &Default::default(),
        })
    }
}

/// The compute-sanitizer tool a stage kind runs under.
fn sanitizer_tool(kind: StageKind) -> Option<Tool> {
    match kind {
        StageKind::Memcheck => Some(Tool::Memcheck),
        StageKind::Racecheck => Some(Tool::Racecheck),
        StageKind::Initcheck => Some(Tool::Initcheck),
        StageKind::Synccheck => Some(Tool::Synccheck),
        _ => None,
    }
}

/// The status the runner gives a stage whose tool worked: inconclusive for a sanitizer log cut
/// short, findings for an error, else passed.
fn status_of(kind: StageKind, log: &ParsedLog) -> StageStatus {
    if sanitizer_tool(kind).is_some() && !log.complete {
        StageStatus::Inconclusive
    } else if log.findings.iter().any(|f| f.severity == Severity::Error) {
        StageStatus::Findings
    } else {
        StageStatus::Passed
    }
}

/// A fixture of the parsers crate (`crates/parsers/fixtures/<path>`), as text.
macro_rules! parsers_fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../parsers/fixtures/",
            $path
        ))
    };
}
pub(crate) use parsers_fixture;

/// A stage of `Kind` for config `release` on `sm_90` whose one log is the parsers fixture
/// `path`: `fixture_case!(Memcheck, "compute-sanitizer/memcheck_oob_write.log")`; several such
/// stages, in order, separated by `;` (a build and a run of it).
macro_rules! fixture_case {
    ($($kind:ident, $path:literal);+ $(;)?) => {
        $crate::rules::testing::Case::new()$(.log(
            $crate::run::StageKind::$kind,
            "release",
            "sm_90",
            $crate::rules::testing::parsers_fixture!($path),
        ))+
    };
}
pub(crate) use fixture_case;

/// A file of the repository (`<repo>/<path>`, the path in one or several parts), as text: a
/// reference run's log.
macro_rules! repo_file {
    ($($path:literal),+) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../", $($path),+))
    };
}
pub(crate) use repo_file;

/// The slow-reduction example's reference run on an H100 of `src/sum.cu`
/// (`examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330`): the profile of its
/// config `$config`, ncu's details and source pages (`profile/<config>/sm_90/`).
macro_rules! slow_reduction {
    ($config:literal) => {
        $crate::rules::testing::Case::new()
            .profile(
                $config,
                $crate::rules::testing::repo_file!(
                    "examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/",
                    $config,
                    "/sm_90/ncu.csv"
                ),
                $crate::rules::testing::repo_file!(
                    "examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/",
                    $config,
                    "/sm_90/source.csv"
                ),
            )
            .input("src/sum.cu")
            .gpu("NVIDIA H100 80GB HBM3", 132, "9.0")
    };
}
pub(crate) use slow_reduction;

/// The one draft a rule made; fails, listing them, when it made none or several.
pub fn only(drafts: Vec<Draft>) -> Draft {
    let titles: Vec<String> = drafts
        .iter()
        .map(|d| format!("{}: {}", d.rule, d.title.plain()))
        .collect();
    let mut drafts = drafts;
    match (drafts.pop(), drafts.is_empty()) {
        (Some(d), true) => d,
        _ => panic!("expected one draft, got {titles:?}"),
    }
}

/// Asserts that `m` says `words` (in its Markdown), showing it where it does not.
#[track_caller]
pub fn says(m: &crate::message::Message, words: &str) {
    assert!(m.markdown().contains(words), "{m:?}");
}

/// A draft's place as `file:line` (`file` with no line).
pub fn place(d: &Draft) -> Option<String> {
    d.location.as_ref().map(ToString::to_string)
}
