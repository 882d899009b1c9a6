//! The cache's invariant: a cached result is served only when every input it read is
//! byte-identical. A `target:` pipeline with a stand-in build (a shell script that bakes the
//! config's defines into the program it writes) and a stand-in program; each test changes one
//! input and checks which units ran again.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::{Project, code, stderr};

/// The build: copies `prog.sh` into the build directory as `prog`, with the defines it was given
/// as the program's first lines, and `lib.sh` beside it.
const BUILD: &str = "#!/bin/sh\n\
# Stand-in build for tests (hand-written).\n\
out=\"$1\"; shift\n\
{ echo '#!/bin/sh'; for d in \"$@\"; do echo \"# $d\"; done; cat src/prog.sh; } > \"$out/prog\"\n\
chmod +x \"$out/prog\"\n\
cp src/lib.sh \"$out/lib.sh\"\n\
echo built\n";

/// The program: fails when the build baked `-DPLANT=1` into it, or when `lib.sh` says so.
const PROG: &str = "# Stand-in program for tests (hand-written).\n\
if grep -q '^# -DPLANT=1' \"$0\"; then echo 'planted fault: check failed' >&2; exit 1; fi\n\
. \"$(dirname \"$0\")/lib.sh\"\n\
echo \"all launches passed ${MODE:-}\"\n";

fn pipeline(defines: &str, env: &str) -> String {
    format!(
        r#"target:
  sources: [src]
  build:
    command: [sh, src/build.sh, "{{build_dir}}", "{{defines}}"]
  program:
    command: ["{{build_dir}}/prog"]
    env: {{ {env} }}
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
  tools:
    nvcc: bin/nvcc
matrix:
  arch: [sm_90]
  configs:
    clean: {{ defines: {{ {defines} }} }}
grace: 1s
stages:
  build:
    timeout: 30s
  check:
    needs: {{ gpu: false }}
    timeout: 30s
  check_again:
    kind: check
    needs: {{ gpu: false }}
    timeout: 30s
  report:
    timeout: 30s
"#
    )
}

fn project() -> Project {
    let project = Project::new();
    // The build runs in the pipeline's directory and reads its files from src/.
    project.write("src/build.sh", BUILD);
    project.write("src/prog.sh", PROG);
    project.write("src/lib.sh", ": library\n");
    project.pipeline(&pipeline("", ""));
    project
}

/// Which units ran (true) and which were served from the cache (false), by stage name.
fn ran(manifest: &Value) -> BTreeMap<String, bool> {
    manifest["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["kind"] != "report")
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["cached_from"].is_null(),
            )
        })
        .collect()
}

fn status<'a>(manifest: &'a Value, name: &str) -> &'a str {
    crate::util::stage(manifest, name)["status"]
        .as_str()
        .unwrap_or_default()
}

fn run(project: &Project) -> (i32, Value, String) {
    let out = project.run(&["pipeline.yaml"]);
    (code(&out), project.manifest(), stderr(&out))
}

#[test]
fn a_define_added_after_a_cached_pass_runs_the_check_again() {
    let project = project();
    let (first, _, err) = run(&project);
    assert_eq!(first, 0, "{err}");
    let (second, manifest, err) = run(&project);
    assert_eq!(second, 0, "{err}");
    assert!(ran(&manifest).values().all(|ran| !ran), "{manifest:#}");

    project.pipeline(&pipeline("PLANT: 1", ""));
    let (third, manifest, err) = run(&project);
    assert_eq!(third, 1, "the planted define fails the check: {err}");
    assert_eq!(status(&manifest, "check"), "findings", "{manifest:#}");
    // The fourth run's build is served from the third; its check must not be served from the
    // second run's pass.
    let (fourth, manifest, err) = run(&project);
    assert_eq!(fourth, 1, "a stale pass was served: {err}\n{manifest:#}");
    assert_eq!(status(&manifest, "check"), "findings", "{manifest:#}");
    assert!(!err.contains("Clean"), "{err}");
}

