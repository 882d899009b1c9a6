//! The comparison helpers a program copies (`helpers/exhibit_compare.py`, `.h`): run as a user
//! runs them, they record which elements were wrong in the check's `{out}`, and the report says
//! the pattern (a column range one tile covers, the first row of every segment, a scale).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::util::{BIN, Project, code, stderr};

fn helpers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../helpers")
}

/// The JSON report of the project's last run, through `exhibit report`.
fn report_json(project: &Project) -> Value {
    let run = project.runs().pop().expect("a run");
    let out = Command::new(BIN)
        .args(["report", "--format", "json"])
        .arg(&run)
        .output()
        .expect("run exhibit report");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// The failed checks of a stored run's JSON report, as their explanations and fixes.
fn failed_checks(project: &Project) -> Vec<(String, String)> {
    let json = report_json(project);
    json["diagnoses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["rule"] == "check-failed")
        .map(|d| (d["notes"][0].to_string(), d["help"].to_string()))
        .collect()
}

fn check_pipeline(command: &str) -> String {
    format!(
        "target:\n  program:\n    command: {command}\nmatrix:\n  arch: [sm_90]\n\
         stages:\n  check:\n    needs: {{ gpu: false }}\n    timeout: 1m\n  report:\n    timeout: 1m\n"
    )
}

/// Runs `script` (which imports the helper) as a target's program through the check stage
/// (`EXHIBIT_OUT`), and returns its failed checks.
fn python_check(script: &str) -> Vec<(String, String)> {
    let project = Project::new();
    std::fs::copy(
        helpers().join("exhibit_compare.py"),
        project.root.join("exhibit_compare.py"),
    )
    .expect("copy the helper");
    project.write("check.py", script);
    project.pipeline(&check_pipeline("[python3, check.py]"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    failed_checks(&project)
}

/// A Python program whose output misses columns 32-63 of every row (a P·V product whose warps
/// cover half the columns), with the standard library only.
#[test]
fn the_python_helper_records_a_column_range_one_tile_covers() {
    let checks = python_check(
        "import sys\n\
         from exhibit_compare import compare\n\
         want = [[float(r * 64 + c + 1) for c in range(64)] for r in range(16)]\n\
         got = [[v if c < 32 else 0.0 for c, v in enumerate(row)] for row in want]\n\
         sys.exit(0 if compare('pv_columns', got, want, atol=1e-3, rtol=1e-3) else 1)\n",
    );
    assert_eq!(checks.len(), 1, "{checks:#?}");
    let (columns, fix) = &checks[0];
    assert!(columns.contains("columns 32-63 of 64"), "{columns}");
    assert!(columns.contains("in every one of the 16 rows"), "{columns}");
    assert!(columns.contains("exactly 0"), "{columns}");
    assert!(fix.contains("Find who owns columns 32-63"), "{fix}");
}

/// A sequence reduction whose first row of every segment of 8 after the first takes the
/// previous segment's value.
#[test]
fn the_python_helper_records_the_first_row_of_every_segment() {
    let checks = python_check(
        "import sys\n\
         from exhibit_compare import compare\n\
         want = [[float(r + c) for c in range(4)] for r in range(64)]\n\
         got = [list(row) for row in want]\n\
         for r in range(8, 64, 8):\n    got[r] = list(want[r - 1])\n\
         sys.exit(0 if compare('segment_sums', got, want) else 1)\n",
    );
    assert_eq!(checks.len(), 1, "{checks:#?}");
    let (segments, fix) = &checks[0];
    assert!(segments.contains("one row in every 8"), "{segments}");
    assert!(
        segments.contains("the first row of each segment of 8"),
        "{segments}"
    );
    assert!(fix.contains("boundary between segments"), "{fix}");
}

/// The C++ header writes the same document: a result scaled twice reads as a ratio, not an
/// index error. Compiled with the machine's C++ compiler (the Rust toolchain's linker needs
/// one); without one the test says so and passes nothing.
#[test]
fn the_cpp_header_records_a_shared_ratio() {
    let project = Project::new();
    project.write(
        "check.cpp",
        &format!(
            "#include \"{}\"\n\
             #include <vector>\n\
             int main() {{\n\
               std::vector<float> want(8 * 32), got(8 * 32);\n\
               for (int i = 0; i < 8 * 32; ++i) {{ want[i] = 1.0f + i; got[i] = 2.0f * want[i]; }}\n\
               return exhibit::compare(\"scaled\", got.data(), want.data(), 8, 32) ? 0 : 1;\n\
             }}\n",
            helpers().join("exhibit_compare.h").display()
        ),
    );
    let built = Command::new("c++")
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(project.root.join("check"))
        .arg(project.root.join("check.cpp"))
        .output();
    let Ok(built) = built else {
        eprintln!("no C++ compiler (`c++`) on this machine: the header was not compiled");
        return;
    };
    assert!(built.status.success(), "{}", stderr(&built));
    project.pipeline(&check_pipeline("[./check]"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let checks = failed_checks(&project);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    let (scaled, fix) = &checks[0];
    assert!(scaled.contains("2.00x its reference"), "{scaled}");
    assert!(fix.contains("factor of 2.00"), "{fix}");
}

/// A program that prints each value beside the value it expected and exits 1 (a stand-in that
/// replays `programs/partial_warp.cu`'s output on an H200: a block sum that counts its warps
/// as `blockDim.x / 32`). Every wrong value is its expectation rounded down to a multiple of
/// 32 and the multiples of 32 come out right: the last, partial warp is dropped.
#[test]
fn values_rounded_down_to_a_warp_read_as_a_dropped_partial_warp() {
    let project = Project::new();
    let output = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../parsers/fixtures/program-output/partial_warp.stdout.log"
    );
    project.tool(
        "prog",
        &format!("#!/bin/sh\n# Stand-in (hand-written): replays a captured output.\ncat '{output}'\nexit 1\n"),
    );
    project.pipeline(&check_pipeline("[bin/prog]"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let top = &json["diagnoses"][0];
    assert_eq!(top["rule"], "wrong-output", "{top:#}");
    assert_eq!(top["figures"]["dropped_group"], 32, "{top:#}");
    let said = top["notes"].to_string();
    assert!(
        said.contains("96 for 100, 192 for 200 and 224 for 250"),
        "{said}"
    );
    assert!(said.contains("partial warp"), "{said}");
    assert!(top["help"].to_string().contains("(n + 31) / 32"), "{top:#}");
}

/// `examples/wrong-elements`' H200 reference runs: the wrong elements the C++ helper recorded are
/// set against the launch Nsight Compute measured. A grid of `n / 256` blocks over 1,000
/// elements ends exactly where the wrong tail begins; a block per row whose second warp writes
/// the first warp's columns leaves exactly that warp's columns wrong.
#[test]
fn the_wrong_elements_are_set_against_the_launch_that_wrote_them() {
    let runs = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/wrong-elements/reference/artifacts");
    let mut said = Vec::new();
    for run in std::fs::read_dir(&runs)
        .expect("the reference runs")
        .flatten()
    {
        let out = Command::new(BIN)
            .args(["report", "--format", "json"])
            .arg(run.path())
            .output()
            .expect("exhibit report");
        let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        for d in json["diagnoses"].as_array().into_iter().flatten() {
            if d["rule"] == "check-failed" {
                said.push((d["notes"][0].to_string(), d["help"].to_string()));
            }
        }
    }
    assert_eq!(said.len(), 2, "{said:#?}");
    let of = |kernel: &str| {
        said.iter()
            .find(|(notes, _)| notes.contains(&format!("`{kernel}` was launched")))
            .unwrap_or_else(|| panic!("{kernel}: {said:#?}"))
    };
    let (notes, help) = of("scale");
    assert!(notes.contains("3 blocks of 256 threads"), "{notes}");
    assert!(notes.contains("end at index 767"), "{notes}");
    assert!(
        notes.contains("the block count was rounded down"),
        "{notes}"
    );
    assert!(help.contains("(n + 256 - 1) / 256"), "{help}");
    let (notes, help) = of("rowwise");
    assert!(notes.contains("16 blocks of 64 threads"), "{notes}");
    assert!(
        notes.contains("columns 32-63 are threads 32-63 of every block, warp 1"),
        "{notes}"
    );
    assert!(help.contains("In `rowwise`, follow what warp 1"), "{help}");
}
