//! Experiments through the CLI: a root cause's hypothesis tested by more runs, with real
//! sanitizer output replayed by stand-ins (hand-written scripts that pick a captured log by the
//! size the run was given).

use serde_json::Value;

use crate::util::{Project, code, stderr};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../parsers/fixtures/compute-sanitizer"
);

/// A stand-in compute-sanitizer: memcheck's real report of an unguarded tail (`oob write`, a
/// 4000-byte buffer written 32 bytes past its end by the last block) when `fails` holds for
/// `$N`, its clean report otherwise.
fn memcheck(fails: &str) -> String {
    format!(
        r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: replays captured memcheck logs.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer 2025.3.1 (stand-in)"; exit 0; fi
n=${{N:-0}}
if {fails}; then
  cat '{FIXTURES}/memcheck_oob_write.log'
  exit 86
fi
cat '{FIXTURES}/memcheck_clean.log'
"#
    )
}

fn tail_pipeline(experiments: &str) -> String {
    format!(
        "target:\n  sources: [src]\n  program:\n    command: [bin/prog]\ntoolchain:\n  cuda: \
         13.0.88\n  provision: false\n  wheels:\n    nvidia-cuda-nvcc: 13.0.88\n  tools:\n    \
         compute-sanitizer: bin/compute-sanitizer\nmatrix:\n  arch: [sm_90]\n  configs:\n    \
         n1000: {{ env: {{ N: \"1000\" }} }}\n{experiments}grace: 1s\nstages:\n  memcheck:\n    \
         configs: [n1000]\n    needs: {{ gpu: false, tools: [compute-sanitizer] }}\n  report:\n    timeout: 30s\n"
    )
}

fn tail_project(fails: &str, experiments: &str) -> Project {
    let project = Project::new();
    project.tool("compute-sanitizer", &memcheck(fails));
    project.tool(
        "prog",
        "#!/bin/sh\n# Stand-in program (hand-written).\necho \"n=$N\"\n",
    );
    project.write("src/oob.cu", "// stand-in source\n");
    project.pipeline(&tail_pipeline(experiments));
    project
}

fn report_json(project: &Project) -> Value {
    let run = project.runs().pop().expect("a run");
    let out = project.run(&["report", "--format", "json", &run.to_string_lossy()]);
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// The tail at N = 1000 (not a multiple of 32) is tested at 992 and 1024 (multiples: clean) and
/// 1000 and 1040 (not: failing). The stand-in fails exactly off the multiples: confirmed, and
/// the root cause says so with high confidence. Each run is a unit of its own in the run
/// directory; an unchanged re-run serves every one from the cache.
#[test]
fn a_tail_is_confirmed_by_the_sizes_around_it() {
    let project = tail_project(r#"[ $((n % 32)) -ne 0 ]"#, "knobs:\n  size: { env: N }\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let experiments = json["experiments"].as_array().expect("experiments");
    assert_eq!(experiments.len(), 1, "{experiments:#?}");
    let e = &experiments[0];
    assert_eq!(e["outcome"], "confirmed", "{e:#}");
    assert_eq!(
        e["sentence"],
        "Fails exactly when N % 32 != 0: 992 and 1024 pass, 1000 and 1040 fail."
    );
    let rows: Vec<(&str, &str)> = e["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["label"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("N=992", "clean"),
            ("N=1024", "clean"),
            ("N=1000", "fails"),
            ("N=1040", "fails")
        ]
    );
    // Each trial's evidence is its own unit directory.
    for r in e["rows"].as_array().unwrap() {
        let log = r["evidence"].as_str().expect("evidence");
        assert!(log.starts_with("memcheck/n1000@N="), "{log}");
    }
    let cause = &json["diagnoses"][0];
    assert_eq!(cause["rule"], "out-of-bounds", "{cause:#}");
    assert_eq!(cause["confidence"], "high", "{cause:#}");
    assert!(
        cause["notes"]
            .to_string()
            .contains("Confirmed by experiment"),
        "{cause:#}"
    );
    let md = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(md.contains("## Experiments"), "{md}");
    assert!(md.contains("**Prediction:**"), "{md}");
    // The trials are not the run's own configs: the cause names only `n1000`.
    assert_eq!(cause["configs"], serde_json::json!(["n1000"]), "{cause:#}");

    let again = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&again), 1, "{}", stderr(&again));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["outcome"], "confirmed", "{e:#}");
    assert_eq!(e["cached"], 4, "every trial from the cache: {e:#}");
}

