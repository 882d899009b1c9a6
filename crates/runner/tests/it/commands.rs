//! The command lines of the GPU stages, as planned for a machine with an sm_90 GPU and every
//! tool (built through the library: no test here has a GPU to run them on).

use std::path::{Path, PathBuf};

use runner::execution::stages::{self, Paths};
use runner::pipeline::config::{ExitCodes, Pipeline};
use runner::planning::plan::{self, Selection};
use runner::setup::preflight::Preflight;
use runner::setup::toolchain::{Source, Tool, Toolchain};

const PIPELINE: &str = r#"kernel:
  source: kernel/attention.cu
  entry_points: { f16: attention_fwd_f16, bf16: attention_fwd_bf16 }
toolchain:
  cuda: 13.0.88
  provision: false
  wheels: { nvidia-cuda-nvcc: 13.0.88 }
matrix:
  configs:
    d64: { HEAD_DIM: 64, BLOCK_M: 64 }
    d128: { HEAD_DIM: 128, BLOCK_M: 64 }
cases:
  seed: { shape: "2,8,512,64", dtypes: [f16], causal: [false] }
  tail: { shape: "1,2,200,64", dtypes: [bf16], causal: [true] }
stages:
  compile: {}
  memcheck:
    print_limit: 100
    harness_args: [--guard-bytes, "0"]
    cases: [seed]
  stress:
    args: [--launches, "200"]
    cases: [tail]
  profile:
    args: [--section, SpeedOfLight]
    cases: [seed]
  baseline:
    command: [python3, kernel/baselines/sdpa.py]
    cases: [seed, tail]
"#;

fn preflight() -> Preflight {
    let mut toolchain = Toolchain::default();
    for name in ["nvcc", "compute-sanitizer", "ncu", "python3"] {
        toolchain.tools.insert(
            name.to_string(),
            Tool {
                path: PathBuf::from(format!("stand-in/bin/{name}")),
                source: Source::Path,
                version: Some("stand-in".into()),
            },
        );
    }
    Preflight {
        toolchain,
        environment: report::Environment::default(),
        gpu_unavailable: None,
        gpu_archs: vec!["sm_90".into()],
        harness: Ok(vec![
            PathBuf::from("stand-in/runner"),
            PathBuf::from("harness"),
        ]),
        torch: Some(Ok("torch stand-in".into())),
        modules: Default::default(),
        notes: Vec::new(),
    }
}

