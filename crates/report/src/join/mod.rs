//! The join: every parsed log placed under the stage, config and arch that produced it, and the
//! kernels, findings, harness results and metrics indexed by kernel, config and arch.

mod lookups;
mod program;
mod unconcluded;

use std::collections::{BTreeMap, BTreeSet};

use parsers::harness::HarnessResult;
use parsers::{Finding, Format, Kernel, Metric, ParsedLog, SassCounts, Tool};

use crate::model::ProgramModel;
use crate::text::relative_path;
use crate::{
    evidence::Evidence, kernel_id::KernelId, run::Run, run::Stage, run::StageKind, run::TargetKind,
};
use lookups::Index;
use program::{after_failure, is_hazard, model_of};
pub use unconcluded::Unconcluded;

/// Joins a run's evidence. Logs the manifest does not list are joined too, under the stage kind
/// their format implies.
pub fn join(evidence: &Evidence) -> Joined<'_> {
    let mut sources = Vec::new();
    let mut baseline = Vec::new();
    let mut listed = BTreeSet::new();
    for stage in &evidence.run.stages {
        // The baseline's profile is evidence about the baseline, never about the program: it
        // is joined on its own, for setting its kernels beside the program's.
        let of_baseline =
            stage.kind == StageKind::Profile && stage.unit().target == TargetKind::Baseline;
        for log in &stage.logs {
            listed.insert(log.path.as_str());
            if let Some(parsed) = evidence.logs.get(&log.path)
                && of_baseline
            {
                baseline.push(Source {
                    path: log.path.as_str(),
                    stage: Some(stage),
                    kind: stage.kind,
                    config: None,
                    arch: None,
                    log: parsed,
                });
            } else if let Some(parsed) = evidence.logs.get(&log.path) {
                // A sanitizer log inside another stage (memcheck at a stress search's failing
                // count) is that sanitizer's evidence.
                let kind = match parsed.format {
                    Format::ComputeSanitizer | Format::ComputeSanitizerXml
                        if !stage.kind.is_sanitizer() =>
                    {
                        infer_kind(parsed)
                    }
                    _ => stage.kind,
                };
                sources.push(Source {
                    path: log.path.as_str(),
                    stage: Some(stage),
                    kind,
                    config: stage.config.as_deref(),
                    arch: stage.arch.as_deref(),
                    log: parsed,
                });
            }
        }
    }
    // The experiments' trials are read by the experiments alone, never joined as the run's.
    let mut trial_logs = BTreeMap::new();
    for unit in evidence.run.trial_units() {
        for log in &unit.logs {
            listed.insert(log.path.as_str());
            if let Some(parsed) = evidence.logs.get(&log.path) {
                trial_logs.insert(log.path.as_str(), parsed);
            }
        }
    }
    for (path, parsed) in &evidence.logs {
        if !listed.contains(path.as_str()) {
            sources.push(Source {
                path: path.as_str(),
                stage: None,
                kind: infer_kind(parsed),
                config: None,
                arch: None,
                log: parsed,
            });
        }
    }
    let mut joined = Joined::build(Some(&evidence.run), sources, Vec::new());
    if !baseline.is_empty() {
        joined.baseline = Some(Box::new(Joined::build(
            Some(&evidence.run),
            baseline,
            Vec::new(),
        )));
    }
    joined.source_maps.clone_from(&evidence.source_maps);
    joined.program_pairs.clone_from(&evidence.program_pairs);
    joined
        .program_mismatches
        .clone_from(&evidence.program_mismatches);
    joined.trial_logs = trial_logs;
    joined.missing = evidence
        .missing
        .iter()
        .map(|(path, why)| (path.clone(), why.clone()))
        .collect();
    joined
}

/// Joins logs that come with no run (`exhibit explain`): each log's stage kind is inferred from
/// its format, and no config is known. `inputs` are the user's files the logs name, relative
/// to the directory the command ran in (an absolute path a tool printed is said by them).
pub fn join_logs(logs: &[(String, ParsedLog)], inputs: Vec<String>) -> Joined<'_> {
    let sources = logs
        .iter()
        .map(|(path, parsed)| Source {
            path: path.as_str(),
            stage: None,
            kind: tool_from_name(parsed, path).unwrap_or_else(|| infer_kind(parsed)),
            config: None,
            arch: None,
            log: parsed,
        })
        .collect();
    Joined::build(None, sources, inputs)
}