/// A program that fails at every size, multiples of 32 included: the tail explanation is
/// refuted and withdrawn, the fault stands.
#[test]
fn a_failure_at_the_multiples_refutes_the_tail() {
    let project = tail_project("true", "experiments: auto\nknobs:\n  size: { env: N }\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["outcome"], "refuted", "{e:#}");
    assert!(
        e["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with("Not a tail of 32: fails at 992 and 1024 too")),
        "{e:#}"
    );
    let cause = &json["diagnoses"][0];
    assert_eq!(cause["level"], "error", "{cause:#}");
    assert_eq!(cause["confidence"], "low", "{cause:#}");
    assert!(
        cause["notes"].to_string().contains("Refuted by experiment"),
        "{cause:#}"
    );
}

/// Without `knobs:` or `experiments: auto` nothing more runs.
#[test]
fn experiments_run_only_when_asked() {
    let project = tail_project(r#"[ $((n % 32)) -ne 0 ]"#, "");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    assert_eq!(json["experiments"], serde_json::json!([]), "{json:#}");
    let manifest = project.manifest();
    assert!(manifest.get("experiments").is_none(), "{manifest:#}");
}

/// A stand-in racecheck replaying a real shared-memory race, and a check whose output is
/// `output`: eight identical runs of the check compared.
fn race_project(output: &str) -> Project {
    let project = Project::new();
    project.tool(
        "compute-sanitizer",
        &format!(
            r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: replays a captured racecheck log.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer 2025.3.1 (stand-in)"; exit 0; fi
cat '{FIXTURES}/racecheck_block_race.log'
exit 86
"#
        ),
    );
    project.tool(
        "prog",
        &format!("#!/bin/sh\n# Stand-in program (hand-written).\n{output}\necho 'time: 1.25 ms'\n"),
    );
    project.write("src/block_race.cu", "// stand-in source\n");
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [bin/prog]\ntoolchain:\n  cuda: \
         13.0.88\n  provision: false\n  wheels:\n    nvidia-cuda-nvcc: 13.0.88\n  tools:\n    \
         compute-sanitizer: bin/compute-sanitizer\nmatrix:\n  arch: [sm_90]\n  configs:\n    \
         race: {}\nexperiments: auto\ngrace: 1s\nstages:\n  racecheck:\n    needs: { gpu: \
         false, tools: [compute-sanitizer] }\n  check:\n    needs: { gpu: false }\n  report:\n    \
         timeout: 30s\n",
    );
    project
}

/// Outputs that differ between identical runs confirm the race; the timing line each run
/// prints is not compared.
#[test]
fn a_race_whose_output_varies_is_confirmed() {
    let project = race_project("echo \"sum $((EXHIBIT_TRIAL % 3))\"");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["kind"], "race", "{e:#}");
    assert_eq!(e["outcome"], "confirmed", "{e:#}");
    assert_eq!(
        e["sentence"],
        "The output differs between identical runs: 5 of 8 differ from the first (3 distinct outputs)."
    );
}

/// Identical outputs: the race has not shown yet, and the report says so without dropping it.
#[test]
fn a_race_whose_output_holds_is_not_seen_yet() {
    let project = race_project("echo 'sum 42'");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["outcome"], "not_seen", "{e:#}");
    assert!(
        e["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with("Identical in 8 runs: the race has not shown")),
        "{e:#}"
    );
    let cause = &json["diagnoses"][0];
    assert_eq!(cause["rule"], "shared-memory-race", "{cause:#}");
    assert_eq!(cause["level"], "error", "{cause:#}");
}

/// A size the program takes on its command line (`{env:N}` in its argv, the value from the
/// config's `env:`) is varied the same way: the stand-in reads it from its last argument.
#[test]
fn a_size_given_on_the_command_line_is_a_knob_too() {
    let project = Project::new();
    project.tool(
        "compute-sanitizer",
        &format!(
            r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: replays captured memcheck logs by the size argument.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer 2025.3.1 (stand-in)"; exit 0; fi
for a in "$@"; do n=$a; done
if [ $((n % 32)) -ne 0 ]; then
  cat '{FIXTURES}/memcheck_oob_write.log'
  exit 86
fi
cat '{FIXTURES}/memcheck_clean.log'
"#
        ),
    );
    project.tool(
        "prog",
        "#!/bin/sh\n# Stand-in program (hand-written).\necho \"n=$1\"\n",
    );
    project.write("src/oob.cu", "// stand-in source\n");
    project.pipeline(
        &tail_pipeline("knobs:\n  size: { env: N }\n")
            .replace("command: [bin/prog]", "command: [bin/prog, \"{env:N}\"]"),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(
        e["sentence"], "Fails exactly when N % 32 != 0: 992 and 1024 pass, 1000 and 1040 fail.",
        "{e:#}"
    );
}

/// `{env:NAME}` needs the value in every config; a knob a build must see needs `{defines}` in
/// the build command: both refused when the pipeline is read, naming the key.
#[test]
fn a_knob_that_cannot_reach_its_program_is_refused() {
    let project = tail_project("true", "knobs:\n  size: { env: N }\n");
    project.pipeline(
        &tail_pipeline("").replace("command: [bin/prog]", "command: [bin/prog, \"{env:M}\"]"),
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`{env:M}` takes the config's `M`, and config `n1000` has none"),
        "{}",
        stderr(&out)
    );
    project.pipeline(&tail_pipeline(
        "knobs:\n  registers: { flag: \"-maxrregcount={value}\" }\n",
    ));
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("knobs.registers") && stderr(&out).contains("{defines}"),
        "{}",
        stderr(&out)
    );
}

/// Configs that vary one integer value whose name says a size show it as a knob, found rather
/// than named: `exhibit check` lists it with each config's value, and experiments stay off
/// until the pipeline asks for them.
#[test]
fn a_value_the_configs_vary_is_found_as_a_knob() {
    let project = tail_project("true", "");
    project.pipeline(&tail_pipeline("").replace(
        "    n1000: { env: { N: \"1000\" } }\n",
        "    n1000: { env: { N: \"1000\" } }\n    n4096: { env: { N: \"4096\" } }\n",
    ));
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "knob size      env `N` (found where the configs vary it): n1000=1000, n4096=4096"
        ),
        "{text}"
    );
    assert!(text.contains("experiments off"), "{text}");
}

