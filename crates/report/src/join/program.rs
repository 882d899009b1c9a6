//! The program model the join builds from its lists: whose code each kernel is, whether it
//! ran, and which findings came after the failure the check reported ([`crate::model`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::ProgramModel;
use crate::run::{Stage, StageKind};

use super::{FindingRef, KernelView, MetricRef, ResultRef, Source, is_baseline};

/// A sanitizer record of a hazard a library's own code may show without the user's program
/// being at fault: races, uninitialised reads, barrier misuse.
pub(super) fn is_hazard(kind: parsers::FindingKind) -> bool {
    use parsers::FindingKind as K;
    matches!(
        kind,
        K::Race | K::UninitializedRead | K::UnusedMemory | K::BarrierError
    )
}

/// The program model of the join's lists ([`crate::model`]).
pub(super) fn model_of(
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
pub(super) fn after_failure(
    stages: &[Stage],
    sources: &[Source],
    findings: &[FindingRef],
) -> BTreeSet<usize> {
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
