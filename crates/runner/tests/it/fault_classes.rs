//! Fault classes through the CLI, with real tool output replayed by stand-ins: what the report
//! concludes from the runner's own searches.

use crate::util::{Project, code, stage, stderr};

/// A stand-in compute-sanitizer replaying memcheck's real output on
/// `examples/fault-classes/src/slot_counter.cu` (captured on an H100; see the fixtures'
/// sidecars): clean up to 8 launches, an out-of-bounds write from the 9th. Without
/// `EXHIBIT_LAUNCHES` the program runs its default 25 launches.
fn sanitizer() -> String {
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../parsers/fixtures/compute-sanitizer"
    );
    format!(
        r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: replays captured memcheck logs.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer 2025.3.1 (stand-in)"; exit 0; fi
n=${{EXHIBIT_LAUNCHES:-25}}
if [ "$n" -ge 9 ]; then
  cat '{fixtures}/memcheck_slot_counter_9_launches.log'
  exit 86
fi
cat '{fixtures}/memcheck_slot_counter_8_launches.log'
"#
    )
}

/// A `target:` pipeline (`target` is the block's body) with one config on sm_90, the stand-in
/// nvcc and the stand-in `tools` under `bin/`, `stages` and a report.
fn pipeline(target: &str, tools: &[&str], config: &str, stages: &str) -> String {
    let tools: String = tools
        .iter()
        .map(|t| format!("    {t}: bin/{t}\n"))
        .collect();
    format!(
        "target:\n{target}toolchain:\n  cuda: 13.0.88\n  provision: false\n  wheels:\n    \
         nvidia-cuda-nvcc: 13.0.88\n  tools:\n    nvcc: bin/nvcc\n{tools}matrix:\n  arch: \
         [sm_90]\n  configs:\n    {config}: {{}}\ngrace: 1s\nstages:\n{stages}  report:\n    \
         timeout: 30s\n"
    )
}

#[test]
fn a_fault_the_program_cannot_see_is_bisected_under_memcheck() {
    let project = Project::new();
    project.tool("compute-sanitizer", &sanitizer());
    // The program passes at every launch count, as slot_counter does without the sanitizer.
    project.tool(
        "prog",
        "#!/bin/sh\n# Stand-in program (hand-written).\necho \"PASS scale_and_log, ${EXHIBIT_LAUNCHES:-25} launches\"\n",
    );
    project.write("src/slot_counter.cu", "// stand-in source\n");
    project.pipeline(&pipeline(
        r#"  sources: [src]
  program:
    command: [bin/prog]
"#,
        &["compute-sanitizer"],
        "slot_counter",
        r#"  memcheck:
    needs: { gpu: false, tools: [compute-sanitizer] }
  stress:
    needs: { gpu: false }
    launches: 32
    args: [--launches, "{launches}"]
"#,
    ));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let stress = stage(&manifest, "stress");
    assert_eq!(stress["status"], "findings", "{stress:#}");
    let search = &stress["launch_search"]["memcheck"];
    assert_eq!(search["clean_at"], 8, "{stress:#}");
    assert_eq!(search["fails_at"], 9, "{stress:#}");
    assert!(
        stress["reason"]
            .as_str()
            .is_some_and(|r| r.contains("memcheck is clean at 8 launches and finds errors from 9")),
        "{stress:#}"
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains("Failing: 1 root cause"), "{report}");
    assert!(
        report.contains("### 1. State that survives launches: from launch 9 on, a global write past the end of a 32-byte buffer"),
        "{report}"
    );
    assert!(
        report.contains("8 launches of one 4-byte write each fill the 32-byte buffer exactly"),
        "{report}"
    );
    // The search reads as an experiment: the counts tried and where the fault starts.
    assert!(
        report.contains("### Repeated launches: confirmed"),
        "{report}"
    );
    assert!(
        report.contains(
            "The program's own runs are clean at every count up to 32; under memcheck clean at \
             8 launches, errors from 9 launches on."
        ),
        "{report}"
    );
}

/// A program that prints its error through a repr (a literal `\n` between lines, as Python's
/// exception reprs do): the failure reason and the report keep the first line, no escape.
#[test]
fn a_repr_printed_error_reads_as_its_first_line() {
    let project = Project::new();
    project.tool(
        "prog",
        "#!/bin/sh\n# Stand-in program (hand-written).\n\
         printf '%s\\n' \"FAILED test_attn.py::test_tail - RuntimeError('CUDA error: an illegal memory access was encountered\\\\nCUDA kernel errors might be asynchronously reported')\" >&2\n\
         exit 1\n",
    );
    project.pipeline(&pipeline(
        r#"  sources: [bin]
  program:
    command: [bin/prog]
"#,
        &[],
        "plain",
        r#"  check:
    needs: { gpu: false }
"#,
    ));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let reason = stage(&project.manifest(), "check")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.ends_with("an illegal memory access was encountered"),
        "{reason}"
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(!report.contains("\\n"), "{report}");
}

