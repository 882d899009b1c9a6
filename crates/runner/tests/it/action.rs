//! The GitHub Action (`action.yml`), its steps run here in their order against a stand-in run:
//! each `run:` step is `action/exhibit-pr <step>`, run with the environment the step sets; the
//! `uses:` steps (uploads, the JUnit check) are GitHub's own and only listed. A stand-in `gh`
//! (hand-written) serves the base branch's run and records the comment it is asked to post.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{BIN, Project, code, stderr};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Stand-in for GitHub's CLI (hand-written): `run list` names run 42, `run download` copies the
/// stored base run from `$GH_STORE`, a pull request's head is `$GH_HEAD`, the comment list answers
/// 99 once a comment was posted, and a POST or PATCH keeps its body in `bin/gh.body`.
const GH: &str = r#"#!/bin/sh
here="$(dirname "$0")"
echo "$*" >> "$here/gh.log"
case "$1 $2" in
  "run list") echo 42 ;;
  "run download")
    dir=""
    while [ $# -gt 0 ]; do [ "$1" = "--dir" ] && dir="$2"; shift; done
    mkdir -p "$dir" && cp -R "$GH_STORE"/. "$dir"/ ;;
  "api repos/"*/pulls/*) echo "${GH_HEAD:-}" ;;
  "api -X")
    for a; do case $a in body=@*) cp "${a#body=@}" "$here/gh.body" ;; esac; done
    touch "$here/gh.commented" ;;
  api*) [ -f "$here/gh.commented" ] && echo 99 ;;
esac
exit 0
"#;

/// A project with the stand-in `gh` and the steps' shared folder holding a clean summary.
fn with_summary() -> (Project, PathBuf) {
    let project = Project::new();
    project.tool("gh", GH);
    let out = project.root.join("exhibit-out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("summary.md"), "## Exhibit: Clean\n").unwrap();
    (project, out)
}

/// One `exhibit-pr` step in `project`, as pull request 7 of `example/project`, with the
/// project's stand-in tools first on `PATH` and the steps' folder `out`.
fn step_command(project: &Project, out: &Path, step: &str) -> Command {
    let path = format!(
        "{}:{}",
        project.root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(repo().join("action/exhibit-pr"));
    command
        .arg(step)
        .current_dir(&project.root)
        .env("PATH", path)
        .env("EXHIBIT_OUT", out)
        .env("EXHIBIT_BIN", BIN)
        .env("GITHUB_REPOSITORY", "example/project")
        .env("PR_NUMBER", "7");
    command
}

/// The action's steps: `("run", subcommand)` or `("uses", action)`, in order.
fn steps() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("action.yml")).expect("action.yml");
    let doc: serde_json::Value = yaml_serde::from_str(&text).expect("action.yml parses");
    assert_eq!(doc["runs"]["using"], "composite");
    let step = regex::Regex::new(r#"action/exhibit-pr" (\w+)"#).unwrap();
    doc["runs"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| match (s["run"].as_str(), s["uses"].as_str()) {
            (Some(run), None) => {
                let sub = step
                    .captures(run)
                    .unwrap_or_else(|| panic!("a step that is not exhibit-pr: {run}"));
                ("run".to_string(), sub[1].to_string())
            }
            (None, Some(uses)) => ("uses".to_string(), uses.to_string()),
            _ => panic!("a step with neither run nor uses: {s}"),
        })
        .collect()
}

/// Runs the action's `run:` steps in order; returns each one's exit code by name.
fn run_steps(project: &Project, out: &Path, store: &Path) -> Vec<(String, i32)> {
    let path = format!(
        "{}:{}",
        project.root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut codes = Vec::new();
    for (kind, name) in steps() {
        if kind != "run" {
            continue;
        }
        let result = Command::new(repo().join("action/exhibit-pr"))
            .arg(&name)
            .current_dir(&project.root)
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", &project.cache)
            .env("EXHIBIT_OUT", out)
            .env("EXHIBIT_PIPELINE", "pipeline.yaml")
            .env("EXHIBIT_BIN", BIN)
            .env("GITHUB_REPOSITORY", "example/project")
            .env("GITHUB_SERVER_URL", "https://github.example")
            .env(
                "GITHUB_ACTION_PATH",
                "/home/ci/work/_actions/example-org/exhibit/v1",
            )
            .env_remove("EXHIBIT_HOME")
            .env_remove("EXHIBIT_RULES_URI")
            .env("GITHUB_WORKFLOW", "exhibit")
            .env("GITHUB_BASE_REF", "main")
            .env("GITHUB_STEP_SUMMARY", out.join("step-summary.md"))
            .env("PR_NUMBER", "7")
            .env("GH_STORE", store)
            .output()
            .expect("run a step");
        assert!(
            !String::from_utf8_lossy(&result.stderr).contains("usage:"),
            "{name}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        codes.push((name, result.status.code().unwrap_or(-1)));
    }
    codes
}

#[test]
fn the_actions_steps_run_compare_with_the_base_and_keep_one_comment() {
    let project = Project::new();
    project.tool("gh", GH);
    // The base branch's run, as its workflow's artifact keeps it.
    let base = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&base), 0, "{}", stderr(&base));
    let store = project.runs().pop().expect("the base run");

    let uses: Vec<String> = steps()
        .into_iter()
        .filter(|(k, _)| k == "uses")
        .map(|(_, u)| u)
        .collect();
    for wanted in [
        "github/codeql-action/upload-sarif",
        "mikepenz/action-junit-report",
        "actions/upload-artifact",
    ] {
        assert!(uses.iter().any(|u| u.starts_with(wanted)), "{uses:?}");
    }

    let out = project.root.join("exhibit-out");
    let codes = run_steps(&project, &out, &store);
    let names: Vec<&str> = codes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "names", "install", "run", "base", "compare", "comment", "verdict"
        ]
    );
    assert!(codes.iter().all(|(_, c)| *c == 0), "{codes:?}");

    // The run's reports, for the upload steps.
    for file in ["exhibit.sarif", "exhibit.junit.xml", "summary.md"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap_or_default();
        assert!(!text.is_empty(), "{file} is empty");
    }
    // The SARIF links Exhibit's docs where the action was fetched from, at its ref.
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("exhibit.sarif")).unwrap())
            .expect("SARIF");
    let driver = &sarif["runs"][0]["tool"]["driver"];
    assert_eq!(
        driver["informationUri"],
        "https://github.example/example-org/exhibit"
    );
    assert_eq!(
        driver["rules"][0]["helpUri"],
        "https://github.example/example-org/exhibit/blob/v1/docs/rules.md#compile-error"
    );
    let step_summary = std::fs::read_to_string(out.join("step-summary.md")).unwrap();
    assert!(step_summary.contains("**Verdict:**"), "{step_summary}");
    // Compared with the base branch's run, fetched through gh.
    let log = std::fs::read_to_string(project.root.join("bin/gh.log")).unwrap();
    assert!(
        log.contains(
            "run list --repo example/project --workflow exhibit --branch main --event push \
             --status completed"
        ),
        "{log}"
    );
    assert!(log.contains("run download 42"), "{log}");
    let diff = std::fs::read_to_string(out.join("diff.md")).unwrap();
    assert!(diff.contains("No regression"), "{diff}");

    // One comment: posted the first time, with the marker, the verdict and the comparison.
    let body = std::fs::read_to_string(project.root.join("bin/gh.body")).unwrap();
    assert!(body.starts_with("<!-- exhibit-report -->\n"), "{body}");
    assert!(body.contains("**Verdict:**"), "{body}");
    assert!(body.contains("Against the base branch"), "{body}");
    assert!(
        log.contains("api -X POST repos/example/project/issues/7/comments"),
        "{log}"
    );

    // The next push updates that comment instead of adding one.
    let again = run_steps(&project, &out, &store);
    assert!(again.iter().all(|(_, c)| *c == 0), "{again:?}");
    let log = std::fs::read_to_string(project.root.join("bin/gh.log")).unwrap();
    assert_eq!(log.matches("api -X POST").count(), 1, "{log}");
    assert!(
        log.contains("api -X PATCH repos/example/project/issues/comments/99"),
        "{log}"
    );
}

/// A pipeline that finds a root cause fails the job at the verdict step, after everything was
/// published: the comment is still posted.
#[test]
fn the_verdict_step_fails_last_with_the_pipelines_code() {
    let project = Project::new();
    project.tool("gh", GH);
    let out = project.root.join("exhibit-out");
    std::fs::create_dir_all(&out).unwrap();
    // A stand-in run that ended with findings.
    std::fs::write(out.join("run-code"), "1\n").unwrap();
    std::fs::write(
        out.join("summary.md"),
        "**Verdict:** ❌ Failing (stand-in)\n",
    )
    .unwrap();
    let step = |name: &str| {
        Command::new(repo().join("action/exhibit-pr"))
            .arg(name)
            .current_dir(&project.root)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    project.root.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("EXHIBIT_OUT", &out)
            .env("GITHUB_REPOSITORY", "example/project")
            .env("PR_NUMBER", "7")
            .status()
            .expect("run a step")
            .code()
    };
    assert_eq!(step("comment"), Some(0));
    assert!(project.root.join("bin/gh.body").exists());
    assert_eq!(step("verdict"), Some(1));
}

/// Unpacks a corpus entry's run into `dir`; returns the run directory.
fn corpus_run(entry: &str, dir: &Path) -> PathBuf {
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(repo().join("corpus").join(entry).join("run.tar.xz"))
        .arg("-C")
        .arg(dir)
        .status()
        .expect("run tar");
    assert!(status.success(), "{entry}: run.tar.xz does not unpack");
    dir.join("run")
}

fn runner_stdout(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("EXHIBIT_HOME")
        .env_remove("EXHIBIT_RULES_URI")
        .output()
        .expect("run the runner");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `docs/ci/examples/`: the SARIF, the JUnit and the pull-request comment of a corpus run (the
/// HeCBench `adv-cuda` race, compared with its fixed commit's run as the base, as if a pull
/// request took the fix back out) are what today's code renders. `EXHIBIT_BLESS=1` rewrites
/// them. `.ci/validate` checks the SARIF and JUnit files with the validators.
#[test]
fn the_committed_ci_examples_are_what_todays_code_renders() {
    let head_dir = tempfile::tempdir().unwrap();
    let base_dir = tempfile::tempdir().unwrap();
    let head = corpus_run("hecbench-adv-race-13ad568", head_dir.path());
    let base = corpus_run("hecbench-adv-race-fixed", base_dir.path());
    // Linked as the action links them, at a stand-in address (`.ci/validate` uses the same).
    let report = |format: &str| {
        runner_stdout(&[
            "report".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            "--home".as_ref(),
            "https://github.com/example/exhibit".as_ref(),
            "--rules-uri".as_ref(),
            "https://github.com/example/exhibit/blob/main/docs/rules.md".as_ref(),
            head.as_os_str(),
        ])
    };
    let out = tempfile::tempdir().unwrap();
    std::fs::write(
        out.path().join("summary.md"),
        runner_stdout(&["report".as_ref(), "--summary".as_ref(), head.as_os_str()]),
    )
    .unwrap();
    std::fs::write(
        out.path().join("diff.md"),
        runner_stdout(&["diff".as_ref(), base.as_os_str(), head.as_os_str()]),
    )
    .unwrap();
    let status = Command::new(repo().join("action/exhibit-pr"))
        .arg("comment")
        .env("EXHIBIT_OUT", out.path())
        .env_remove("PR_NUMBER")
        .status()
        .expect("the comment step");
    assert!(status.success());
    let comment = std::fs::read_to_string(out.path().join("comment.md")).unwrap();
    let examples = repo().join("docs/ci/examples");
    let bless = std::env::var_os("EXHIBIT_BLESS").is_some();
    let mut drifted = Vec::new();
    for (file, text) in [
        ("adv-race.sarif", report("sarif")),
        ("adv-race.junit.xml", report("junit")),
        ("adv-race.comment.md", comment),
    ] {
        for temp in [head_dir.path(), base_dir.path(), out.path()] {
            assert!(
                !text.contains(&*temp.to_string_lossy()),
                "{file} names a machine path"
            );
        }
        let path = examples.join(file);
        if bless {
            std::fs::create_dir_all(&examples).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            drifted.push(file);
        }
    }
    assert!(
        drifted.is_empty(),
        "{drifted:?} differ from what today's code renders: EXHIBIT_BLESS=1 cargo test -p runner --test it the_committed_ci_examples rewrites them"
    );
}

/// The workflow users copy (`docs/ci/exhibit.yml`) and the repository's own run the GPU job on
/// a self-hosted runner: neither runs it for a fork's pull request, whose pipeline, build and
/// program would run as that runner's user.
#[test]
fn no_fork_pull_request_runs_on_the_self_hosted_runner() {
    for file in ["docs/ci/exhibit.yml", ".github/workflows/exhibit.yml"] {
        let text = std::fs::read_to_string(repo().join(file)).expect("the workflow");
        let doc: serde_json::Value = yaml_serde::from_str(&text).expect("the workflow parses");
        let jobs = doc["jobs"].as_object().expect("jobs");
        let mut self_hosted = 0;
        for (name, job) in jobs {
            let hosted = job["runs-on"].to_string().contains("self-hosted");
            if !hosted {
                continue;
            }
            self_hosted += 1;
            let gate = job["if"].as_str().unwrap_or("");
            assert!(
                gate.contains("github.event.pull_request.head.repo.full_name == github.repository"),
                "{file}: job `{name}` runs on the self-hosted runner for any pull request: {gate:?}"
            );
        }
        assert!(self_hosted > 0, "{file}: no self-hosted job");
    }
}

/// The `comment` step: a report longer than a pull-request comment holds is cut to fit (GitHub
/// refuses one over 65,536 characters, and the pull request would keep the previous push's
/// verdict), and the comment it looks for is the action's own: the list query selects by
/// author as well as by the marker anyone can write.
#[test]
fn the_comment_fits_and_only_the_actions_own_comment_is_edited() {
    let (project, out) = with_summary();
    // A summary of 70,000 characters, many of them two bytes long.
    std::fs::write(out.join("summary.md"), "é".repeat(70_000)).unwrap();
    let result = step_command(&project, &out, "comment")
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_RUN_ID", "123")
        .output()
        .expect("run the comment step");
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let body = std::fs::read_to_string(project.root.join("bin/gh.body")).expect("a comment");
    assert!(
        body.chars().count() <= 65_536,
        "{} characters",
        body.chars().count()
    );
    assert!(
        body.contains("cut: a comment holds at most 65,536"),
        "the cut is said"
    );
    assert!(
        body.contains("(https://github.com/example/project/actions/runs/123)"),
        "the rest is linked"
    );
    let log = std::fs::read_to_string(project.root.join("bin/gh.log")).unwrap();
    assert!(
        log.contains(".user.login == \"github-actions[bot]\""),
        "{log}"
    );
}

/// The `comment` step of a run whose head is no longer the pull request's (a newer push came
/// while it ran, and the newer run may have finished first) leaves the comment alone: the
/// newest push's verdict is the one the pull request shows.
#[test]
fn an_older_pushs_run_never_overwrites_the_newer_comment() {
    let (project, out) = with_summary();
    let comment = |head: &str| {
        step_command(&project, &out, "comment")
            .env("HEAD_SHA", head)
            .env("GH_HEAD", "b".repeat(40))
            .output()
            .expect("run the comment step")
    };
    let older = comment(&"a".repeat(40));
    assert_eq!(older.status.code(), Some(0), "{}", stderr(&older));
    assert!(
        String::from_utf8_lossy(&older.stdout).contains("no comment"),
        "{}",
        String::from_utf8_lossy(&older.stdout)
    );
    assert!(
        !project.root.join("bin/gh.body").exists(),
        "the older run wrote the comment"
    );
    let newer = comment(&"b".repeat(40));
    assert_eq!(newer.status.code(), Some(0), "{}", stderr(&newer));
    assert!(
        project.root.join("bin/gh.body").exists(),
        "the head's run wrote no comment"
    );
}

/// A job whose pipeline plans GPU stages, on a runner without a GPU (one that lost its
/// driver): the `run` step fails it (exit 3) unless `require-gpu` is false, and uploads no
/// SARIF, which code scanning would read as every alert fixed.
#[test]
fn a_run_that_checked_nothing_on_a_gpu_fails_and_uploads_no_sarif() {
    let project = Project::new();
    project.pipeline(&crate::util::pipeline("  check:\n    cases: [seed]\n"));
    let out = project.root.join("exhibit-out");
    let run = |require: Option<&str>| {
        let mut command = Command::new(repo().join("action/exhibit-pr"));
        command
            .arg("run")
            .current_dir(&project.root)
            .env("XDG_CACHE_HOME", &project.cache)
            .env("EXHIBIT_OUT", &out)
            .env("EXHIBIT_PIPELINE", "pipeline.yaml")
            .env("EXHIBIT_BIN", BIN);
        match require {
            Some(value) => command.env("EXHIBIT_REQUIRE_GPU", value),
            None => command.env_remove("EXHIBIT_REQUIRE_GPU"),
        };
        let result = command.output().expect("the run step");
        let run_code = std::fs::read_to_string(out.join("run-code")).unwrap_or_default();
        (result, run_code.trim().to_string())
    };
    let (result, run_code) = run(None);
    assert_eq!(run_code, "3", "{}", stderr(&result));
    let printed = String::from_utf8_lossy(&result.stdout);
    assert!(printed.contains("checked nothing on a GPU"), "{printed}");
    assert!(!out.join("exhibit.sarif").exists(), "a SARIF of no results");
    let (result, run_code) = run(Some("false"));
    assert_eq!(run_code, "0", "{}", stderr(&result));
    assert!(!out.join("exhibit.sarif").exists(), "a SARIF of no results");
}

/// Two pipelines (or matrix jobs) in one workflow keep apart: the `names` step gives each its
/// suffix (the `name` input, else the pipeline's path), which its artifacts, SARIF category,
/// check and comment marker carry, and the base run is fetched by that artifact name.
#[test]
fn each_pipeline_names_its_own_artifacts_category_and_comment() {
    let (project, out) = with_summary();
    let step = |name: &str, pipeline: &str, given: Option<&str>| {
        let mut command = step_command(&project, &out, name);
        command
            .env("EXHIBIT_PIPELINE", pipeline)
            .env("GITHUB_WORKFLOW", "exhibit")
            .env("GITHUB_BASE_REF", "main")
            .env("GH_STORE", &out);
        match given {
            Some(n) => command.env("EXHIBIT_NAME", n),
            None => command.env_remove("EXHIBIT_NAME"),
        };
        let result = command.output().expect("a step");
        assert_eq!(result.status.code(), Some(0), "{}", stderr(&result));
        String::from_utf8_lossy(&result.stdout).trim().to_string()
    };
    assert_eq!(step("names", "pipeline.yaml", None), "suffix=");
    assert_eq!(
        step("names", "examples/cupy/pipeline.yaml", None),
        "suffix=-examples-cupy-pipeline"
    );
    assert_eq!(
        step("names", "pipeline.yaml", Some("h100 $(x)")),
        "suffix=-h100---x-"
    );
    step("base", "pipeline.yaml", Some("h100"));
    step("comment", "pipeline.yaml", Some("h100"));
    let log = std::fs::read_to_string(project.root.join("bin/gh.log")).unwrap();
    assert!(log.contains("--name exhibit-run-h100"), "{log}");
    let body = std::fs::read_to_string(project.root.join("bin/gh.body")).unwrap();
    assert!(body.starts_with("<!-- exhibit-report-h100 -->\n"), "{body}");
    // The action's steps use the suffix in every name that two pipelines could share.
    let action = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    for shared in [
        "category: exhibit${{ steps.names.outputs.suffix }}",
        "name: exhibit-run${{ steps.names.outputs.suffix }}",
        "name: exhibit-reports${{ steps.names.outputs.suffix }}",
        "check_name: Exhibit${{ steps.names.outputs.suffix }}",
    ] {
        assert!(action.contains(shared), "{shared}");
    }
}
