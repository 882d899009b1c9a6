//! A unit whose inputs match an earlier run is served from it; a changed input or `--force`
//! runs it again.

use crate::util::{Project, code, stage, stderr};

#[test]
fn an_unchanged_pipeline_is_served_from_the_cache() {
    let project = Project::new();
    let first = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(project.nvcc_calls(), 1);
    let first_manifest = project.manifest();
    let first_id = first_manifest["id"].as_str().unwrap().to_string();
    assert_eq!(
        stage(&first_manifest, "compile")["cached_from"],
        serde_json::Value::Null
    );

    let second = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(project.nvcc_calls(), 1, "the second run compiled again");
    let manifest = project.manifest();
    assert_ne!(manifest["id"], first_id.as_str());
    for name in ["compile", "sass"] {
        let s = stage(&manifest, name);
        assert_eq!(s["status"], "passed");
        assert_eq!(s["cached_from"], first_id.as_str(), "{name}");
        assert_eq!(
            s["input_hash"],
            stage(&first_manifest, name)["input_hash"],
            "{name}"
        );
    }
    // The run directory is self-contained: the cached logs and cubin are in it.
    let run = project.runs().pop().unwrap();
    assert!(run.join("compile/small/sm_90/build/kernel.cubin").is_file());
    assert!(run.join("sass/small/sm_90/kernel.cubin.sass").is_file());
    assert!(stderr(&second).contains(&format!("cached from {first_id}")));
}

#[test]
fn a_changed_source_misses_the_cache_and_an_unchanged_cubin_hits_it() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    project.write("kernel/attention.cu", "// stand-in kernel source, edited\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(project.nvcc_calls(), 2);
    let manifest = project.manifest();
    assert_eq!(
        stage(&manifest, "compile")["cached_from"],
        serde_json::Value::Null
    );
    // The stand-in compiler wrote the same cubin, so the SASS listing of it is still valid.
    assert!(stage(&manifest, "sass")["cached_from"].is_string());
}

#[test]
fn changed_flags_miss_the_cache() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let yaml = std::fs::read_to_string(project.root.join("pipeline.yaml")).unwrap();
    project.pipeline(&yaml.replace("BLOCK_M: 64", "BLOCK_M: 128"));
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.nvcc_calls(), 2);
}

#[test]
fn force_ignores_the_cache() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(project.nvcc_calls(), 2);
    let manifest = project.manifest();
    assert_eq!(
        stage(&manifest, "compile")["cached_from"],
        serde_json::Value::Null
    );
}

#[test]
fn a_failed_stage_is_never_reused() {
    let project = Project::new();
    project.tool(
        "nvcc",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo release 0.0; exit 0; fi\necho call >> \"$(dirname \"$0\")/nvcc.calls\"\nexit 1\n",
    );
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 3);
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 3);
    assert_eq!(project.nvcc_calls(), 2);
}

#[test]
fn a_header_nobody_listed_still_invalidates_the_compile() {
    let project = Project::new();
    project.write("kernel/tiles.cuh", "// stand-in header\n");
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.nvcc_calls(), 1);
    // Not in kernel.includes; found beside the kernel's source.
    project.write("kernel/tiles.cuh", "// stand-in header, edited\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        project.nvcc_calls(),
        2,
        "the edited header served a cached compile"
    );
    // A file that is no source or header changes nothing.
    project.write("kernel/NOTES.md", "notes\n");
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.nvcc_calls(), 2);
}

#[test]
fn a_target_is_rebuilt_when_any_file_of_its_sources_changes() {
    let project = Project::new();
    project.write("src/k.cu", "// stand-in source\n");
    project.write("src/deep/k.cuh", "// stand-in header\n");
    project.write(
        "build.sh",
        "echo call >> \"$0.calls\"\ncp /bin/sh \"$1/app\"\n",
    );
    project.pipeline(&crate::util::pipeline("").replace(
        "kernel:\n  source: kernel/attention.cu\n  entry_points:\n    f16: attention_fwd_f16\n",
        "target:\n  sources: [src]\n  build:\n    command: [sh, build.sh, \"{build_dir}\"]\n  program:\n    command: [\"{build_dir}/app\"]\n",
    ).replace("cases:\n  seed: { shape: \"2,8,512,64\" }\n", "")
        .replace("  compile:\n    timeout: 30s\n  sass:\n    timeout: 30s\n", "  build:\n    timeout: 30s\n")
        .replace("small: { HEAD_DIM: 64, BLOCK_M: 64 }", "small: {}"));
    let builds = || {
        std::fs::read_to_string(project.root.join("build.sh.calls"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let first = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(builds(), 1);
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(builds(), 1, "an unchanged target was built again");
    project.write("src/deep/k.cuh", "// stand-in header, edited\n");
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(builds(), 2, "a changed header served a cached build");
    // The cached build's products are in the new run directory too.
    let run = project.runs().pop().expect("a run");
    assert!(run.join("build/small/sm_90/build/app").is_file());
}
