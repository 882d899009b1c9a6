//! The join: every parsed log placed under the stage, config and arch that produced it, and the
//! kernels, findings, harness results and metrics indexed by kernel, config and arch.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use parsers::harness::HarnessResult;
use parsers::{Finding, Format, Kernel, Metric, ParsedLog, SassCounts, Tool};

use crate::model::ProgramModel;
use crate::text::relative_path;
use crate::{
    evidence::Evidence, kernel_id::KernelId, run::Run, run::Stage, run::StageKind,
    run::StageStatus, run::TargetKind,
};

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
    let mut joined = Joined::build(Some(&evidence.run), sources);
    if !baseline.is_empty() {
        joined.baseline = Some(Box::new(Joined::build(Some(&evidence.run), baseline)));
    }
    joined.source_maps.clone_from(&evidence.source_maps);
    joined.trial_logs = trial_logs;
    joined.missing = evidence
        .missing
        .iter()
        .map(|(path, why)| (path.clone(), why.clone()))
        .collect();
    joined
}

/// Joins logs that come with no run (`runner explain`): each log's stage kind is inferred from
/// its format, and no config is known.
pub fn join_logs(logs: &[(String, ParsedLog)]) -> Joined<'_> {
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
    Joined::build(None, sources)
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

/// A sanitizer record of a hazard a library's own code may show without the user's program
/// being at fault: races, uninitialised reads, barrier misuse.
fn is_hazard(kind: parsers::FindingKind) -> bool {
    use parsers::FindingKind as K;
    matches!(
        kind,
        K::Race | K::UninitializedRead | K::UnusedMemory | K::BarrierError
    )
}

/// The program model of the join's lists ([`crate::model`]).
fn model_of(
    sources: &[Source],
    kernels: &[KernelView],
    findings: &[FindingRef],
    results: &[ResultRef],
    metrics: &[MetricRef],
    repo_files: &[String],
) -> ProgramModel {
    let runtime = |source: usize| {
        sources.get(source).is_some_and(|s| {
            s.kind.is_sanitizer()
                || matches!(
                    s.kind,
                    StageKind::Check | StageKind::Stress | StageKind::Bench | StageKind::Profile
                )
        })
    };
    let inputs = crate::model::Inputs {
        findings: findings
            .iter()
            .map(|f| (f.finding, f.config.as_deref(), runtime(f.source)))
            .collect(),
        built: kernels
            .iter()
            .filter_map(|k| {
                let name = k.resources.map(|r| r.name.as_str())?;
                Some((name, k.config.as_deref()))
            })
            .chain(
                kernels
                    .iter()
                    .filter(|k| k.resources.is_none() && k.sass.is_some())
                    .map(|k| (k.name.as_str(), k.config.as_deref())),
            )
            .collect(),
        triton: kernels
            .iter()
            .filter(|k| {
                k.sass_source
                    .and_then(|i| sources.get(i))
                    // The SASS stage names a cubin from Triton's cache `jit__triton__...`.
                    .is_some_and(|s| {
                        s.path
                            .rsplit('/')
                            .next()
                            .is_some_and(|file| file.starts_with("jit__triton__"))
                    })
            })
            .map(|k| k.name.as_str())
            .collect(),
        listed: metrics
            .iter()
            .filter_map(|m| {
                let stage = sources.get(m.source)?.stage?;
                Some((
                    m.metric.kernel.as_str(),
                    stage.name.as_str(),
                    m.metric.launch?,
                ))
            })
            .collect(),
        launched: metrics
            .iter()
            .map(|m| (m.metric.kernel.as_str(), m.config.as_deref()))
            .chain(
                results
                    .iter()
                    .filter(|r| !is_baseline(r.result))
                    .map(|r| (r.result.kernel.as_str(), r.config.as_deref())),
            )
            .collect(),
        repo_files,
    };
    ProgramModel::build(&inputs)
}

/// The findings (indices into `findings`) whose log shows the program had printed the line its
/// check failed on (the check stage's reason, in `stages`) before the finding's first record.
fn after_failure(stages: &[Stage], sources: &[Source], findings: &[FindingRef]) -> BTreeSet<usize> {
    let failed_on: BTreeMap<Option<&str>, &str> = stages
        .iter()
        .filter(|s| s.kind == StageKind::Check && s.status == crate::run::StageStatus::Findings)
        .filter_map(|s| Some((s.config.as_deref(), s.reason.as_deref()?)))
        .collect();
    let mut after = BTreeSet::new();
    for (i, f) in findings.iter().enumerate() {
        let Some(source) = sources.get(f.source) else {
            continue;
        };
        let (Some(printed), Some(before), Some(reason)) = (
            source.log.failure_output.as_ref(),
            f.finding.output_before,
            failed_on.get(&source.config),
        ) else {
            continue;
        };
        if printed.index < before && crate::model::is_the_failure(&printed.text, reason) {
            after.insert(i);
        }
    }
    after
}

