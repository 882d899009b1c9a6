//! Timings compared across two runs: whether they may be compared at all, each kernel timing
//! judged against the noise, and the root causes a slower timing makes.

use std::collections::BTreeMap;

use serde_json::json;

use crate::analysis::Analysis;
use crate::diagnosis::{Confidence, Diagnosis, EvidenceItem, Level};
use crate::noise::{Judgement, NoiseOptions, judge};
use crate::rules::RuleId;
use crate::run::Run;
use crate::tables::Case;
use crate::text::{fixed, short_hash};

use super::{DiffOptions, PerfChange};

/// Why timings of the two runs must not be compared, unless the options allow it.
pub(super) fn refuse_timing(a: &Run, b: &Run, opts: &DiffOptions) -> Option<String> {
    if a.id == b.id {
        return Some(format!(
            "A and B are one run (`{}`): timings not compared",
            a.id
        ));
    }
    if opts.allow_different_gpu {
        return None;
    }
    let gpu = |r: &Run| r.environment.gpus.first().map(|g| g.name.clone());
    let mut why = Vec::new();
    if gpu(a) != gpu(b) {
        why.push(format!(
            "GPUs differ ({} vs {})",
            gpu(a).unwrap_or_else(|| "none".into()),
            gpu(b).unwrap_or_else(|| "none".into())
        ));
    }
    if a.environment.driver != b.environment.driver {
        why.push(format!(
            "drivers differ ({} vs {})",
            a.environment
                .driver
                .clone()
                .unwrap_or_else(|| "none".into()),
            b.environment
                .driver
                .clone()
                .unwrap_or_else(|| "none".into())
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "{}: timings not compared (pass --allow-different-gpu to compare anyway)",
            why.join("; ")
        )
    })
}

/// The timings both runs have, judged; and how many of them are one measurement.
pub(super) fn perf_changes(
    a: &Analysis,
    b: &Analysis,
    opts: &NoiseOptions,
) -> (Vec<PerfChange>, usize) {
    type Key = (Case, String, String, String);
    type Timing = (bool, parsers::harness::Bench, Option<String>);
    let timings = |an: &Analysis| -> BTreeMap<Key, Timing> {
        let mut out = BTreeMap::new();
        for r in &an.joined.results {
            let Some(bench) = &r.result.bench else {
                continue;
            };
            let baseline = crate::join::is_baseline(r.result);
            let implementation = if baseline {
                r.result.kernel.clone()
            } else {
                r.config.clone().unwrap_or_else(|| r.kernel.to_string())
            };
            let cached_from = an
                .joined
                .sources
                .get(r.source)
                .and_then(|s| s.stage)
                .and_then(|s| s.cached_from.clone());
            out.insert(
                (
                    Case::of(r.result),
                    implementation,
                    bench.cache.clone(),
                    bench.timing.clone(),
                ),
                (baseline, bench.clone(), cached_from),
            );
        }
        // A program's own benchmarks (pytest-benchmark, Google Benchmark): by config and name.
        for source in &an.joined.sources {
            let baseline = match source.kind {
                crate::run::StageKind::Bench => false,
                crate::run::StageKind::Baseline => true,
                _ => continue,
            };
            let cached_from = source.stage.and_then(|s| s.cached_from.clone());
            for t in &source.log.timings {
                let Some(bench) = program_bench(t) else {
                    continue;
                };
                let implementation = source.config.unwrap_or("program").to_string();
                out.insert(
                    (
                        Case::none(),
                        implementation,
                        bench.cache.clone(),
                        t.name.clone(),
                    ),
                    (baseline, bench, cached_from.clone()),
                );
            }
        }
        out
    };
    let ta = timings(a);
    let tb = timings(b);
    let origin = |an: &Analysis, cached: &Option<String>| {
        cached
            .clone()
            .or_else(|| an.joined.run.map(|r| r.id.clone()))
    };
    let mut out = Vec::new();
    let mut same_measurement = 0;
    for (key, (baseline, before, a_cached)) in &ta {
        let Some((_, after, b_cached)) = tb.get(key) else {
            continue;
        };
        // One measurement: a side served from the cache of the run the other was measured in.
        let cached = a_cached.is_some() || b_cached.is_some();
        if cached && origin(a, a_cached).is_some() && origin(a, a_cached) == origin(b, b_cached) {
            same_measurement += 1;
            continue;
        }
        let c = judge(before, after, opts);
        out.push(PerfChange {
            case: key.0.clone(),
            implementation: key.1.clone(),
            baseline: *baseline,
            cache: key.2.clone(),
            timing: key.3.clone(),
            a_p50_us: before.p50_us,
            b_p50_us: after.p50_us,
            change: c.change,
            noise: c.noise,
            judgement: c.judgement,
            reason: c.reason,
            test: c.test,
            a_cached_from: a_cached.clone(),
            b_cached_from: b_cached.clone(),
        });
    }
    (out, same_measurement)
}

