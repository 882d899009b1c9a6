//! pipeline.yaml errors are refused with their file, line, column and the expected shape.

use crate::util::{Project, code, pipeline, stderr};

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .expect("the needle is in the text")
}

#[test]
fn an_unknown_key_is_refused_with_its_location_and_the_known_keys() {
    let project = Project::new();
    let yaml = pipeline("").replace("  sass:\n    timeout: 30s", "  sass:\n    timout: 30s");
    project.pipeline(&yaml);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let line = line_of(&yaml, "timout");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "pipeline.yaml:{line}:5: stages.sass: unknown field `timout`"
        )),
        "{err}"
    );
    assert!(
        err.contains("expected one of `kind`, `enabled`, `timeout`"),
        "{err}"
    );
}

/// A stage named a typo away from a kind (`memchek:`), or given such a `kind:`, is refused with
/// the kind it is nearest; a name nowhere near one gets no guess.
#[test]
fn a_mistyped_stage_kind_is_refused_with_the_kind_it_is_nearest() {
    let project = Project::new();
    for (stages, said) in [
        (
            "  memchek: {}\n",
            "`memchek` is not a stage kind (did you mean `memcheck`?)",
        ),
        (
            "  tests:\n    kind: chek\n",
            "unknown stage kind `chek` (did you mean `check`?)",
        ),
        (
            "  lint: {}\n",
            "`lint` is not a stage kind, so give it a `kind:`",
        ),
    ] {
        let yaml = pipeline("").replace("stages:\n", &format!("stages:\n{stages}"));
        project.pipeline(&yaml);
        let out = project.run(&["check", "pipeline.yaml"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(said), "{stages}: {err}");
    }
}

#[test]
fn a_value_of_the_wrong_type_is_refused_with_the_expected_shape() {
    let project = Project::new();
    let yaml = pipeline("").replace("\"2,8,512,64\"", "\"2,8,512\"");
    project.pipeline(&yaml);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    let line = line_of(&yaml, "2,8,512");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("pipeline.yaml:{line}:")) && err.contains("cases.seed.shape"),
        "{err}"
    );
    assert!(err.contains("expected `B,H,S,D`"), "{err}");
}

#[test]
fn a_duration_without_a_unit_is_refused() {
    let project = Project::new();
    let yaml = pipeline("").replace("  sass:\n    timeout: 30s", "  sass:\n    timeout: 30");
    project.pipeline(&yaml);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    let line = line_of(&yaml, "  sass:") + 1;
    assert!(
        err.contains(&format!(
            "pipeline.yaml:{line}:14: stages.sass.timeout: invalid duration `30`"
        )),
        "{err}"
    );
    assert!(err.contains("expected e.g. `90s` or `10m`"), "{err}");
}

/// A duration no deadline can reach (`u64::MAX` seconds overflowed the clock and hung the
/// run) is refused where it is written.
#[test]
fn a_duration_past_a_week_is_refused_at_its_line() {
    let project = Project::new();
    let yaml = pipeline("").replace(
        "  sass:\n    timeout: 30s",
        "  sass:\n    timeout: 18446744073709551615s",
    );
    project.pipeline(&yaml);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    let line = line_of(&yaml, "  sass:") + 1;
    assert!(
        err.contains(&format!("pipeline.yaml:{line}:14: stages.sass.timeout:")),
        "{err}"
    );
    assert!(err.contains("longer than a week"), "{err}");
}

#[test]
fn a_reference_to_an_undefined_case_names_the_key_and_its_line() {
    let project = Project::new();
    let yaml = pipeline(
        "  memcheck:\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    cases: [sed]\n",
    );
    project.pipeline(&yaml);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    let line = line_of(&yaml, "cases: [sed]");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "pipeline.yaml:{line}:5: stages.memcheck.cases[0]: no case `sed` in cases (defined: seed)"
        )),
        "{err}"
    );
}

#[test]
fn a_missing_kernel_source_is_refused() {
    let project = Project::new();
    project.pipeline(&pipeline("").replace("kernel/attention.cu", "kernel/missing.cu"));
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("kernel.source: `kernel/missing.cu` does not exist"));
}