/// What each source holds and where each log path and kernel is, by index into [`Joined`]'s
/// lists; every list ascending, so that walking it keeps the order of the full lists.
#[derive(Debug, Clone, Default)]
struct Index<'a> {
    /// Source indices by log path.
    by_path: HashMap<&'a str, Vec<usize>>,
    /// Per source: its findings, results and metrics, and the kernel views whose resources or
    /// SASS counts came from it.
    findings: Vec<Vec<usize>>,
    results: Vec<Vec<usize>>,
    metrics: Vec<Vec<usize>>,
    resources: Vec<Vec<usize>>,
    sass: Vec<Vec<usize>>,
    /// Sources with the harness's launch info, by the (kernel, config) of each result
    /// they hold.
    launches: HashMap<(KernelId, Option<String>), Vec<usize>>,
    /// Metric indices by (config, kernel).
    metrics_by_kernel: HashMap<(Option<String>, KernelId), Vec<usize>>,
}

impl<'a> Joined<'a> {
    fn build(run: Option<&'a Run>, sources: Vec<Source<'a>>) -> Joined<'a> {
        let repo_files: Vec<String> = run
            .map(|r| {
                r.inputs
                    .keys()
                    .filter(|k| !k.starts_with("flags:"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut configs: BTreeMap<String, ConfigParams> = BTreeMap::new();
        let mut targets = BTreeSet::new();
        if let Some(run) = run {
            for stage in &run.stages {
                if stage.kind == StageKind::Compile
                    && let Some(config) = &stage.config
                {
                    let mut params = ConfigParams::from_unit(&stage.unit(), &repo_files);
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
        let index = Index::build(&sources, &kernels, &findings, &results, &metrics);
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
            baseline: None,
            trial_logs: BTreeMap::new(),
            model,
            library_findings,
            index,
        }
    }

    /// The indices of the sources read from these log paths, ascending.
    pub fn sources_at(&self, paths: &[&str]) -> Vec<usize> {
        let mut found: Vec<usize> = paths
            .iter()
            .filter_map(|p| self.index.by_path.get(p))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Whether a source was read from this log path.
    pub fn has_source_at(&self, path: &str) -> bool {
        self.index.by_path.contains_key(path)
    }

    /// The findings of these sources (ascending indices), in the order of `findings`.
    pub fn findings_of<'s>(
        &'s self,
        sources: &'s [usize],
    ) -> impl Iterator<Item = &'s FindingRef<'a>> + 's {
        picked(sources, &self.index.findings, &self.findings)
    }

    /// The results of these sources (ascending indices), in the order of `results`.
    pub fn results_of<'s>(
        &'s self,
        sources: &'s [usize],
    ) -> impl Iterator<Item = &'s ResultRef<'a>> + 's {
        picked(sources, &self.index.results, &self.results)
    }

    /// The metrics of these sources (ascending indices), in the order of `metrics`.
    pub fn metrics_of<'s>(
        &'s self,
        sources: &'s [usize],
    ) -> impl Iterator<Item = &'s MetricRef<'a>> + 's {
        picked(sources, &self.index.metrics, &self.metrics)
    }