#[test]
fn a_source_behind_a_symbolic_link_is_hashed() {
    let project = project();
    // lib.sh is a link to a file outside the sources.
    project.write("elsewhere/lib.sh", ": library\n");
    std::fs::remove_file(project.root.join("src/lib.sh")).expect("remove lib.sh");
    std::os::unix::fs::symlink("../elsewhere/lib.sh", project.root.join("src/lib.sh"))
        .expect("link lib.sh");
    let (first, manifest, err) = run(&project);
    assert_eq!(first, 0, "{err}");
    assert_eq!(
        manifest["links"]["src/lib.sh"], "../elsewhere/lib.sh",
        "the manifest says the source was a link: {manifest:#}"
    );
    let (_, manifest, _) = run(&project);
    assert!(ran(&manifest).values().all(|ran| !ran), "{manifest:#}");

    project.write(
        "elsewhere/lib.sh",
        "echo 'broken library: check failed' >&2; exit 1\n",
    );
    let (third, manifest, err) = run(&project);
    assert_eq!(third, 1, "a change behind the link was served: {err}");
    assert!(ran(&manifest)["build"], "{manifest:#}");
    assert_eq!(status(&manifest, "check"), "findings");
}

#[test]
fn a_cached_build_whose_product_was_deleted_runs_again() {
    let project = project();
    let (first, _, err) = run(&project);
    assert_eq!(first, 0, "{err}");
    let run_dir = project.runs().pop().expect("a run");
    let prog = walkdir::WalkDir::new(&run_dir)
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "prog")
        .expect("the build's product")
        .into_path();
    std::fs::remove_file(&prog).expect("delete the product");
    let (second, manifest, err) = run(&project);
    assert_eq!(
        second, 0,
        "the build runs again and the check passes: {err}"
    );
    let ran = ran(&manifest);
    assert!(ran["build"], "{manifest:#}");
    assert_eq!(status(&manifest, "check"), "passed");
}

#[test]
fn a_cached_log_that_changed_is_not_served() {
    let project = project();
    let (first, _, err) = run(&project);
    assert_eq!(first, 0, "{err}");
    let run_dir = project.runs().pop().expect("a run");
    let log = walkdir::WalkDir::new(run_dir.join("check"))
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == "stdout.log")
        .expect("the check's log")
        .into_path();
    std::fs::write(&log, "edited after the run\n").expect("edit the log");
    let (_, manifest, err) = run(&project);
    let ran = ran(&manifest);
    assert!(ran["check"], "{err}\n{manifest:#}");
    assert!(!ran["check_again"] && !ran["build"], "{manifest:#}");
}

/// A change to one input of a unit, and the units it must run again.
struct Change {
    name: &'static str,
    apply: fn(&Project, u64),
    reruns: &'static [&'static str],
}

/// Each input of the pipeline, changed to a value made from `seed`: the unit that read it and
/// its dependents run again, nothing else.
#[test]
fn any_change_to_an_input_reruns_its_unit_and_dependents_and_nothing_else() {
    const ALL: &[&str] = &["build", "check", "check_again"];
    let changes = [
        Change {
            name: "a source file's content",
            apply: |p, seed| p.write("src/lib.sh", &format!(": library {seed}\n")),
            reruns: ALL,
        },
        Change {
            name: "a new source file",
            apply: |p, seed| p.write(&format!("src/new_{seed}.h"), "// new\n"),
            reruns: ALL,
        },
        Change {
            name: "a define",
            apply: |p, seed| p.pipeline(&pipeline(&format!("SEED: {seed}"), "")),
            reruns: ALL,
        },
        Change {
            name: "the program's environment",
            apply: |p, seed| p.pipeline(&pipeline("", &format!("MODE: \"m{seed}\""))),
            reruns: &["check", "check_again"],
        },
        Change {
            name: "one stage's environment",
            apply: |p, seed| {
                let yaml = pipeline("", "").replacen(
                    "check_again:\n    kind: check\n",
                    &format!("check_again:\n    kind: check\n    env: {{ SEED: \"{seed}\" }}\n"),
                    1,
                );
                p.pipeline(&yaml);
            },
            reruns: &["check_again"],
        },
        Change {
            name: "one stage's arguments",
            apply: |p, seed| {
                let yaml = pipeline("", "").replacen(
                    "check_again:\n    kind: check\n",
                    &format!("check_again:\n    kind: check\n    args: [\"--seed={seed}\"]\n"),
                    1,
                );
                p.pipeline(&yaml);
            },
            reruns: &["check_again"],
        },
        Change {
            name: "a file outside the sources",
            apply: |p, seed| p.write("notes.md", &format!("note {seed}\n")),
            reruns: &[],
        },
    ];
    let mut seed: u64 = 0x5eed;
    for change in changes {
        let project = project();
        let (first, _, err) = run(&project);
        assert_eq!(first, 0, "{err}");
        // A simple generator: each change gets its own value.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (change.apply)(&project, seed >> 33);
        let (_, manifest, err) = run(&project);
        let ran = ran(&manifest);
        for (unit, did) in &ran {
            assert_eq!(
                *did,
                change.reruns.contains(&unit.as_str()),
                "{}: unit {unit}\n{err}\n{manifest:#}",
                change.name
            );
        }
    }
}

