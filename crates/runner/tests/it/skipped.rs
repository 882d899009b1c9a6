//! A unit that does not run (no GPU, a missing tool) is recorded with the command it would have
//! run, so the record and the report still say which kernel, case and mode it was for.

use crate::util::{Project, code, pipeline, stage, stderr};

#[test]
fn a_skipped_gpu_unit_records_the_command_it_would_have_run() {
    let project = Project::new();
    project.pipeline(
        &pipeline(
            "  memcheck:\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    cases: [seed]\n",
        )
        .replace(
            "  tools:\n",
            "  tools:\n    compute-sanitizer: bin/no-such-compute-sanitizer\n",
        ),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let id = manifest["id"].as_str().unwrap();
    let memcheck = stage(&manifest, "memcheck");
    assert_eq!(memcheck["status"], "skipped");
    let command: Vec<&str> = memcheck["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let after = |flag: &str| {
        command
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| command.get(i + 1))
            .copied()
    };
    // The tool this machine lacks is named, not resolved.
    assert_eq!(command.first(), Some(&"compute-sanitizer"), "{command:?}");
    assert_eq!(after("--tool"), Some("memcheck"));
    assert_eq!(after("--entry-point"), Some("f16=attention_fwd_f16"));
    assert_eq!(after("--shape"), Some("2,8,512,64"));
    assert_eq!(after("--dtype"), Some("f16"));
    assert_eq!(after("--mode"), Some("once"));
    assert_eq!(after("--config"), Some("small"));
    // The cubin its compile unit wrote, repository-relative like every recorded path.
    let cubin = format!("artifacts/{id}/compile/small/sm_90/build/kernel.cubin");
    assert_eq!(after("--cubin"), Some(cubin.as_str()));
    let text = serde_json::to_string(&manifest).unwrap();
    assert!(
        !text.contains(&*project.root.to_string_lossy()),
        "an absolute path in {text}"
    );
}

#[test]
fn a_disabled_stage_records_no_command() {
    let project = Project::new();
    project.pipeline(&pipeline(
        "  memcheck:\n    enabled: false\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    cases: [seed]\n",
    ));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let memcheck = stage(&manifest, "memcheck");
    assert_eq!(memcheck["status"], "skipped");
    assert_eq!(memcheck["reason"], "disabled in the pipeline");
    assert_eq!(memcheck["command"], serde_json::json!([]));
}