/// The recorded command of the one unit of `stage` for `config`.
fn command(stage: &str, config: Option<&str>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
    std::fs::write(dir.path().join("kernel/attention.cu"), "// stand-in\n").unwrap();
    let path = dir.path().join("pipeline.yaml");
    let pipeline = Pipeline::parse(&path, PIPELINE).unwrap();
    let preflight = preflight();
    let plan = plan::plan(&pipeline, &preflight, &Selection::default()).unwrap();
    let units: Vec<_> = plan
        .units
        .iter()
        .filter(|u| u.name == stage && u.config.as_deref() == config)
        .collect();
    assert_eq!(units.len(), 1, "{stage} {config:?}: {units:?}");
    let unit = units[0];
    assert_eq!(unit.blocked, None);
    let paths = Paths {
        unit_dir: Path::new("artifacts/RUN").join(&unit.dir),
        build_dir: (unit.compile.is_some() || unit.kind == report::StageKind::Compile)
            .then(|| PathBuf::from("artifacts/RUN/compile/d64/sm_90/build")),
    };
    let stage_cfg = pipeline.stage(stage).unwrap();
    stages::invocation(unit, stage_cfg, &pipeline, &preflight, &paths)
        .unwrap()
        .display
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

#[test]
fn memcheck_wraps_the_built_in_harness_with_a_distinct_error_exit_code() {
    assert_eq!(
        command("memcheck", Some("d64")),
        words(
            "compute-sanitizer --tool memcheck --target-processes all --error-exitcode 86 --print-limit 100 --padding 1048576 \
             harness --cubin artifacts/RUN/compile/d64/sm_90/build/kernel.cubin \
             --entry-point f16=attention_fwd_f16 --entry-point bf16=attention_fwd_bf16 \
             --shape 2,8,512,64 --dtype f16 --causal false --config d64 \
             --out artifacts/RUN/memcheck/d64/sm_90/seed-f16/results.json --mode once \
             --guard-bytes 0"
        )
    );
}

#[test]
fn stress_runs_the_harness_with_its_arguments() {
    assert_eq!(
        command("stress", Some("d64")),
        words(
            "harness --cubin artifacts/RUN/compile/d64/sm_90/build/kernel.cubin \
             --entry-point f16=attention_fwd_f16 --entry-point bf16=attention_fwd_bf16 \
             --shape 1,2,200,64 --dtype bf16 --causal true --config d64 \
             --out artifacts/RUN/stress/d64/sm_90/tail-bf16-causal/results.json --mode stress \
             --launches 200"
        )
    );
}

#[test]
fn profile_wraps_the_harness_in_ncu_without_touching_clocks_and_keeps_its_report() {
    assert_eq!(
        command("profile", Some("d64")),
        words(
            "ncu --target-processes all --clock-control none --import-source yes -f \
             -o artifacts/RUN/profile/d64/sm_90/seed-f16/profile --section SourceCounters \
             --section SpeedOfLight \
             harness --cubin artifacts/RUN/compile/d64/sm_90/build/kernel.cubin \
             --entry-point f16=attention_fwd_f16 --entry-point bf16=attention_fwd_bf16 \
             --shape 2,8,512,64 --dtype f16 --causal false --config d64 \
             --out artifacts/RUN/profile/d64/sm_90/seed-f16/results.json --mode once"
        )
    );
}

#[test]
fn baseline_runs_its_cases_in_one_process() {
    assert_eq!(
        command("baseline", None),
        words(
            "python3 kernel/baselines/sdpa.py --problem 2,8,512,64:f16 \
             --problem 1,2,200,64:bf16:causal --json"
        )
    );
}

#[test]
fn cases_run_only_on_configs_of_their_head_dim() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
    std::fs::write(dir.path().join("kernel/attention.cu"), "// stand-in\n").unwrap();
    let pipeline = Pipeline::parse(&dir.path().join("pipeline.yaml"), PIPELINE).unwrap();
    let plan = plan::plan(&pipeline, &preflight(), &Selection::default()).unwrap();
    let memcheck: Vec<_> = plan.units.iter().filter(|u| u.name == "memcheck").collect();
    assert_eq!(memcheck.len(), 1);
    assert_eq!(memcheck[0].config.as_deref(), Some("d64"));
}

/// `kernel:` is a target like any other: its build is nvcc per config and arch, its program the
/// built-in harness with the case as arguments, and each stage says the harness's mode.
#[test]
fn the_built_in_kernel_is_a_target_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
    std::fs::write(dir.path().join("kernel/attention.cu"), "// stand-in\n").unwrap();
    let pipeline = Pipeline::parse(&dir.path().join("pipeline.yaml"), PIPELINE).unwrap();
    let target = pipeline.target.as_ref().expect("the kernel's target");
    assert_eq!(
        target.build.as_ref().expect("its build").command,
        words(
            "nvcc -cubin -O3 -lineinfo -arch={arch} -Xptxas -v {defines} \
             -o {build_dir}/kernel.cubin {source}"
        )
    );
    assert_eq!(
        target.program.command.first().map(String::as_str),
        Some("harness")
    );
    assert_eq!(target.program.exit_codes, ExitCodes::harness());
    assert_eq!(
        command("compile", Some("d64")),
        words(
            "nvcc -cubin -O3 -lineinfo -arch=sm_90 -Xptxas -v -DBLOCK_M=64 -DHEAD_DIM=64 \
             -o artifacts/RUN/compile/d64/sm_90/build/kernel.cubin kernel/attention.cu"
        )
    );
}