#[test]
fn malformed_yaml_is_refused_with_its_location() {
    let project = Project::new();
    project.pipeline("kernel: [unclosed\n");
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("pipeline.yaml:"), "{}", stderr(&out));
}

#[test]
fn check_accepts_a_valid_pipeline_and_runs_nothing() {
    let project = Project::new();
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("pipeline.yaml: ok: 1 config (1 build)"),
        "{stdout}"
    );
    assert_eq!(project.nvcc_calls(), 0);
    assert!(project.runs().is_empty());
}

#[test]
fn the_repository_pipeline_is_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(crate::util::BIN)
        .args(["check", "pipeline.yaml"])
        .current_dir(&root)
        .output()
        .expect("start the runner");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Its four configs each pin one of the matrix's two archs: four builds, not eight.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("pipeline.yaml: ok: 4 configs (4 builds), "),
        "{stdout}"
    );
}

#[test]
fn a_duplicate_key_is_refused_naming_both_lines() {
    let project = Project::new();
    let text = pipeline("").replace(
        "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n",
        "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n    small: { HEAD_DIM: 64, BLOCK_M: 128 }\n",
    );
    project.pipeline(&text);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    let first = text
        .lines()
        .position(|l| l.contains("small: { HEAD_DIM: 64, BLOCK_M: 64 }"))
        .expect("the first")
        + 1;
    assert!(
        err.contains("duplicate key `small`")
            && err.contains(&format!("(lines {first} and {})", first + 1)),
        "{err}"
    );
}

#[test]
fn a_case_that_runs_on_no_config_is_refused() {
    let project = Project::new();
    project.pipeline(
        &pipeline("  check:\n    needs: { gpu: true }\n    cases: [seed]\n").replace(
            "seed: { shape: \"2,8,512,64\" }",
            "seed: { shape: \"2,8,512,128\" }",
        ),
    );
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("stages.check.cases[0]: case `seed` runs on no config"),
        "{}",
        stderr(&out)
    );
}