/// Trials that change only the program's environment run on the run's own build: the build
/// script runs once, and each trial's program is the one it built.
#[test]
fn trials_that_build_alike_share_the_runs_build() {
    let project = race_project("echo \"sum 42\"");
    project.tool(
        "build",
        "#!/bin/sh\n# Stand-in build (hand-written): counts its runs, writes the program.\n\
         echo run >> build-runs.txt\nmkdir -p \"$1\"\nprintf '#!/bin/sh\\necho sum 42\\n' > \"$1/prog\"\n\
         chmod +x \"$1/prog\"\n",
    );
    let yaml = std::fs::read_to_string(project.root.join("pipeline.yaml")).expect("pipeline");
    project.pipeline(
        &yaml
            .replace(
                "  program:\n    command: [bin/prog]\n",
                "  build:\n    command: [bin/build, \"{build_dir}\"]\n  program:\n    command: [\"{build_dir}/prog\"]\n",
            )
            .replace("stages:\n", "stages:\n  build:\n    needs: { tools: [] }\n"),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let runs = std::fs::read_to_string(project.root.join("build-runs.txt")).expect("build runs");
    assert_eq!(runs.lines().count(), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["outcome"], "not_seen", "{e:#}");
    assert_eq!(
        e["runs"], 8,
        "the eight checks, no build of their own: {e:#}"
    );
}

/// Cases whose shapes vary the sequence length make it a size knob, found: the trials are cases
/// of their own (`short@S=96`, ...), run on the cause's config, the program taking `{shape}`.
#[test]
fn cases_that_vary_the_sequence_length_give_a_size_knob() {
    let project = Project::new();
    project.tool(
        "compute-sanitizer",
        &format!(
            r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: replays captured memcheck logs by the shape's S.
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer 2025.3.1 (stand-in)"; exit 0; fi
for a in "$@"; do shape=$a; done
s=$(echo "$shape" | cut -d, -f3)
if [ $((s % 32)) -ne 0 ]; then
  cat '{FIXTURES}/memcheck_oob_write.log'
  exit 86
fi
cat '{FIXTURES}/memcheck_clean.log'
"#
        ),
    );
    project.tool(
        "prog",
        "#!/bin/sh\n# Stand-in program (hand-written).\necho \"shape $1\"\n",
    );
    project.write("src/oob.cu", "// stand-in source\n");
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [bin/prog, \"{shape}\"]\ntoolchain:\n  \
         cuda: 13.0.88\n  provision: false\n  wheels:\n    nvidia-cuda-nvcc: 13.0.88\n  tools:\n    \
         compute-sanitizer: bin/compute-sanitizer\ncases:\n  short: { shape: \"1,1,100,64\" }\n  \
         long: { shape: \"1,1,256,64\" }\nexperiments: auto\ngrace: 1s\nstages:\n  memcheck:\n    \
         cases: [short, long]\n    needs: { gpu: false, tools: [compute-sanitizer] }\n  report:\n    \
         timeout: 30s\n",
    );
    let check = project.run(&["check", "pipeline.yaml"]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains("knob size      the cases' sequence length `S` (found where the cases vary it): long=256, short=100"),
        "{text}"
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(
        e["sentence"], "Fails exactly when S % 32 != 0: 96 and 128 pass, 100 and 144 fail.",
        "{e:#}"
    );
    assert_eq!(e["runs"], 4, "{e:#}");
    for r in e["rows"].as_array().unwrap() {
        let log = r["evidence"].as_str().expect("evidence");
        assert!(log.contains("/short@S="), "{log}");
    }
}

/// A run of chosen stages (`--only`, every step of a bisection) runs only those.
#[test]
fn a_run_of_chosen_stages_runs_no_experiment() {
    let project = tail_project(r#"[ $((n % 32)) -ne 0 ]"#, "knobs:\n  size: { env: N }\n");
    let out = project.run(&["pipeline.yaml", "--only", "memcheck"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(project.manifest().get("experiments").is_none());
}

/// A program whose check writes an `exhibit.results/1` failure when `fails` holds for `$N`
/// (a stand-in, hand-written), in a pipeline whose `size` knob is `N` = 1024.
fn sizes_project(fails: &str) -> Project {
    let project = Project::new();
    project.tool(
        "prog",
        &format!(
            "#!/bin/sh\n# Stand-in program (hand-written): its check fails when {fails}.\n\
             n=${{N:-0}}\nif {fails}; then ok=false; else ok=true; fi\n\
             printf '{{\"schema\":\"exhibit.results/1\",\"program\":\"prog\",\"results\":[{{\"name\":\"sum\",\"passed\":%s}}]}}\\n' \"$ok\" > \"$EXHIBIT_OUT\"\n\
             [ \"$ok\" = true ]\n"
        ),
    );
    project.write("src/sum.cu", "// stand-in source\n");
    project.pipeline(
        "target:\n  sources: [src]\n  program:\n    command: [bin/prog]\nmatrix:\n  arch: [sm_90]\n  \
         configs:\n    n1024: { env: { N: \"1024\" } }\nexperiments: auto\nknobs:\n  size: { env: N }\n\
         grace: 1s\nstages:\n  check:\n    needs: { gpu: false }\n  report:\n    timeout: 30s\n",
    );
    project
}

/// A wrong output at N = 1024 is checked again at 512, 256, 128, 64 and 32: the stand-in fails
/// from 128 up, so the smallest failing size is 128 and the fault starts above 64.
#[test]
fn a_wrong_output_is_checked_at_smaller_sizes_for_the_smallest_that_fails() {
    let project = sizes_project("[ $n -ge 128 ]");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["kind"], "sizes", "{e:#}");
    assert_eq!(e["outcome"], "confirmed", "{e:#}");
    assert_eq!(
        e["sentence"],
        "The smallest failing size tried is N = 128; it passes at 64 and below: the fault \
         starts between 64 and 128."
    );
    let rows: Vec<(&str, &str)> = e["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| (r["label"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("N=512", "fails"),
            ("N=256", "fails"),
            ("N=128", "fails"),
            ("N=64", "passes"),
            ("N=32", "passes")
        ]
    );
    let cause = &json["diagnoses"][0];
    assert_eq!(cause["rule"], "check-failed", "{cause:#}");
    assert!(
        cause["notes"]
            .to_string()
            .contains("Confirmed by experiment"),
        "{cause:#}"
    );
}

/// Failing at every smaller size too: no size bound shows, and the check's failure stands.
#[test]
fn a_wrong_output_at_every_size_shows_no_bound() {
    let project = sizes_project("true");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let json = report_json(&project);
    let e = &json["experiments"][0];
    assert_eq!(e["outcome"], "not_seen", "{e:#}");
    assert!(
        e["sentence"]
            .to_string()
            .contains("Fails at every smaller size too"),
        "{e:#}"
    );
    let cause = &json["diagnoses"][0];
    assert_eq!(cause["rule"], "check-failed", "{cause:#}");
    assert_eq!(cause["level"], "error", "{cause:#}");
}
