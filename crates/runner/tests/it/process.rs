//! Tools that hang, crash, are missing, or are interrupted never hang or confuse the run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Project, alive, code, pipeline, stage, stderr};

/// A tool (nvcc, or any other the run calls) that starts a grandchild and waits for it; both
/// ignore SIGTERM when `stubborn`.
fn hanging_tool(stubborn: bool) -> String {
    format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
{}
here="$(dirname "$0")"
sleep 1000 &
echo $! > "$here/grandchild.pid"
echo $$ > "$here/child.pid"
wait
"#,
        if stubborn { "trap '' TERM" } else { "" }
    )
}

/// Starts `exhibit pipeline.yaml` in `project` and waits until its hanging tool has started:
/// the runner, and the pids of the tool and of its child.
fn run_until_hung(project: &Project) -> (std::process::Child, i32, i32) {
    let runner = Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the runner");
    let pid = |file: &str, limit: u64| -> i32 {
        project
            .wait_for(file, Duration::from_secs(limit))
            .trim()
            .parse()
            .expect("a pid")
    };
    let child = pid("bin/child.pid", 20);
    (runner, child, pid("bin/grandchild.pid", 5))
}

#[test]
fn a_hung_tool_is_killed_at_its_timeout_with_its_grandchildren() {
    let project = Project::new();
    project.tool("nvcc", &hanging_tool(true));
    project.pipeline(&pipeline("").replace(
        "  compile:\n    timeout: 30s",
        "  compile:\n    timeout: 1s",
    ));
    let started = Instant::now();
    let out = project.run(&["pipeline.yaml"]);
    let elapsed = started.elapsed();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // One second of timeout, one of grace before SIGKILL, and some slack.
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    let child: i32 = project
        .wait_for("bin/child.pid", Duration::ZERO)
        .trim()
        .parse()
        .unwrap();
    let grandchild: i32 = project
        .wait_for("bin/grandchild.pid", Duration::ZERO)
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(child), "the tool survived");
    assert!(!alive(grandchild), "the tool's child survived");
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["status"], "timed_out");
    assert!(
        compile["reason"]
            .as_str()
            .unwrap()
            .contains("still running after 1s")
    );
    let sass = stage(&manifest, "sass");
    assert_eq!(sass["status"], "skipped");
    assert!(
        sass["reason"]
            .as_str()
            .unwrap()
            .contains("the build for small sm_90 timed out"),
        "{sass}"
    );
    assert_eq!(manifest["interrupted"], false);
}

#[test]
fn a_crashing_tool_fails_its_stage_with_the_signal() {
    let project = Project::new();
    project.tool(
        "nvcc",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo release 0.0; exit 0; fi\necho 'about to crash' >&2\nkill -SEGV $$\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["status"], "failed");
    assert_eq!(compile["reason"], "nvcc killed by SIGSEGV");
    assert_eq!(compile["exit_code"], serde_json::Value::Null);
    // The raw stderr is kept exactly as printed.
    let log = project
        .runs()
        .pop()
        .unwrap()
        .join("compile/small/sm_90/stderr.log");
    assert_eq!(std::fs::read_to_string(log).unwrap(), "about to crash\n");
}

#[test]
fn a_tool_exiting_nonzero_fails_its_stage_with_its_last_words() {
    let project = Project::new();
    project.tool(
        "nvcc",
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo release 0.0; exit 0; fi\necho 'first' >&2\necho 'fatal: stand-in error' >&2\nexit 7\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3);
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["status"], "failed");
    assert_eq!(compile["exit_code"], 7);
    assert_eq!(
        compile["reason"],
        "nvcc exited with status 7: fatal: stand-in error"
    );
}

#[test]
fn a_missing_tool_fails_the_stages_that_need_it() {
    let project = Project::new();
    project.pipeline(&pipeline("").replace("nvcc: bin/nvcc", "nvcc: bin/no-such-nvcc"));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["status"], "failed");
    assert_eq!(
        compile["reason"],
        "nvcc not found at bin/no-such-nvcc (toolchain.tools.nvcc)"
    );
    assert_eq!(stage(&manifest, "sass")["status"], "skipped");
    assert!(
        !manifest["environment"]["tools"]
            .as_object()
            .unwrap()
            .contains_key("nvcc")
    );
}