/// A config's `arch:` list narrows the matrix: a wgmma source is built for sm_90a only, the
/// other config for every arch.
#[test]
fn a_config_is_built_only_for_its_own_archs() {
    let project = Project::new();
    std::fs::write(
        project.root.join("kernel/hopper.cu"),
        "// stand-in source\n",
    )
    .expect("source");
    let yaml = pipeline("")
        .replace("  arch: [sm_90]", "  arch: [sm_90, sm_90a]")
        .replace(
            "    small: { HEAD_DIM: 64, BLOCK_M: 64 }",
            "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n    hopper: { source: kernel/hopper.cu, arch: [sm_90a], defines: { HEAD_DIM: 64 } }",
        );
    project.pipeline(&yaml);
    let out = project.run(&["pipeline.yaml", "--only", "compile,sass"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let mut built: Vec<(String, String, String)> = manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["name"] != "report")
        .map(|s| {
            (
                s["name"].as_str().expect("name").to_string(),
                s["config"].as_str().expect("config").to_string(),
                s["arch"].as_str().expect("arch").to_string(),
            )
        })
        .collect();
    built.sort();
    let expected: Vec<(String, String, String)> = [
        ("compile", "hopper", "sm_90a"),
        ("compile", "small", "sm_90"),
        ("compile", "small", "sm_90a"),
        ("sass", "hopper", "sm_90a"),
        ("sass", "small", "sm_90"),
        ("sass", "small", "sm_90a"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(built, expected);
    // The hopper config's compile names its own source and arch.
    let compile = manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "compile" && s["config"] == "hopper")
        .expect("hopper's compile");
    let argv: Vec<&str> = compile["command"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| a.as_str().expect("a word"))
        .collect();
    assert!(
        argv.contains(&"-arch=sm_90a") && argv.contains(&"kernel/hopper.cu"),
        "{argv:?}"
    );
}

/// A target pipeline with one config (two with `two_configs`) and the given stages.
fn target_with(stages: &str, two_configs: bool) -> String {
    format!(
        "target:\n  program:\n    command: [sh, -c, \"echo 'kernel: 1.5 ms'\"]\n\
         matrix:\n  arch: [sm_90]\n  configs:\n    plain: {{}}\n{}\
         stages:\n{stages}",
        if two_configs { "    tuned: {}\n" } else { "" }
    )
}

/// A bench or baseline stage's `pattern:` is checked when the pipeline is read: each mistake
/// is refused with the file, the line and column of its key, and what was expected.
#[test]
fn a_bad_timing_pattern_is_refused_naming_the_file_stage_and_key() {
    let cases: &[(&str, bool, &str, &str)] = &[
        (
            "  bench:\n    pattern: 'kernel: (?P<value>[0-9.]+ ms'\n    unit: ms\n",
            false,
            "pattern:",
            "stages.bench.pattern: not a regular expression: unclosed group",
        ),
        (
            "  bench:\n    pattern: 'kernel: (?P<time>[0-9.]+) ms'\n    unit: ms\n",
            false,
            "pattern:",
            "stages.bench.pattern: the pattern has no `value` group: name the time with \
             `(?P<value>...)`",
        ),
        (
            "  bench:\n    pattern: 'kernel: (?P<value>[0-9.]+) ms'\n",
            false,
            "pattern:",
            "stages.bench.pattern: the pattern has no `unit` group: give the unit beside it",
        ),
        (
            "  bench:\n    pattern: 'kernel: (?P<value>[0-9.]+) ms'\n    unit: msec\n",
            false,
            "unit:",
            "stages.bench.unit: `msec` is not a time unit; expected s, ms, us (or µs) or ns",
        ),
        (
            "  bench:\n    unit: ms\n",
            false,
            "unit:",
            "stages.bench.unit: `unit:` is the unit of a `pattern:`, and there is none",
        ),
        (
            "  check:\n    pattern: 'kernel: (?P<value>[0-9.]+) ms'\n    unit: ms\n",
            false,
            "pattern:",
            "stages.check.pattern: only bench and baseline stages read timings with a pattern, \
             not a check stage",
        ),
        (
            "  baseline:\n    command: [sh, -c, \"echo 'sdpa: 1 ms'\"]\n    pattern: 'sdpa: (?P<value>[0-9.]+) ms'\n    unit: ms\n",
            true,
            "pattern:",
            "stages.baseline.pattern: the baseline runs once for every config, so its pattern \
             names its timing: give `label:`",
        ),
    ];
    for (stages, two_configs, key, expected) in cases {
        let project = Project::new();
        let yaml = target_with(stages, *two_configs);
        project.pipeline(&yaml);
        let out = project.run(&["check", "pipeline.yaml"]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{yaml}\n{err}");
        let line = line_of(&yaml, key);
        assert!(
            err.contains(&format!("pipeline.yaml:{line}:5: {expected}")),
            "{yaml}\n{err}"
        );
    }
    // With `label:`, or with a `label` group, the same baseline is valid.
    for fix in ["    label: attn\n", ""] {
        let project = Project::new();
        let pattern = if fix.is_empty() {
            "'(?P<label>sdpa): (?P<value>[0-9.]+) ms'"
        } else {
            "'sdpa: (?P<value>[0-9.]+) ms'"
        };
        project.pipeline(&target_with(
            &format!(
                "  baseline:\n    command: [sh, -c, \"echo 'sdpa: 1 ms'\"]\n    pattern: {pattern}\n    unit: ms\n{fix}"
            ),
            true,
        ));
        let out = project.run(&["check", "pipeline.yaml"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
}

/// `elements:` (the problem's size, for figures per element) belongs to a profile stage, and
/// counts at least one element: each mistake is refused at its line.
#[test]
fn elements_is_a_profile_stages_and_at_least_one() {
    let cases: &[(&str, &str)] = &[
        (
            "  check:\n    elements: 1000\n",
            "stages.check.elements: only a profile stage takes `elements`",
        ),
        (
            "  profile:\n    elements: 0\n",
            "stages.profile.elements: must be at least 1",
        ),
    ];
    for (stages, expected) in cases {
        let project = Project::new();
        let yaml = target_with(stages, false);
        project.pipeline(&yaml);
        let out = project.run(&["check", "pipeline.yaml"]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{yaml}\n{err}");
        let line = line_of(&yaml, "elements:");
        assert!(
            err.contains(&format!("pipeline.yaml:{line}:5: {expected}")),
            "{yaml}\n{err}"
        );
    }
    let project = Project::new();
    project.pipeline(&target_with("  profile:\n    elements: 1000\n", false));
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