/// A compute-sanitizer log whose records do not say which tool wrote it (a clean run prints
/// only its summary): the tool its file name names, if one.
fn tool_from_name(log: &ParsedLog, path: &str) -> Option<StageKind> {
    if log.tool.is_some()
        || !matches!(
            log.format,
            Format::ComputeSanitizer | Format::ComputeSanitizerXml
        )
    {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    [
        ("racecheck", StageKind::Racecheck),
        ("initcheck", StageKind::Initcheck),
        ("synccheck", StageKind::Synccheck),
        ("memcheck", StageKind::Memcheck),
    ]
    .into_iter()
    .find(|(word, _)| name.contains(word))
    .map(|(_, kind)| kind)
}

/// How a loose log was read, when its kind alone would say more than the log does: a
/// compute-sanitizer log that names no tool, in content or file name.
pub fn read_as(source: &Source) -> Option<String> {
    let unnamed = source.log.tool.is_none()
        && matches!(
            source.log.format,
            Format::ComputeSanitizer | Format::ComputeSanitizerXml
        )
        && tool_from_name(source.log, source.path).is_none();
    unnamed.then(|| "compute-sanitizer, tool unknown".to_string())
}

/// The stage kind a log's format implies, for logs without a stage.
pub fn infer_kind(log: &ParsedLog) -> StageKind {
    match log.format {
        Format::Ptxas => StageKind::Compile,
        Format::Sass | Format::SassLines => StageKind::Sass,
        Format::ComputeSanitizer | Format::ComputeSanitizerXml => match log.tool {
            Some(Tool::Racecheck) => StageKind::Racecheck,
            Some(Tool::Initcheck) => StageKind::Initcheck,
            Some(Tool::Synccheck) => StageKind::Synccheck,
            Some(Tool::Memcheck) | None => StageKind::Memcheck,
        },
        Format::NcuCsv | Format::NcuSource => StageKind::Profile,
        Format::PytestBenchmark
        | Format::GoogleBenchmark
        | Format::Nvbench
        | Format::TextTimings => StageKind::Bench,
        Format::ProgramResults | Format::JUnit => StageKind::Check,
        Format::Harness => {
            if !log.results.is_empty() && log.results.iter().all(is_baseline) {
                return StageKind::Baseline;
            }
            match log.results.first().map(|r| r.mode) {
                Some(parsers::harness::Mode::Stress) => StageKind::Stress,
                Some(parsers::harness::Mode::Bench) => StageKind::Bench,
                _ => StageKind::Check,
            }
        }
    }
}

/// Whether a harness result comes from a baseline (its kernel is `<producer>:<backend>`).
pub fn is_baseline(result: &HarnessResult) -> bool {
    result.kernel.contains(':')
}

/// One parsed log and where it came from.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    /// Relative to the run directory (or as given to `explain`).
    pub path: &'a str,
    pub stage: Option<&'a Stage>,
    pub kind: StageKind,
    pub config: Option<&'a str>,
    pub arch: Option<&'a str>,
    pub log: &'a ParsedLog,
}

impl Source<'_> {
    /// The stage's name in the pipeline, or the kind's name when there is no stage.
    pub fn stage_name(&self) -> String {
        match self.stage {
            Some(stage) => stage.name.clone(),
            None => kind_name(self.kind).to_string(),
        }
    }
}

/// The pipeline's name for a stage kind.
pub fn kind_name(kind: StageKind) -> &'static str {
    kind.name()
}

/// What the compile command of a config says about it: its `-D` defines, source and arch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigParams {
    pub defines: BTreeMap<String, String>,
    /// The `.cu` file compiled, relative to the repository.
    pub source: Option<String>,
    pub arch: Option<String>,
}

impl ConfigParams {
    /// A compile unit's typed record: its defines, source and arch.
    pub fn from_unit(unit: &crate::run::Unit, repo_files: &[String]) -> ConfigParams {
        ConfigParams {
            defines: unit.defines.clone(),
            source: unit.source.as_deref().map(|s| relative_path(s, repo_files)),
            arch: unit.arch.clone(),
        }
    }

    /// A define's value as a number.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.defines.get(name).and_then(|v| v.trim().parse().ok())
    }

    /// Threads per block, from the `WARPS` define of the kernel ABI.
    pub fn threads(&self) -> Option<u64> {
        self.number("WARPS").map(|w| w * 32)
    }
}

/// A kernel of one config and arch: its ptxas resources and SASS counts, joined.
#[derive(Debug, Clone)]
pub struct KernelView<'a> {
    /// The kernel's identity across tools.
    pub name: KernelId,
    pub config: Option<String>,
    pub arch: Option<String>,
    /// ptxas's figures (registers, shared memory, stack, spills), when compiled here.
    pub resources: Option<&'a Kernel>,
    pub resources_source: Option<usize>,
    pub sass: Option<&'a SassCounts>,
    pub sass_source: Option<usize>,
}

