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

/// A run directory made by another user (a CI artifact unzipped at the project root, a run
/// received from elsewhere), its build product swapped and its hash edited to match, is never
/// served: only units sealed with this user's key are, so the foreign binary never runs.
#[test]
fn a_run_directory_made_elsewhere_is_never_served_or_executed() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    // The same project on another machine: its own user cache, so its own key.
    let elsewhere = tempfile::tempdir().expect("another user's cache");
    let foreign = project.run_env(
        &["pipeline.yaml", "--force"],
        &[("XDG_CACHE_HOME", elsewhere.path().to_str().expect("a path"))],
    );
    assert_eq!(code(&foreign), 0, "{}", stderr(&foreign));
    let foreign_run = project.runs().pop().expect("the foreign run");
    let foreign_id = foreign_run
        .file_name()
        .expect("a run id")
        .to_string_lossy()
        .into_owned();
    // The outsider swaps the cubin and edits the recorded hash to match it.
    let cubin = foreign_run.join("compile/small/sm_90/build/kernel.cubin");
    std::fs::write(&cubin, "not what the compiler made\n").expect("swap the product");
    let manifest_path = foreign_run.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("the manifest"))
            .expect("JSON");
    let sha = {
        use sha2::Digest;
        sha2::Sha256::digest(std::fs::read(&cubin).expect("the cubin"))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    for s in manifest["stages"].as_array_mut().expect("stages") {
        if let Some(outputs) = s["outputs"].as_object_mut() {
            for (path, hash) in outputs.iter_mut() {
                if path.ends_with("kernel.cubin") {
                    *hash = serde_json::Value::String(sha.clone());
                }
            }
        }
    }
    std::fs::write(&manifest_path, manifest.to_string()).expect("edit the manifest");
    // Remove this user's own run, so the foreign one is the only candidate.
    let own = project.runs().into_iter().next().expect("the first run");
    std::fs::remove_dir_all(&own).expect("remove the first run");
    let calls = project.nvcc_calls();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    for name in ["compile", "sass"] {
        assert_ne!(
            stage(&manifest, name)["cached_from"],
            foreign_id.as_str(),
            "{name} was served from a run made elsewhere"
        );
    }
    assert_eq!(project.nvcc_calls(), calls + 1, "the build ran again, here");
    // And this user's own run serves the next one: the seal is what decides.
    let again = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(stage(&project.manifest(), "compile")["cached_from"].is_string());
}
