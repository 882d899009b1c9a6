//! `target:` pipelines: a user's own build and program, through the CLI. The programs and tools
//! here are shell scripts standing in for real ones (their output is hand-written and says so);
//! `the_cuda_cpp_example_builds_with_the_pinned_compiler` builds the real example with the
//! pinned, provisioned nvcc.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{BIN, Project, code, rendered, stage, stages, stderr};

/// The repository root (the examples live there).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A stand-in compute-sanitizer: prints its arguments and the allocator switch it was given,
/// runs the program after `--`-less options, and prints a clean summary.
const SANITIZER: &str = r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests; its output is hand-written, not real tool output.
if [ "$1" = "--version" ]; then echo "Compute Sanitizer 0.0 (stand-in)"; exit 0; fi
echo "========= COMPUTE-SANITIZER"
echo "stand-in argv: $*"
echo "stand-in env: PYTORCH_NO_CUDA_MEMORY_CACHING=${PYTORCH_NO_CUDA_MEMORY_CACHING:-unset}"
echo "========= ERROR SUMMARY: 0 errors"
"#;

/// A program that fails once it is asked for 9 launches or more, as a launch counter that
/// outgrows its table would.
const RING: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
n=${EXHIBIT_LAUNCHES:-1}
if [ "$n" -ge 9 ]; then
  echo "launch 9 of $n failed: CUDA error: an illegal memory access was encountered" >&2
  exit 1
fi
echo "all $n launches passed"
"#;

fn target_pipeline(target: &str, stages_yaml: &str) -> String {
    format!(
        r#"target:
{target}
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
  tools:
    nvcc: bin/nvcc
    cuobjdump: bin/cuobjdump
    compute-sanitizer: bin/compute-sanitizer
matrix:
  arch: [sm_90]
  configs:
    plain: {{}}
grace: 1s
stages:
{stages_yaml}
  report:
    timeout: 30s
"#
    )
}

fn project(target: &str, stages_yaml: &str) -> Project {
    let project = Project::new();
    project.tool("compute-sanitizer", SANITIZER);
    project.tool("ring", RING);
    project.pipeline(&target_pipeline(target, stages_yaml));
    project
}

/// The error-level diagnoses of a stored run's JSON report.
fn error_diagnoses(run: &Path) -> Vec<Value> {
    let json: Value = serde_json::from_str(&rendered(run, "json")).expect("json");
    json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .cloned()
        .collect()
}

#[test]
fn the_examples_validate() {
    for example in ["examples/cuda-cpp", "examples/torch-extension"] {
        let out = std::process::Command::new(BIN)
            .args(["check", &format!("{example}/pipeline.yaml")])
            .current_dir(repo())
            .output()
            .expect("start the runner");
        assert_eq!(code(&out), 0, "{example}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let configs = if example.ends_with("cuda-cpp") {
            "4 configs"
        } else {
            "3 configs"
        };
        assert!(text.contains(configs), "{example}: {text}");
    }
}