#[test]
fn a_kernel_header_behind_a_symbolic_link_is_hashed() {
    let project = Project::new();
    project.write("shared/common.cuh", "// shared header\n");
    std::os::unix::fs::symlink(
        "../shared/common.cuh",
        project.root.join("kernel/common.cuh"),
    )
    .expect("link the header");
    assert_eq!(code(&project.run(&["pipeline.yaml"])), 0);
    assert_eq!(project.nvcc_calls(), 1);
    project.write("shared/common.cuh", "// shared header, edited\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        project.nvcc_calls(),
        2,
        "a change behind the link was served"
    );
}

/// A program that prints more than the output limit keeps its first and last halves, the size
/// it wrote is recorded, and the error line at its end still reaches the verdict.
#[test]
fn output_past_the_limit_is_cut_in_the_middle_and_the_error_at_its_end_kept() {
    let project = project();
    project.write(
        "src/prog.sh",
        "# Stand-in program for tests (hand-written).\n\
         head -c 3000000 /dev/zero | tr '\\0' 'x'\n\
         echo 'first words' >&2\n\
         head -c 3000000 /dev/zero | tr '\\0' 'y' >&2\n\
         echo >&2; echo 'CUDA error: an illegal memory access was encountered' >&2\n\
         exit 1\n",
    );
    let out = std::process::Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .env("EXHIBIT_OUTPUT_LIMIT", "1000000")
        .output()
        .expect("start the runner");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let manifest = project.manifest();
    let check = crate::util::stage(&manifest, "check");
    assert!(
        check["reason"]
            .as_str()
            .is_some_and(|r| r.contains("illegal memory access")),
        "{check:#}"
    );
    let cut = check["cut"].as_object().expect("the cut logs are recorded");
    assert_eq!(cut.len(), 2, "{check:#}");
    assert!(cut.values().all(|size| size.as_u64() >= Some(3_000_000)));
    let run = project.runs().pop().expect("a run");
    for (path, _) in cut {
        let log = std::fs::read(run.join(path)).expect("the cut log");
        assert!(log.len() < 1_000_000 + 4096, "{path}: {} bytes", log.len());
        let text = String::from_utf8_lossy(&log);
        assert!(text.contains("bytes left out here"), "{path}");
    }
}

/// A program that never stops printing is stopped once a stream passes eight times the output
/// limit, before it fills the disk: the stage says why, and its log keeps the limit's worth.
#[test]
fn a_program_printing_without_end_is_stopped_before_it_fills_the_disk() {
    let project = project();
    project.write(
        "src/prog.sh",
        "# Stand-in program for tests (hand-written).\n\
         yes 'a line of output that never ends'\n",
    );
    let out = std::process::Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .env("EXHIBIT_OUTPUT_LIMIT", "1000000")
        .output()
        .expect("start the runner");
    let manifest = project.manifest();
    let check = crate::util::stage(&manifest, "check");
    assert_eq!(check["status"], "failed", "{check:#}");
    assert!(
        check["reason"]
            .as_str()
            .is_some_and(|r| r.contains("passed 8000000 bytes")),
        "{check:#}\n{}",
        stderr(&out)
    );
    let run = project.runs().pop().expect("a run");
    let cut = check["cut"].as_object().expect("the cut log is recorded");
    for (path, _) in cut {
        let log = std::fs::metadata(run.join(path)).expect("the cut log");
        assert!(log.len() < 1_000_000 + 4096, "{path}: {} bytes", log.len());
    }
}