#[test]
fn a_gpu_stage_without_its_tool_or_gpu_is_skipped_with_a_reason() {
    let project = Project::new();
    project.pipeline(
        &pipeline("  profile:\n    needs: { gpu: true, tools: [ncu] }\n    cases: [seed]\n")
            .replace("  tools:\n", "  tools:\n    ncu: bin/no-such-ncu\n"),
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let manifest = project.manifest();
    let profile = stage(&manifest, "profile");
    assert_eq!(profile["status"], "skipped");
    let reason = profile["reason"].as_str().unwrap();
    let no_gpu = manifest["environment"]["gpu_unavailable"].as_str();
    match no_gpu {
        Some(why) => assert_eq!(reason, why),
        None => assert_eq!(
            reason,
            "ncu not found at bin/no-such-ncu (toolchain.tools.ncu)"
        ),
    }
    assert!(stderr(&out).contains("skipped"), "{}", stderr(&out));
}

#[test]
fn an_interrupted_run_kills_its_children_and_says_so_in_the_manifest() {
    let project = Project::new();
    project.tool("nvcc", &hanging_tool(false));
    let (mut runner, child, grandchild) = run_until_hung(&project);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(runner.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("send SIGINT");
    let end = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = runner.try_wait().expect("wait for the runner") {
            break status;
        }
        assert!(Instant::now() < end, "the runner did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    // 128 + SIGINT, once the manifest was written.
    assert_eq!(status.code(), Some(130));
    assert!(!alive(child), "the tool survived the interrupt");
    assert!(
        !alive(grandchild),
        "the tool's child survived the interrupt"
    );
    let manifest = project.manifest();
    assert_eq!(manifest["interrupted"], true);
    assert!(manifest["finished"].is_string());
    assert_eq!(stage(&manifest, "compile")["status"], "interrupted");
    // Nothing half-written: no temporary files are left beside the manifest.
    let run = project.runs().pop().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn a_tool_whose_version_hangs_is_reported_and_its_stages_fail_quickly() {
    let project = Project::new();
    project.tool(
        "nvcc",
        "#!/bin/sh\n# Stand-in (hand-written): hangs when asked its version.\nif [ \"$1\" = \"--version\" ]; then exec sleep 1000; fi\nexit 0\n",
    );
    let started = Instant::now();
    let out = project.run(&["pipeline.yaml"]);
    let elapsed = started.elapsed();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // The 10 s bound on `--version`, the grace period and slack; never a stall.
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    let why = "`nvcc --version` did not answer within 10s (killed): a tool that hangs there \
               would hang its stages";
    assert!(
        stderr(&out).contains(&format!("preflight: nvcc: {why}")),
        "{}",
        stderr(&out)
    );
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    assert_eq!(compile["status"], "failed");
    assert_eq!(compile["reason"], why);
}

#[test]
fn a_sass_stage_whose_tool_printed_no_function_is_inconclusive() {
    let project = Project::new();
    project.tool(
        "cuobjdump",
        "#!/bin/sh\n# Stand-in (hand-written): prints no SASS listing.\nif [ \"$1\" = \"--version\" ]; then echo \"release 0.0 (stand-in)\"; exit 0; fi\necho 'Fatbin elf code:'\necho '================'\n",
    );
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let manifest = project.manifest();
    let sass = stage(&manifest, "sass");
    assert_eq!(sass["status"], "inconclusive");
    assert_eq!(
        sass["reason"],
        "cuobjdump printed no SASS function (no `Function :` section) for 1 file: nothing to \
         inspect; its output begins `Fatbin elf code:`"
    );
}

/// A runner killed outright (no chance to write its last manifest) loses none of the units
/// that ended: each was journalled as it ended, and the next run serves the finished build
/// from it instead of compiling again.
#[test]
fn a_run_killed_outright_keeps_the_units_that_ended() {
    let project = Project::new();
    // The build ends; the SASS dump after it hangs until the runner is killed.
    project.tool("cuobjdump", &hanging_tool(false));
    let (mut runner, child, grandchild) = run_until_hung(&project);
    runner.kill().expect("SIGKILL the runner");
    runner.wait().expect("reap the runner");
    // Nobody was left to end the hung tool: the test does.
    for pid in [child, grandchild] {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let killed = project.runs().pop().expect("the killed run's directory");
    // The manifest on disk is the one the run started with; the journal holds the build.
    let manifest = project.manifest();
    assert_eq!(manifest["interrupted"], true);
    assert!(manifest["finished"].is_null());
    assert!(
        killed.join("units.jsonl").is_file(),
        "no journal beside the manifest"
    );
    assert_eq!(project.nvcc_calls(), 1);

    // The next run (with a SASS dump that ends) serves the build from the killed run.
    project.tool("cuobjdump", &crate::util::cuobjdump());
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(project.nvcc_calls(), 1, "the build ran again");
    let manifest = project.manifest();
    let compile = stage(&manifest, "compile");
    let killed_id = killed
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a run id");
    assert_eq!(compile["cached_from"], killed_id);
    // A finished run keeps no journal: the manifest holds every unit.
    let finished = project.runs().pop().unwrap();
    assert!(!finished.join("units.jsonl").exists());
    assert_eq!(manifest["stages"].as_array().map(Vec::len), Some(3));
}