/// The profile stage of a target measures the kernels its build defined (their mangled names
/// from the build's ptxas output), not the first kernel the process launches (a framework's).
#[test]
fn the_profile_stage_measures_the_kernels_the_build_defined() {
    let project = Project::new();
    let ptxas = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../parsers/fixtures/ptxas/slow_bank.log"
    );
    // The build prints a real ptxas capture (slow.cu's seven kernels) and writes the program.
    project.write(
        "src/build.sh",
        &format!(
            "# Stand-in build (hand-written): prints a captured ptxas log.\ncat '{ptxas}' >&2\nprintf '#!/bin/sh\\necho ok\\n' > \"$1/prog\"\nchmod +x \"$1/prog\"\n"
        ),
    );
    // A stand-in ncu that records its arguments, writes a report where `-o` says, and answers
    // `--import` with the real exports of the bank-conflict capture (examples/slow-kernels).
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../parsers/fixtures");
    project.tool(
        "ncu",
        &format!(
            r#"#!/bin/sh
# Stand-in for ncu in tests: replays captured exports.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute 0.0 (stand-in)"; exit 0; fi
echo "$@" >> "$(dirname "$0")/ncu.args"
case " $* " in
  *" --page details "*) cat '{fixtures}/ncu-csv/slow_bank_details.log'; exit 0 ;;
  *" --page source "*) cat '{fixtures}/ncu-source/slow_bank_source.log'; exit 0 ;;
esac
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then : > "$2.ncu-rep"; fi
  shift
