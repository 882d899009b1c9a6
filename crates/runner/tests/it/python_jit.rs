//! Kernels compiled at run time by CuPy and Numba, as their committed H200 reference runs
//! (`examples/cupy`, `examples/numba`) read through `exhibit report`: the user's line in the
//! Python file, the framework's own kernels kept apart, the barrier spelled as the framework
//! writes it, and CuPy's kernel cache read by the SASS stage.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The example's reference run of `pipeline` (its manifest's pipeline name).
fn run_of(example: &str, pipeline: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example)
        .join("reference/artifacts");
    std::fs::read_dir(&dir)
        .expect("a reference run")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::read_to_string(p.join("manifest.json"))
                .ok()
                .and_then(|m| serde_json::from_str::<Value>(&m).ok())
                .is_some_and(|m| m["pipeline"] == pipeline)
        })
        .unwrap_or_else(|| panic!("no run of {pipeline} under {}", dir.display()))
}

fn report(run: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--format", "json"])
        .arg(run)
        .output()
        .expect("run the runner");
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn diagnoses(json: &Value) -> Vec<Value> {
    json["diagnoses"].as_array().cloned().unwrap_or_default()
}

/// `examples/cupy`: a `RawKernel` written as a Python string reads one past its input. memcheck
/// names line 6 of CuPy's `<hash>.cubin.cu`; the report names the string's line in `smooth.py`
/// and the launch. CuPy's own kernels (`cupy_fill`, `cupy_copy__float64_float32`) are no cause
/// and no performance note of the program's, and the SASS stage read CuPy's cache.
#[test]
fn a_cupy_raw_kernels_fault_is_named_at_the_line_of_its_python_string() {
    let run = run_of("cupy", "pipeline.yaml");
    let json = report(&run);
    assert_eq!(json["verdict"]["kind"], "failing", "{:#}", json["verdict"]);
    let all = diagnoses(&json);
    let top = &all[0];
    assert_eq!(top["rule"], "out-of-bounds", "{top:#}");
    assert_eq!(top["location"]["file"], "smooth.py", "{top:#}");
    assert_eq!(top["location"]["line"], 16, "{top:#}");
    assert_eq!(top["call_site"]["line"], 27, "{top:#}");
    // ncu's remark that it sampled nothing in a kernel may name CuPy's; no cause and no
    // performance note does.
    for d in &all {
        let kernel = d["kernel"].as_str().unwrap_or("");
        let judged = d["level"] != "note" || d["rule"] == "slow-kernel";
        assert!(
            !(judged && kernel.starts_with("cupy_")),
            "CuPy's own kernel: {d:#}"
        );
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    let sass = manifest["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == "sass")
        .expect("a sass stage");
    assert_eq!(sass["status"], "passed", "{sass:#}");
}

/// `examples/numba`: a block sum without the barrier between its steps. The race is named at
/// `reduce.py:25` in `block_sum` (not Numba's mangled name), with Numba's `cuda.syncthreads()`.
#[test]
fn a_numba_race_is_named_in_the_python_function_with_numbas_barrier() {
    let json = report(&run_of("numba", "pipeline.yaml"));
    let all = diagnoses(&json);
    let top = &all[0];
    assert_eq!(top["rule"], "shared-memory-race", "{top:#}");
    assert_eq!(top["kernel"], "block_sum", "{top:#}");
    assert_eq!(top["location"]["file"], "reduce.py", "{top:#}");
    assert_eq!(top["location"]["line"], 25, "{top:#}");
    let fix = top["help"].to_string();
    assert!(fix.contains("cuda.syncthreads()"), "{fix}");
    assert!(!fix.contains("__syncthreads"), "{fix}");
}

/// `examples/cupy/shift.yaml`: an `ElementwiseKernel` whose operation reads one past the end.
/// memcheck's line is in the kernel CuPy generated around the operation, which no Python file
/// holds: the report says so, keeps CuPy's place, and names the launch line in `shift.py`.
#[test]
fn a_cupy_elementwise_kernels_fault_says_the_line_is_cupys_and_names_the_launch() {
    let json = report(&run_of("cupy", "shift.yaml"));
    let top = &diagnoses(&json)[0];
    assert_eq!(top["rule"], "out-of-bounds", "{top:#}");
    assert_eq!(top["kernel"], "shift_left", "{top:#}");
    let file = top["location"]["file"].as_str().unwrap_or("");
    assert!(file.ends_with(".cubin.cu"), "{top:#}");
    assert_eq!(top["call_site"]["file"], "shift.py", "{top:#}");
    assert_eq!(top["call_site"]["line"], 18, "{top:#}");
    let said = top["notes"].to_string();
    assert!(said.contains("CuPy's generated source"), "{said}");
}
