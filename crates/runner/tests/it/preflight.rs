//! The preflight keeps what the tools told it in the user cache and asks them again only when
//! what the answer depends on changed: the tool's binary, torch's installation, or `--force`.

use serde_json::Value;

use crate::util::{NVCC, Project, code, stderr};

/// The facts file of the project's user cache.
fn facts_file(project: &Project) -> std::path::PathBuf {
    project.cache.join("exhibit/preflight.json")
}

fn cached(manifest: &Value) -> Vec<String> {
    manifest["environment"]["preflight_cached"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_second_run_reuses_the_tool_versions_the_first_learned() {
    let project = Project::new();
    let first = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(project.version_calls("nvcc"), 1);
    let first_manifest = project.manifest();
    assert!(cached(&first_manifest).is_empty(), "{first_manifest:#}");
    assert!(facts_file(&project).is_file());

    let second = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(project.version_calls("nvcc"), 1, "nvcc --version ran again");
    let manifest = project.manifest();
    assert!(
        cached(&manifest).contains(&"nvcc".to_string()),
        "{manifest:#}"
    );
    assert_eq!(
        manifest["environment"]["tools"]["nvcc"],
        first_manifest["environment"]["tools"]["nvcc"]
    );
    assert!(
        stderr(&second).contains("preflight: from the cache of an earlier run"),
        "{}",
        stderr(&second)
    );
    // The same version keeps the stage cache: the compile is served from the first run.
    assert_eq!(project.nvcc_calls(), 1);
}

#[test]
fn a_replaced_tool_binary_is_asked_again() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.version_calls("nvcc"), 1);
    // Another release: a new file, of another size.
    project.tool(
        "nvcc",
        &NVCC.replace("release 0.0, V0.0.0", "release 0.1, V0.1.0"),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(project.version_calls("nvcc"), 2);
    let manifest = project.manifest();
    assert!(
        !cached(&manifest).contains(&"nvcc".to_string()),
        "{manifest:#}"
    );
    let version = manifest["environment"]["tools"]["nvcc"].as_str().unwrap();
    assert!(version.contains("release 0.1"), "{version}");
    // A new compiler version misses the stage cache too.
    assert_eq!(project.nvcc_calls(), 2);
}

#[test]
fn a_damaged_or_foreign_facts_file_is_ignored_and_rewritten() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let foreign = serde_json::json!({"schema": "something/else", "versions": {}}).to_string();
    for (text, n) in [("{ truncated", 2), (foreign.as_str(), 3)] {
        std::fs::write(facts_file(&project), text).expect("damage the facts file");
        let out = project.run(&["pipeline.yaml"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(project.version_calls("nvcc"), n, "after {text:?}");
        assert!(cached(&project.manifest()).is_empty());
        let rewritten: Value =
            serde_json::from_slice(&std::fs::read(facts_file(&project)).expect("the facts file"))
                .expect("rewritten as JSON");
        assert_eq!(rewritten["schema"], "exhibit.preflight/1");
    }
    // And the rewritten file serves the next run.
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.version_calls("nvcc"), 3);
}

#[test]
fn force_asks_every_tool_again() {
    let project = Project::new();
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(project.version_calls("nvcc"), 2);
    assert!(cached(&project.manifest()).is_empty());
}

/// A stand-in python3: answers `--version` (counted in `python3.versions`) and the torch import
/// (counted in `python3.imports`) with `torch/` in the project as torch's directory.
const PYTHON: &str = r#"#!/bin/sh
# Stand-in for python3 in tests; its answers are hand-written.
bin="$(cd "$(dirname "$0")" && pwd)"
case "$1" in
  --version) echo "version" >> "$bin/python3.versions"; echo "Python 3.0.0 (stand-in)"; exit 0 ;;
  -c) echo "import" >> "$bin/python3.imports"; echo "0.0.0+stand-in"; echo "$bin/../torch"; exit 0 ;;
esac
exit 2
"#;

fn imports(project: &Project) -> usize {
    std::fs::read_to_string(project.root.join("bin/python3.imports"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// A pipeline whose `baseline` stage needs torch on no GPU, with a stand-in python3.
fn baseline_project() -> Project {
    let project = Project::new();
    project.tool("python3", PYTHON);
    project.write("torch/version.py", "__version__ = '0.0.0+stand-in'\n");
    project.write(
        "kernel/baselines/sdpa.py",
        "# stand-in: the stand-in python3 runs nothing\n",
    );
    let yaml = crate::util::pipeline(
        "  baseline:\n    timeout: 30s\n    needs: { gpu: false, tools: [python3, torch] }\n    \
         command: [python3, kernel/baselines/sdpa.py]\n    cases: [seed]\n",
    )
    .replace(
        "    cuobjdump: bin/cuobjdump\n",
        "    cuobjdump: bin/cuobjdump\n    python3: bin/python3\n",
    );
    project.pipeline(&yaml);
    project
}

#[test]
fn torch_is_imported_only_when_a_stage_that_needs_it_runs_and_then_once() {
    let project = baseline_project();
    let out = project.run(&["pipeline.yaml", "--only", "compile"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        imports(&project),
        0,
        "torch imported for a compile-only run"
    );
    assert_eq!(
        project.manifest()["environment"]["tools"]["torch"],
        Value::Null
    );

    // The stand-in baseline prints nothing: the stage fails, but preflight has run.
    project.run(&["pipeline.yaml"]);
    assert_eq!(imports(&project), 1);
    let manifest = project.manifest();
    assert_eq!(
        manifest["environment"]["tools"]["torch"],
        "torch 0.0.0+stand-in"
    );
    project.run(&["pipeline.yaml"]);
    assert_eq!(
        imports(&project),
        1,
        "torch imported again with nothing changed"
    );
    let manifest = project.manifest();
    assert!(
        cached(&manifest).contains(&"torch".to_string()),
        "{manifest:#}"
    );
    assert_eq!(
        manifest["environment"]["tools"]["torch"],
        "torch 0.0.0+stand-in"
    );

    // Another torch installed in its place: its version.py changes.
    project.write(
        "torch/version.py",
        "__version__ = '0.0.1+stand-in, reinstalled'\n",
    );
    project.run(&["pipeline.yaml"]);
    assert_eq!(
        imports(&project),
        2,
        "a reinstalled torch was not imported again"
    );
}