/// A program's timing in the harness's terms, for the noise judgement: its median (else mean),
/// its spread from its standard deviation, its samples (its repetitions or rounds).
fn program_bench(t: &parsers::Timing) -> Option<parsers::harness::Bench> {
    let p50 = t.median_us.or(t.mean_us)?;
    Some(parsers::harness::Bench {
        cache: match t.format {
            parsers::Format::PytestBenchmark => "pytest-benchmark",
            parsers::Format::GoogleBenchmark => "Google Benchmark real_time",
            parsers::Format::Nvbench => "nvbench cold GPU time",
            parsers::Format::TextTimings => "text pattern",
            _ => "the program's",
        }
        .to_string(),
        timing: t.name.clone(),
        samples: t.samples.unwrap_or(1),
        min_us: t.min_us.unwrap_or(f64::NAN),
        p50_us: p50,
        p90_us: f64::NAN,
        p99_us: f64::NAN,
        mean_us: t.mean_us.unwrap_or(f64::NAN),
        stdev_us: t.stdev_us.unwrap_or(f64::NAN),
        tflops: f64::NAN,
        gbps: f64::NAN,
        sm_clock_mhz_before: None,
        sm_clock_mhz_after: None,
        throttled: None,
        samples_us: t.samples_us.clone(),
    })
}

pub(super) fn perf_diagnoses(perf: &[PerfChange], b: &Run) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    for p in perf.iter().filter(|p| !p.baseline) {
        let (rule, level, word) = match p.judgement {
            Judgement::Slower => (RuleId::PerfRegression, Level::Warning, "slower"),
            Judgement::Faster => (RuleId::PerfImprovement, Level::Note, "faster"),
            _ => continue,
        };
        // A baseline that moved the same way on the same case says the machine moved.
        let machine = perf.iter().any(|q| {
            q.baseline && q.case == p.case && q.timing == p.timing && q.judgement == p.judgement
        });
        let title = format!(
            "{} {} by {}% on {} ({} {})",
            p.implementation,
            word,
            fixed(p.change.abs() * 100.0, 1),
            p.case.label(),
            p.timing,
            p.cache
        );
        let key = format!(
            "{}|{}|{}|{}",
            p.case.label(),
            p.implementation,
            p.cache,
            p.timing
        );
        out.push(Diagnosis {
            rule,
            title: title.into(),
            level,
            confidence: if machine { Confidence::Low } else { Confidence::High },
            kernel: None,
            config: Some(p.implementation.clone()),
            configs: vec![p.implementation.clone()],
            arch: None,
            location: None,
            call_site: None,
            helpers: Vec::new(),
            evidence: vec![EvidenceItem {
                stage: "bench".to_string(),
                config: Some(p.implementation.clone()),
                log: String::new(),
                summary: format!(
                    "p50 {} µs -> {} µs ({:+.1}%), {}",
                    crate::text::sig3(p.a_p50_us),
                    crate::text::sig3(p.b_p50_us),
                    p.change * 100.0,
                    match &p.test {
                        Some(t) => format!(
                            "{} (Mann-Whitney U, {} and {} samples)",
                            crate::noise::p_clause(t.p),
                            t.a_samples,
                            t.b_samples
                        ),
                        None => format!(
                            "noise {}% (the larger of the two runs')",
                            fixed(p.noise * 100.0, 1)
                        ),
                    }
                ).into(),
                excerpt: Vec::new(),
            }],
            spans: Vec::new(),
            notes: vec![format!(
                "The p50 moved by {:+.1}%, {}.{}",
                p.change * 100.0,
                match &p.test {
                    Some(t) => format!(
                        "a significant change: the two runs' {} and {} samples differ with {} by \
                         a Mann-Whitney U test",
                        t.a_samples,
                        t.b_samples,
                        crate::noise::p_clause(t.p)
                    ),
                    None => format!(
                        "more than twice the measured noise ({}%)",
                        fixed(p.noise * 100.0, 1)
                    ),
                },
                if machine {
                    " The baseline moved the same way on this case: the machine, not the kernel, may have changed."
                } else {
                    ""
                }
            ).into()],
            help: vec![if rule == RuleId::PerfRegression {
                format!(
                    "Compare the two runs' per-config resources (registers, spills, occupancy, \
                     HMMA counts) for {}; re-run the bench stage to confirm.",
                    p.implementation
                ).into()
            } else {
                "Nothing to fix; keep the change.".to_string().into()
            }],
            fingerprint: short_hash(&[rule.as_str(), &key, &b.pipeline]),
            kernels: Vec::new(),
            hypothesis: None,
            figures: [
                ("change".to_string(), crate::text::round_json(p.change)),
                ("noise".to_string(), crate::text::round_json(p.noise)),
                ("a_p50_us".to_string(), crate::text::round_json(p.a_p50_us)),
                ("b_p50_us".to_string(), crate::text::round_json(p.b_p50_us)),
                ("baseline_moved".to_string(), json!(machine)),
            ]
            .into_iter()
            .collect(),
        });
    }
    out.sort_by(crate::fold::rank);
    out
}
