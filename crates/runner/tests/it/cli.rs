//! The subcommands around a run: report, parse, selection, usage errors, the manifest's shape.

use crate::util::{Project, code, pipeline, root_relative, stage, stages, stderr};

#[test]
fn a_clean_run_writes_the_run_directory_manifest_and_report() {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let id = manifest["id"].as_str().unwrap();
    assert_eq!(manifest["schema"], "exhibit.run/2");
    assert_eq!(manifest["pipeline"], "pipeline.yaml");
    assert_eq!(manifest["interrupted"], false);
    assert!(manifest["inputs"]["kernel/attention.cu"].is_string());
    assert!(manifest["inputs"]["pipeline.yaml"].is_string());
    assert!(manifest["inputs"]["flags:compile/small/sm_90"].is_string());
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["exit_code"], 0);
    // Commands are recorded with tool names and repository-relative paths.
    let command: Vec<&str> = compile["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(command[0], "nvcc");
    assert!(command.contains(&"-DHEAD_DIM=64"));
    assert!(command.contains(&"-arch=sm_90"));
    assert!(
        command
            .contains(&format!("artifacts/{id}/compile/small/sm_90/build/kernel.cubin").as_str())
    );
    assert_eq!(*command.last().unwrap(), "kernel/attention.cu");
    let text = serde_json::to_string(&manifest).unwrap();
    assert!(
        !text.contains(&*project.root.to_string_lossy()),
        "an absolute path in {text}"
    );
    // Raw logs, exactly as printed.
    let ptxas = project
        .runs()
        .pop()
        .unwrap()
        .join("compile/small/sm_90/stderr.log");
    assert_eq!(
        std::fs::read_to_string(ptxas).unwrap(),
        "stand-in compiler message (hand-written for tests)\n"
    );
    assert!(project.root.join(format!("reports/{id}.md")).is_file());
    let latest = std::fs::read_to_string(project.root.join("reports/latest.md")).unwrap();
    assert_eq!(
        latest,
        std::fs::read_to_string(project.root.join(format!("reports/{id}.md"))).unwrap()
    );
    assert_eq!(stage(&manifest, "report")["status"], "passed");
    // The result on stdout (the verdict sentence and the report), progress on stderr.
    let report = std::fs::read_to_string(project.root.join(format!("reports/{id}.md"))).unwrap();
    // No stage of this pipeline launches the kernel: the verdict says what it rests on.
    assert!(
        report
            .contains("**Verdict:** ✅ Clean: no problems found by compile and sass on 1 config."),
        "{report}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(
        lines[0],
        "verdict: Clean: no problems found by compile and sass on 1 config."
    );
    assert_eq!(lines[1], format!("report: reports/{id}.md"));
    let err = stderr(&out);
    assert!(err.contains("preflight: nvcc:"), "{err}");
    assert!(err.contains(&format!("artifacts: artifacts/{id}")), "{err}");
    assert!(!err.contains("report: reports/"), "{err}");
}

#[test]
fn a_mistyped_subcommand_suggests_the_right_one() {
    let project = Project::new();
    for (typed, meant) in [
        ("chek", "check"),
        ("reprot", "report"),
        ("expalin", "explain"),
    ] {
        let out = project.run(&[typed, "pipeline.yaml"]);
        assert_eq!(code(&out), 2, "{typed}");
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "error: `{typed}` is neither a subcommand nor a file: did you mean `exhibit {meant}`?"
            )),
            "{err}"
        );
    }
    // A file by that name is a pipeline, as before.
    project.write("chek", &pipeline(""));
    assert_eq!(code(&project.run(&["chek"])), 0);
}

#[test]
fn report_rerenders_a_stored_run_without_tools() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let run = project.runs().pop().unwrap();
    // The tools are gone: rendering needs none.
    std::fs::remove_dir_all(project.root.join("bin")).unwrap();
    let relative = root_relative(&run, &project.root);
    let out = project.run(&["report", &relative]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = project.manifest()["id"].as_str().unwrap().to_string();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    for format in ["json", "sarif", "junit"] {
        let out = project.run(&["report", &relative, "--format", format]);
        assert_eq!(code(&out), 0, "{format}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{format}");
    }
}

#[test]
fn report_of_a_missing_run_is_a_usage_error() {
    let project = Project::new();
    let out = project.run(&["report", "artifacts/nothing-here"]);
    assert_eq!(code(&out), 2);
    // The cause is said once, not once per layer of the error.
    assert_eq!(
        stderr(&out),
        "error: read artifacts/nothing-here/manifest.json: missing\n"
    );
}

