//! What a run prints and how it ends: paths as the user can open them from where they ran the
//! command, one line per stage for what was skipped, and the exit code a note does not set.

use std::process::{Command, Output};

use crate::util::{BIN, Project, code, pipeline, stage, stderr};

fn run_from(dir: &std::path::Path, project: &Project, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", &project.cache)
        .output()
        .expect("start the runner")
}

/// Every path printed at the end of a run opens from the directory the command ran in: the
/// pipeline named through a subdirectory gives paths through it, an absolute one absolute
/// paths, never `//`.
#[test]
fn printed_paths_open_from_where_the_command_ran() {
    let project = Project::new();
    let parent = project.root.parent().expect("a parent");
    let name = project
        .root
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    let absolute = project.root.join("pipeline.yaml");
    for (pipeline, prefix) in [
        (format!("{name}/pipeline.yaml"), format!("{name}/")),
        (
            absolute.to_string_lossy().into_owned(),
            format!("{}/", project.root.display()),
        ),
    ] {
        let out = run_from(parent, &project, &[pipeline.as_str(), "--force"]);
        let err = stderr(&out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(code(&out), 0, "{err}");
        let id = project.manifest()["id"]
            .as_str()
            .expect("an id")
            .to_string();
        let printed = [
            (err.as_str(), format!("run {id}: {prefix}artifacts/{id}")),
            (err.as_str(), format!("wrote {prefix}reports/{id}.md")),
            (err.as_str(), format!("artifacts: {prefix}artifacts/{id}")),
            (stdout.as_str(), format!("report: {prefix}reports/{id}.md")),
        ];
        for (text, line) in &printed {
            assert!(text.contains(line.as_str()), "{line:?} in\n{text}");
            let path = line.rsplit(' ').next().expect("a path");
            assert!(
                parent.join(path).exists(),
                "{path} from {}",
                parent.display()
            );
        }
        assert!(!format!("{err}{stdout}").contains("//"), "{err}{stdout}");
    }
}

/// A pipeline of two configs and two cases on a machine that cannot run its sanitizer stages:
/// each stage says once why its units were skipped, before anything runs, in the pipeline's
/// order, and the same way every time.
#[test]
fn each_skipped_stage_is_one_line_in_the_pipelines_order() {
    let project = Project::new();
    project.pipeline(
        &pipeline(
            "  memcheck:\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    cases: [seed, tail]\n  racecheck:\n    needs: { gpu: true, tools: [compute-sanitizer] }\n    cases: [seed, tail]\n",
        )
        .replace(
            "  tools:\n",
            "  tools:\n    compute-sanitizer: bin/no-such-compute-sanitizer\n",
        )
        .replace(
            "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n",
            "    small: { HEAD_DIM: 64, BLOCK_M: 64 }\n    large: { HEAD_DIM: 64, BLOCK_M: 128 }\n",
        )
        .replace(
            "  seed: { shape: \"2,8,512,64\" }\n",
            "  seed: { shape: \"2,8,512,64\" }\n  tail: { shape: \"1,2,200,64\" }\n",
        ),
    );
    let skip_lines = |out: &Output| -> Vec<String> {
        stderr(out)
            .lines()
            .filter(|l| l.contains(" skipped "))
            .map(str::to_string)
            .collect()
    };
    let first = project.run(&["pipeline.yaml"]);
    let err = stderr(&first);
    assert_eq!(code(&first), 0, "{err}");
    let lines = skip_lines(&first);
    assert_eq!(lines.len(), 2, "{err}");
    // Why: no GPU here, or (on a GPU machine) the missing sanitizer; the same for both.
    let reasons: Vec<&str> = lines
        .iter()
        .map(|l| l.split_once("0.00s  ").map_or("", |(_, why)| why))
        .collect();
    assert!(
        reasons[0].starts_with("no CUDA driver") || reasons[0].contains("compute-sanitizer"),
        "{err}"
    );
    assert_eq!(reasons[0], reasons[1], "{err}");
    for (line, stage) in lines.iter().zip(["memcheck", "racecheck"]) {
        assert!(
            line.starts_with(&format!("{stage} (4 units) ")),
            "{line}\n{err}"
        );
    }
    let position = |needle: &str| err.find(needle).unwrap_or(usize::MAX);
    assert!(
        position("memcheck (4 units)") < position("compile "),
        "said before anything runs:\n{err}"
    );
    let manifest = project.manifest();
    assert_eq!(
        manifest["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter(|s| s["status"] == "skipped")
            .count(),
        8,
        "every unit is still recorded"
    );
    let again = project.run(&["pipeline.yaml", "--force"]);
    assert_eq!(skip_lines(&again), lines, "{}", stderr(&again));
}

/// A stand-in nvcc printing what the pinned nvcc 13.0 printed for
/// `examples/slow-kernels/src/slow.cu` (captured on this project's build machine): a
/// compiler remark the report reads as a note of low confidence.
const NOTING_NVCC: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
printf '\177ELF stand-in cubin\n' > "$out"
cat >&2 <<'EOF'
src/slow.cu(45): warning #128-D: loop is not reachable
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * N + x];
    ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

EOF
"#;

/// A build whose only finding is a note (a compiler remark the report gives low confidence)
/// exits 0: only a root cause at warning level or above sets exit 1.
#[test]
fn a_note_alone_does_not_fail_the_run() {
    let project = Project::new();
    project.tool("nvcc", NOTING_NVCC);
    project.write("src/slow.cu", "// stand-in source\n");
    let out = project.run(&["pipeline.yaml"]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    let manifest = project.manifest();
    assert_eq!(stage(&manifest, "compile")["status"], "findings", "{err}");
    let run = project.runs().pop().expect("a run");
    let json = Command::new(BIN)
        .args(["report", "--format", "json"])
        .arg(&run)
        .output()
        .expect("render");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let levels: Vec<&str> = report["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter_map(|d| d["level"].as_str())
        .collect();
    assert_eq!(levels, ["note"], "{report:#}");
}

/// `exhibit pipeline.yaml 2>&1 | head -0`: stdout and stderr closed before the runner writes a
/// line. The run never panics (exit 101): it ends as it would have, with its manifest and report
/// written and not marked interrupted.
#[test]
fn a_closed_stdout_and_stderr_never_end_the_run() {
    let project = Project::new();
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let status = Command::new(BIN)
        .arg("pipeline.yaml")
        .current_dir(&project.root)
        .env("XDG_CACHE_HOME", &project.cache)
        .stdout(writer.try_clone().expect("clone the pipe"))
        .stderr(writer)
        .status()
        .expect("start the runner");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let manifest = project.manifest();
    assert_ne!(manifest["interrupted"], true, "{manifest:#}");
    assert!(project.root.join("reports/latest.md").is_file());
    // The same for `exhibit report`, whose Markdown goes to stdout.
    let run = project.runs().pop().expect("a run");
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let status = Command::new(BIN)
        .arg("report")
        .arg(&run)
        .stdout(writer.try_clone().expect("clone the pipe"))
        .stderr(writer)
        .status()
        .expect("start the runner");
    assert_eq!(status.code(), Some(0), "{status:?}");
}
