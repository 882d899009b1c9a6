//! Timings compared across two runs: whether they may be compared at all, each kernel timing
//! judged against the noise, and the root causes a slower timing makes.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};
use serde_json::json;

use crate::analysis::Analysis;
use crate::diagnosis::{Confidence, Diagnosis, EvidenceItem, Level};
use crate::message::{Message, code, figure, msg, quote};
use crate::noise::{Judgement, NoiseOptions, judge};
use crate::rules::RuleId;
use crate::run::Run;
use crate::tables::Case;
use crate::text::{fixed, short_hash};

use super::{DiffOptions, PerfChange};

/// Why timings of the two runs must not be compared, unless the options allow it.
pub(super) fn refuse_timing(a: &Run, b: &Run, opts: &DiffOptions) -> Option<TimingRefusal> {
    if a.id == b.id {
        return Some(TimingRefusal::OneRun { run: a.id.clone() });
    }
    if opts.allow_different_gpu {
        return None;
    }
    let gpu = |r: &Run| r.environment.gpus.first().map(|g| g.name.clone());
    let driver = |r: &Run| r.environment.driver.clone();
    let differ = |a: Option<String>, b: Option<String>| (a != b).then_some(Differ { a, b });
    let gpus = differ(gpu(a), gpu(b));
    let drivers = differ(driver(a), driver(b));
    (gpus.is_some() || drivers.is_some()).then_some(TimingRefusal::Machines { gpus, drivers })
}

/// Why two runs' timings are not compared ([`super::Diff::timing_refused`]). In JSON, its
/// words ([`TimingRefusal::words`]) as Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimingRefusal {
    /// A and B are one run: its id.
    OneRun { run: String },
    /// The runs' GPUs or drivers differ (one of them at least): A's and B's of each that does.
    Machines {
        gpus: Option<Differ>,
        drivers: Option<Differ>,
    },
}

/// A value the two runs recorded differently: A's and B's (`None`: the run recorded none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Differ {
    pub a: Option<String>,
    pub b: Option<String>,
}

impl TimingRefusal {
    /// The refusal in words: its reason, and that the timings were not compared (and how to
    /// compare them anyway, where the machines differ).
    pub fn words(&self) -> Message {
        match self {
            TimingRefusal::OneRun { .. } => msg!("{}: timings not compared", self.reason()),
            TimingRefusal::Machines { .. } => msg!(
                "{}: timings not compared (pass --allow-different-gpu to compare anyway)",
                self.reason()
            ),
        }
    }

    /// Its reason alone, for a summary: "A and B are one run (`id`)", "GPUs differ (H100 vs
    /// H200)".
    pub fn reason(&self) -> Message {
        let (gpus, drivers) = match self {
            TimingRefusal::OneRun { run } => {
                return msg!("A and B are one run ({})", code(run));
            }
            TimingRefusal::Machines { gpus, drivers } => (gpus, drivers),
        };
        let side = |s: &Option<String>| quote(s.as_deref().unwrap_or("none"));
        let mut why = Vec::new();
        if let Some(Differ { a, b }) = gpus {
            why.push(msg!("GPUs differ ({} vs {})", side(a), side(b)));
        }
        if let Some(Differ { a, b }) = drivers {
            why.push(msg!("drivers differ ({} vs {})", side(a), side(b)));
        }
        Message::join(why, "; ")
    }
}

/// JSON carries a refusal as its words, in Markdown.
impl Serialize for TimingRefusal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.words().serialize(serializer)
    }
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

/// One diagnosis per program timing judged slower (a regression) or faster (an improvement).
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
        let words = word_change(p, rule, word, machine);
        let key = format!(
            "{}|{}|{}|{}",
            p.case.label(),
            p.implementation,
            p.cache,
            p.timing
        );
        out.push(Diagnosis {
            rule,
            title: words.title,
            level,
            confidence: if machine {
                Confidence::Low
            } else {
                Confidence::High
            },
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
                summary: words.summary,
                excerpt: Vec::new(),
            }],
            spans: Vec::new(),
            notes: vec![words.note],
            help: vec![words.help],
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

/// A timing change's words: what [`word_change`] gives.
struct ChangeWords {
    title: Message,
    summary: Message,
    note: Message,
    help: Message,
}

/// The title, evidence summary, note and help of a timing that moved beyond the noise (`word`:
/// "slower" or "faster"; `machine`: the baseline moved the same way).
fn word_change(p: &PerfChange, rule: RuleId, word: &str, machine: bool) -> ChangeWords {
    let title = msg!(
        "{} {} by {}% on {} ({} {})",
        quote(&p.implementation),
        word,
        fixed(p.change.abs() * 100.0, 1),
        p.case.label(),
        quote(&p.timing),
        p.cache.as_str()
    );
    let change = figure(format!("{:+.1}%", p.change * 100.0));
    let noise = figure(format!("{}%", fixed(p.noise * 100.0, 1)));
    let summary = msg!(
        "p50 {} µs -> {} µs ({}), {}",
        crate::text::sig3(p.a_p50_us),
        crate::text::sig3(p.b_p50_us),
        change.clone(),
        match &p.test {
            Some(t) => msg!(
                "{} (Mann-Whitney U, {} and {} samples)",
                crate::noise::p_clause(t.p),
                t.a_samples.to_string(),
                t.b_samples.to_string()
            ),
            None => msg!("noise {} (the larger of the two runs')", noise.clone()),
        }
    );
    let note = msg!(
        "The p50 moved by {}, {}.{}",
        change,
        match &p.test {
            Some(t) => msg!(
                "a significant change: the two runs' {} and {} samples differ with {} by a \
                 Mann-Whitney U test",
                t.a_samples.to_string(),
                t.b_samples.to_string(),
                crate::noise::p_clause(t.p)
            ),
            None => msg!("more than twice the measured noise ({})", noise),
        },
        if machine {
            " The baseline moved the same way on this case: the machine, not the kernel, may \
             have changed."
        } else {
            ""
        }
    );
    let help = if rule == RuleId::PerfRegression {
        msg!(
            "Compare the two runs' per-config resources (registers, spills, occupancy, HMMA \
             counts) for {}; re-run the bench stage to confirm.",
            quote(&p.implementation)
        )
    } else {
        msg!("Nothing to fix; keep the change.")
    };
    ChangeWords {
        title,
        summary,
        note,
        help,
    }
}