#[test]
fn parse_prints_the_documented_json_shape() {
    let project = Project::new();
    project.write("ptxas.log", "stand-in text (hand-written for tests)\n");
    let out = project.run(&["parse", "--as", "ptxas", "ptxas.log", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let input = &json["inputs"][0];
    assert_eq!(input["path"], "ptxas.log");
    assert_eq!(input["format"], "ptxas");
    for field in [
        "complete",
        "unprinted_errors",
        "unparsed_lines",
        "findings",
        "kernels",
        "metrics",
    ] {
        assert!(input.get(field).is_some(), "no `{field}` in {input}");
    }
}

#[test]
fn parse_of_an_unrecognised_file_is_a_usage_error() {
    let project = Project::new();
    project.write("notes.txt", "nothing any GPU tool prints\n");
    let out = project.run(&["parse", "notes.txt"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("notes.txt: cannot tell which tool wrote this log"));
}

#[test]
fn only_runs_the_selected_stages_and_what_they_need() {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml", "--only", "sass"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "compile")["status"], "passed");
    assert_eq!(stage(&manifest, "sass")["status"], "passed");
    assert!(stages(&manifest, "report").is_empty());
}

/// `--only` and `--config` take comma-separated values, and a pipeline file after them is the
/// pipeline, not another value.
#[test]
fn a_selection_before_the_pipeline_leaves_the_pipeline_alone() {
    let project = Project::new();
    let out = project.run(&["--only", "compile,sass", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "sass")["status"], "passed");
    assert!(stages(&manifest, "report").is_empty());
    // Repeated, too.
    let out = project.run(&["--only", "compile", "--only", "sass", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn an_unknown_selection_is_a_usage_error() {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml", "--only", "sas"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("select stage `sas`"));
    let out = project.run(&["pipeline.yaml", "--config", "big"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("select config `big`"));
}

#[test]
fn usage_errors_exit_2() {
    let project = Project::new();
    assert_eq!(code(&project.run(&[])), 2);
    assert_eq!(code(&project.run(&["no-such.yaml"])), 2);
    assert_eq!(code(&project.run(&["run", "pipeline.yaml", "--bogus"])), 2);
}

#[test]
fn the_run_subcommand_is_the_default() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["run", "pipeline.yaml"])), 0);
    assert_eq!(project.runs().len(), 1);
}

#[test]
fn disabled_stages_are_recorded_as_skipped() {
    let project = Project::new();
    project.pipeline(
        &pipeline("").replace("  sass:\n    timeout: 30s", "  sass:\n    enabled: false"),
    );
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let manifest = project.manifest();
    let sass = stage(&manifest, "sass");
    assert_eq!(sass["status"], "skipped");
    assert_eq!(sass["reason"], "disabled in the pipeline");
}

#[test]
fn explain_diagnoses_a_loose_log_and_exits_1_on_problems() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../parsers/fixtures/compute-sanitizer/memcheck_oob_read.log");
    let project = Project::new();
    let out = project.run(&["explain", &fixture.to_string_lossy()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(!out.stdout.is_empty());
    let out = project.run(&["explain", &fixture.to_string_lossy(), "--format", "json"]);
    assert_eq!(code(&out), 1);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["clean"], false);
}

/// The project's run directories, relative to its root, oldest first.
fn relative_runs(project: &Project) -> Vec<String> {
    project
        .runs()
        .iter()
        .map(|r| root_relative(r, &project.root))
        .collect()
}

#[test]
fn diff_compares_two_stored_runs() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let runs = relative_runs(&project);
    let out = project.run(&["diff", &runs[0], &runs[1]]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!out.stdout.is_empty());
    let out = project.run(&["diff", &runs[0], "artifacts/missing"]);
    assert_eq!(code(&out), 2);
}

/// Two compile-only runs (a pipeline with a GPU stage, on a machine without a GPU) say nothing
/// of the program's behaviour: their diff is incomplete (exit 3), never "No regression".
#[test]
fn a_diff_of_compile_only_runs_is_never_no_regression() {
    let project = Project::new();
    project.pipeline(&crate::util::pipeline("  check:\n    cases: [seed]\n"));
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(code(&project.run(&["pipeline.yaml", "--force"])), 0);
    let runs = relative_runs(&project);
    let out = project.run(&["diff", &runs[0], &runs[1]]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Incomplete: A and B ran nothing on a GPU (compile-only)"),
        "{text}"
    );
    assert!(!text.contains("No regression"), "{text}");
    assert!(text.contains("| compile-only |"), "{text}");
}

/// Two runs of different pipeline files are no before and after: `exhibit diff` refuses them
/// (exit 3) and says why, instead of calling every cause new or fixed, or "no regression".
#[test]
fn diff_refuses_runs_of_different_pipelines() {
    let project = Project::new();
    std::fs::copy(
        project.root.join("pipeline.yaml"),
        project.root.join("other.yaml"),
    )
    .expect("copy the pipeline");
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(code(&project.run(&["other.yaml"])), 0);
    let runs = relative_runs(&project);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let out = project.run(&["diff", &runs[0], &runs[1]]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the runs are of different pipelines (`")
            && stderr(&out).contains("other.yaml"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "no verdict printed");
    let out = project.run(&["diff", &runs[0], &runs[1], "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!out.stdout.is_empty(), "a comparison printed");
}

/// A bad `--only` or `--config` is a usage error (exit 2) said before any tool is asked: no
/// preflight line comes first.
#[test]
fn a_selection_the_pipeline_lacks_is_refused_before_preflight() {
    let project = Project::new();
    for args in [["--only", "nosuch"], ["--config", "nosuch"]] {
        let out = project.run(&["pipeline.yaml", args[0], args[1]]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{err}");
        assert!(err.contains("`nosuch`: no such"), "{err}");
        assert!(!err.contains("preflight:"), "{err}");
    }
}

/// A run is named by the id it printed (or its first characters, or `latest`) wherever a
/// command takes a run directory; an id that names none, or several, is refused saying so.
#[test]
fn report_and_diff_take_the_run_id_a_run_prints() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let id = project.manifest()["id"].as_str().unwrap().to_string();
    for named in [id.as_str(), &id[..20], "latest"] {
        let out = project.run(&["report", named]);
        assert_eq!(code(&out), 0, "{named}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&id),
            "{named}"
        );
    }
    let out = project.run(&["diff", &id, "latest"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = project.run(&["report", "19990101T000000Z-00000000"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        "error: 19990101T000000Z-00000000: no such run directory, and no run of that id in \
         artifacts/\n"
    );
    // Two runs share the prefix `2`: not one run.
    std::fs::create_dir_all(project.root.join("artifacts/20000101T000000Z-00000000")).unwrap();
    std::fs::write(
        project
            .root
            .join("artifacts/20000101T000000Z-00000000/manifest.json"),
        "{}",
    )
    .unwrap();
    let out = project.run(&["report", "2"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("2: names 2 runs in artifacts/"),
        "{}",
        stderr(&out)
    );
}

/// `exhibit rules ID` prints that rule's section; an id that is none is refused with the
/// nearest one.
#[test]
fn rules_takes_a_rule_id() {
    let project = Project::new();
    let out = project.run(&["rules", "out-of-bounds"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("## out-of-bounds\n"), "{text}");
    assert_eq!(text.matches("\n## ").count(), 0, "one section only: {text}");
    let out = project.run(&["rules", "out-of-bound"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out)
            .starts_with("error: `out-of-bound` is no rule id: did you mean `out-of-bounds`?"),
        "{}",
        stderr(&out)
    );
}

/// `exhibit gc --keep 1` removes the older runs and their reports, keeps the newest, and never
/// removes a run still being written.
#[test]
fn gc_keeps_the_newest_runs_and_any_still_being_written() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let id = project.manifest()["id"].as_str().unwrap().to_string();
    let artifacts = project.root.join("artifacts");
    let copy = |name: &str, finished: bool| {
        let dir = artifacts.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut manifest = project.manifest();
        manifest["id"] = serde_json::json!(name);
        if !finished {
            manifest.as_object_mut().unwrap().remove("finished");
            std::fs::write(dir.join(".space-reserve"), "").unwrap();
        }
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(project.root.join(format!("reports/{name}.md")), "old").unwrap();
    };
    copy("20200101T000000Z-aaaaaaaa", true);
    copy("20210101T000000Z-bbbbbbbb", true);
    copy("20190101T000000Z-cccccccc", false);
    // Not a run: left alone.
    std::fs::create_dir_all(artifacts.join("notes")).unwrap();
    let out = project.run(&["gc", "--keep", "1"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("removed 2 runs ("), "{err}");
    assert!(
        err.contains("kept 20190101T000000Z-cccccccc: still being written"),
        "{err}"
    );
    let mut left: Vec<String> = std::fs::read_dir(&artifacts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["20190101T000000Z-cccccccc", id.as_str(), "notes"]);
    assert!(
        !project
            .root
            .join("reports/20200101T000000Z-aaaaaaaa.md")
            .exists()
    );
    assert!(project.root.join(format!("reports/{id}.md")).exists());
    assert!(project.root.join("reports/latest.md").exists());
}

/// `-q` leaves out the preflight's lines and the lines of units that passed; the verdict and
/// the report's path still print.
#[test]
fn quiet_prints_only_what_needs_attention() {
    let project = Project::new();
    let loud = project.run(&["pipeline.yaml", "--force"]);
    assert!(stderr(&loud).contains("preflight: "), "{}", stderr(&loud));
    assert!(stderr(&loud).contains(" passed "), "{}", stderr(&loud));
    let out = project.run(&["-q", "pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("preflight: "), "{err}");
    assert!(!err.contains(" passed "), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("verdict: Clean"));
}

/// `--color always` colours the units' status words, as cargo's flag does; by default, off a
/// terminal, no escape sequence is written.
#[test]
fn color_always_colours_the_status_words_and_auto_leaves_a_pipe_plain() {
    let project = Project::new();
    let plain = project.run(&["pipeline.yaml", "--force"]);
    assert!(!stderr(&plain).contains('\u{1b}'), "{}", stderr(&plain));
    let coloured = project.run(&["pipeline.yaml", "--force", "--color", "always"]);
    assert_eq!(code(&coloured), 0, "{}", stderr(&coloured));
    assert!(
        stderr(&coloured).contains("\u{1b}[32mpassed"),
        "{:?}",
        stderr(&coloured)
    );
    // The verdict on stdout stays plain text for scripts.
    assert!(String::from_utf8_lossy(&coloured.stdout).starts_with("verdict: Clean"));
}