#[test]
fn stress_finds_the_smallest_failing_launch_count_then_runs_memcheck_there() {
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  stress:\n    needs: { gpu: false }\n    timeout: 30s\n    launches: 32",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let stress = stage(&manifest, "stress");
    assert_eq!(stress["status"], "findings");
    let search = &stress["launch_search"];
    assert_eq!(search["clean_at"], 8, "{search:#}");
    assert_eq!(search["fails_at"], 9, "{search:#}");
    let tried: Vec<u64> = search["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["launches"].as_u64().expect("a count"))
        .collect();
    assert_eq!(tried, [32, 1, 16, 8, 12, 10, 9]);
    let reason = stress["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("clean at 8 launches, fails at 9")
            && reason.contains("an illegal memory access"),
        "{reason}"
    );
    // memcheck ran the program at the failing count, wrapped as every sanitizer stage is.
    let run = project.runs().pop().expect("a run");
    let memcheck = std::fs::read_to_string(run.join("stress/plain/sm_90/memcheck-9.log"))
        .expect("memcheck's log at the failing count");
    assert!(
        memcheck.contains("--tool memcheck --target-processes all --error-exitcode 86"),
        "{memcheck}"
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(
        report.contains("Fails only after repeated launches: clean at 8 launches, fails at 9"),
        "{report}"
    );
}

/// With GPU shares to spare (`--gpu-jobs 8`: the search holds 4), the search probes four
/// counts at once: three rounds instead of seven, the same answer.
#[test]
fn a_stress_search_probes_several_counts_at_once() {
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  stress:\n    needs: { gpu: false }\n    timeout: 30s\n    launches: 32",
    );
    let out = project.run(&["pipeline.yaml", "--gpu-jobs", "8"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let search = &stage(&manifest, "stress")["launch_search"];
    assert_eq!(search["clean_at"], 8, "{search:#}");
    assert_eq!(search["fails_at"], 9, "{search:#}");
    let tried: Vec<u64> = search["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["launches"].as_u64().expect("a count"))
        .collect();
    assert_eq!(tried, [32, 1, 8, 16, 24, 9, 11, 12, 14]);
    let run = project.runs().pop().expect("a run");
    for n in tried {
        assert!(
            run.join(format!("stress/plain/sm_90/launches-{n}.stderr.log"))
                .is_file(),
            "{n}"
        );
    }
}

#[test]
fn a_python_program_under_a_sanitizer_runs_without_the_caching_allocator() {
    let project = project(
        "  program:\n    command: [python3, oracle.py, --build-dir, \"{build_dir}\"]",
        "  memcheck:\n    needs: { gpu: false, tools: [compute-sanitizer] }\n    timeout: 30s",
    );
    project.write("oracle.py", "print('stand-in oracle')\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let memcheck = stage(&manifest, "memcheck");
    assert_eq!(memcheck["status"], "passed", "{memcheck:#}");
    let unit = &memcheck["unit"];
    assert_eq!(unit["target"], "program");
    assert_eq!(unit["wrapper"]["tool"], "compute_sanitizer");
    assert_eq!(unit["wrapper"]["check"], "memcheck");
    assert_eq!(unit["env"]["PYTORCH_NO_CUDA_MEMORY_CACHING"], "1");
    let command: Vec<&str> = memcheck["command"]
        .as_array()
        .expect("a command")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        command.get(..5),
        Some(
            &[
                "compute-sanitizer",
                "--tool",
                "memcheck",
                "--target-processes",
                "all"
            ][..]
        )
    );
    // The recorded command names the build directory (of a target without a build step)
    // relative to the repository.
    assert!(
        command
            .iter()
            .any(|w| w.starts_with("artifacts/") && w.ends_with("/build/plain/sm_90")),
        "{command:?}"
    );
    let run = project.runs().pop().expect("a run");
    let log = std::fs::read_to_string(run.join("memcheck/plain/sm_90/memcheck.log")).expect("log");
    assert!(log.contains("PYTORCH_NO_CUDA_MEMORY_CACHING=1"), "{log}");
}

#[test]
fn a_build_without_device_code_leaves_the_sass_stage_inconclusive() {
    let project = project(
        "  build:\n    command: [sh, build.sh, \"{build_dir}\"]\n  program:\n    command: [\"{build_dir}/app\"]",
        "  build:\n    timeout: 30s\n  sass:\n    timeout: 30s",
    );
    // The "build" copies a host-only ELF executable into the build directory.
    project.write("build.sh", "cp /bin/sh \"$1/app\"\necho built\n");
    // A stand-in cuobjdump (hand-written) that finds no device code, as the real one says of
    // a host-only file.
    project.tool(
        "cuobjdump",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo \"release 0.0 (stand-in)\"; exit 0; fi\n\
         echo \"cuobjdump info    : File '$2' does not contain device code\" >&2\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "build")["status"], "passed");
    let sass = stage(&manifest, "sass");
    assert_eq!(sass["status"], "inconclusive", "{sass:#}");
    let reason = sass["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("no build product holds device code (1 file looked at)"),
        "{reason}"
    );
}

#[test]
fn a_failed_build_skips_its_config_with_the_reason() {
    let project = project(
        "  build:\n    command: [sh, -c, \"echo 'make: *** [all] Error 2' >&2; exit 2\"]\n  program:\n    command: [bin/ring]",
        "  build:\n    timeout: 30s\n  check:\n    needs: { gpu: false }\n    timeout: 30s",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    let build = stage(&manifest, "build");
    assert_eq!(build["status"], "failed");
    assert!(
        build["reason"]
            .as_str()
            .is_some_and(|r| r.contains("exited with status 2") && r.contains("Error 2")),
        "{build:#}"
    );
    let check = stage(&manifest, "check");
    assert_eq!(check["status"], "skipped");
    assert_eq!(check["reason"], "the build for plain sm_90 failed");
    // The skipped unit still says what it would have run: the user's program.
    assert_eq!(check["unit"]["target"], "program", "{check:#}");
}

/// A unit of a user's program that does not run (skipped: no GPU; failed before it started: its
/// tool is missing) is recorded with the typed unit it would have run (the program, inside its
/// wrapper, with its environment), not as the built-in harness; so is every other unit, the
/// report's included.
#[test]
fn a_unit_of_a_program_that_does_not_run_records_the_program_as_its_unit() {
    let project = Project::new();
    project.pipeline(
        &target_pipeline(
            "  program:\n    command: [python3, oracle.py]",
            "  check:\n    needs: { gpu: false }\n    timeout: 30s\n  \
             memcheck:\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    timeout: 30s\n  \
             racecheck:\n    needs: { gpu: false, tools: [compute-sanitizer] }\n    timeout: 30s",
        )
        .replace(
            "compute-sanitizer: bin/compute-sanitizer",
            "compute-sanitizer: bin/no-such-compute-sanitizer",
        ),
    );
    project.write("oracle.py", "print('stand-in oracle')\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    assert_eq!(manifest["schema"], "exhibit.run/2");
    for (name, status, check) in [
        ("memcheck", "skipped", "memcheck"),
        ("racecheck", "failed", "racecheck"),
    ] {
        let record = stage(&manifest, name);
        assert_eq!(record["status"], status, "{record:#}");
        let unit = &record["unit"];
        assert_eq!(unit["target"], "program", "{record:#}");
        assert_eq!(unit["wrapper"]["tool"], "compute_sanitizer");
        assert_eq!(unit["wrapper"]["check"], check);
        assert_eq!(unit["arch"], "sm_90");
        assert!(
            unit.get("kernel").is_none() && unit.get("mode").is_none(),
            "{unit:#}"
        );
    }
    // The skipped unit's planned command gives its record the program's environment too.
    assert_eq!(
        stage(&manifest, "memcheck")["unit"]["env"]["PYTORCH_NO_CUDA_MEMORY_CACHING"],
        "1"
    );
    assert_eq!(stage(&manifest, "check")["unit"]["target"], "program");
    assert_eq!(stage(&manifest, "report")["unit"]["target"], "tool");
    for record in manifest["stages"].as_array().expect("stages") {
        assert!(record["unit"]["target"].is_string(), "{record:#}");
    }
}

#[test]
fn an_unknown_placeholder_is_refused_at_check() {
    let project = project(
        "  program:\n    command: [bin/ring, \"{lanches}\"]",
        "  check:\n    timeout: 30s",
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("target.program.command: unknown placeholder `{lanches}`"),
        "{err}"
    );
}

/// Builds `examples/cuda-cpp` for real with the pipeline's pinned nvcc (provisioned from PyPI
/// when this machine has none): its report lists each kernel's registers, and where there is
/// no GPU the GPU stages are skipped with the reason.
#[test]
fn the_cuda_cpp_example_builds_with_the_pinned_compiler() {
    let _provisioning = crate::util::PROVISIONING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let example = repo().join("examples/cuda-cpp");
    for file in [
        "pipeline.yaml",
        "src/kernels.cu",
        "src/kernels.cuh",
        "tests/test_kernels.cu",
    ] {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("create directories");
        std::fs::copy(example.join(file), &to).expect("copy the example");
    }
    let out = std::process::Command::new(BIN)
        .args([
            "pipeline.yaml",
            "--only",
            "build,sass,memcheck,check,stress,report",
        ])
        .current_dir(dir.path())
        .output()
        .expect("start the runner");
    let manifest: Value = {
        let run = std::fs::read_dir(dir.path().join("artifacts"))
            .expect("a run directory")
            .flatten()
            .next()
            .expect("a run");
        serde_json::from_str(
            &std::fs::read_to_string(run.path().join("manifest.json")).expect("a manifest"),
        )
        .expect("JSON")
    };
    for build in stages(&manifest, "build") {
        assert_eq!(build["status"], "passed", "{build:#}\n{}", stderr(&out));
    }
    for sass in stages(&manifest, "sass") {
        assert_eq!(sass["status"], "passed", "{sass:#}");
    }
    for unit in manifest["stages"].as_array().expect("stages") {
        let status = unit["status"].as_str().unwrap_or_default();
        assert!(
            status == "passed"
                || status == "findings"
                || status == "skipped" && unit["reason"].is_string(),
            "{unit:#}"
        );
    }
    let report = std::fs::read_to_string(dir.path().join("reports/latest.md")).expect("report");
    for kernel in ["block_sum_kernel", "transpose_kernel", "stencil_1d_kernel"] {
        let row = report
            .lines()
            .find(|l| l.starts_with("| clean | sm_90 | `") && l.contains(kernel))
            .unwrap_or_else(|| panic!("no row for {kernel} in\n{report}"));
        let registers: u32 = row
            .split('|')
            .nth(4)
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or_else(|| panic!("no register count in {row}"));
        assert!(registers > 0, "{row}");
    }
}

/// Whether a stage's record lists a log read as `format`.
fn has_log_of(stage: &Value, format: &str) -> bool {
    stage["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .any(|l| l["format"] == format)
}

/// A program's own benchmark output (real pytest-benchmark JSON from the parsers' fixtures,
/// written to `{out}` by a stand-in script) is read as timings and paired with the baseline's
/// of the same name.
#[test]
fn bench_and_baseline_read_pytest_benchmark_json_from_out() {
    let fixtures = repo().join("crates/parsers/fixtures/pytest-benchmark");
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  bench:\n    needs: { gpu: false }\n    timeout: 30s\n    command: [sh, emit.sh, fast.json, \"{out}\"]\n  baseline:\n    needs: { gpu: false }\n    timeout: 30s\n    command: [sh, emit.sh, baseline.json, \"{out}\"]",
    );
    for name in ["fast.json", "baseline.json"] {
        let text = std::fs::read_to_string(fixtures.join(name)).expect("a fixture");
        project.write(name, &text);
    }
    project.write("emit.sh", "cp \"$1\" \"$2\"\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    for name in ["bench", "baseline"] {
        let s = stage(&manifest, name);
        assert_eq!(s["status"], "passed", "{s:#}");
        assert!(has_log_of(s, "pytest-benchmark"), "{s:#}");
    }
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("## Timings"), "{report}");
    assert!(report.contains("test_sum_squares"), "{report}");
}

/// nvbench's JSON in `{out}` (a real capture from the parsers' fixtures) is read as timings of
/// nvbench's cold GPU time, shown with nvbench's noise; two runs of it compare in `exhibit diff`.
#[test]
fn bench_reads_nvbench_json_from_out() {
    let fixture = repo().join("crates/parsers/fixtures/nvbench/scale.json");
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  bench:\n    needs: { gpu: false }\n    timeout: 30s\n    command: [sh, emit.sh, scale.json, \"{out}\"]",
    );
    project.write(
        "scale.json",
        &std::fs::read_to_string(fixture).expect("the fixture"),
    );
    project.write("emit.sh", "cp \"$1\" \"$2\"\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let bench = stage(&project.manifest(), "bench").clone();
    assert_eq!(bench["status"], "passed", "{bench:#}");
    assert!(has_log_of(&bench, "nvbench"), "{bench:#}");
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    let row = report
        .lines()
        .find(|l| l.contains("bench_scale_strided T=F32 Stride=33"))
        .unwrap_or_else(|| panic!("no row for the strided state in\n{report}"));
    assert!(row.contains("nvbench (cold GPU time)"), "{row}");
    assert!(row.contains("1196 samples"), "{row}");
    assert!(row.contains("noise 0.13%"), "{row}");
    // A second run, forced: the same timings, compared by name and judged the same.
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = project.runs();
    let [.., a, b] = runs.as_slice() else {
        panic!("two runs")
    };
    let diff = std::process::Command::new(BIN)
        .args(["diff", "--format", "json"])
        .arg(a)
        .arg(b)
        .output()
        .expect("diff");
    let json: Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    let perf = json["diff"]["perf"].as_array().expect("perf");
    assert_eq!(perf.len(), 7, "{json:#}");
    assert!(perf.iter().all(|p| p["judgement"] == "same"), "{json:#}");
}

/// SGEMM_CUDA's timing line (its 4096 line is real output of siboehm/SGEMM_CUDA on an H100,
/// verbatim; the other times are hand-written in its shape), read with the pattern from the
/// pipeline documentation.
const SGEMM_PATTERN: &str = r"'Average elapsed time: \((?P<value>[0-9.]+)\) (?P<unit>s), performance: .* size: \((?P<label>\d+)\)'";

/// A pipeline whose bench prints each of `times` (seconds) for size 4096.
fn timed_pipeline(times: &[f64]) -> String {
    let bench: String = times
        .iter()
        .map(|t| {
            format!(
                "        echo 'Average elapsed time: ({t:.6}) s, performance: (1.0) GFLOPS. size: (4096).'\n"
            )
        })
        .collect();
    target_pipeline(
        "  program:\n    command: [bin/ring]",
        &format!(
            "  bench:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    pattern: {SGEMM_PATTERN}\n    command:\n      - sh\n      - -c\n      - |\n{bench}"
        ),
    )
}

/// `exhibit diff` of two runs that kept raw samples (eight matches of a text pattern each) tests
/// the change for significance: 4% slower with every sample apart is a regression (exit 1) with
/// its Mann-Whitney p-value; 4% slower in the median with the samples overlapping is not; and
/// under `--min-effect 5` neither is.
#[test]
fn diff_calls_a_regression_only_when_the_samples_say_it_is_significant() {
    let project = project("  program:\n    command: [bin/ring]", "");
    let spread = |p50: f64, step: f64| -> Vec<f64> {
        (0..8).map(|i| p50 + step * (f64::from(i) - 3.5)).collect()
    };
    let mut runs = Vec::new();
    for times in [
        spread(0.0100, 0.00001),
        spread(0.0104, 0.00001),
        spread(0.0104, 0.0004),
    ] {
        project.pipeline(&timed_pipeline(&times));
        let out = project.run(&["pipeline.yaml"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let run = project.runs().pop().expect("a run");
        runs.push(crate::util::root_relative(&run, &project.root));
    }
    let out = project.run(&["diff", &runs[0], &runs[1]]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    let row = text
        .lines()
        .find(|l| l.starts_with("| — | `") && l.contains("4096"))
        .unwrap_or_else(|| panic!("no timing row in\n{text}"));
    // 8 against 8 samples, every one of B above every one of A: p = 2 / C(16, 8).
    assert!(
        row.contains("+4.0%") && row.contains("< 0.001") && row.contains("slower"),
        "{row}"
    );
    assert!(text.contains("Mann-Whitney U, 8 and 8 samples"), "{text}");
    let out = project.run(&["diff", &runs[0], &runs[2]]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    assert!(text.contains("not significant: p = "), "{text}");
    let out = project.run(&["diff", &runs[0], &runs[1], "--min-effect", "5"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stdout));
}

/// Two back-to-back runs of one build of this repository's kernel on an H100, 256 harness samples
/// per timing (`docs/measurements/2026-11-27-h100-diff-samples/`): on the long causal case the
/// p50 moved by 1.8% with p < 0.001, inside the runs' own 3.6% spread. Significance from samples
/// that share a run's clocks is not a regression: the change is ambiguous, the diff exits 0.
#[test]
fn a_significant_shift_within_a_runs_own_spread_is_not_called() {
    let runs = repo().join("docs/measurements/2026-11-27-h100-diff-samples/runs");
    let out = std::process::Command::new(BIN)
        .arg("diff")
        .arg(runs.join("20261127T135141Z-13757e30"))
        .arg(runs.join("20261127T135147Z-701797ff"))
        .output()
        .expect("run the runner");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    let row = text
        .lines()
        .find(|l| l.contains("S=4096 D=64 bf16 causal"))
        .unwrap_or_else(|| panic!("no causal row in\n{text}"));
    assert!(
        row.contains("-1.8%")
            && row.contains("3.6%")
            && row.contains("ambiguous: significant (p \\< 0.001, Mann-Whitney U) but within"),
        "{row}"
    );
    assert!(text.contains("**Verdict:** ❔ Ambiguous: "), "{text}");
    assert!(!text.contains("🟢 faster"), "{text}");
}

/// A bench stage and a baseline stage whose programs (`sh -c 'echo ...'`) print their times as
/// text are read with their `pattern:`: one timing per size, three samples each, paired with the
/// baseline's by name; the program is twice as slow, so the run reads Slow. `exhibit report` on
/// the run directory reads the same timings again with the pattern the manifest recorded.
#[test]
fn timings_read_from_text_with_a_pattern_pair_with_the_baseline_and_read_slow() {
    let line = |time: &str, size: &str| {
        format!(
            "        echo 'Average elapsed time: ({time}) s, performance: (6342.3) GFLOPS. size: ({size}).'\n"
        )
    };
    let bench: String = [
        line("0.021662", "4096"),
        line("0.021700", "4096"),
        line("0.021650", "4096"),
        line("0.000103", "128"),
    ]
    .concat();
    let baseline: String = [
        line("0.010800", "4096"),
        line("0.010850", "4096"),
        line("0.010810", "4096"),
    ]
    .concat();
    let stages_yaml = format!(
        "  bench:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    pattern: {SGEMM_PATTERN}\n    command:\n      - sh\n      - -c\n      - |\n{bench}\
         \x20 baseline:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    pattern: {SGEMM_PATTERN}\n    command:\n      - sh\n      - -c\n      - |\n{baseline}"
    );
    let project = project("  program:\n    command: [bin/ring]", &stages_yaml);
    let out = project.run(&["pipeline.yaml"]);
    // Slow is a verdict about speed, not a finding: the run exits 0.
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    for name in ["bench", "baseline"] {
        let s = stage(&manifest, name);
        assert_eq!(s["status"], "passed", "{s:#}");
        assert!(has_log_of(s, "text-timings"), "{s:#}");
        let recorded = &s["unit"]["timing_pattern"];
        assert!(
            recorded["pattern"]
                .as_str()
                .is_some_and(|p| p.starts_with("Average elapsed time")),
            "{s:#}"
        );
    }
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    let row = report
        .lines()
        .find(|l| l.starts_with("| `4096` |"))
        .unwrap_or_else(|| panic!("no row for 4096 in\n{report}"));
    assert!(row.contains("text (`pattern:`)"), "{row}");
    assert!(row.contains("3 matches"), "{row}");
    // Medians in µs: 21662 against the baseline's 10810.
    assert!(row.contains("| 21662 |"), "{row}");
    assert!(row.contains("| 10810 |"), "{row}");
    assert!(row.contains("0.50×"), "{row}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("| `128` |") && l.contains("1 match |")),
        "{report}"
    );
    let verdict = report
        .lines()
        .find(|l| l.starts_with("**Verdict:**"))
        .unwrap_or_else(|| panic!("no verdict in\n{report}"));
    assert!(verdict.contains("Slow"), "{verdict}");
    assert!(
        report.contains("slower than its baseline by its own benchmark `4096`"),
        "{report}"
    );
    // The run directory alone renders the same timings.
    let run = project.runs().pop().expect("a run");
    let again = rendered(&run, "md");
    let table = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("## Timings"))
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
            .filter(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect()
    };
    assert!(!table(&report).is_empty(), "{report}");
    assert_eq!(table(&again), table(&report), "{again}");
}

/// A baseline runs what the build made: its `{build_dir}` (and `EXHIBIT_BUILD_DIR`) is the
/// config's build directory, where the build wrote a slow program and a fast one. The
/// baseline's unit is the config's, the two timings pair, and the run reads Slow.
#[test]
fn a_baseline_runs_the_program_its_config_built() {
    let timing = "    pattern: '^t: (?P<value>[0-9.]+) ms$'\n    unit: ms";
    let project = project(
        "  build:\n    command: [bin/make-two, \"{build_dir}\"]\n  program:\n    command: [\"{build_dir}/slow\"]",
        &format!(
            "  build:\n    timeout: 30s\n    needs: {{ tools: [] }}\n  bench:\n    needs: {{ gpu: false }}\n    timeout: 30s\n{timing}\n\
             \x20 baseline:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    command: [\"{{build_dir}}/fast\"]\n{timing}"
        ),
    );
    // The build: two programs in the directory it is given, one twice as slow as the other.
    project.tool(
        "make-two",
        "#!/bin/sh\nmkdir -p \"$1\"\nprintf '#!/bin/sh\\necho t: 2.0 ms\\n' > \"$1/slow\"\nprintf '#!/bin/sh\\necho t: 1.0 ms\\n' > \"$1/fast\"\nchmod +x \"$1/slow\" \"$1/fast\"\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let baseline = stage(&manifest, "baseline");
    assert_eq!(baseline["status"], "passed", "{baseline:#}");
    assert_eq!(baseline["config"], "plain", "{baseline:#}");
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(
        report.contains("Slow: 1 cause, top: 2.00x slower than its baseline"),
        "{report}"
    );
}

/// A slowdown the program measured beside its baseline stands when another stage could not
/// conclude (here the SASS stage, whose stand-in cuobjdump finds no device code in the build's
/// scripts): the verdict is Slow, and it says a stage could not conclude.
#[test]
fn a_measured_slowdown_stands_beside_a_stage_that_could_not_conclude() {
    let timing = "    pattern: '^t: (?P<value>[0-9.]+) ms$'\n    unit: ms";
    let project = project(
        "  build:\n    command: [bin/make-two, \"{build_dir}\"]\n  program:\n    command: [\"{build_dir}/slow\"]",
        &format!(
            "  build:\n    timeout: 30s\n    needs: {{ tools: [] }}\n  sass:\n    timeout: 30s\n  bench:\n    needs: {{ gpu: false }}\n    timeout: 30s\n{timing}\n\
             \x20 baseline:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    command: [\"{{build_dir}}/fast\"]\n{timing}"
        ),
    );
    project.tool(
        "make-two",
        "#!/bin/sh\nmkdir -p \"$1\"\nprintf '#!/bin/sh\\necho t: 3.0 ms\\n' > \"$1/slow\"\nprintf '#!/bin/sh\\necho t: 1.0 ms\\n' > \"$1/fast\"\nchmod +x \"$1/slow\" \"$1/fast\"\n",
    );
    // A stand-in cuobjdump (hand-written) that finds no device code, as the real one says of
    // a host-only file.
    project.tool(
        "cuobjdump",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo \"release 0.0 (stand-in)\"; exit 0; fi\n\
         echo \"cuobjdump info    : File '$2' does not contain device code\" >&2\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    let manifest = project.manifest();
    assert_eq!(
        stage(&manifest, "sass")["status"],
        "inconclusive",
        "{}",
        stderr(&out)
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    let verdict = report
        .lines()
        .find(|l| l.starts_with("**Verdict:**"))
        .unwrap_or_else(|| panic!("no verdict in\n{report}"));
    assert!(verdict.contains("Slow: "), "{verdict}");
    assert!(
        verdict.contains("3.00x slower than its baseline"),
        "{verdict}"
    );
    assert!(verdict.contains("1 stage could not conclude"), "{verdict}");
}

/// `exhibit check` refuses a placeholder in a stage's own command that would expand to nothing
/// or to a directory nothing made, naming the stage and the word.
#[test]
fn check_refuses_a_placeholder_a_stage_cannot_resolve() {
    let cases = [
        (
            "  program:\n    command: [bin/ring]",
            "  baseline:\n    timeout: 30s\n    command: [\"{build_dir}/fast\"]",
            "stages.baseline.command: `{build_dir}/fast` names `{build_dir}`",
        ),
        (
            "  program:\n    command: [bin/ring]",
            "  baseline:\n    timeout: 30s\n    command: [bin/ring, \"{launches}\"]",
            "names `{launches}`, which only a stress stage's run has a value for",
        ),
        (
            "  program:\n    command: [bin/ring]",
            "  baseline:\n    timeout: 30s\n    command: [bin/ring, \"--shape={shape}\"]",
            "names `{shape}`, and this stage runs no case",
        ),
    ];
    for (target, stages, expected) in cases {
        let project = project(target, stages);
        let out = project.run(&["check", "pipeline.yaml"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    }
}

/// A Python driver's `name: 1.234 ms` lines: a bench pattern and a baseline pattern without a
/// `label` group, in the unit given beside them, name their timings after the one config, so
/// they pair.
#[test]
fn unlabelled_text_timings_in_a_fixed_unit_pair_by_config() {
    let driver = "[sh, -c, \"echo 'minimal_attn: 1.234 ms'; echo 'sdpa: 0.052 ms'; echo 'minimal_attn: 1.240 ms'; echo 'sdpa: 0.051 ms'\"]";
    let project = project(
        "  program:\n    command: [bin/ring]",
        &format!(
            "  bench:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    command: {driver}\n    pattern: '^minimal_attn: (?P<value>[0-9.]+) ms$'\n    unit: ms\n\
             \x20 baseline:\n    needs: {{ gpu: false }}\n    timeout: 30s\n    command: {driver}\n    pattern: '^sdpa: (?P<value>[0-9.]+) ms$'\n    unit: ms"
        ),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("**Verdict:** 🐢 Slow"), "{report}");
    let row = report
        .lines()
        .find(|l| l.starts_with("| `plain` |"))
        .unwrap_or_else(|| panic!("no row for the config in\n{report}"));
    assert!(row.contains("2 matches") && row.contains("1237"), "{row}");
    assert!(row.contains("51.5"), "{row}");
}

/// A pattern that matches nothing makes its stage inconclusive, the reason naming the pattern
/// and the log: never an empty table in a clean report.
#[test]
fn a_pattern_that_matches_nothing_is_inconclusive() {
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  bench:\n    needs: { gpu: false }\n    timeout: 30s\n    command: [sh, -c, \"echo 'kernel took 1.5 ms'\"]\n    pattern: 'elapsed: (?P<value>[0-9.]+)'\n    unit: ms",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let bench = stage(&project.manifest(), "bench").clone();
    assert_eq!(bench["status"], "inconclusive", "{bench:#}");
    let reason = bench["reason"].as_str().expect("a reason");
    assert_eq!(
        reason,
        "the pattern `elapsed: (?P<value>[0-9.]+)` matched no line of stdout.log"
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("matched no line of stdout.log"), "{report}");
    assert!(!report.contains("Clean"), "{report}");
}

/// A bench stage whose program prints no timings in a known format is inconclusive, never
/// passed.
#[test]
fn a_bench_without_timings_is_inconclusive() {
    let project = project(
        "  program:\n    command: [bin/ring]",
        "  bench:\n    needs: { gpu: false }\n    timeout: 30s",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let bench = stage(&project.manifest(), "bench").clone();
    assert_eq!(bench["status"], "inconclusive", "{bench:#}");
}

/// `exhibit check` on a target whose stages say no `needs:` lists what each really starts: the
/// build's command, the program (here `python3`) inside compute-sanitizer or ncu, never the
/// built-in kernel's harness.
#[test]
fn check_states_a_targets_true_needs() {
    let project = Project::new();
    project.write("src/app.py", "print('stand-in')\n");
    project.pipeline(
        "target:\n  sources: [src]\n  build:\n    command: [nvcc, -o, \"{build_dir}/x\", src/x.cu]\n\
         \x20 program:\n    command: [python3, src/app.py]\n\
         stages:\n  build: {}\n  memcheck: {}\n  check: {}\n  profile: {}\n  sass: {}\n  report: {}\n",
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert_eq!(code(&out), 0, "{text}");
    let needs = |stage: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(stage))
            .and_then(|l| l.split("needs ").nth(1))
            .unwrap_or_else(|| panic!("no {stage} line: {text}"))
            .to_string()
    };
    assert_eq!(needs("build"), "nvcc");
    assert_eq!(needs("memcheck"), "gpu, compute-sanitizer, python3");
    assert_eq!(needs("check"), "gpu, python3");
    assert_eq!(needs("profile"), "gpu, ncu, python3");
    assert_eq!(needs("sass"), "cuobjdump");
    assert!(!text.contains("harness"), "{text}");
}

/// A first pipeline needs neither `toolchain:` (the tools installed are used) nor `matrix:`
/// (one config) nor `report:` (a report is written unless disabled).
#[test]
fn a_pipeline_without_toolchain_matrix_or_report_runs_and_writes_its_report() {
    let project = Project::new();
    project.write("src/app.sh", "echo ok\n");
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/app.sh]\n\
         stages:\n  check: {}\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    let runs = project.runs();
    let run = runs.last().unwrap_or_else(|| panic!("no run: {text}"));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let report = stage(&manifest, "report");
    assert_eq!(report["status"], "passed", "{manifest:#}");
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        project.root.join(format!("reports/{id}.md")).is_file(),
        "{text}"
    );
    // Disabled, it is not written.
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/app.sh]\n\
         stages:\n  check: {}\n  report: { enabled: false }\n",
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("report     report     disabled"), "{text}");
}

/// A target with no build whose program compiles its kernels just in time (here it drops an
/// ELF image into `$TRITON_CACHE_DIR`, as Triton does): the SASS stage runs after the program,
/// finds the image in the config's build directory, and the report lists each kernel's SASS,
/// registers and shared memory from `cuobjdump -sass -res-usage` (a stand-in printing a real
/// listing: `crates/parsers/fixtures/sass/cuda_cpp_fatbin_res_usage.log`).
#[test]
fn a_jit_kernels_sass_and_registers_are_inventoried_without_a_build() {
    let project = Project::new();
    project.tool(
        "cuobjdump",
        &format!(
            "#!/bin/sh\n# Stand-in for cuobjdump in tests: prints a captured listing.\n\
             if [ \"$1\" = \"--version\" ]; then echo \"Cuda compilation tools, release 0.0, V0.0.0 (stand-in)\"; exit 0; fi\n\
             echo \"$@\" >> \"$(dirname \"$0\")/cuobjdump.calls\"\n\
             cat '{}/../parsers/fixtures/sass/cuda_cpp_fatbin_res_usage.log'\n",
            env!("CARGO_MANIFEST_DIR")
        ),
    );
    project.write(
        "src/jit.sh",
        "mkdir -p \"$TRITON_CACHE_DIR/abc\"\nprintf '\\177ELF stand-in image' > \"$TRITON_CACHE_DIR/abc/kernel.cubin\"\n",
    );
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/jit.sh]\n\
         toolchain:\n  provision: false\n  tools:\n    cuobjdump: bin/cuobjdump\n\
         stages:\n  check:\n    needs: { gpu: false }\n  sass: {}\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    let manifest = project.manifest();
    assert_eq!(
        stage(&manifest, "sass")["status"],
        "passed",
        "{text}\n{manifest:#}"
    );
    let calls = std::fs::read_to_string(project.root.join("bin/cuobjdump.calls")).unwrap();
    assert!(calls.contains("-sass -res-usage"), "{calls}");
    assert!(calls.contains("jit/triton/abc/kernel.cubin"), "{calls}");
    let run = project.runs().pop().expect("a run");
    let report = project.run(&["report", run.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_slice(&report.stdout).expect("JSON");
    let kernels = json["kernels"].as_array().cloned().unwrap_or_default();
    let transpose = kernels
        .iter()
        .find(|k| k["kernel"] == "transpose_kernel" && k["arch"] == "sm_90")
        .unwrap_or_else(|| panic!("{:#}", json["kernels"]));
    assert_eq!(transpose["registers"], 30, "{transpose:#}");
    assert_eq!(transpose["static_shared_bytes"], 4224, "{transpose:#}");
    assert_eq!(transpose["config"], "default", "{transpose:#}");
    // Run again unchanged: the program is served from the cache, so its JIT cache is not
    // written in this run; the SASS stage is served from the cache with it, not left with
    // nothing to list.
    let out = project.run(&["pipeline.yaml"]);
    let manifest = project.manifest();
    for name in ["check", "sass"] {
        let unit = stage(&manifest, name);
        assert_eq!(
            unit["status"],
            "passed",
            "{name}: {}
{unit:#}",
            stderr(&out)
        );
        assert!(unit["cached_from"].is_string(), "{name}: {unit:#}");
    }
}

/// A build command that names its config (`{config}`: a script that picks the program by it)
/// builds each config on its own, even where two configs have the same defines: two programs
/// planted with the same `-DPLANT` are two programs.
#[test]
fn a_build_that_names_its_config_is_never_shared() {
    let project = Project::new();
    project.write(
        "src/build.sh",
        "echo \"$2\" >> calls.log\nmkdir -p \"$1\"\nprintf '#!/bin/sh\\necho \"built for %s\"\\n' \"$2\" > \"$1/prog\"\nchmod +x \"$1/prog\"\n",
    );
    project.pipeline(
        "target:\n  sources: [src]\n  build:\n    command: [sh, src/build.sh, \"{build_dir}\", \"{config}\", \"{defines}\"]\n\
         \x20 program:\n    command: [\"{build_dir}/prog\"]\n\
         matrix:\n  configs:\n    tail: { defines: { PLANT: 1 } }\n    blur: { defines: { PLANT: 1 } }\n\
         stages:\n  build: {}\n  check:\n    needs: { gpu: false }\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert!(code(&out) <= 1, "{}", stderr(&out));
    let calls = std::fs::read_to_string(project.root.join("calls.log")).unwrap();
    let mut built: Vec<&str> = calls.lines().collect();
    built.sort();
    assert_eq!(built, ["blur", "tail"], "{calls}");
    let manifest = project.manifest();
    for config in ["tail", "blur"] {
        let check = stages(&manifest, "check")
            .into_iter()
            .find(|s| s["config"] == config)
            .unwrap_or_else(|| panic!("no check for {config}"));
        let stdout = std::fs::read_to_string(
            manifest_dir(&project).join(check["logs"][0]["path"].as_str().unwrap_or_default()),
        )
        .unwrap_or_default();
        assert_eq!(stdout.trim(), format!("built for {config}"), "{check:#}");
    }
}

/// Configs whose builds would be the same (same defines and `build_env`; a config's `env` is
/// its program's) build once: the configs that differ only in their program's environment
/// share one build, and their programs run the products of it.
#[test]
fn configs_that_differ_only_in_the_programs_environment_share_one_build() {
    let project = Project::new();
    project.write(
        "src/build.sh",
        "echo \"$1\" >> calls.log\nmkdir -p \"$1\"\nprintf '#!/bin/sh\\necho \"mode $MODE from $0\"\\n' > \"$1/prog\"\nchmod +x \"$1/prog\"\n",
    );
    project.pipeline(
        "target:\n  sources: [src]\n  build:\n    command: [sh, src/build.sh, \"{build_dir}\", \"{defines}\"]\n\
         \x20 program:\n    command: [\"{build_dir}/prog\"]\n\
         matrix:\n  configs:\n    fast: { env: { MODE: fast } }\n    exact: { env: { MODE: exact } }\n\
         \x20   debug: { defines: { DEBUG: 1 } }\n\
         stages:\n  build: {}\n  check:\n    needs: { gpu: false }\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert!(code(&out) <= 1, "{}", stderr(&out));
    let calls = std::fs::read_to_string(project.root.join("calls.log")).unwrap();
    assert_eq!(calls.lines().count(), 2, "{calls}");
    let manifest = project.manifest();
    let builds = stages(&manifest, "build");
    assert_eq!(builds.len(), 2, "{manifest:#}");
    let shared = builds
        .iter()
        .find(|b| {
            b["unit"]["serves"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        })
        .unwrap_or_else(|| panic!("no shared build: {builds:#?}"));
    let (owner, served) = (
        shared["config"].as_str().unwrap_or_default(),
        shared["unit"]["serves"][0].as_str().unwrap_or_default(),
    );
    let mut pair = [owner, served];
    pair.sort();
    assert_eq!(pair, ["exact", "fast"], "{shared:#}");
    // Each config's check ran the shared build's program with its own environment.
    for config in ["fast", "exact"] {
        let check = stages(&manifest, "check")
            .into_iter()
            .find(|s| s["config"] == config)
            .unwrap_or_else(|| panic!("no check for {config}"));
        assert_eq!(check["status"], "passed", "{check:#}");
        let stdout = std::fs::read_to_string(
            manifest_dir(&project).join(check["logs"][0]["path"].as_str().unwrap_or_default()),
        )
        .unwrap_or_default();
        assert!(stdout.contains(&format!("mode {config} from")), "{stdout}");
        assert!(stdout.contains(&format!("build/{owner}/")), "{stdout}");
    }
    // The report's table says whose build the other config ran.
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).unwrap();
    assert!(
        report.contains(&format!("↗ the build of `{owner}`")),
        "{report}"
    );
}

fn manifest_dir(project: &Project) -> std::path::PathBuf {
    project.runs().pop().expect("a run")
}

/// A `cases:` dimension is open to every target: a stage that names cases runs the program once
/// per case, its values given as placeholders (`{case}`, `{shape}`, `{dtype}`, `{causal}`) and
/// as `EXHIBIT_CASE`, `EXHIBIT_SHAPE`, `EXHIBIT_DTYPE`, `EXHIBIT_CAUSAL`.
#[test]
fn a_targets_stage_runs_once_per_case_with_the_cases_values() {
    let project = Project::new();
    project.write(
        "src/app.sh",
        "echo \"args $*\"\necho \"env $EXHIBIT_CASE $EXHIBIT_SHAPE $EXHIBIT_DTYPE $EXHIBIT_CAUSAL\"\n",
    );
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/app.sh]\n\
         cases:\n  small: { shape: \"1,2,128,64\", dtypes: [f16], causal: [false] }\n\
         \x20 long: { shape: \"4,16,4096,64\", dtypes: [bf16], causal: [true] }\n\
         stages:\n  check:\n    needs: { gpu: false }\n    cases: [small, long]\n\
         \x20   args: [--shape, \"{shape}\", --dtype, \"{dtype}\", --causal, \"{causal}\", --case, \"{case}\"]\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert!(code(&out) <= 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let checks = stages(&manifest, "check");
    assert_eq!(checks.len(), 2, "{manifest:#}");
    let run = project.runs().pop().expect("a run");
    for (label, args, env) in [
        (
            "small-f16",
            "args --shape 1,2,128,64 --dtype f16 --causal false --case small",
            "env small 1,2,128,64 f16 false",
        ),
        (
            "long-bf16-causal",
            "args --shape 4,16,4096,64 --dtype bf16 --causal true --case long",
            "env long 4,16,4096,64 bf16 true",
        ),
    ] {
        let stdout =
            std::fs::read_to_string(run.join(format!("check/default/sm_90/{label}/stdout.log")))
                .unwrap_or_else(|e| panic!("{label}: {e}: {manifest:#}"));
        assert!(stdout.contains(args), "{stdout}");
        assert!(stdout.contains(env), "{stdout}");
    }
    // A stage that runs no program takes no cases.
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [sh, src/app.sh]\n\
         cases:\n  small: { shape: \"1,2,128,64\" }\n\
         stages:\n  sass:\n    cases: [small]\n",
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a sass stage runs no cases"),
        "{}",
        stderr(&out)
    );
}

/// A program that never got to test (its module is not installed, its command is not found) is
/// a broken pipeline: the unit failed, naming why, the run exits 3, and the report has no root
/// cause.
#[test]
fn a_program_that_cannot_start_is_a_broken_pipeline_not_a_root_cause() {
    for (program, why) in [
        (
            "  program:\n    command: [python3, -m, exhibit_no_such_module]",
            "No module named exhibit_no_such_module",
        ),
        (
            "  program:\n    command: [sh, -c, exhibit-no-such-command]",
            "exhibit-no-such-command: not found",
        ),
    ] {
        let project = project(
            program,
            "  check:\n    needs: { gpu: false }\n    timeout: 30s",
        );
        let out = project.run(&["pipeline.yaml"]);
        assert_eq!(code(&out), 3, "{}", stderr(&out));
        let manifest = project.manifest();
        let check = stage(&manifest, "check");
        assert_eq!(check["status"], "failed", "{check:#}");
        let reason = check["reason"].as_str().expect("a reason");
        assert!(
            reason.starts_with("the program could not start: ") && reason.contains(why),
            "{reason}"
        );
        let run = project.runs().pop().expect("a run");
        let errors = error_diagnoses(&run);
        assert!(errors.is_empty(), "{errors:#?}");
        let json: Value = serde_json::from_str(&rendered(&run, "json")).expect("json");
        assert_ne!(json["verdict"]["kind"], "failing", "{}", json["verdict"]);
    }
}

/// A test suite that writes JUnit XML to `{out}` (here the real pytest capture in
/// `crates/parsers/fixtures/junit/pytest.xml`, written by a stand-in): each failing test is a
/// root cause named by its id, with its message and its line; the passing ones are counted.
#[test]
fn a_failing_test_in_a_junit_report_is_a_root_cause_named_by_its_id() {
    let junit = repo().join("crates/parsers/fixtures/junit/pytest.xml");
    let project = project(
        "  program:\n    command: [bin/suite, \"{out}\"]",
        "  check:\n    needs: { gpu: false }\n    timeout: 30s",
    );
    project.tool(
        "suite",
        &format!(
            "#!/bin/sh\n# Stand-in for `pytest --junitxml={{out}}`: writes a real capture.\ncp '{}' \"$1\"\necho '1 failed, 5 passed, 1 skipped, 1 xfailed, 1 error in 0.04s'\nexit 1\n",
            junit.display()
        ),
    );
    project.write("tests/test_softmax.py", "# stand-in for the suite's file\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    // The run's count of its stages reads with any number.
    assert!(
        stderr(&out).contains(": 1 with findings, 1 passed\n"),
        "{}",
        stderr(&out)
    );
    let run = project.runs().pop().expect("a run");
    let errors = error_diagnoses(&run);
    let titles: Vec<&str> = errors.iter().filter_map(|d| d["title"].as_str()).collect();
    assert_eq!(errors.len(), 2, "{titles:#?}");
    // Titles are Markdown: the message's `<` is escaped.
    assert!(
        titles.contains(
            &"Test `tests/test_softmax.py::test_tail_tile[200]` failed: AssertionError: max abs \
              error 2.851e-03 at n=200 (tail of 8); assert 0.002851047785080253 \\< 1e-06"
        ),
        "{titles:#?}"
    );
    let tail = errors
        .iter()
        .find(|d| {
            d["title"]
                .as_str()
                .is_some_and(|t| t.contains("test_tail_tile"))
        })
        .expect("the failing test");
    assert_eq!(
        tail["location"]["file"], "tests/test_softmax.py",
        "{tail:#}"
    );
    assert_eq!(tail["location"]["line"], 27, "{tail:#}");
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("Test `tests/test_softmax.py::test_uses_device` errored")),
        "{titles:#?}"
    );
    let md = rendered(&run, "md");
    assert!(md.contains("5/7 passed; 2 skipped"), "{md}");
    // JUnit lists the suite's own tests beside the check that ran them: the passing ones too.
    let xml = rendered(&run, "junit");
    let case = |id: &str| {
        xml.lines()
            .find(|l| l.contains(&format!("<testcase name=\"{id}\"")))
            .unwrap_or_else(|| panic!("no test case {id} in\n{xml}"))
            .to_string()
    };
    let passing = case("tests/test_softmax.py::test_rows_sum_to_one[1000]");
    assert!(
        passing.contains(r#"classname="exhibit.check.plain""#) && passing.ends_with("/>"),
        "{passing}"
    );
    assert!(
        !case("tests/test_softmax.py::test_tail_tile[200]").ends_with("/>"),
        "a failing test has its failure"
    );
    assert!(
        xml.contains(r#"type="test">tests/test_softmax.py:27</failure>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testsuite name="check" tests="10" failures="2" errors="1" skipped="2">"#),
        "{xml}"
    );
}

/// `split: tests` runs several tests at once (up to `--gpu-jobs`), each with its own `{out}`:
/// the stand-in pytest notes how many of its runs overlap, and writes its id to `EXHIBIT_OUT`.
#[test]
fn split_tests_run_several_at_once_each_with_its_own_out() {
    let project = project(
        "  program:\n    command: [bin/pytest, tests]",
        "  memcheck:\n    needs: { gpu: false }\n    timeout: 30s\n    split: tests",
    );
    project.tool(
        "pytest",
        "#!/bin/sh\n# Stand-in for pytest (hand-written): lists four tests; a run notes how many runs are in flight.\nif [ \"$2\" = \"--collect-only\" ]; then\n  printf 'tests/test_k.py::test_a\\ntests/test_k.py::test_b\\ntests/test_k.py::test_c\\ntests/test_k.py::test_d\\n'\n  exit 0\nfi\nfor id; do :; done\nd=\"$(dirname \"$0\")/running\"; mkdir -p \"$d\"\nmark=\"$d/$$\"; touch \"$mark\"\n# Until a second run is in flight beside this one (5 s at most), unless two met already: a busy machine's slow starts never hide the overlap.\nn=0; until [ -e \"$d.met\" ] || [ \"$(ls \"$d\" | wc -l)\" -ge 2 ] || [ $n -ge 250 ]; do sleep 0.02; n=$((n+1)); done; touch \"$d.met\"\nls \"$d\" | wc -l >> \"$(dirname \"$0\")/seen\"\nsleep 0.5\nrm -f \"$mark\"\nprintf '{\"schema\":\"exhibit.results/1\",\"program\":\"p\",\"results\":[{\"name\":\"%s\",\"passed\":true}]}\\n' \"$id\" > \"$EXHIBIT_OUT\"\n",
    );
    project.tool(
        "compute-sanitizer",
        "#!/bin/sh\n# Stand-in for compute-sanitizer (hand-written): runs the program after its own options.\nif [ \"$1\" = \"--version\" ]; then echo 'Compute Sanitizer 0.0 (stand-in)'; exit 0; fi\nwhile [ $# -gt 0 ]; do case \"$1\" in --tool|--target-processes|--error-exitcode|--print-limit|--padding) shift 2 ;; --*) shift ;; *) break ;; esac; done\necho '========= COMPUTE-SANITIZER'\n\"$@\"\necho '========= ERROR SUMMARY: 0 errors'\n",
    );
    let out = project.run(&["pipeline.yaml", "--gpu-jobs", "3"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let seen = std::fs::read_to_string(project.root.join("bin/seen")).expect("seen");
    let most = seen
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    assert!((2..=3).contains(&most), "runs in flight: {seen}");
    let run = project.runs().pop().expect("a run");
    for (k, id) in ["test_a", "test_b", "test_c", "test_d"].iter().enumerate() {
        let results =
            std::fs::read_to_string(run.join(format!("memcheck/plain/sm_90/results-{k}.json")))
                .expect("each test's own results");
        assert!(results.contains(id), "{k}: {results}");
    }
    let memcheck = stage(&project.manifest(), "memcheck").clone();
    let ids: Vec<&str> = memcheck["split"]
        .as_array()
        .expect("split")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 4, "{memcheck:#}");
    assert!(
        ids[0].ends_with("test_a") && ids[3].ends_with("test_d"),
        "{ids:?}"
    );
}

/// `split: tests`: memcheck runs each test of a pytest program alone, so its error is named
/// with the test that triggered it. The stand-ins: a pytest that lists three tests, and a
/// compute-sanitizer that prints a real memcheck capture (`memcheck_oob_read.log`) for one of
/// them.
#[test]
fn a_split_sanitizer_stage_names_the_test_an_error_came_from() {
    let capture = repo().join("crates/parsers/fixtures/compute-sanitizer/memcheck_oob_read.log");
    let project = project(
        "  program:\n    command: [bin/pytest, tests]",
        "  memcheck:\n    needs: { gpu: false }\n    timeout: 30s\n    split: tests",
    );
    project.tool(
        "pytest",
        "#!/bin/sh\n# Stand-in for pytest (hand-written): lists three tests.\nif [ \"$2\" = \"--collect-only\" ]; then\n  printf 'tests/test_k.py::test_small\\ntests/test_k.py::test_oob\\ntests/test_k.py::test_tail[200]\\n\\n3 tests collected in 0.01s\\n'\n  exit 0\nfi\necho \"ran $*\"\n",
    );
    project.tool(
        "compute-sanitizer",
        &format!(
            "#!/bin/sh\n# Stand-in for compute-sanitizer (hand-written): a real capture for test_oob.\nif [ \"$1\" = \"--version\" ]; then echo 'Compute Sanitizer 0.0 (stand-in)'; exit 0; fi\nfor last; do :; done\necho \"stand-in argv: $*\" >&2\ncase \"$last\" in\n  *test_oob) cat '{}'; exit 86 ;;\n  *) echo '========= COMPUTE-SANITIZER'; echo '========= ERROR SUMMARY: 0 errors' ;;\nesac\n",
            capture.display()
        ),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let memcheck = stage(&manifest, "memcheck");
    assert_eq!(memcheck["status"], "findings", "{memcheck:#}");
    assert_eq!(
        memcheck["reason"],
        "memcheck found errors in 1 of 3 tests, each run in a process of its own: tests/test_k.py::test_oob"
    );
    let split = memcheck["split"].as_array().expect("split");
    let ids: Vec<&str> = split.iter().filter_map(|t| t["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "tests/test_k.py::test_small",
            "tests/test_k.py::test_oob",
            "tests/test_k.py::test_tail[200]"
        ]
    );
    // Each run got its id, and not the directory the id already names.
    let run = project.runs().pop().expect("a run");
    let argv = std::fs::read_to_string(run.join("memcheck/plain/sm_90/stderr-1.log")).unwrap();
    assert!(
        argv.trim_end()
            .ends_with("bin/pytest tests/test_k.py::test_oob"),
        "{argv}"
    );
    let errors = error_diagnoses(&run);
    let oob = errors.first().unwrap_or_else(|| panic!("{errors:#?}"));
    assert_eq!(
        oob["figures"]["test"], "tests/test_k.py::test_oob",
        "{oob:#}"
    );
    assert_eq!(oob["location"]["line"], 11, "{oob:#}");
    let md = rendered(&run, "md");
    assert!(md.contains(", in test `tests/test_k.py::test_oob`"), "{md}");
}

/// The same through GoogleTest, ctest and Catch2's JUnit (the real captures in
/// `crates/parsers/fixtures/junit/`, written to `{out}` by a stand-in program that fails as
/// each framework exits): the failing test is the root cause, named as its framework names it.
#[test]
fn gtest_ctest_and_catch2_failures_are_named_by_their_test() {
    for (fixture, code_out, title) in [
        (
            "gtest.xml",
            1,
            "Test `Shapes/TailTile.MatchesReference/2` failed: Expected: (err) \\< (1e-6), actual: \
             0.0028510477850802532 vs 1e-06; max abs error at n=200 (tail of 8)",
        ),
        (
            "ctest.xml",
            8,
            "Test `Shapes/TailTile.MatchesReference/2` failed: Expected: (err) \\< (1e-6), actual: \
             0.0028510477850802532 vs 1e-06; max abs error at n=200 (tail of 8)",
        ),
        (
            "catch2.xml",
            42,
            "Test `tail tile matches the reference` failed: CHECK( err \\< 1e-6 ); with expansion: \
             0.00285104778508025 \\< 0.000001; n = 200, tail of 8",
        ),
    ] {
        let junit = repo().join("crates/parsers/fixtures/junit").join(fixture);
        let project = project(
            "  program:\n    command: [bin/suite, \"{out}\"]",
            "  check:\n    needs: { gpu: false }\n    timeout: 30s",
        );
        project.tool(
            "suite",
            &format!(
                "#!/bin/sh\n# Stand-in for a test binary (hand-written): writes a real capture.\ncp '{}' \"$1\"\nexit {code_out}\n",
                junit.display()
            ),
        );
        let out = project.run(&["pipeline.yaml"]);
        assert_eq!(code(&out), 1, "{fixture}: {}", stderr(&out));
        let run = project.runs().pop().expect("a run");
        let errors = error_diagnoses(&run);
        let titles: Vec<&str> = errors.iter().filter_map(|d| d["title"].as_str()).collect();
        assert_eq!(titles, [title], "{fixture}");
    }
}

/// `split: tests` on a GoogleTest binary: `--gtest_list_tests` (a real listing,
/// `tests/it/fixtures/gtest_list_tests.txt`) names the tests, each runs with
/// `--gtest_filter=Suite.Test`, and the error is named with its test.
#[test]
fn a_googletest_binary_splits_by_its_listed_tests() {
    let listing =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/gtest_list_tests.txt");
    let capture = repo().join("crates/parsers/fixtures/compute-sanitizer/memcheck_oob_read.log");
    let project = project(
        "  program:\n    command: [bin/softmax_test]",
        "  memcheck:\n    needs: { gpu: false }\n    timeout: 30s\n    split: tests",
    );
    project.tool(
        "softmax_test",
        &format!(
            "#!/bin/sh\n# Stand-in for a GoogleTest binary (hand-written): a real listing.\nif [ \"$1\" = \"--gtest_list_tests\" ]; then cat '{}'; exit 0; fi\necho \"ran $*\"\n",
            listing.display()
        ),
    );
    project.tool(
        "compute-sanitizer",
        &format!(
            "#!/bin/sh\n# Stand-in for compute-sanitizer (hand-written): a real capture for one test.\nif [ \"$1\" = \"--version\" ]; then echo 'Compute Sanitizer 0.0 (stand-in)'; exit 0; fi\nfor last; do :; done\ncase \"$last\" in\n  --gtest_filter=Shapes/TailTile.MatchesReference/2) cat '{}'; exit 86 ;;\n  *) echo '========= COMPUTE-SANITIZER'; echo '========= ERROR SUMMARY: 0 errors' ;;\nesac\n",
            capture.display()
        ),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let memcheck = stage(&manifest, "memcheck");
    let ids: Vec<&str> = memcheck["split"]
        .as_array()
        .expect("split")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "Softmax.RowsSumToOne",
            "Softmax.WgmmaPath",
            "Shapes/TailTile.MatchesReference/0",
            "Shapes/TailTile.MatchesReference/1",
            "Shapes/TailTile.MatchesReference/2"
        ]
    );
    assert_eq!(
        memcheck["reason"],
        "memcheck found errors in 1 of 5 tests, each run in a process of its own: Shapes/TailTile.MatchesReference/2"
    );
}

/// A Triton script on a machine without a GPU: no build stage, and no stage ran the program
/// to compile a kernel just in time. The SASS stage has nothing to inspect: it is skipped,
/// saying so, without looking for its tool; nothing was checked, so the run exits 3 and says
/// "Not checked" (issue 51), never that it found no error.
#[test]
fn a_sass_stage_with_nothing_to_inspect_is_skipped_without_its_tool() {
    let project = project(
        "  program:\n    command: [python3, kernel.py]",
        "  memcheck:\n    timeout: 30s\n  sass:\n    timeout: 30s",
    );
    let yaml = std::fs::read_to_string(project.root.join("pipeline.yaml")).expect("pipeline");
    project.pipeline(
        &yaml
            .replace("bin/cuobjdump", "bin/no-such-cuobjdump")
            .replace("bin/compute-sanitizer", "bin/no-such-compute-sanitizer"),
    );
    project.write("kernel.py", "# stand-in for a Triton script\n");
    let out = project.run(&["pipeline.yaml"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("verdict: Not checked"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "memcheck")["status"], "skipped");
    let sass = stage(&manifest, "sass");
    assert_eq!(sass["status"], "skipped", "{sass:#}");
    assert_eq!(
        sass["reason"],
        "nothing to inspect: no build stage made device code, and no stage ran the program \
         here to compile a kernel just in time"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("sass plain sm_90") && l.contains("nothing to inspect")),
        "{err}"
    );
}
