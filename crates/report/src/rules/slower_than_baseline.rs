//! `slower-than-baseline`: a program whose own benchmark is slower than its baseline's benchmark
//! of the same name, beyond both sides' measured spread. Never clean: the program says itself
//! that it is slow. With a kernel cause in the same config (ncu's, or a bottleneck) the ratio is
//! told there instead; without a profile stage the help says that `profile:` would say why.

use serde_json::json;

use super::{Ctx, Role, Rule, RuleId};
use crate::diagnosis::{Confidence, Draft, EvidenceItem, GiveWay, Level};
use crate::run::StageKind;
use crate::message::{Message, code, figure, msg};
use crate::text::sig3;
use crate::timings::Slowdown;

pub(crate) const RULE: Rule = Rule::new(
    RuleId::SlowerThanBaseline,
    Role::Performance,
    "Slower than its baseline",
    "A program's own benchmark slower than its baseline's benchmark of the same \
        name beyond both sides' spread, where no kernel cause of its config tells \
        the ratio: the verdict is Slow, with or without a profile stage.",
    "crates/report/src/rules/slower_than_baseline.rs",
    run,
)
.slowing(false);

/// One warning per config whose slowest benchmark is slower than its baseline beyond noise.
pub fn run(ctx: &Ctx) -> Vec<Draft> {
    let j = ctx.joined;
    let timings = crate::timings::timings(j);
    let profiled = j.sources.iter().any(|s| s.kind == StageKind::Profile);
    let mut out = Vec::new();
    for (config, slowdown) in timings.slowest_per_config() {
        let Slowdown { row, slower } = slowdown;
        let Some(base) = row.baseline.as_ref() else {
            continue;
        };
        let statistic = row.statistic.unwrap_or("mean");
        let value = |t: &parsers::Timing| match statistic {
            "median" => t.median_us,
            _ => t.mean_us,
        };
        let times = value(&row.bench.timing).zip(value(&base.timing));
        let slow = Slow {
            slowdown,
            times: times.map(|(p, b)| (statistic, p, b)),
            spread: row.spread,
            profiled,
        };
        let mut d = Draft::new(
            RuleId::SlowerThanBaseline,
            Level::Warning,
            Message::new(),
        );
        d.config = config.map(str::to_string);
        // A profile's cause for this config says more than the comparison.
        d.gives_way.push(GiveWay::TimeAccounted(None));
        d.key = "baseline".into();
        d.confidence = Confidence::High;
        d.figures
            .insert("baseline_ratio".into(), json!(1.0 / slower));
        d.figures.insert("slowdown".into(), json!(slower));
        let summary = word_slow(&slow, &mut d);
        d.evidence.push(EvidenceItem {
            stage: "bench".into(),
            config: d.config.clone(),
            log: row.bench.log.clone(),
            summary,
            excerpt: Vec::new(),
        });
        out.push(d);
    }
    out
}

/// A benchmark slower than its baseline's: what [`word_slow`] words.
struct Slow<'t> {
    /// Its benchmark's row and how many times slower.
    slowdown: Slowdown<'t>,
    /// The statistic compared and its two values (µs): the program's, the baseline's.
    times: Option<(&'static str, f64, f64)>,
    /// The larger relative spread of the two sides.
    spread: Option<f64>,
    /// Whether the run has a profile stage.
    profiled: bool,
}

/// The draft's title, explanation and fix for a slow benchmark; returns its evidence's summary.
fn word_slow(s: &Slow, d: &mut Draft) -> Message {
    let Slowdown { row, slower } = s.slowdown;
    let name = code(&row.bench.timing.name);
    let times = s
        .times
        .map(|(statistic, p, b)| msg!(" ({} {} µs against {} µs)", statistic, sig3(p), sig3(b)))
        .unwrap_or_default();
    let spread = s
        .spread
        .map(|s| msg!(", beyond both sides' spread ({})", figure(format!("{:.0}%", s * 100.0))))
        .unwrap_or_default();
    d.title = s.slowdown.words();
    d.explanation = msg!(
        "The program's own benchmark {} runs {}x slower than the baseline's benchmark of the \
         same name{}{}.",
        name.clone(),
        sig3(slower),
        &times,
        spread
    );
    d.fix = if s.profiled {
        msg!(
            "Read the profile's causes for this config: the kernel they name is where the time \
             goes."
        )
    } else {
        msg!(
            "Add `profile:` to the pipeline: Nsight Compute's Speed Of Light and source page \
             would say why, at the lines that hold the time."
        )
    };
    msg!("{}: {}x the baseline's time{}", name, sig3(slower), times)
}

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    use crate::rules::testing::{Case, parsers_fixture, says};
    use crate::{diagnosis::Level, run::StageKind};

    /// A config `default` whose bench stage's log is `bench` and whose baseline's is `baseline`.
    fn bench(bench: &str, baseline: &str) -> Case {
        Case::new()
            .log(StageKind::Bench, "default", "sm_90", bench)
            .log(StageKind::Baseline, "default", "sm_90", baseline)
    }

    /// pytest-benchmark JSON of `programs/bench_pytest.py` run twice on the same CPU: its slow
    /// implementation (`pytest-benchmark/baseline.json`, `EXHIBIT_BENCH_IMPL=baseline`) as the
    /// program's bench, its fast one (`pytest-benchmark/fast.json`) as the baseline.
    /// `test_sort_reversed`: median 2,737 µs against 1.68 µs.
    #[test]
    fn fires_on_a_benchmark_far_slower_than_the_baselines_of_the_same_name() {
        let d = bench(
            parsers_fixture!("pytest-benchmark/baseline.json"),
            parsers_fixture!("pytest-benchmark/fast.json"),
        )
        .only(RuleId::SlowerThanBaseline);
        assert_eq!(d.level, Level::Warning);
        assert_eq!(d.config.as_deref(), Some("default"));
        assert_eq!(d.kernel, None);
        assert_eq!(d.location, None);
        says(&d.title, "test_sort_reversed");
        let slowdown = d.figures["slowdown"].as_f64().unwrap_or(0.0);
        assert!((1000.0..2000.0).contains(&slowdown), "{slowdown}");
    }

    /// The same two captures the other way round: the program's bench is the fast
    /// implementation, faster than its baseline on every benchmark.
    #[test]
    fn stays_silent_on_a_program_faster_than_its_baseline() {
        bench(
            parsers_fixture!("pytest-benchmark/fast.json"),
            parsers_fixture!("pytest-benchmark/baseline.json"),
        )
        .silent(RuleId::SlowerThanBaseline);
    }
}