    /// The kernel views whose ptxas resources came from these sources.
    pub fn kernels_with_resources_from<'s>(
        &'s self,
        sources: &'s [usize],
    ) -> impl Iterator<Item = &'s KernelView<'a>> + 's {
        picked(sources, &self.index.resources, &self.kernels)
    }

    /// The kernel views whose SASS counts came from these sources.
    pub fn kernels_with_sass_from<'s>(
        &'s self,
        sources: &'s [usize],
    ) -> impl Iterator<Item = &'s KernelView<'a>> + 's {
        picked(sources, &self.index.sass, &self.kernels)
    }

    /// The sources holding the harness's launch info and a result of this kernel in this
    /// config, ascending.
    pub fn launch_sources(&self, kernel: &KernelId, config: Option<&str>) -> &[usize] {
        self.index
            .launches
            .get(&(kernel.clone(), config.map(str::to_string)))
            .map_or(&[], Vec::as_slice)
    }

    /// The metrics of one kernel in one config, in order.
    pub fn metrics_of_kernel<'s>(
        &'s self,
        config: Option<&str>,
        kernel: &KernelId,
    ) -> impl Iterator<Item = &'s MetricRef<'a>> + 's {
        self.index
            .metrics_by_kernel
            .get(&(config.map(str::to_string), kernel.clone()))
            .into_iter()
            .flatten()
            .filter_map(|&i| self.metrics.get(i))
    }

    /// The source a reference points at.
    pub fn source(&self, index: usize) -> Option<&Source<'a>> {
        self.sources.get(index)
    }

    /// Whether `kernel` is one the harness launches (always true when no stage names one).
    pub fn is_target(&self, kernel: &KernelId) -> bool {
        self.targets.is_empty() || self.targets.contains(kernel)
    }

    /// Whether `kernel` is one the program's own build or JIT caches hold in `config`: the
    /// kernels ptxas or the SASS inventory listed there. A kernel ncu measured outside that
    /// inventory (a framework's own, launched by the same process) is not; with no inventory
    /// for the config, every kernel is.
    pub fn is_own(&self, config: Option<&str>, kernel: &KernelId) -> bool {
        let mut inventory = self
            .kernels
            .iter()
            .filter(|k| k.config.as_deref() == config)
            .filter(|k| k.resources.is_some() || k.sass.is_some())
            .peekable();
        if inventory.peek().is_none() {
            return true;
        }
        inventory.any(|k| k.name == *kernel)
    }

    /// The kernels that are launched (or all, when nobody says which are).
    pub fn target_kernels(&self) -> impl Iterator<Item = &KernelView<'a>> {
        self.kernels.iter().filter(|k| self.is_target(&k.name))
    }

    /// The kernel view of a config and kernel, any arch (the first, by arch name).
    pub fn kernel(&self, config: Option<&str>, kernel: &KernelId) -> Option<&KernelView<'a>> {
        self.kernels
            .iter()
            .find(|k| k.config.as_deref() == config && k.name == *kernel)
    }

    /// The config names, in order; a single `None` when the evidence has none.
    pub fn config_names(&self) -> Vec<Option<String>> {
        let mut names: BTreeSet<Option<String>> = BTreeSet::new();
        for s in &self.sources {
            names.insert(s.config.map(str::to_string));
        }
        if let Some(run) = self.run {
            for stage in &run.stages {
                if stage.config.is_some() {
                    names.insert(stage.config.clone());
                }
            }
        }
        if names.len() > 1 {
            names.remove(&None);
        }
        names.into_iter().collect()
    }

    /// The stages of the run (none for `explain`).
    pub fn stages(&self) -> &'a [Stage] {
        self.run.map(|r| r.stages.as_slice()).unwrap_or(&[])
    }

    /// The stage executions that could not conclude: failed, timed out, inconclusive,
    /// interrupted, or a sanitizer log without its summary.
    pub fn unconcluded(&self) -> Vec<Unconcluded> {
        let mut out = Vec::new();
        if let Some(run) = self.run.filter(|r| r.interrupted) {
            out.push(Unconcluded {
                stage: "run".to_string(),
                config: None,
                what: "interrupted".to_string(),
                reason: Some(match &run.finished {
                    Some(_) => "the run was interrupted before every stage finished".to_string(),
                    None => "the run was interrupted and never finished".to_string(),
                }),
            });
        }
        for stage in self.stages() {
            let reason = match stage.status {
                StageStatus::Failed => Some("failed"),
                StageStatus::TimedOut => Some("timed out"),
                StageStatus::Inconclusive => Some("inconclusive"),
                StageStatus::Interrupted => Some("interrupted"),
                _ => None,
            };
            if let Some(what) = reason {
                out.push(Unconcluded {
                    stage: stage.name.clone(),
                    config: stage.config.clone(),
                    what: what.to_string(),
                    reason: stage.reason.clone(),
                });
            }
        }
        // A log the manifest lists whose stage concluded, but that is not there to read: that
        // stage's evidence is missing, whatever its recorded status says.
        let missing: HashMap<&str, &String> = self
            .missing
            .iter()
            .rev()
            .map(|(path, why)| (path.as_str(), why))
            .collect();
        for stage in self.stages() {
            if !matches!(stage.status, StageStatus::Passed | StageStatus::Findings) {
                continue;
            }
            for log in stage.logs.iter().filter(|l| l.format.is_some()) {
                let in_baseline = self
                    .baseline
                    .as_deref()
                    .is_some_and(|b| b.has_source_at(&log.path));
                if self.has_source_at(&log.path) || in_baseline {
                    continue;
                }
                let why = missing
                    .get(log.path.as_str())
                    .map_or("not read", |why| why.as_str());
                out.push(Unconcluded {
                    stage: stage.name.clone(),
                    config: stage.config.clone(),
                    what: "evidence missing".to_string(),
                    reason: Some(format!("{}: {why}", log.path)),
                });
            }
        }
        for source in &self.sources {
            let concluded_stage = source
                .stage
                .is_none_or(|s| matches!(s.status, StageStatus::Passed | StageStatus::Findings));
            if source.kind.is_sanitizer() && !source.log.complete && concluded_stage {
                let sanitizer_log = matches!(
                    source.log.format,
                    Format::ComputeSanitizer | Format::ComputeSanitizerXml
                );
                // The program's own results beside the sanitizer's log: what did not read.
                let reason = if sanitizer_log {
                    format!(
                        "{} has no summary line (the tool stopped early or the log was cut)",
                        source.path
                    )
                } else {
                    format!(
                        "{} does not read as {}{}",
                        source.path,
                        serde_json::to_value(source.log.format)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        source
                            .log
                            .unparsed_examples
                            .first()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    )
                };
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: source.config.map(str::to_string),
                    what: "incomplete".to_string(),
                    reason: Some(reason),
                });
            } else if source.stage.is_none() && source.log.holds_nothing() {
                // A loose log (`explain`) with nothing of its format in it.
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: None,
                    what: "unreadable".to_string(),
                    reason: Some(format!(
                        "nothing in {} reads as {}",
                        source.path,
                        serde_json::to_value(source.log.format)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    )),
                });
            } else if source.stage.is_none() && source.log.every_test_skipped() {
                // A loose JUnit file whose every test was skipped: nothing ran.
                out.push(Unconcluded {
                    stage: source.stage_name(),
                    config: None,
                    what: "not run".to_string(),
                    reason: Some(format!("every test in {} was skipped", source.path)),
                });
            }
        }
        out
    }
}

