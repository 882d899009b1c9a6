//! What a verdict may claim: `diff` calls a root cause fixed only when the newer run re-ran
//! the stage that found it, program text reaches reports and terminals as data, and a unit
//! whose evidence could not be kept is never passed. The programs and tools are shell scripts
//! standing in for real ones (their output is hand-written and says so, except the captured
//! sanitizer log they print).

use serde_json::Value;

use crate::util::{Project, code, root_relative, stage, stderr};

/// A stand-in program steered by the file `mode`: `fail` prints a CUDA error and exits 1,
/// `hang` sleeps past its stage's timeout, anything else passes.
const PROGRAM: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
mode=$(cat mode 2>/dev/null)
case "$mode" in
  fail) echo "CUDA error: an illegal memory access was encountered" >&2; exit 1 ;;
  hang) sleep 30 ;;
esac
echo "all launches passed"
"#;

/// A stand-in compute-sanitizer steered by `mode`: `fail` prints a captured memcheck log with
/// an out-of-bounds read, `host` a captured initcheck log whose one record is a host copy of
/// memory nothing it instrumented wrote, `hang` sleeps, anything else prints a clean summary.
fn sanitizer() -> String {
    format!(
        r#"#!/bin/sh
# Stand-in for compute-sanitizer in tests: prints a captured log or a hand-written clean one.
if [ "$1" = "--version" ]; then echo "Compute Sanitizer 0.0 (stand-in)"; exit 0; fi
mode=$(cat mode 2>/dev/null)
case "$mode" in
  fail) cat '{0}/../parsers/fixtures/compute-sanitizer/memcheck_oob_read.log'; exit 86 ;;
  host) cat '{0}/../parsers/fixtures/compute-sanitizer/initcheck_launch_count_host.log'; exit 86 ;;
  hang) sleep 30 ;;
esac
echo "========= COMPUTE-SANITIZER"
echo "========= ERROR SUMMARY: 0 errors"
"#,
        env!("CARGO_MANIFEST_DIR")
    )
}

fn pipeline(stages: &str) -> String {
    format!(
        r#"target:
  build:
    command: [sh, build.sh, "{{build_dir}}"]
  program:
    command: [bin/prog]
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
  tools:
    nvcc: bin/nvcc
    cuobjdump: bin/cuobjdump
    compute-sanitizer: bin/compute-sanitizer
matrix:
  arch: [sm_90]
  configs:
    plain: {{}}
grace: 1s
stages:
  build:
    timeout: 30s
{stages}
  report:
    timeout: 30s
"#
    )
}

fn project(stages: &str) -> Project {
    let project = Project::new();
    project.tool("prog", PROGRAM);
    project.tool("compute-sanitizer", &sanitizer());
    project.write("build.sh", "echo built > \"$1/app\"\n");
    project.pipeline(&pipeline(stages));
    project
}

const CHECKS: &str = "  check:\n    needs: { gpu: false }\n    timeout: 3s\n  memcheck:\n    needs: { gpu: false, tools: [compute-sanitizer] }\n    timeout: 3s";

/// The newest run, relative to the project.
fn newest(project: &Project) -> String {
    root_relative(&project.runs().pop().expect("a run"), &project.root)
}

fn diff_json(project: &Project, a: &str, b: &str) -> (i32, Value) {
    let out = project.run(&["diff", a, b, "--format", "json"]);
    let json = serde_json::from_slice(&out.stdout).expect("the diff is JSON");
    (code(&out), json)
}