impl KernelView<'_> {
    pub fn registers(&self) -> Option<u32> {
        self.resources.and_then(|k| k.registers)
    }

    /// Spill stores plus loads, when ptxas printed a spill line.
    pub fn spill_bytes(&self) -> Option<u64> {
        let k = self.resources?;
        match (k.spill_store_bytes, k.spill_load_bytes) {
            (None, None) => None,
            (s, l) => Some(s.unwrap_or(0).saturating_add(l.unwrap_or(0))),
        }
    }

    /// Tensor-core instructions of any kind in the SASS.
    pub fn tensor_instructions(&self) -> Option<u64> {
        self.sass
            .map(|s| s.hmma.saturating_add(s.hgmma).saturating_add(s.imma))
    }
}

/// A finding and the log it came from.
#[derive(Debug, Clone)]
pub struct FindingRef<'a> {
    pub source: usize,
    pub finding: &'a Finding,
    pub config: Option<String>,
    /// The kernel the record names (a function the access is in, for some records), as an id.
    pub kernel: Option<KernelId>,
}

/// A harness or baseline result and the log it came from.
#[derive(Debug, Clone)]
pub struct ResultRef<'a> {
    pub source: usize,
    pub result: &'a HarnessResult,
    /// The result's own config, else its stage's.
    pub config: Option<String>,
    /// The kernel it launched, as an id (a baseline's `<producer>:<backend>` as it is).
    pub kernel: KernelId,
}

/// A metric and the log it came from.
#[derive(Debug, Clone)]
pub struct MetricRef<'a> {
    pub source: usize,
    pub metric: &'a Metric,
    pub config: Option<String>,
    /// The kernel measured, as an id.
    pub kernel: KernelId,
}

/// Evidence indexed by kernel, config and arch.
#[derive(Debug, Clone)]
pub struct Joined<'a> {
    pub run: Option<&'a Run>,
    /// Logs the run lists that could not be read, with why.
    pub missing: Vec<(String, String)>,
    pub sources: Vec<Source<'a>>,
    /// Ordered by config, arch and name.
    pub kernels: Vec<KernelView<'a>>,
    pub findings: Vec<FindingRef<'a>>,
    pub results: Vec<ResultRef<'a>>,
    pub metrics: Vec<MetricRef<'a>>,
    /// Each config's compile parameters, keyed by config name.
    pub configs: BTreeMap<String, ConfigParams>,
    /// The kernels the harness launches; empty when no stage says.
    pub targets: BTreeSet<KernelId>,
    /// Repository-relative paths of the run's inputs, for making tool paths relative.
    pub repo_files: Vec<String>,
    /// Generated files mapped back to the user's own (see [`crate::evidence::SourceMap`]).
    pub source_maps: Vec<crate::evidence::SourceMap>,
    /// A failed program's printed values beside its expected ones, by stdout log path.
    pub program_pairs: BTreeMap<String, Vec<(f64, f64)>>,
    /// A failed program's standard comparison's wrong elements, by stdout or stderr log path.
    pub program_mismatches: BTreeMap<String, parsers::mismatch::ElementMismatch>,
    /// The baseline's profile, joined on its own: its kernels are set beside the program's.
    pub baseline: Option<Box<Joined<'a>>>,
    /// The logs of the experiments' trials, by path (`experiment`).
    pub trial_logs: BTreeMap<&'a str, &'a parsers::ParsedLog>,
    /// The program the run exercised: each kernel's whole name, whose code it is, whether it
    /// ran ([`crate::model`]).
    pub model: ProgramModel,
    /// Hazards a library's kernels showed (racecheck, initcheck, synccheck): kept out of
    /// `findings`, read by the note that names the library.
    pub library_findings: Vec<FindingRef<'a>>,
    /// Lookups built once, so that the report is linear in stage records.
    index: Index<'a>,
}

impl<'a> Joined<'a> {
    fn build(run: Option<&'a Run>, sources: Vec<Source<'a>>, inputs: Vec<String>) -> Joined<'a> {
        let mut repo_files = repo_files(run);
        repo_files.extend(inputs);
        let (configs, mut targets) = configs_and_targets(run, &repo_files);

