//! The baseline runs every case of its stage in one Python process (torch is imported once), and
//! the report still pairs its results with the cases. `kernel/baselines/sdpa.py` runs here on the
//! real python3 with a stand-in torch (`torch_standin/`, hand-written: its timings are made up).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{Project, code, stage, stages, stderr};

/// The repository root (this crate lives in `crates/runner`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The stand-in torch package.
fn standin_torch() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/torch_standin")
}

/// Runs the repository's `sdpa.py` on the real python3 with `python_path` first on its path.
fn sdpa(python_path: &Path, args: &[&str]) -> Output {
    sdpa_timed(python_path, args, 0.05)
}

/// As [`sdpa`], with the stand-in's events reading `elapsed_ms` for any span (a warm-up batch
/// of 10 calls: `elapsed_ms` * 100 us per call).
fn sdpa_timed(python_path: &Path, args: &[&str], elapsed_ms: f64) -> Output {
    Command::new("python3")
        .arg(repo().join("kernel/baselines/sdpa.py"))
        .args(args)
        .env("PYTHONPATH", python_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("TORCH_STANDIN_ELAPSED_MS", elapsed_ms.to_string())
        .output()
        .expect("start python3")
}

/// `--timing auto` takes the ways the harness's `--timing auto` would (graph replay under 50 us
/// per call, events above), and both within a factor of 2 of that threshold.
#[test]
fn auto_timing_takes_the_ways_the_harness_would() {
    for (per_call_us, expected) in [
        (5.0, vec!["graph"]),
        (30.0, vec!["events", "graph"]),
        (90.0, vec!["events", "graph"]),
        (500.0, vec!["events"]),
    ] {
        let out = sdpa_timed(
            &standin_torch(),
            &[
                "--problem",
                "2,8,512,64:f16",
                "--backend",
                "default",
                "--timing",
                "auto",
                "--warmup-ms",
                "0",
                "--json",
            ],
            per_call_us / 100.0,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        let ways: Vec<&str> = doc["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["bench"]["timing"].as_str().expect("a timing"))
            .collect();
        assert_eq!(ways, expected, "{per_call_us} us per call");
    }
}

#[test]
fn the_script_without_torch_exits_4_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    // Hides any torch installed here: the test means the same on every machine.
    std::fs::create_dir_all(dir.path().join("torch")).unwrap();
    std::fs::write(
        dir.path().join("torch/__init__.py"),
        "raise ImportError('hidden for this test')\n",
    )
    .unwrap();
    let out = sdpa(
        dir.path(),
        &[
            "--problem",
            "2,8,512,64:f16",
            "--problem",
            "4,16,4096,64:bf16:causal",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sdpa baseline skipped: no torch (hidden for this test)"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn the_script_refuses_a_malformed_problem_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["--problem", "2,8,512:f16"][..], "--problem '2,8,512'"),
        (&["--problem", "2,8,512,64:f32"], "dtype 'f32'"),
        (&["--problem", "2,8,512,64:f16:masked"], "not 'masked'"),
        (&["--problem", "2,8,512,64"], "expected B,H,S,D:dtype"),
        (
            &["--problem", "2,8,512,64:f16", "--shape", "2,8,512,64"],
            "not both",
        ),
        (&["--shape", "2,8,512,64"], "--shape and --dtype"),
        (&[], "name a problem"),
    ] {
        let out = sdpa(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// `(batch, heads, seq_len, head_dim, dtype, causal)` of a result.
fn problem_of(result: &Value) -> (u64, u64, u64, u64, String, bool) {
    let shape = &result["shape"];
    let n = |k: &str| shape[k].as_u64().expect("a dimension");
    (
        n("batch"),
        n("heads"),
        n("seq_len"),
        n("head_dim"),
        result["dtype"].as_str().expect("a dtype").to_string(),
        result["causal"].as_bool().expect("a mask flag"),
    )
}

#[test]
fn the_script_times_every_problem_in_one_document() {
    let out = sdpa(
        &standin_torch(),
        &[
            "--problem",
            "2,8,512,64:f16",
            "--problem",
            "1000,1,64,64:bf16:causal",
            "--problem",
            "1,2,200,64:bf16:causal",
            "--json",
        ],
    );
    // The stand-in cannot allocate a batch of 1000: that problem fails, the others count.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sdpa baseline failed on 1000,1,64,64 bf16 causal"),
        "{}",
        stderr(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["schema"], "exhibit.harness/1");
    assert_eq!(doc["producer"], "sdpa");
    let results = doc["results"].as_array().expect("results");
    let of = |p: (u64, u64, u64, u64, &str, bool)| -> Vec<&Value> {
        results
            .iter()
            .filter(|r| problem_of(r) == (p.0, p.1, p.2, p.3, p.4.to_string(), p.5))
            .collect()
    };
    for problem in [(2, 8, 512, 64, "f16", false), (1, 2, 200, 64, "bf16", true)] {
        let rs = of(problem);
        // Four backends, two timings each (cudnn is skipped by the stand-in, with its reason).
        assert_eq!(rs.len(), 8, "{problem:?}: {rs:#?}");
        let timed = rs.iter().filter(|r| r["bench"].is_object()).count();
        assert_eq!(timed, 6, "{problem:?}");
        // The stand-in's events read 0.05 ms for any span: 5 us per warm-up call, so a graph
        // replay holds 100 calls (about 500 us, as the harness sizes them), and the equal
        // samples converge at once.
        for r in rs.iter().filter(|r| r["bench"].is_object()) {
            let per_sample = if r["bench"]["timing"] == "graph" {
                100
            } else {
                1
            };
            assert_eq!(r["details"]["launches_per_sample"], per_sample, "{r:#}");
            assert_eq!(r["details"]["stop"], "converged", "{r:#}");
            let warmup = r["details"]["warmup_mean_us"].as_f64().expect("a number");
            assert!((warmup - 5.0).abs() < 1e-6, "{r:#}");
            assert_eq!(r["bench"]["samples"], 200, "{r:#}");
        }
        assert!(rs.iter().any(|r| {
            r["skipped"]
                .as_str()
                .is_some_and(|s| s.contains("no cuDNN attention"))
        }));
    }
    let failed = of((1000, 1, 64, 64, "bf16", true));
    assert_eq!(failed.len(), 4, "{failed:#?}");
    for r in failed {
        assert!(
            r["error"]
                .as_str()
                .is_some_and(|e| e.contains("out of memory"))
        );
        assert_eq!(r["launched"], false);
    }
    assert_eq!(results.len(), 20);
}

#[test]
fn the_one_shape_form_still_works() {
    let out = sdpa(
        &standin_torch(),
        &[
            "--shape",
            "1,2,200,64",
            "--dtype",
            "bf16",
            "--causal",
            "--backend",
            "flash",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(problem_of(r), (1, 2, 200, 64, "bf16".to_string(), true));
    }
}

/// A stand-in python3 that writes its arguments to `python3.calls`, then runs the real python3
/// with the stand-in torch of `site/` first on its path.
const PYTHON: &str = r#"#!/bin/sh
# Stand-in for python3 in tests: logs its arguments, then runs the real python3 on a stand-in torch.
root="$(cd "$(dirname "$0")/.." && pwd)"
echo "$*" >> "$root/bin/python3.calls"
PYTHONPATH="$root/site" exec python3 "$@"
"#;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

fn pipeline(cases: &str) -> String {
    format!(
        r#"kernel:
  source: kernel/attention.cu
  entry_points: {{ f16: attention_fwd_f16, bf16: attention_fwd_bf16 }}
toolchain:
  cuda: 13.0.88
  provision: false
  wheels: {{ nvidia-cuda-nvcc: 13.0.88 }}
  tools: {{ nvcc: bin/nvcc, cuobjdump: bin/cuobjdump, python3: bin/python3 }}
matrix:
  arch: [sm_90]
  configs:
    small: {{ HEAD_DIM: 64, BLOCK_M: 64 }}
cases:
  seed: {{ shape: "2,8,512,64", dtypes: [f16, bf16], causal: [false] }}
  tail: {{ shape: "1,2,200,64", dtypes: [bf16], causal: [true] }}
grace: 1s
stages:
  compile: {{ timeout: 30s }}
  baseline:
    timeout: 60s
    needs: {{ gpu: false, tools: [python3, torch] }}
    command: [python3, kernel/baselines/sdpa.py]
    args: [--time-cap, "0.1"]
    cases: [{cases}]
  report: {{ timeout: 30s }}
"#
    )
}

/// The baseline script's calls, one line of arguments each.
fn baseline_calls(project: &Project) -> Vec<String> {
    std::fs::read_to_string(project.root.join("bin/python3.calls"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("kernel/baselines/sdpa.py"))
        .map(String::from)
        .collect()
}

#[test]
fn the_pipeline_runs_the_baseline_once_for_every_case() {
    let project = Project::new();
    project.tool("python3", PYTHON);
    copy_dir(&standin_torch(), &project.root.join("site"));
    project.write(
        "kernel/baselines/sdpa.py",
        &std::fs::read_to_string(repo().join("kernel/baselines/sdpa.py")).unwrap(),
    );
    project.pipeline(&pipeline("seed, tail"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    assert_eq!(
        baseline_calls(&project),
        [
            "kernel/baselines/sdpa.py --problem 2,8,512,64:f16 --problem 2,8,512,64:bf16 \
          --problem 1,2,200,64:bf16:causal --json --time-cap 0.1"
        ]
    );
    let manifest = project.manifest();
    let first_id = manifest["id"].as_str().unwrap().to_string();
    let baseline = stage(&manifest, "baseline");
    assert_eq!(baseline["status"], "passed", "{baseline:#}");
    let names: Vec<&str> = baseline["unit"]["cases"]
        .as_array()
        .expect("the unit names its cases")
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["seed", "seed", "tail"]);
    let logs: Vec<&str> = baseline["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap())
        .collect();
    assert!(logs.contains(&"baseline/all/stdout.log"), "{logs:?}");

    // The report pairs the one document's results with each case.
    let run = project.runs().pop().unwrap();
    let report = Command::new(crate::util::BIN)
        .args(["report", "--format", "json"])
        .arg(&run)
        .current_dir(&project.root)
        .output()
        .expect("start the runner");
    assert_eq!(code(&report), 0, "{}", stderr(&report));
    let json: Value = serde_json::from_slice(&report.stdout).expect("JSON");
    let rows = json["bench"].as_array().expect("bench rows");
    for (seq_len, dtype, causal) in [
        (512, "f16", false),
        (512, "bf16", false),
        (200, "bf16", true),
    ] {
        let of_case: Vec<&Value> = rows
            .iter()
            .filter(|r| {
                r["case"]["seq_len"] == seq_len
                    && r["case"]["dtype"] == dtype
                    && r["case"]["causal"] == causal
            })
            .collect();
        assert_eq!(of_case.len(), 6, "{seq_len} {dtype} {causal}: {rows:#?}");
        assert!(of_case.iter().all(|r| r["baseline"] == true));
    }
    let markdown = std::fs::read_to_string(project.root.join("reports/latest.md")).unwrap();
    assert!(markdown.contains("sdpa:flash"), "{markdown}");

    // Unchanged: served from the cache, no Python started for it.
    let again = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(baseline_calls(&project).len(), 1);
    assert_eq!(
        stage(&project.manifest(), "baseline")["cached_from"],
        first_id.as_str()
    );

    // The key covers every case: another set of cases runs again.
    project.pipeline(&pipeline("seed"));
    let fewer = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&fewer), 0, "{}", stderr(&fewer));
    let calls = baseline_calls(&project);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[1],
        "kernel/baselines/sdpa.py --problem 2,8,512,64:f16 --problem 2,8,512,64:bf16 --json \
         --time-cap 0.1"
    );
    assert_eq!(stages(&project.manifest(), "baseline").len(), 1);
}

/// A stored run's JSON report, through `exhibit report`.
fn report_json(run: &Path) -> Value {
    let out = Command::new(crate::util::BIN)
        .args(["report", "--format", "json"])
        .arg(run)
        .output()
        .expect("run exhibit report");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// The root causes (warnings and errors) of a JSON report, and its notes, as `rule: title`.
fn causes_and_notes(json: &Value) -> (Vec<String>, Vec<String>) {
    let line = |d: &Value| format!("{}: {}", d["rule"].as_str().unwrap_or(""), d["title"]);
    let all = json["diagnoses"].as_array().cloned().unwrap_or_default();
    let (notes, causes): (Vec<Value>, Vec<Value>) =
        all.into_iter().partition(|d| d["level"] == "note");
    (
        causes.iter().map(line).collect(),
        notes.iter().map(line).collect(),
    )
}

/// `examples/baseline-contrast/walk.yaml` on an H200: one warp sums 32 columns with lane =
/// column, beside the same sums with lane = row. Both launch one block for 132 SMs, so "too
/// few blocks" is no reason the program is slower: it is a note that says the baseline shares
/// it, and the cause is the loads' coalescing, both figures given, at the line that loads.
#[test]
fn a_cause_the_baseline_shares_gives_way_to_what_separates_the_two() {
    let run =
        repo().join("examples/baseline-contrast/reference/artifacts/20261129T004548Z-f71a10ca");
    let json = report_json(&run);
    assert_eq!(json["verdict"]["kind"], "slow", "{:#}", json["verdict"]);
    let (causes, notes) = causes_and_notes(&json);
    let top = causes.first().cloned().unwrap_or_default();
    assert!(
        top.starts_with("slow-kernel: ") && top.contains("Uncoalesced global loads: 8.0"),
        "{causes:#?}"
    );
    assert!(top.contains("(the baseline: 1.0)"), "{top}");
    assert_eq!(
        json["diagnoses"][0]["location"]["line"], 34,
        "{:#}",
        json["diagnoses"][0]
    );
    assert!(
        !causes.iter().any(|c| c.contains("Too few blocks")),
        "{causes:#?}"
    );
    let few = json["diagnoses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["title"].to_string().contains("Too few blocks"))
        .unwrap_or_else(|| panic!("no too-few-blocks note in {notes:#?}"));
    assert!(
        few["notes"].to_string().contains("shares it"),
        "{:#}",
        few["notes"]
    );
}

/// `examples/baseline-contrast/sum.yaml` on an H200: every thread adds to one address with
/// `atomicAdd`, beside a block-level tree with one atomic per block, 858x faster. The cause is
/// the atomics' contention at the user's line (not latency, which the bottleneck rule read
/// before the comparison), with the reduce-in-the-block fix, and it takes the time the profile
/// measured there.
#[test]
fn contended_atomics_are_named_beside_a_block_reduction() {
    let run =
        repo().join("examples/baseline-contrast/reference/artifacts/20261129T004608Z-4fbe9146");
    let json = report_json(&run);
    let (causes, _) = causes_and_notes(&json);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    let top = &json["diagnoses"][0];
    assert!(
        top["title"].to_string().contains("Atomic contention"),
        "{top:#}"
    );
    assert_eq!(top["location"]["file"], "contrast.cu", "{top:#}");
    assert_eq!(top["location"]["line"], 50, "{top:#}");
    assert!(
        top["help"].to_string().contains("one atomic per block"),
        "{top:#}"
    );
    let cost = top["figures"]["estimated_speedup"].as_f64().unwrap_or(0.0);
    assert!(cost >= 50.0, "{top:#}");
    assert!(
        !causes.iter().any(|c| c.contains("Latency-bound")),
        "{causes:#?}"
    );
}

/// The same run, figure by figure: the JSON report holds each figure of the two kernels (the
/// atomics per thread apart by thousands, DRAM and L2 throughput, the instructions of each
/// launch), and the Markdown report tables them with what separates the two.
#[test]
fn the_two_kernels_are_set_side_by_side_figure_by_figure() {
    let run =
        repo().join("examples/baseline-contrast/reference/artifacts/20261129T004608Z-4fbe9146");
    let json = report_json(&run);
    let beside = &json["beside_baseline"];
    assert_eq!(beside["kernel"], "sum_atomic", "{beside:#}");
    assert_eq!(beside["baseline_kernel"], "sum_tree", "{beside:#}");
    let figure = |name: &str| {
        beside["contrasts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["measure"] == name)
            .unwrap_or_else(|| panic!("no {name} in {beside:#}"))
            .clone()
    };
    let atomics = figure("atomics");
    let (ours, theirs) = (
        atomics["ours"].as_f64().unwrap_or(0.0),
        atomics["theirs"].as_f64().unwrap_or(1.0),
    );
    assert!(ours > 1000.0 * theirs, "{atomics:#}");
    for name in [
        "dram_throughput",
        "l2_throughput",
        "instructions",
        "occupancy",
    ] {
        assert!(figure(name)["ours"].as_f64().is_some(), "{name}");
    }
    let out = Command::new(crate::util::BIN)
        .arg("report")
        .arg(&run)
        .output()
        .expect("run exhibit report");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("figure by figure"), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| Global atomics per thread |"))
        .unwrap_or_else(|| panic!("no atomics row in {md}"));
    assert!(row.contains("separates the two"), "{row}");
    let dram = md
        .lines()
        .find(|l| l.starts_with("| DRAM throughput"))
        .unwrap_or_else(|| panic!("no DRAM row in {md}"));
    assert!(
        dram.contains("lower") && !dram.contains("separates"),
        "{dram}"
    );
    let shared = md
        .lines()
        .find(|l| l.starts_with("| Waves of blocks per SM |"))
        .unwrap_or_else(|| panic!("no waves row in {md}"));
    assert!(shared.ends_with("| about the same |"), "{shared}");
}

/// The idle-warps reading of a stored run: its one cause, the words its title starts with, its
/// place, and the figures it stands on.
fn idle_warps(run: &str) -> Value {
    let run = repo()
        .join("examples/baseline-contrast/reference/artifacts")
        .join(run);
    let json = report_json(&run);
    assert_eq!(json["verdict"]["kind"], "slow", "{:#}", json["verdict"]);
    let (causes, _) = causes_and_notes(&json);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    let top = json["diagnoses"][0].clone();
    assert!(top["title"].to_string().contains("Idle warps"), "{top:#}");
    assert!(
        top["figures"]["wait_barrier"].as_f64().unwrap_or(0.0) >= 0.5,
        "{top:#}"
    );
    top
}

/// `examples/baseline-contrast/serial.yaml` on an H200: thread 0 adds 2,048 floats while the
/// block's other seven warps wait at the barrier, 3.89x slower than warp 0 adding them 32 at a
/// time. The cause is that one thread's loop, at its line, with one lane per instruction.
#[test]
fn a_block_waiting_on_one_threads_loop_is_named_at_the_loop() {
    let top = idle_warps("20261129T085226Z-2223c7ad");
    assert!(top["title"].to_string().contains("one thread"), "{top:#}");
    assert_eq!(top["location"]["file"], "contrast.cu", "{top:#}");
    assert_eq!(top["location"]["line"], 120, "{top:#}");
    assert_eq!(top["figures"]["lanes"], 1.0, "{top:#}");
    assert!(top["help"].to_string().contains("whole warp"), "{top:#}");
    // Its profile stage gives the problem's size (`elements: 2162688`, the floats added):
    // warp instructions per element stand beside the baseline's.
    let json = report_json(
        &repo()
            .join("examples/baseline-contrast/reference/artifacts")
            .join("20261129T085226Z-2223c7ad"),
    );
    let per_element = json["beside_baseline"]["contrasts"]
        .as_array()
        .expect("contrasts")
        .iter()
        .find(|c| c["measure"] == "instructions_per_element")
        .cloned()
        .expect("instructions per element");
    let (ours, theirs) = (
        per_element["ours"].as_f64().unwrap(),
        per_element["theirs"].as_f64().unwrap(),
    );
    assert!(
        (2.2..2.3).contains(&ours) && (0.15..0.2).contains(&theirs),
        "{per_element}"
    );
}

/// `examples/baseline-contrast/rows.yaml` on an H200: one row per thread for 32 rows in blocks
/// of 256 threads, one block per SM: warp 0 works, seven wait. 3.18x slower than every warp
/// working; the cause is the few warps' work, at the row loop, with its lanes full.
#[test]
fn a_block_waiting_on_a_few_warps_is_named_at_their_work() {
    let top = idle_warps("20261129T032334Z-a16067ca");
    assert!(top["title"].to_string().contains("a few warps"), "{top:#}");
    assert_eq!(top["location"]["line"], 90, "{top:#}");
    assert!(
        top.get("figures").and_then(|f| f.get("lanes")).is_none(),
        "{top:#}"
    );
    assert!(
        top["help"].to_string().contains("every warp of the block"),
        "{top:#}"
    );
}