done
echo "==PROF== Disconnected from process 1"
"#
        ),
    );
    project.pipeline(&pipeline(
        r#"  sources: [src]
  build:
    command: [sh, src/build.sh, "{build_dir}"]
  program:
    command: ["{build_dir}/prog"]
"#,
        &["ncu"],
        "plain",
        r#"  build:
    timeout: 30s
  profile:
    needs: { gpu: false, tools: [ncu] }
"#,
    ));
    let out = project.run(&["pipeline.yaml"]);
    let args = std::fs::read_to_string(project.root.join("bin/ncu.args"))
        .unwrap_or_else(|_| panic!("ncu ran: {}", stderr(&out)));
    // A stage without a launch filter of its own gets the runner's bounded default: each kernel
    // at its first two launches (ncu's invocation numbers), the names inside the kernel id,
    // since ncu ignores `--kernel-name` beside `--kernel-id`.
    let filter = args
        .split("--kernel-name-base mangled --kernel-id ::regex:^(")
        .nth(1)
        .and_then(|rest| rest.split(")$:^[12]$ ").next())
        .unwrap_or_else(|| panic!("no kernel filter: {args}"));
    assert!(!args.contains("--kernel-name "), "{args}");
    let mut names: Vec<&str> = filter.split('|').collect();
    names.sort();
    assert_eq!(
        names,
        [
            "_Z10lookup_sumPKiPKfPfi",
            "_Z12staged_scalePKfPfi",
            "_Z4axpbPKfPfi",
            "_Z4polyPKfPfi",
            "_Z6matmulPK6__halfS1_Pfi",
            "_Z6reducePKfPfi",
            "_Z9transposePKfPf"
        ],
        "{args}"
    );
    // The sections a diagnosis needs, with source correlation, into a report kept in the run.
    assert!(
        args.contains("--import-source yes") && args.contains("--section SourceCounters"),
        "{args}"
    );
    let manifest = project.manifest();
    let profile = stage(&manifest, "profile");
    assert_eq!(profile["status"], "passed", "{profile:#}");
    assert_eq!(
        profile["unit"]["profile_launches"],
        serde_json::json!({"chosen_by": "first_of_each_kernel", "per_kernel": 2}),
        "{profile:#}"
    );
    assert!(
        profile["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("profiling took ")),
        "{profile:#}"
    );
    let logs: Vec<&str> = profile["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .filter_map(|l| l["path"].as_str())
        .collect();
    for name in ["ncu.csv", "source.csv", "profile.ncu-rep"] {
        assert!(logs.iter().any(|l| l.ends_with(name)), "{name}: {logs:?}");
    }
    // The replayed capture's cause, at its line, and the verdict.
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(
        report.contains("🐢 Slow: 1 cause, top: Shared-memory bank conflicts"),
        "{report}"
    );
    assert!(report.contains("slow.cu:45"), "{report}");
    // Which launches the runner chose, and how to choose another.
    assert!(
        report.contains("**profile**: the runner profiled the first 2 launches of each kernel"),
        "{report}"
    );
}

/// A Python program whose kernels are compiled just in time has no build log to name them: its
/// profile leaves out the framework's own kernels instead of measuring the first one launched.
#[test]
fn a_python_programs_profile_leaves_out_the_frameworks_kernels() {
    let project = Project::new();
    recording_ncu(&project);
    python_profile(&project, "");
    let out = project.run(&["pipeline.yaml"]);
    let args = std::fs::read_to_string(project.root.join("bin/ncu.args"))
        .unwrap_or_else(|_| panic!("ncu ran: {}", stderr(&out)));
    // The framework's kernels left out inside the bounded default's kernel id, whose fields
    // ncu splits at colons: the filter's own are written `\x3a`.
    assert!(
        args.contains(
            r"--kernel-name-base demangled --kernel-id ::regex:^(?!(void )?(at\x3a\x3a|c10\x3a\x3a|"
        ),
        "{args}"
    );
    assert!(args.contains(":^[12]$ "), "{args}");
}

/// A profile stage whose ncu arguments choose launches of their own keeps exactly them: the
/// runner adds its kernel-name filter as before and no launch selection (the corpus's pipelines
/// count launches this way, and their committed runs must render as they did).
#[test]
fn a_profile_stage_with_its_own_launch_selection_keeps_its_arguments() {
    let project = Project::new();
    recording_ncu(&project);
    python_profile(
        &project,
        "    args: [--launch-count=1, --section, SpeedOfLight]\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    let args = std::fs::read_to_string(project.root.join("bin/ncu.args"))
        .unwrap_or_else(|_| panic!("ncu ran: {}", stderr(&out)));
    assert!(!args.contains("--kernel-id"), "{args}");
    assert!(
        args.contains("--kernel-name-base demangled --kernel-name regex:^(?!(void )?(at::|c10::"),
        "{args}"
    );
    assert!(
        args.contains("--launch-count=1 --section SpeedOfLight "),
        "{args}"
    );
    let manifest = project.manifest();
    let profile = stage(&manifest, "profile");
    assert_eq!(
        profile["unit"]["profile_launches"],
        serde_json::json!({"chosen_by": "stage"}),
        "{profile:#}"
    );
}

/// A target's pipeline with a profile and a baseline profiles the baseline's command too, once,
/// with the runner's bounded default over every kernel it launches (no framework filter: the
/// baseline's kernels are the framework's), recorded as the baseline's.
#[test]
fn a_pipeline_with_a_baseline_profiles_the_baselines_kernels_too() {
    let project = Project::new();
    recording_ncu(&project);
    project.write("py/sdpa.py", "print('sdpa: 1.0 ms')\n");
    python_profile(
        &project,
        r#"    args: [--launch-count, "1"]
  baseline:
    needs: { gpu: false }
    command: [python3, py/sdpa.py]
    pattern: '^sdpa: (?P<value>[0-9.]+) (?P<unit>ms)$'
    label: attn
"#,
    );
    let out = project.run(&["pipeline.yaml"]);
    let args = std::fs::read_to_string(project.root.join("bin/ncu.args"))
        .unwrap_or_else(|_| panic!("ncu ran: {}", stderr(&out)));
    let lines: Vec<&str> = args
        .lines()
        .filter(|l| !l.starts_with("--import "))
        .collect();
    let of_baseline = lines
        .iter()
        .find(|l| l.contains("py/sdpa.py"))
        .unwrap_or_else(|| panic!("the baseline was profiled: {args}"));
    // The bounded default over every kernel, and none of the program's profile arguments.
    assert!(
        of_baseline.contains("--kernel-id :::^[12]$ "),
        "{of_baseline}"
    );
    assert!(!of_baseline.contains("--launch-count"), "{of_baseline}");
    assert!(!of_baseline.contains("--kernel-name"), "{of_baseline}");
    // The program's own profile keeps its stage's arguments.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("py/run.py") && l.contains("--launch-count 1")),
        "{args}"
    );
    let manifest = project.manifest();
    let profiles = crate::util::stages(&manifest, "profile");
    assert_eq!(profiles.len(), 2, "{profiles:#?}");
    assert!(
        profiles.iter().any(|s| s["unit"]["target"] == "baseline"),
        "{profiles:#?}"
    );
}

/// A kernel built without line information (a framework's, a library's) has no CUDA source
/// page: ncu only warns. The profile then exports the SASS page too, and keeps it as a source
/// page of the unit: the kernel's instruction mix (its tensor-core instructions) comes from it.
#[test]
fn a_kernel_without_line_information_keeps_its_sass_page() {
    let project = Project::new();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../parsers/fixtures");
    // Replays real exports: the warning ncu printed for SDPA's kernels on an H100, the SASS
    // page of cuDNN's attention kernel.
    project.tool(
        "ncu",
        &format!(
            r#"#!/bin/sh
# Stand-in for ncu in tests: replays captured exports.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute 0.0 (stand-in)"; exit 0; fi
case " $* " in
  *" --page details "*) exit 0 ;;
  *" --print-source cuda,sass "*) cat '{fixtures}/ncu-source/no_lineinfo_source.log'; exit 0 ;;
  *" --print-source sass "*) cat '{fixtures}/ncu-source/sdpa_cudnn_sass_only_source.log'; exit 0 ;;
esac
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then : > "$2.ncu-rep"; fi
  shift
done
"#
        ),
    );
    python_profile(&project, "");
    let out = project.run(&["pipeline.yaml"]);
    let manifest = project.manifest();
    let profile = stage(&manifest, "profile");
    let sass_page = profile["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .find(|l| {
            l["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("source.sass.csv"))
        })
        .unwrap_or_else(|| panic!("no SASS page kept: {profile:#}\n{}", stderr(&out)));
    assert_eq!(sass_page["format"], "ncu-source", "{sass_page}");
    let run = project.runs().pop().expect("a run");
    let report = project.run(&["report", "--format", "json", run.to_str().expect("utf-8")]);
    let json = String::from_utf8_lossy(&report.stdout);
    assert!(json.contains("source.sass.csv"), "{json}");
}