        let mut findings = Vec::new();
        let mut results = Vec::new();
        let mut metrics = Vec::new();
        let mut kernels: BTreeMap<(Option<String>, Option<String>, KernelId), KernelView<'a>> =
            BTreeMap::new();
        for (i, source) in sources.iter().enumerate() {
            let config = source.config.map(str::to_string);
            for finding in &source.log.findings {
                findings.push(FindingRef {
                    source: i,
                    finding,
                    config: config.clone(),
                    kernel: finding.kernel.as_deref().map(KernelId::of),
                });
            }
            for result in &source.log.results {
                let kernel = KernelId::of(&result.kernel);
                if !is_baseline(result) {
                    targets.insert(kernel.clone());
                }
                results.push(ResultRef {
                    source: i,
                    result,
                    config: result.config.clone().or_else(|| config.clone()),
                    kernel,
                });
            }
            // Nsight Compute metrics only: the harness parser also lists bench figures as
            // metrics, and those are read from the results.
            let metrics_of_log = if source.log.format == Format::NcuCsv {
                source.log.metrics.as_slice()
            } else {
                &[]
            };
            for metric in metrics_of_log {
                metrics.push(MetricRef {
                    source: i,
                    metric,
                    config: config.clone(),
                    kernel: KernelId::of(&metric.kernel),
                });
            }
            // A shared build's kernels are also those of the configs it serves.
            let served: Vec<Option<String>> = std::iter::once(config.clone())
                .chain(
                    source
                        .stage
                        .map(|s| s.unit().serves.clone())
                        .unwrap_or_default()
                        .into_iter()
                        .map(Some),
                )
                .collect();
            for (kernel, config) in source
                .log
                .kernels
                .iter()
                .flat_map(|k| served.iter().map(move |c| (k, c.clone())))
            {
                let arch = kernel
                    .arch
                    .clone()
                    .or_else(|| source.arch.map(str::to_string))
                    .or_else(|| {
                        config
                            .as_ref()
                            .and_then(|c| configs.get(c))
                            .and_then(|p| p.arch.clone())
                    });
                let name = KernelId::of(&kernel.name);
                let view = kernels
                    .entry((config.clone(), arch.clone(), name.clone()))
                    .or_insert_with(|| KernelView {
                        name,
                        config: config.clone(),
                        arch,
                        resources: None,
                        resources_source: None,
                        sass: None,
                        sass_source: None,
                    });
                if kernel.registers.is_some() && view.resources.is_none() {
                    view.resources = Some(kernel);
                    view.resources_source = Some(i);
                }
                if let Some(sass) = &kernel.sass
                    && view.sass.is_none()
                {
                    view.sass = Some(sass);
                    view.sass_source = Some(i);
                }
            }
        }
        let kernels: Vec<KernelView<'a>> = kernels.into_values().collect();
        let model = model_of(
            &sources,
            &kernels,
            &findings,
            &results,
            &metrics,
            &repo_files,
        );
        // A library's hazards (racecheck, initcheck, synccheck in cuDNN's kernel, run as the
        // program's reference) are never the user's fault: they leave the findings the rules
        // read, for the one note that names the library.
        let (library_findings, findings): (Vec<FindingRef<'a>>, Vec<FindingRef<'a>>) =
            findings.into_iter().partition(|f| {
                is_hazard(f.finding.kind)
                    && f.kernel
                        .as_ref()
                        .is_some_and(|k| model.library(k).is_some())
            });
        let mut model = model;
        model.after_failure = after_failure(
            run.map(|r| r.stages.as_slice()).unwrap_or(&[]),
            &sources,
            &findings,
        );
        let stages = run.map(|r| r.stages.as_slice()).unwrap_or(&[]);
        let index = Index::build(stages, &sources, &kernels, &findings, &results, &metrics);
        Joined {
            run,
            missing: Vec::new(),
            sources,
            kernels,
            findings,
            results,
            metrics,
            configs,
            targets,
            repo_files,
            source_maps: Vec::new(),
            program_pairs: BTreeMap::new(),
            program_mismatches: BTreeMap::new(),
            baseline: None,
            trial_logs: BTreeMap::new(),
            model,
            library_findings,
            index,
        }
    }

    /// A line the report quotes from a log or a stage record, without what changes from one
    /// run or machine to the next ([`crate::text::scrub`]).
    pub fn scrub(&self, line: &str) -> String {
        crate::text::scrub(line, &self.repo_files)
    }
}

/// Repository-relative paths of the run's inputs (its `flags:` inputs left out).
fn repo_files(run: Option<&Run>) -> Vec<String> {
    run.map(|r| {
        r.inputs
            .keys()
            .filter(|k| !k.starts_with("flags:"))
            .cloned()
            .collect()
    })
    .unwrap_or_default()
}

/// Each config's compile parameters (from its first compile stage), and the kernels the run's
/// stages name as launched.
fn configs_and_targets(
    run: Option<&Run>,
    repo_files: &[String],
) -> (BTreeMap<String, ConfigParams>, BTreeSet<KernelId>) {
    let mut configs: BTreeMap<String, ConfigParams> = BTreeMap::new();
    let mut targets = BTreeSet::new();
    if let Some(run) = run {
        for stage in &run.stages {
            if stage.kind == StageKind::Compile
                && let Some(config) = &stage.config
            {
                let mut params = ConfigParams::from_unit(&stage.unit(), repo_files);
                if params.arch.is_none() {
                    params.arch = stage.arch.clone();
                }
                configs.entry(config.clone()).or_insert(params);
            }
            if let Some(kernel) = &stage.unit().kernel {
                targets.insert(KernelId::of(kernel));
            }
        }
    }
    (configs, targets)
}
