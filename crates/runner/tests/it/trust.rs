//! What a verdict may claim: `diff` calls a root cause fixed only when the newer run re-ran
//! the stage that found it, program text reaches reports and terminals as data, and a unit
//! whose evidence could not be kept is never passed. The programs and tools are shell scripts
//! standing in for real ones (their output is hand-written and says so, except the captured
//! sanitizer log they print).

use serde_json::Value;

use crate::util::{Project, code, root_relative, stage, stderr};

/// A stand-in program steered by the file `mode`: `fail` prints a CUDA error and exits 1,
/// `hang` sleeps past its stage's timeout, anything else passes.
const PROGRAM: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
mode=$(cat mode 2>/dev/null)
case "$mode" in
  fail) echo "CUDA error: an illegal memory access was encountered" >&2; exit 1 ;;
  hang) sleep 30 ;;
esac
echo "all launches passed"
"#;

/// A stand-in compute-sanitizer steered by `mode`: `fail` prints a captured memcheck log with
/// an out-of-bounds read, `hang` sleeps, anything else prints a clean summary.
fn sanitizer() -> String {
    format!(
        r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: prints a captured log or a hand-written clean one.
if [ "$1" = "--version" ]; then echo "Compute Sanitizer 0.0 (stand-in)"; exit 0; fi
mode=$(cat mode 2>/dev/null)
case "$mode" in
  fail) cat '{}/../parsers/fixtures/compute-sanitizer/memcheck_oob_read.log'; exit 86 ;;
  hang) sleep 30 ;;
esac
echo "========= COMPUTE-SANITIZER"
echo "========= ERROR SUMMARY: 0 errors"
"#,
        env!("CARGO_MANIFEST_DIR")
    )
}

fn pipeline(stages: &str) -> String {
    format!(
        r#"target:
  build:
    command: [sh, build.sh, "{{build_dir}}"]
  program:
    command: [bin/prog]
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
  build:
    timeout: 30s
{stages}
  report:
    timeout: 30s
"#
    )
}

fn project(stages: &str) -> Project {
    let project = Project::new();
    project.tool("prog", PROGRAM);
    project.tool("compute-sanitizer", &sanitizer());
    project.write("build.sh", "echo built > \"$1/app\"\n");
    project.pipeline(&pipeline(stages));
    project
}

const CHECKS: &str = "  check:\n    needs: { gpu: false }\n    timeout: 3s\n  memcheck:\n    needs: { gpu: false, tools: [compute-sanitizer] }\n    timeout: 3s";

/// The newest run, relative to the project.
fn newest(project: &Project) -> String {
    root_relative(&project.runs().pop().expect("a run"), &project.root)
}

fn diff_json(project: &Project, a: &str, b: &str) -> (i32, Value) {
    let out = project.run(&["diff", a, b, "--format", "json"]);
    let json = serde_json::from_slice(&out.stdout).expect("the diff is JSON");
    (code(&out), json)
}

#[test]
fn diff_does_not_call_a_root_cause_fixed_when_b_never_re_ran_its_stage() {
    let project = project(CHECKS);
    project.write("mode", "fail\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let a = newest(&project);

    // B: compile-only. The check and memcheck never ran.
    project.write("mode", "pass\n");
    let out = project.run(&["pipeline.yaml", "--only", "build", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let b = newest(&project);
    let out = project.run(&["diff", &a, &b]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 3, "{text}");
    assert!(!text.contains("No regression"), "{text}");
    assert!(!text.contains("Fixed root causes"), "{text}");
    assert!(text.contains("## Not re-tested"), "{text}");
    assert!(text.contains("not run in B"), "{text}");
    let (status, json) = diff_json(&project, &a, &b);
    assert_eq!(status, 3);
    assert_eq!(json["diff"]["verdict"], "incomplete", "{json:#}");
    assert_eq!(json["diff"]["fixed"].as_array().map(Vec::len), Some(0));
    assert!(
        json["diff"]["not_retested"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );
    // Tool findings follow the same rule: memcheck's records are not fixed either.
    assert_eq!(
        json["diff"]["fixed_findings"].as_array().map(Vec::len),
        Some(0),
        "{json:#}"
    );
    assert!(
        json["diff"]["not_retested_findings"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );

    // C: the check and memcheck ran but were killed at their timeout.
    project.write("mode", "hang\n");
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stage(&project.manifest(), "check")["status"], "timed_out");
    let c = newest(&project);
    let out = project.run(&["diff", &a, &c]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 3, "{text}");
    assert!(text.contains("timed out in B"), "{text}");
    assert!(!text.contains("No regression"), "{text}");

    // D: both re-ran on the same config and arch and passed: now it is fixed.
    project.write("mode", "pass\n");
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let d = newest(&project);
    let out = project.run(&["diff", &a, &d]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{text}");
    assert!(text.contains("✅ No regression"), "{text}");
    assert!(text.contains("## Fixed root causes"), "{text}");
    assert!(!text.contains("Not re-tested"), "{text}");
    let (_, json) = diff_json(&project, &a, &d);
    assert!(
        json["diff"]["fixed_findings"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );
}