/// The items `per_source` lists for each of `sources`, from `items`.
fn picked<'s, T>(
    sources: &'s [usize],
    per_source: &'s [Vec<usize>],
    items: &'s [T],
) -> impl Iterator<Item = &'s T> + 's {
    sources
        .iter()
        .filter_map(|&s| per_source.get(s))
        .flatten()
        .filter_map(|&i| items.get(i))
}

impl<'a> Index<'a> {
    fn build(
        sources: &[Source<'a>],
        kernels: &[KernelView<'a>],
        findings: &[FindingRef<'a>],
        results: &[ResultRef<'a>],
        metrics: &[MetricRef<'a>],
    ) -> Index<'a> {
        let per_source = |of: &mut dyn Iterator<Item = Option<usize>>| {
            let mut lists = vec![Vec::new(); sources.len()];
            for (i, source) in of.enumerate() {
                if let Some(list) = source.and_then(|s| lists.get_mut(s)) {
                    list.push(i);
                }
            }
            lists
        };
        let mut index = Index {
            findings: per_source(&mut findings.iter().map(|f| Some(f.source))),
            results: per_source(&mut results.iter().map(|r| Some(r.source))),
            metrics: per_source(&mut metrics.iter().map(|m| Some(m.source))),
            resources: per_source(&mut kernels.iter().map(|k| k.resources_source)),
            sass: per_source(&mut kernels.iter().map(|k| k.sass_source)),
            ..Index::default()
        };
        for (i, source) in sources.iter().enumerate() {
            index.by_path.entry(source.path).or_default().push(i);
        }
        // Results are in source order, each carrying its own config, else its source's.
        for r in results {
            if sources
                .get(r.source)
                .is_some_and(|s| s.log.launch.is_some())
            {
                let key = (r.kernel.clone(), r.config.clone());
                let list = index.launches.entry(key).or_default();
                if list.last() != Some(&r.source) {
                    list.push(r.source);
                }
            }
        }
        for (i, metric) in metrics.iter().enumerate() {
            index
                .metrics_by_kernel
                .entry((metric.config.clone(), metric.kernel.clone()))
                .or_default()
                .push(i);
        }
        index
    }
}

/// A stage execution that could not support a verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unconcluded {
    pub stage: String,
    pub config: Option<String>,
    /// `failed`, `timed out`, `inconclusive`, `interrupted` or `incomplete`.
    pub what: String,
    pub reason: Option<String>,
}
