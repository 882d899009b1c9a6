//! The joined evidence's lookups: which findings, results, metrics and kernels each source
//! holds, by index built once, and the questions the rules ask of kernels, configs and stages.

use std::collections::{BTreeSet, HashMap};

use crate::kernel_id::KernelId;
use crate::run::Stage;

use super::{FindingRef, Joined, KernelView, MetricRef, ResultRef, Source};

/// What each source holds and where each log path and kernel is, by index into [`Joined`]'s
/// lists; every list ascending, so that walking it keeps the order of the full lists.
#[derive(Debug, Clone, Default)]
pub(super) struct Index<'a> {
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
    /// Finding, source and stage indices by config, so that a rule that walks the configs is
    /// linear in them.
    findings_by_config: HashMap<Option<String>, Vec<usize>>,
    sources_by_config: HashMap<Option<String>, Vec<usize>>,
    stages_by_config: HashMap<Option<String>, Vec<usize>>,
}

impl<'a> Joined<'a> {
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
        // A library's kernel compiled into the program's own cache (CuPy's) is still its.
        if self.model.library(kernel).is_some() {
            return false;
        }
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

    /// The findings of a config, with their indices into `findings`, in order.
    pub fn findings_in<'s>(
        &'s self,
        config: Option<&str>,
    ) -> impl Iterator<Item = (usize, &'s FindingRef<'a>)> + 's {
        let list = self
            .index
            .findings_by_config
            .get(&config.map(str::to_string));
        list.into_iter()
            .flatten()
            .filter_map(|&i| Some((i, self.findings.get(i)?)))
    }

    /// The sources of a config, in order.
    pub fn sources_in<'s>(
        &'s self,
        config: Option<&str>,
    ) -> impl Iterator<Item = &'s Source<'a>> + 's {
        let list = self
            .index
            .sources_by_config
            .get(&config.map(str::to_string));
        list.into_iter()
            .flatten()
            .filter_map(|&i| self.sources.get(i))
    }

    /// The run's stages of a config, in order.
    pub fn stages_in(&self, config: Option<&str>) -> impl Iterator<Item = &'a Stage> + '_ {
        let stages = self.stages();
        let list = self.index.stages_by_config.get(&config.map(str::to_string));
        list.into_iter().flatten().filter_map(|&i| stages.get(i))
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
    pub(super) fn build(
        stages: &'a [Stage],
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
            index
                .sources_by_config
                .entry(source.config.map(str::to_string))
                .or_default()
                .push(i);
        }
        for (i, finding) in findings.iter().enumerate() {
            index
                .findings_by_config
                .entry(finding.config.clone())
                .or_default()
                .push(i);
        }
        for (i, stage) in stages.iter().enumerate() {
            index
                .stages_by_config
                .entry(stage.config.clone())
                .or_default()
                .push(i);
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