#[test]
fn diff_does_not_call_a_root_cause_fixed_when_b_never_re_ran_its_stage() {
    let project = project(CHECKS);
    project.write("mode", "fail\n");
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let a = newest(&project);

    // B: compile-only. The check and memcheck never ran.
    project.write("mode", "pass\n");
    let out = project.run(&["pipeline.yaml", "--only", "build", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let b = newest(&project);
    let out = project.run(&["diff", &a, &b]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 3, "{text}");
    assert!(!text.contains("No regression"), "{text}");
    assert!(!text.contains("Fixed root causes"), "{text}");
    assert!(text.contains("## Not re-tested"), "{text}");
    assert!(text.contains("not run in B"), "{text}");
    let (status, json) = diff_json(&project, &a, &b);
    assert_eq!(status, 3);
    assert_eq!(json["diff"]["verdict"], "incomplete", "{json:#}");
    assert_eq!(json["diff"]["fixed"].as_array().map(Vec::len), Some(0));
    assert!(
        json["diff"]["not_retested"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );
    // Tool findings follow the same rule: memcheck's records are not fixed either.
    assert_eq!(
        json["diff"]["fixed_findings"].as_array().map(Vec::len),
        Some(0),
        "{json:#}"
    );
    assert!(
        json["diff"]["not_retested_findings"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );

    // C: the check and memcheck ran but were killed at their timeout.
    project.write("mode", "hang\n");
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stage(&project.manifest(), "check")["status"], "timed_out");
    let c = newest(&project);
    let out = project.run(&["diff", &a, &c]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 3, "{text}");
    assert!(text.contains("timed out in B"), "{text}");
    assert!(!text.contains("No regression"), "{text}");

    // D: both re-ran on the same config and arch and passed: now it is fixed.
    project.write("mode", "pass\n");
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let d = newest(&project);
    let out = project.run(&["diff", &a, &d]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{text}");
    assert!(text.contains("✅ No regression"), "{text}");
    assert!(text.contains("## Fixed root causes"), "{text}");
    assert!(!text.contains("Not re-tested"), "{text}");
    let (_, json) = diff_json(&project, &a, &d);
    assert!(
        json["diff"]["fixed_findings"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{json:#}"
    );
}

/// A program whose stderr carries a colour, a window title, a byte that is not UTF-8 and a
/// CUDA error (in colour), and which fails.
const NOISY: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
printf 'starting \033[31mred\033[0m \033]0;title\007 byte \377 here\n' >&2
printf '\033[1;31mCUDA error: an illegal memory access was encountered\033[0m\n' >&2
exit 1
"#;

/// No escape character, BEL or other control but newline and tab, raw or JSON-escaped.
fn assert_plain(what: &str, text: &str) {
    let bad = text
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t');
    assert!(bad.is_none(), "{what} holds {bad:?}: {text}");
    assert!(
        !text.contains("\\u001b") && !text.contains("\\u0007"),
        "{what} holds an escaped control: {text}"
    );
}

#[test]
fn program_text_reaches_reports_and_the_terminal_as_plain_text() {
    let project = project("  check:\n    needs: { gpu: false }\n    timeout: 30s");
    project.tool("prog", NOISY);
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let error = "CUDA error: an illegal memory access was encountered";
    // The terminal: the unit's line names the error, with no escape sequence.
    let terminal = stderr(&out);
    assert!(terminal.contains(error), "{terminal}");
    assert_plain("the runner's stderr", &terminal);
    assert_plain("the runner's stdout", &String::from_utf8_lossy(&out.stdout));
    // The manifest keeps what the program said (its reason is data, escaped as JSON).
    let manifest = project.manifest();
    let check = stage(&manifest, "check");
    assert!(
        check["reason"].as_str().is_some_and(|r| r.contains(error)),
        "{check:#}"
    );
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    assert!(report.contains(error), "{report}");
    assert_plain("the report", &report);
    let run = newest(&project);
    let summary = project.run(&["report", &run, "--summary"]);
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(text.contains(error), "{text}");
    assert_plain("the summary", &text);
    for format in ["json", "sarif", "junit"] {
        let out = project.run(&["report", &run, "--format", format]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(error), "{format}: {text}");
        assert_plain(format, &text);
    }
}

/// A program whose failing line mentions people, hides its order behind a right-to-left
/// override and carries characters XML does not allow.
const MENTIONS: &str = "#!/bin/sh\n# Stand-in program for tests; its output is hand-written.\nprintf 'FAILED: ask @octocat and @org/team, see \\342\\200\\256evil\\342\\200\\254 \\357\\277\\277 at a@b.example\\n' >&2\nexit 1\n";

/// Reports stay inert in every format: a mention in the program's words notifies nobody (a
/// zero-width joiner after its `@`), a bidirectional control is shown as what it is, and JUnit
/// and SARIF hold no character XML 1.0 refuses.
#[test]
fn mentions_bidi_controls_and_xml_invalid_characters_stay_inert() {
    let project = project("  check:\n    needs: { gpu: false }\n    timeout: 30s");
    project.tool("prog", MENTIONS);
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let run = newest(&project);
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    let summary = project.run(&["report", &run, "--summary"]);
    let summary = String::from_utf8_lossy(&summary.stdout).into_owned();
    for (what, text) in [("the report", &report), ("the summary", &summary)] {
        assert!(text.contains("@\u{200d}octocat"), "{what}: {text}");
        assert!(text.contains("@\u{200d}org/team"), "{what}: {text}");
        assert!(
            !text.contains("@octocat") && !text.contains("@org/team"),
            "{what}: {text}"
        );
        // An address is no mention.
        assert!(text.contains("a@b.example"), "{what}: {text}");
    }
    for format in ["md", "json", "sarif", "junit"] {
        let out = project.run(&["report", &run, "--format", format]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{202c}'),
            "{format} holds a bidirectional control: {text}"
        );
        assert!(
            text.contains("<U+202E>")
                || text.contains("\\u003cU+202E\\u003e")
                || text.contains("&lt;U+202E&gt;"),
            "{format}: {text}"
        );
        if format == "junit" || format == "sarif" {
            assert!(!text.contains('\u{ffff}'), "{format} holds U+FFFF: {text}");
        }
    }
    let terminal = stderr(&out);
    assert!(!terminal.contains('\u{202e}'), "{terminal}");
}

/// A stage's status and reason in the newest run, and the report's text.
fn status_and_report(project: &Project, name: &str) -> (String, String, String) {
    let manifest = project.manifest();
    let check = stage(&manifest, name);
    let report = std::fs::read_to_string(project.root.join("reports/latest.md")).expect("report");
    (
        check["status"].as_str().unwrap_or("").to_string(),
        check["reason"].as_str().unwrap_or("").to_string(),
        report,
    )
}

#[test]
fn a_unit_that_ends_on_a_nearly_full_file_system_is_inconclusive() {
    let project = project("  check:\n    needs: { gpu: false }\n    timeout: 30s");
    // A threshold no file system meets: every unit ends on a "nearly full" one.
    let huge = u64::MAX.to_string();
    let out = project.run_env(&["pipeline.yaml"], &[("EXHIBIT_MIN_FREE_BYTES", &huge)]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // The first unit to end, the build, is inconclusive; the check that needs it is skipped.
    let (status, reason, report) = status_and_report(&project, "build");
    assert_eq!(status, "inconclusive");
    assert!(reason.contains("file system had"), "{reason}");
    assert_eq!(status_and_report(&project, "check").0, "skipped");
    assert!(reason.contains("its logs may be cut short"), "{reason}");
    assert!(!report.contains("✅ Clean"), "{report}");
    assert!(report.contains("its logs may be cut short"), "{report}");
    // The space reserve is given back when the run ends.
    let run = project.runs().pop().expect("a run");
    assert!(!run.join(".space-reserve").exists());
    // With the default threshold the same unit passes.
    let out = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(status_and_report(&project, "check").0, "passed");
    // A threshold that is not a number is refused.
    let out = project.run_env(&["pipeline.yaml"], &[("EXHIBIT_MIN_FREE_BYTES", "lots")]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("EXHIBIT_MIN_FREE_BYTES"),
        "{}",
        stderr(&out)
    );
}

/// A program that writes 2 MB, ignoring the file size limit's signal and the write error
/// (EFBIG) it then gets, and exits 0.
const OVERFLOW: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
trap '' XFSZ
yes "all launches passed" 2>/dev/null | head -c 2000000 2>/dev/null
exit 0
"#;

#[test]
fn a_log_cut_short_by_a_failed_write_is_inconclusive() {
    let project = project("  check:\n    needs: { gpu: false }\n    timeout: 30s");
    project.tool("prog", OVERFLOW);
    // The runner (and so the program) under a file size limit of 512 blocks (256 KiB in
    // dash's 512-byte blocks, 512 KiB in bash's): the program's writes past it fail.
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -f 512 && exec \"$0\" \"$@\"",
            crate::util::BIN,
        ])
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .output()
        .expect("start the runner");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let (status, reason, report) = status_and_report(&project, "check");
    assert_eq!(status, "inconclusive", "{reason}");
    assert!(
        reason.contains("stopped at the file size limit"),
        "{reason}"
    );
    assert!(!report.contains("✅ Clean"), "{report}");
    assert!(report.contains("the log is cut short"), "{report}");
}

/// Unmounts a tmpfs when the test ends, also when it fails.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A program that fills the disk through its own log, ignores the error and exits 0.
const FILL: &str = r#"#!/bin/sh
# Stand-in program for tests; its output is hand-written.
head -c 16000000 /dev/zero 2>/dev/null
exit 0
"#;

#[test]
#[ignore = "needs root to mount a 4 MiB tmpfs: run as root with --ignored"]
fn a_program_that_fills_the_disk_and_exits_0_is_inconclusive() {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    assert!(root, "this test mounts a tmpfs and needs root");
    let project = project("  check:\n    needs: { gpu: false }\n    timeout: 30s");
    project.tool("prog", FILL);
    let artifacts = project.root.join("artifacts");
    std::fs::create_dir_all(&artifacts).expect("create artifacts/");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&artifacts)
        .status()
        .expect("start mount");
    assert!(
        mounted.success(),
        "mount a tmpfs on {}",
        artifacts.display()
    );
    let _unmount = Mounted(artifacts);
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let (status, reason, report) = status_and_report(&project, "check");
    assert_eq!(status, "inconclusive", "{reason}");
    assert!(reason.contains("file system had 0 B free"), "{reason}");
    assert!(!report.contains("✅ Clean"), "{report}");
}

/// A received run's manifest names its pipeline as it likes. SARIF places every result at a
/// path inside the repository whatever it says: never `../` out of it, never absolute, never a
/// URI with a scheme (`examples/numba`'s H200 run, its `pipeline` rewritten).
#[test]
fn a_received_manifests_pipeline_never_makes_a_sarif_uri_outside_the_repository() {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                copy(&path, &to.join(entry.file_name()));
            } else {
                std::fs::copy(&path, to.join(entry.file_name())).unwrap();
            }
        }
    }
    let runs = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/numba/reference/artifacts");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("manifest.json").is_file())
        .expect("the numba reference run");
    let uri_of = regex::Regex::new(r#""uri":"([^"]*)""#).unwrap();
    for pipeline in [
        "../../../../etc/passwd",
        "file:///etc/shadow",
        "https://example.com/x.yaml",
        "/etc/pipeline.yaml",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let copied = dir.path().join("run");
        copy(&run, &copied);
        let manifest = copied.join("manifest.json");
        let mut json: Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        json["pipeline"] = Value::String(pipeline.into());
        std::fs::write(&manifest, serde_json::to_string(&json).unwrap()).unwrap();
        let out = std::process::Command::new(crate::util::BIN)
            .args(["report", "--format", "sarif"])
            .arg(&copied)
            .output()
            .expect("run the runner");
        let sarif: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{pipeline}: {e}: {}", stderr(&out)));
        let text = sarif.to_string();
        let uris: Vec<String> = uri_of
            .captures_iter(&text)
            .map(|c| c[1].to_string())
            .collect();
        assert!(!uris.is_empty(), "{pipeline}: no uri in {text}");
        for uri in uris.iter().filter(|u| !u.starts_with("https://github")) {
            assert!(
                !uri.starts_with('/')
                    && !uri.split('/').any(|p| p == "..")
                    && !uri.split('/').next().is_some_and(|p| p.contains(':')),
                "{pipeline}: {uri}"
            );
        }
    }
}

/// initcheck told to check the first launches only (`--launch-count`, as `exhibit init` writes
/// for a program that times its kernels) does not see what later launches write: its record of
/// a host copy of such memory (the captured `torch.allclose` result of an autotuned Triton
/// program, on an H200) is not a root cause, and the report says why and how to confirm. The
/// same record from an initcheck over every launch stands.
#[test]
fn a_host_copy_initcheck_flags_after_its_launch_bound_is_not_a_root_cause() {
    let initcheck =
        |args: &str| format!("  initcheck:\n    needs: {{ gpu: false }}\n    timeout: 30s\n{args}");
    let project = project(&initcheck("    args: [--launch-count, \"8\"]\n"));
    project.write("mode", "host");
    let out = project.run(&["pipeline.yaml"]);
    let manifest = project.manifest();
    let unit = &stage(&manifest, "initcheck")["unit"];
    assert_eq!(
        unit["sanitized_launches"],
        serde_json::json!({"chosen": "first", "count": 8}),
        "{unit:#}"
    );
    let run = project.runs().pop().expect("a run");
    let json: Value = serde_json::from_str(&crate::util::rendered(&run, "json")).expect("JSON");
    let diagnoses = json["diagnoses"].as_array().expect("diagnoses");
    assert!(
        diagnoses.iter().all(|d| d["level"] != "error"),
        "{}: {diagnoses:#?}",
        stderr(&out)
    );
    assert_ne!(json["verdict"]["kind"], "failing", "{:#}", json["verdict"]);
    let note = diagnoses
        .iter()
        .find(|d| d["rule"] == "uninitialized-read")
        .unwrap_or_else(|| panic!("{diagnoses:#?}"));
    let words = note.to_string();
    assert!(words.contains("--launch-count"), "{words}");
    assert!(words.contains("uninstrumented"), "{words}");

    // Over every launch, the same record is the root cause it reads as.
    project.pipeline(&pipeline(&initcheck("")));
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let run = project.runs().pop().expect("a run");
    let json: Value = serde_json::from_str(&crate::util::rendered(&run, "json")).expect("JSON");
    assert_eq!(json["verdict"]["kind"], "failing", "{:#}", json["verdict"]);
}