/// Whatever a program prints, the runner's memory stays bounded: 300 MB on one line with no
/// newline, at the default output limit (128 MiB kept), peaks under 256 MiB of resident memory.
/// The peak is read from `/proc/PID/status` (`VmHWM`, the high-water mark) while the runner
/// runs; it reads the logs after the program ended, so the mark is taken while it still lives.
#[test]
fn a_program_printing_hundreds_of_megabytes_on_one_line_keeps_the_runner_small() {
    let project = project();
    project.write(
        "src/prog.sh",
        "# Stand-in program for tests (hand-written).\n\
         head -c 300000000 /dev/zero | tr '\\0' 'x'\n\
         sleep 1\n",
    );
    let mut child = std::process::Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the runner");
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib: u64 = 0;
    let ended = loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(ended.code().is_some(), "the runner ended: {ended:?}");
    assert!(peak_kib > 0, "the runner's memory was read");
    eprintln!("the runner peaked at {} MiB", peak_kib / 1024);
    assert!(
        peak_kib < 256 * 1024,
        "the runner peaked at {} MiB",
        peak_kib / 1024
    );
    let manifest = project.manifest();
    let check = crate::util::stage(&manifest, "check");
    assert!(
        check["cut"].as_object().is_some_and(|c| !c.is_empty()),
        "{check:#}"
    );
}

/// The exit statuses by which a program says it did not test decide a unit's ending: adding
/// them after a run is a changed input, and the unit runs again under them.
#[test]
fn exit_codes_added_after_a_run_are_in_the_units_key() {
    let project = project();
    project.pipeline(&pipeline("PLANT: 1", ""));
    let (first, manifest, err) = run(&project);
    assert_eq!(first, 1, "{err}");
    assert_eq!(status(&manifest, "check"), "findings", "{manifest:#}");
    let yaml = pipeline("PLANT: 1", "").replace(
        "    env: {  }\n",
        "    env: {  }\n    exit_codes: { skipped: [1] }\n",
    );
    assert!(yaml.contains("exit_codes"), "{yaml}");
    project.pipeline(&yaml);
    let (_, manifest, err) = run(&project);
    assert!(
        ran(&manifest)["check"],
        "a finding was served under new exit codes: {err}"
    );
    assert_eq!(status(&manifest, "check"), "skipped", "{manifest:#}");
}

/// Two sources whose names differ only in bytes that are not UTF-8 are two inputs: a change to
/// either runs the build again (read lossily, both names were one key).
#[test]
fn sources_whose_names_are_not_utf8_are_keyed_byte_exact() {
    use std::os::unix::ffi::OsStrExt;
    let project = project();
    let name = |b: u8| {
        project.root.join("src").join(std::ffi::OsStr::from_bytes(&[
            b'd', b'a', b't', b'a', b, b'.', b't',
        ]))
    };
    std::fs::write(name(0xff), "one\n").expect("a source");
    std::fs::write(name(0xfe), "two\n").expect("a source");
    let (first, _, err) = run(&project);
    assert_eq!(first, 0, "{err}");
    let (_, manifest, _) = run(&project);
    assert!(!ran(&manifest)["build"], "{manifest:#}");
    // The second name's content changes: the build is another input now.
    std::fs::write(name(0xfe), "three\n").expect("a source");
    let (_, manifest, err) = run(&project);
    assert!(
        ran(&manifest)["build"],
        "a stale build was served: {err}\n{manifest:#}"
    );
}
