//! What a race trial's run produced, as the digest identical runs are compared by: its
//! `{out}` file, else the values and verdicts its stdout prints. Computed when the trials ran,
//! and again when a stored run is read, so that a report rendered later compares them the same
//! way.

use std::path::Path;

use report::experiment::{Experiment, ExperimentKind};
use report::{Stage, StageKind};

use crate::evidence::hash;

/// The digests the race trials compare: of the `{out}` file the run left, else of its stdout
/// without the lines that print a time or a rate (which differ between identical runs).
pub fn digest_outputs(experiments: &mut [Experiment], run_dir: &Path) {
    for e in experiments
        .iter_mut()
        .filter(|e| e.kind == ExperimentKind::Race)
    {
        for t in &mut e.trials {
            let Some(stage) = t.units.iter().find(|u| u.name == t.stage) else {
                continue;
            };
            t.output = output_digest(run_dir, stage, &t.config);
        }
    }
}

fn output_digest(run_dir: &Path, stage: &Stage, config: &str) -> Option<String> {
    if stage.kind != StageKind::Check && stage.kind != StageKind::Bench {
        return None;
    }
    let results = stage
        .outputs
        .keys()
        .find(|path| path.ends_with(crate::evidence::rundir::PROGRAM_OUT));
    if let Some(results) = results {
        let path = crate::evidence::rundir::inside(run_dir, results).ok()?;
        let bytes = crate::evidence::rundir::read_file(&path, 64 << 20).ok()?;
        return Some(match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(mut doc) => {
                untimed(&mut doc);
                hash::bytes(doc.to_string().as_bytes())
            }
            Err(_) => hash::bytes(&bytes),
        });
    }
    let stdout = stage.logs.iter().find(|l| l.path.ends_with("stdout.log"))?;
    let path = crate::evidence::rundir::inside(run_dir, &stdout.path).ok()?;
    let text = crate::evidence::rundir::read_file(&path, 64 << 20).ok()?;
    Some(hash::bytes(
        values(&String::from_utf8_lossy(&text), config).as_bytes(),
    ))
}

/// What of a program's text a race could change: the lines that carry a value (a digit) or a
/// verdict (pass, fail, error, mismatch, true, false), without the lines that print a time or a
/// rate, with addresses and the trial's own config name (in a path it prints) masked. A build
/// tool's chatter (`ninja: no work to do.`, printed by some runs of a JIT build and not others)
/// carries neither and is left out.
fn values(text: &str, config: &str) -> String {
    static TIMING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\d\s*(ns|us|µs|ms|s|sec|seconds|gb/s|tb/s|gflops|tflops|flop/s|it/s)\b",
        )
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
    });
    static ADDRESS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"0x[0-9a-fA-F]+")
            .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
    });
    static VERDICT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(pass|passed|fail|failed|error|mismatch|wrong|true|false)\b")
            .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
    });
    text.lines()
        .filter(|l| !TIMING.is_match(l))
        .filter(|l| l.chars().any(|c| c.is_ascii_digit()) || VERDICT.is_match(l))
        .map(|l| {
            ADDRESS
                .replace_all(&l.replace(config, "{config}"), "0x?")
                .into_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A results document without its timings: the fields whose name says a time or a rate
/// (`p50_us`, `time_ms`, `elapsed`, `gflops`, ...), at any depth.
fn untimed(doc: &mut serde_json::Value) {
    const TIMED: [&str; 12] = [
        "_us",
        "_ms",
        "_ns",
        "_s",
        "time",
        "elapsed",
        "duration",
        "seconds",
        "flops",
        "gbps",
        "bandwidth",
        "throughput",
    ];
    match doc {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| {
                let key = key.to_ascii_lowercase();
                !TIMED
                    .iter()
                    .any(|t| key.ends_with(t) || (t.len() > 3 && key.contains(t)))
            });
            map.values_mut().for_each(untimed);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(untimed),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{untimed, values};

    /// Two results documents that differ only in their timings are the same output.
    #[test]
    fn a_results_documents_timings_are_not_compared() {
        let mut a: serde_json::Value = serde_json::json!(
            {"results": [{"name": "attn", "passed": true, "max_abs_err": 0.5, "p50_us": 12.0, "time_ms": 3.0}]}
        );
        let mut b: serde_json::Value = serde_json::json!(
            {"results": [{"name": "attn", "passed": true, "max_abs_err": 0.5, "p50_us": 13.5, "time_ms": 2.0}]}
        );
        untimed(&mut a);
        untimed(&mut b);
        assert_eq!(a, b);
        let mut c: serde_json::Value = serde_json::json!(
            {"results": [{"name": "attn", "passed": true, "max_abs_err": 0.25, "p50_us": 12.0}]}
        );
        untimed(&mut c);
        assert_ne!(a, c);
    }

    /// A JIT build's chatter is left out, a value a race changes is kept (the oracle's output in
    /// field corpus `seed-7dc44ff-race-runs`: some runs print `ninja: no work to do.`).
    #[test]
    fn only_values_and_verdicts_are_compared() {
        let a = "Build flags:\n  -O3\nninja: no work to do.\n[V3 DEBUG] Grid=(256,1,1)\nsum 42\n";
        let b = "Build flags:\n  -O3\n[V3 DEBUG] Grid=(256,1,1)\nsum 42\n";
        assert_eq!(values(a, "x@run-1"), values(b, "x@run-2"));
        let c = "Build flags:\n  -O3\n[V3 DEBUG] Grid=(256,1,1)\nsum 41\n";
        assert_ne!(values(b, "x@run-2"), values(c, "x@run-3"));
        assert_ne!(values("PASS\n", "x"), values("FAIL\n", "x"));
        assert_eq!(
            values(
                "out at out/x@run-1/r.json 0x7f00\ntime: 1.25 ms\n",
                "x@run-1"
            ),
            values(
                "out at out/x@run-2/r.json 0x7f88\ntime: 1.31 ms\n",
                "x@run-2"
            )
        );
    }
}