/// A Python program (`py/run.py`, printing "ok") whose pipeline has a profile stage, with the
/// stand-in ncu under `bin/`; `more` is YAML appended to the stage (its args) and after it.
fn python_profile(project: &Project, more: &str) {
    project.write("py/run.py", "print('ok')\n");
    project.pipeline(&pipeline(
        r#"  sources: [py]
  program:
    command: [python3, py/run.py]
"#,
        &["ncu"],
        "plain",
        &format!("  profile:\n    needs: {{ gpu: false, tools: [ncu] }}\n{more}"),
    ));
}

/// A stand-in ncu (hand-written) that only records each command line in `bin/ncu.args`.
fn recording_ncu(project: &Project) {
    project.tool(
        "ncu",
        "#!/bin/sh\n# Stand-in for ncu in tests (hand-written).\nif [ \"$1\" = \"--version\" ]; then echo \"NVIDIA (R) Nsight Compute 0.0 (stand-in)\"; exit 0; fi\necho \"$@\" >> \"$(dirname \"$0\")/ncu.args\"\n",
    );
}

/// `examples/fault-classes`' H200 reference run: where memcheck reports errors from the first
/// launch tried, the repeated-launch hypothesis is refuted (the fault is there at every launch),
/// never confirmed; where memcheck is clean at 8 and fails from 9, it is confirmed.
#[test]
fn errors_under_memcheck_from_the_first_launch_refute_repeated_launches() {
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fault-classes/reference/artifacts/20261124T122821Z-abcc59df");
    let out = std::process::Command::new(crate::util::BIN)
        .args(["report", "--format", "json"])
        .arg(&run)
        .output()
        .expect("exhibit report");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = |config: &str| {
        json["launch_searches"]
            .as_array()
            .expect("launch searches")
            .iter()
            .find(|r| r["config"] == config)
            .cloned()
            .unwrap_or_else(|| panic!("{config}"))
    };
    let off_by_one = row("off_by_one");
    assert_eq!(off_by_one["outcome"], "refuted", "{off_by_one:#}");
    assert!(
        off_by_one["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("the fault is there at every launch")),
        "{off_by_one:#}"
    );
    let confirmed: Vec<&serde_json::Value> = json["launch_searches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "confirmed")
        .collect();
    assert!(
        confirmed.iter().all(|r| r["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("clean at"))),
        "{confirmed:#?}"
    );
}
