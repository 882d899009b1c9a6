//! `exhibit bisect` on generated git histories, through the CLI. The build, test and benchmark
//! programs are shell scripts standing in for a compiler and a test binary (their output is
//! hand-written and says so): a line `PLANT` in the source makes the test fail at that line,
//! `SYNTAX` makes the build fail, `SLOW` makes the benchmark 50% slower.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::util::{BIN, code, stderr};

const PIPELINE: &str = r#"target:
  sources: [src]
  build:
    command: [sh, tools/build.sh, "{build_dir}"]
  program:
    command: [sh, tools/check.sh, "{build_dir}", "{out}"]
grace: 1s
stages:
  build: {}
  check:
    needs: { gpu: false }
    timeout: 60s
  bench:
    needs: { gpu: false }
    timeout: 60s
    command: [sh, tools/bench.sh, "{build_dir}", "{out}"]
"#;

const BUILD: &str = r#"#!/bin/sh
# Stand-in compiler for tests; its output is hand-written.
if grep -q SYNTAX src/kernel.cu; then
  echo "src/kernel.cu(3): error: expected a \";\"" >&2
  exit 1
fi
mkdir -p "$1" && cp src/kernel.cu "$1/kernel.cu"
"#;

const CHECK: &str = r#"#!/bin/sh
# Stand-in test program for tests; its output is hand-written. PLANT fails `scale`, OLDBUG fails
# `rowsum`, each at the marker's line.
[ -n "$EXHIBIT_TEST_SLEEP" ] && sleep "$EXHIBIT_TEST_SLEEP"
# Held (5 min at most) until the test releases it, saying it started and its pid.
if [ -n "$EXHIBIT_TEST_HOLD" ]; then
  echo $$ > "$EXHIBIT_TEST_HOLD.pid"
  n=0; while [ ! -e "$EXHIBIT_TEST_HOLD" ] && [ $n -lt 6000 ]; do sleep 0.05; n=$((n+1)); done
fi
result() {
  line=$(grep -n "$2" "$3" | head -1 | cut -d: -f1)
  if [ -n "$line" ]; then
    printf '{"name":"%s","passed":false,"message":"max abs error 3.5 at element 999 of 1000","file":"src/kernel.cu","line":%s}' "$1" "$line"
    failed=1
  else
    printf '{"name":"%s","passed":true}' "$1"
  fi
}
failed=0
{
  printf '{"schema":"exhibit.results/1","program":"check","results":['
  result "scale n=1000" PLANT "$1/kernel.cu"; printf ','; result "rowsum n=200" OLDBUG "$1/kernel.cu"
  printf ']}\n'
} > "$2"
grep -q -e PLANT -e OLDBUG "$1/kernel.cu" && exit 1
exit 0
"#;

const BENCH: &str = r#"#!/bin/sh
# Stand-in benchmark for tests; its output is hand-written in Google Benchmark's JSON form.
t=100.0; sd=0.4
grep -q SLIGHT "$1/kernel.cu" && t=107.0
grep -q SLOW "$1/kernel.cu" && t=150.0
grep -q NOISY "$1/kernel.cu" && sd=5.0
row() {
  printf '{"name":"BM_scale/1000_%s","family_index":0,"per_family_instance_index":0,"run_name":"BM_scale/1000","run_type":"aggregate","repetitions":12,"threads":1,"aggregate_name":"%s","aggregate_unit":"time","iterations":12,"real_time":%s,"cpu_time":%s,"time_unit":"us"}' "$1" "$1" "$2" "$2"
}
{
  printf '{"context":{"date":"2026-11-24T00:00:00+00:00","host_name":"stand-in","executable":"bench","num_cpus":2,"library_version":"1.9.5","json_schema_version":1},"benchmarks":['
  row mean "$t"; printf ','; row median "$t"; printf ','; row stddev "$sd"
  printf ']}\n'
} > "$2"
"#;

/// A repository with a history the tests write commit by commit (`sshd.rs` and `slurm.rs`
/// bisect one too).
pub struct Repo {
    _dir: tempfile::TempDir,
    _cache: tempfile::TempDir,
    pub root: PathBuf,
    pub cache: PathBuf,
    /// The kernel's lines now.
    kernel: Vec<String>,
    pub commits: Vec<String>,
}

/// A history of `n` commits after the first, of which commit `plant_at` plants the fault (the
/// others append a comment to the kernel); the check stage needs a GPU when `gpu`. Returns the
/// repository and the planting commit.
pub fn planted(n: usize, plant_at: usize, gpu: bool) -> (Repo, String) {
    let mut repo = Repo::new();
    if gpu {
        repo.write(
            "pipeline.yaml",
            &PIPELINE.replace(
                "  check:\n    needs: { gpu: false }",
                "  check:\n    needs: { gpu: true, tools: [] }",
            ),
        );
        repo.git(&["commit", "-q", "-am", "The check runs on a GPU"]);
        repo.commits[0] = repo.git(&["rev-parse", "HEAD"]);
    }
    let planting = repo.tweaks_and_plant(n, plant_at);
    (repo, planting)
}

impl Repo {
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cache = tempfile::tempdir().expect("a temporary directory");
        let mut repo = Repo {
            root: dir.path().to_path_buf(),
            cache: cache.path().to_path_buf(),
            _dir: dir,
            _cache: cache,
            kernel: (1..=8).map(|i| format!("// kernel line {i}")).collect(),
            commits: Vec::new(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("pipeline.yaml", PIPELINE);
        repo.write("tools/build.sh", BUILD);
        repo.write("tools/check.sh", CHECK);
        repo.write("tools/bench.sh", BENCH);
        repo.write(".gitignore", "artifacts/\nreports/\n");
        repo.write("README.md", "# scale\n");
        repo.commit_kernel("Initial kernel and pipeline");
        repo
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.root)
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Author")
            .env("GIT_COMMITTER_EMAIL", "author@example.com")
            .env("GIT_AUTHOR_DATE", "2026-11-01T12:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-11-01T12:00:00Z")
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Writes the kernel and commits everything; returns the commit.
    fn commit_kernel(&mut self, message: &str) -> String {
        let text = self.kernel.join("\n") + "\n";
        self.write("src/kernel.cu", &text);
        self.commit_all(message)
    }

    /// Commits everything; returns the commit.
    fn commit_all(&mut self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        let head = self.git(&["rev-parse", "HEAD"]);
        self.commits.push(head.clone());
        head
    }

    /// Commits the fault: a read one past the end, marked `PLANT`, at the kernel's line `line`.
    fn plant(&mut self, line: usize) -> String {
        self.kernel
            .insert(line, "    out[i] = in[i + 1];  // PLANT".to_string());
        self.commit_kernel("Read the neighbour (plants the fault)")
    }

    /// Commits a harmless change to the kernel: a comment appended.
    fn tweak(&mut self, i: usize) -> String {
        self.kernel.push(format!("// tweak {i}"));
        self.commit_kernel(&format!("Tweak {i}"))
    }

    /// `n` more commits, commit `plant_at` planting the fault, the others tweaks: the planting
    /// commit.
    fn tweaks_and_plant(&mut self, n: usize, plant_at: usize) -> String {
        let mut planting = String::new();
        for i in 1..=n {
            if i == plant_at {
                planting = self.plant(2);
            } else {
                self.tweak(i);
            }
        }
        planting
    }

    fn commit_readme(&mut self, n: usize) -> String {
        self.write(
            "README.md",
            &format!("# scale\n\nRevision {n} of the notes.\n"),
        );
        self.commit_all(&format!("Notes {n}"))
    }

    /// `exhibit bisect ARGS` in the repository, with its own user cache.
    fn bisect(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("bisect")
            .args(args)
            .current_dir(&self.root)
            .env("XDG_CACHE_HOME", &self.cache)
            .output()
            .expect("start the runner")
    }

    /// The newest bisection's JSON answer, as kept beside its runs.
    pub fn kept(&self) -> Value {
        let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = self
            .bisections()
            .into_iter()
            .map(|d| {
                let modified = std::fs::metadata(d.join("bisect.json"))
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (modified, d)
            })
            .collect();
        dirs.sort();
        let (_, dir) = dirs.pop().expect("a bisection directory");
        let text = std::fs::read_to_string(dir.join("bisect.json")).expect("bisect.json");
        serde_json::from_str(&text).expect("JSON")
    }

    fn bisections(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.root.join("artifacts"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("bisect-"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    fn worktrees(&self) -> usize {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
    }
}

fn text(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

/// `exhibit bisect ARGS` in `repo`, which must exit 0 naming `first_bad` as the first bad
/// commit: the answer kept beside its runs, and the runner's output.
fn answered(repo: &Repo, args: &[&str], first_bad: &str) -> (Value, Output) {
    let out = repo.bisect(args);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let answer = repo.kept();
    assert_eq!(answer["answer"]["first_bad"]["hash"], first_bad, "{all}");
    (answer, out)
}

/// The commits a "one of" answer names, by hash.
fn one_of(answer: &Value) -> Vec<&str> {
    answer["answer"]["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| c["hash"].as_str().unwrap_or_default())
        .collect()
}

fn steps(answer: &Value) -> &Vec<Value> {
    answer["steps"].as_array().expect("steps")
}

/// 30 commits after GOOD: every third touches only the README, one plants the fault, and
/// later ones move its line.
fn thirty_commits(plant_at: usize) -> (Repo, String) {
    let mut repo = Repo::new();
    let mut planted = String::new();
    for i in 1..=30 {
        if i == plant_at {
            planted = repo.plant(4);
        } else if i % 3 == 0 {
            repo.commit_readme(i);
        } else if i % 7 == 0 {
            repo.kernel.insert(0, format!("// header comment {i}"));
            repo.commit_kernel(&format!("Header comment {i}"));
        } else {
            repo.tweak(i);
        }
    }
    (repo, planted)
}

#[test]
fn names_the_commit_that_plants_a_fault_in_at_most_six_runs() {
    let (repo, planted) = thirty_commits(19);
    let good = repo.commits[0].clone();
    let head_before = repo.git(&["rev-parse", "HEAD"]);
    let (answer, out) = answered(&repo, &[&good, "HEAD"], &planted);
    assert_eq!(answer["answer"]["kind"], "found", "{answer:#}");
    let all = text(&out);
    assert_eq!(
        answer["answer"]["first_bad"]["files"],
        serde_json::json!(["src/kernel.cu"])
    );
    let runs = answer["runs"].as_u64().expect("runs");
    assert!(runs <= 6, "{runs} runs: {all}");
    assert_eq!(answer["commits"], 30);
    // README-only commits fold into their predecessor: 20 distinct states of the inputs.
    assert_eq!(answer["distinct_inputs"], 20, "{answer:#}");
    assert_eq!(answer["sought"]["kind"], "cause");
    assert_eq!(answer["sought"]["rule"], "check-failed", "{answer:#}");
    // The first step is BAD, whole; the others run only the check stage on its config.
    let steps = steps(&answer);
    assert_eq!(steps[0]["role"], "bad");
    for step in &steps[1..] {
        let run = repo
            .root
            .join(step["run"].as_str().expect("a run directory"));
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(run.join("manifest.json")).expect("manifest"),
        )
        .expect("JSON");
        let names: Vec<&str> = manifest["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter(|s| s["status"] != "skipped")
            .map(|s| s["name"].as_str().unwrap_or_default())
            .collect();
        assert!(!names.contains(&"bench"), "{names:?}");
        assert!(names.contains(&"check"), "{names:?}");
    }
    // A line moved by a later commit is still the same root cause: every bad step says so.
    assert!(
        steps
            .iter()
            .filter(|s| s["verdict"] == "bad")
            .all(|s| s["why"].as_str().is_some_and(|w| w.contains("has it")) || s["role"] == "bad"),
        "{answer:#}"
    );
    // The Markdown on stdout names it; the user's tree, branch and worktrees are untouched.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Read the neighbour (plants the fault)"),
        "{stdout}"
    );
    assert!(stdout.contains("## The evidence that flipped"), "{stdout}");
    // The first bad commit's evidence quotes the raw lines its root cause rests on.
    let flipped = stdout
        .split("## The evidence that flipped")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_default();
    assert!(
        flipped.contains("```text") && flipped.contains("max abs error 3.5"),
        "{flipped}"
    );
    // The good side is a commit whose own run showed it good.
    assert!(flipped.contains("(✅ good)"), "{flipped}");
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(repo.git(&["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(repo.worktrees(), 1, "the bisection's worktree is gone");
}

#[test]
fn an_unbuildable_commit_is_skipped_and_the_answer_says_which_two() {
    let mut repo = Repo::new();
    for i in 1..=5 {
        repo.tweak(i);
    }
    // Commit 6 does not build; commit 7 fixes that and plants the fault.
    repo.kernel.push("SYNTAX".to_string());
    let broken = repo.commit_kernel("Half-done refactor (does not build)");
    repo.kernel.pop();
    repo.kernel
        .insert(3, "    out[i] = in[i + 1];  // PLANT".to_string());
    let planted = repo.commit_kernel("Finish the refactor (plants the fault)");
    for i in 8..=10 {
        repo.tweak(i);
    }
    let good = repo.commits[0].clone();
    // An uncommitted change: the answer says BAD is the commit, without it.
    repo.write("README.md", "# scale, edited\n");
    let out = repo.bisect(&[&good, "HEAD", "pipeline.yaml"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let answer = repo.kept();
    assert!(
        answer["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("uncommitted changes")),
        "{answer:#}"
    );
    assert_eq!(answer["answer"]["kind"], "one_of", "{answer:#}");
    let named = one_of(&answer);
    assert_eq!(named, vec![broken.as_str(), planted.as_str()], "{all}");
    let skipped = steps(&answer)
        .iter()
        .find(|s| s["verdict"] == "skip")
        .expect("a skipped step");
    assert!(
        skipped["why"]
            .as_str()
            .is_some_and(|w| w.contains("does not build")),
        "{skipped:#}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the first bad commit is one of"),
        "{stdout}"
    );
}

#[test]
fn slower_finds_the_commit_that_made_a_timing_slower() {
    let mut repo = Repo::new();
    let mut slowed = String::new();
    for i in 1..=12 {
        if i == 8 {
            repo.kernel
                .push("// SLOW: a second pass over the input".to_string());
            slowed = repo.commit_kernel("Second pass (slower)");
        } else {
            repo.tweak(i);
        }
    }
    let good = repo.commits[0].clone();
    // Without --slower there is nothing to look for: BAD has no root cause.
    let out = repo.bisect(&[&good, "HEAD"]);
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert!(text(&out).contains("has no root cause"), "{}", text(&out));

    let (answer, out) = answered(&repo, &["--slower", "BM_scale", &good, "HEAD"], &slowed);
    assert_eq!(answer["sought"]["kind"], "slower");
    let timing = &answer["sought"]["timings"][0];
    assert_eq!(timing["before_p50_us"], 100.0, "{answer:#}");
    assert_eq!(timing["after_p50_us"], 150.0, "{answer:#}");
    // GOOD and BAD ran whole, the steps only the bench stage.
    assert!(
        answer["runs"].as_u64().is_some_and(|n| n <= 2 + 4),
        "{answer:#}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("100.000 -> 150.000 µs (+50.0%"), "{stdout}");
}

#[test]
fn a_second_bisection_is_refused_and_an_interrupt_cleans_up() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let (repo, _) = thirty_commits(11);
    let good = repo.commits[0].clone();
    // BAD's test holds until released, however long a busy machine takes to get there.
    let hold = repo.cache.join("hold");
    let first = Command::new(BIN)
        .args(["bisect", &good, "HEAD"])
        .current_dir(&repo.root)
        .env("XDG_CACHE_HOME", &repo.cache)
        .env("EXHIBIT_TEST_HOLD", &hold)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the runner");
    // Wait until BAD's test is running (held) in the bisection's worktree.
    let pid_file = hold.with_extension("pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while !pid_file.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let held: i32 = std::fs::read_to_string(&pid_file)
        .expect("BAD's test runs")
        .trim()
        .parse()
        .expect("its pid");
    assert_eq!(repo.worktrees(), 2, "the first bisection has its worktree");
    let second = repo.bisect(&[&good, "HEAD"]);
    assert_eq!(code(&second), 3, "{}", text(&second));
    assert!(
        stderr(&second).contains("another `exhibit bisect` is running in this repository"),
        "{}",
        text(&second)
    );
    kill(Pid::from_raw(first.id() as i32), Signal::SIGINT).expect("interrupt");
    let out = first.wait_with_output().expect("wait");
    assert_eq!(code(&out), 130, "{}", text(&out));
    assert_eq!(
        repo.worktrees(),
        1,
        "the worktree is removed: {}",
        text(&out)
    );
    // No process of it is left: the held stand-in test ended with it.
    assert!(!crate::util::alive(held), "the held test outlived the run");
    let answer = repo.kept();
    assert_eq!(answer["answer"]["kind"], "interrupted", "{answer:#}");
}

#[test]
fn revisions_that_are_not_a_range_are_usage_errors() {
    let mut repo = Repo::new();
    repo.kernel.push("// tweak".to_string());
    repo.commit_kernel("Tweak");
    let first = repo.commits[0].clone();
    for (args, says) in [
        (vec!["HEAD", &first as &str], "is not an ancestor of BAD"),
        (vec!["HEAD", "HEAD"], "are the same commit"),
        (vec!["no-such-branch", "HEAD"], "does not name a commit"),
        (vec![&first as &str, "HEAD", "missing.yaml"], "missing.yaml"),
    ] {
        let out = repo.bisect(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", text(&out));
    }
    assert!(repo.bisections().is_empty());
}

#[test]
fn with_two_root_causes_good_tells_which_is_new_and_cause_picks_one() {
    let mut repo = Repo::new();
    // GOOD already has one fault (OLDBUG); commit 4 plants a second.
    repo.kernel
        .insert(1, "    acc += row[j + 1];  // OLDBUG".to_string());
    repo.commit_kernel("Row sums");
    let good = repo.commits[1].clone();
    let mut planting = String::new();
    for i in 1..=7 {
        if i == 4 {
            planting = repo.plant(5);
        } else {
            repo.tweak(i);
        }
    }
    let (answer, out) = answered(&repo, &[&good, "HEAD", "--summary"], &planting);
    assert!(
        answer["sought"]["title"]
            .as_str()
            .is_some_and(|t| t.contains("scale n=1000")),
        "{answer:#}"
    );
    // GOOD ran whole, second, to tell the new root cause from the old one.
    assert_eq!(steps(&answer)[1]["role"], "good", "{answer:#}");
    // The summary: the answer and one line per step, no evidence section.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("# Exhibit bisect: first bad commit"),
        "{stdout}"
    );
    assert!(stdout.contains("| Commit | Verdict | Why |"), "{stdout}");
    assert!(!stdout.contains("## Steps"), "{stdout}");

    // Root cause 2 of BAD's report is the old one: GOOD has it too, so there is no answer.
    let numbers: Vec<String> = (1..=2).map(|n| n.to_string()).collect();
    let old = numbers
        .iter()
        .find(|n| {
            let out = repo.bisect(&[&good, "HEAD", "--cause", n, "--format", "json"]);
            let json: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
            json["sought"]["title"]
                .as_str()
                .is_some_and(|t| t.contains("rowsum n=200"))
        })
        .expect("one of BAD's two root causes is rowsum's");
    let out = repo.bisect(&[&good, "HEAD", "--cause", old]);
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert!(text(&out).contains("GOOD has it too"), "{}", text(&out));
    let out = repo.bisect(&[&good, "HEAD", "--cause", "3"]);
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert!(
        text(&out).contains("BAD's run has 2 root causes"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_ambiguous_timing_is_measured_again_then_skipped() {
    let mut repo = Repo::new();
    // The noise is 5%: a 7% change is ambiguous (between 1x and 2x the noise).
    repo.kernel.push("// NOISY timings".to_string());
    repo.commit_kernel("Noisy timer");
    let good = repo.commits[1].clone();
    let mut slowed = String::new();
    for i in 1..=6 {
        match i {
            3 => {
                repo.kernel.push("// SLIGHT: one more load".to_string());
                repo.commit_kernel("One more load (a little slower)");
            }
            4 => {
                repo.kernel.push("// SLOW: a second pass".to_string());
                slowed = repo.commit_kernel("Second pass (slower)");
            }
            _ => {
                repo.tweak(i);
            }
        }
    }
    let slight = repo.commits[repo.commits.len() - 4].clone();
    let out = repo.bisect(&["--slower", "BM_scale", &good, "HEAD"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let answer = repo.kept();
    assert_eq!(answer["answer"]["kind"], "one_of", "{answer:#}");
    let named = one_of(&answer);
    assert_eq!(named, vec![slight.as_str(), slowed.as_str()], "{all}");
    // The slight commit ran twice: ambiguous, then measured again and skipped.
    let at_slight: Vec<&str> = steps(&answer)
        .iter()
        .filter(|s| s["commit"]["hash"] == slight.as_str())
        .map(|s| s["verdict"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(at_slight, vec!["ambiguous", "skip"], "{answer:#}");
}

#[test]
fn a_compile_error_is_looked_for_in_the_build_alone() {
    let mut repo = Repo::new();
    let mut broke = String::new();
    for i in 1..=8 {
        if i == 5 {
            repo.kernel.push("SYNTAX: a stray token".to_string());
            broke = repo.commit_kernel("Stray token (does not compile)");
        } else {
            repo.tweak(i);
        }
    }
    let good = repo.commits[0].clone();
    let out = repo.bisect(&[&good, "HEAD"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let answer = repo.kept();
    assert_eq!(answer["sought"]["rule"], "compile-error", "{answer:#}");
    assert_eq!(answer["sought"]["stages"], serde_json::json!(["build"]));
    assert_eq!(
        answer["answer"]["first_bad"]["hash"],
        broke.as_str(),
        "{all}"
    );
}

/// Runs git in `dir` as the tests' author; panics naming the command when it fails.
fn git_in(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A library repository (`lib.h`, plus `extra` files) added to `repo` as submodule
/// `vendor/lib`; its directory, which the submodule's URL names.
fn vendored_library(repo: &Repo, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let lib = tempfile::tempdir().expect("a directory for the submodule's repository");
    git_in(lib.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(lib.path().join("lib.h"), "// the library\n").expect("write");
    for (name, text) in extra {
        std::fs::write(lib.path().join(name), text).expect("write");
    }
    git_in(lib.path(), &["add", "-A"]);
    git_in(lib.path(), &["commit", "-q", "-m", "Library"]);
    let url = lib.path().display().to_string();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &url,
        "vendor/lib",
    ]);
    lib
}

#[test]
fn submodules_are_filled_from_the_repositorys_own_copies() {
    let mut repo = Repo::new();
    // A library in a submodule, which the build needs.
    let _lib = vendored_library(&repo, &[]);
    repo.write(
        "tools/build.sh",
        &BUILD.replace(
            "mkdir -p \"$1\"",
            "test -f vendor/lib/lib.h || { echo 'vendor/lib/lib.h: No such file' >&2; exit 1; }\nmkdir -p \"$1\"",
        ),
    );
    let good = repo.commit_all("Vendor the library");
    let planting = repo.tweaks_and_plant(6, 4);
    let submodule_head = repo.git(&["-C", "vendor/lib", "rev-parse", "HEAD"]);
    let (answer, _) = answered(&repo, &[&good, "HEAD"], &planting);
    assert!(
        steps(&answer).iter().all(|s| s["verdict"] != "skip"),
        "every step built: {answer:#}"
    );
    // The user's submodule is as it was.
    assert_eq!(
        repo.git(&["-C", "vendor/lib", "rev-parse", "HEAD"]),
        submodule_head
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// A branch's `.gitmodules` may name its submodule `../../evil.git`: git refuses such a name
/// (CVE-2018-11235), because `.git/modules/../../evil.git` is a directory of the branch's own
/// choosing, whose configuration (a smudge filter) would run. Bisect refuses it as git does:
/// the step is built without that submodule, and nothing of the planted configuration runs.
#[test]
fn a_submodule_name_that_leaves_the_modules_directory_is_never_used() {
    let mut repo = Repo::new();
    // The library's own tree asks for a filter on every file.
    let lib = vendored_library(&repo, &[(".gitattributes", "* filter=planted\n")]);
    let good = repo.commit_all("Vendor the library");
    // The branch renames the submodule to a path out of `.git/modules`, and carries, where
    // that path lands (the top of the working tree), a copy of the library's repository whose
    // configuration runs a command for the filter.
    let modules = repo.root.join(".gitmodules");
    let declared = std::fs::read_to_string(&modules).expect(".gitmodules");
    std::fs::write(
        &modules,
        declared.replace(
            "[submodule \"vendor/lib\"]",
            "[submodule \"../../evil.git\"]",
        ),
    )
    .expect("write");
    let evil = repo.root.join("evil.git");
    let copied = Command::new("cp")
        .arg("-R")
        .arg(lib.path().join(".git"))
        .arg(&evil)
        .status()
        .expect("cp");
    assert!(copied.success());
    let marker = repo.root.join("planted-filter-ran");
    git_in(
        &evil,
        &[
            "--git-dir=.",
            "config",
            "filter.planted.smudge",
            &format!("touch '{}'; cat", marker.display()),
        ],
    );
    repo.git(&["add", ".gitmodules"]);
    repo.git(&["commit", "-q", "-m", "Rename the submodule"]);
    let planting = repo.tweaks_and_plant(4, 2);
    let (answer, out) = answered(&repo, &[&good, "HEAD"], &planting);
    assert!(
        !marker.exists(),
        "the planted filter ran: {answer:#}\n{}",
        text(&out)
    );
}

#[test]
fn every_step_runs_the_working_trees_pipeline_file() {
    let (repo, planted) = planted(8, 3, false);
    let good = repo.commits[0].clone();
    // Edited, not committed: no bench stage, and the check under another name.
    repo.write(
        "pipeline.yaml",
        &PIPELINE
            .replace("  check:\n", "  unit_tests:\n    kind: check\n")
            .replace(
                "  bench:\n    needs: { gpu: false }\n    timeout: 60s\n    command: [sh, tools/bench.sh, \"{build_dir}\", \"{out}\"]\n",
                "",
            ),
    );
    let (answer, _) = answered(&repo, &[&good, "HEAD"], &planted);
    assert_eq!(
        answer["sought"]["stages"],
        serde_json::json!(["unit_tests"])
    );
    assert!(
        answer["notes"].as_array().expect("notes").iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("as the working tree has it"))),
        "{answer:#}"
    );
    let bad = repo
        .root
        .join(steps(&answer)[0]["run"].as_str().expect("BAD's run"));
    let manifest = std::fs::read_to_string(bad.join("manifest.json")).expect("manifest");
    assert!(!manifest.contains("\"bench\""), "BAD ran the edited file");
}

#[test]
fn a_fault_planted_right_after_good_costs_no_more_runs() {
    // 30 commits after GOOD, every one changing the inputs, the first planting the fault: the
    // search tests GOOD itself, within the same budget.
    let (repo, planted) = planted(30, 1, false);
    let good = repo.commits[0].clone();
    let (answer, out) = answered(&repo, &[&good, "HEAD"], &planted);
    let all = text(&out);
    assert_eq!(
        answer["answer"]["last_good"]["hash"],
        good.as_str(),
        "{all}"
    );
    assert!(
        answer["runs"].as_u64().is_some_and(|n| n <= 6),
        "{answer:#}"
    );
    assert!(
        steps(&answer)
            .iter()
            .any(|s| s["role"] == "good" && s["verdict"] == "good"),
        "GOOD's own run showed it good: {answer:#}"
    );
}

/// A fault planted on main, then a branch of harmless commits merged after it: the answer is
/// the commit that planted the fault, as `git bisect` names it, never the merge; the answer
/// says the search walked the first-parent history.
#[test]
fn a_merge_after_the_fault_is_not_named_for_it() {
    let mut repo = Repo::new();
    let good = repo.commits[0].clone();
    repo.git(&["branch", "side"]);
    repo.tweak(1);
    let planted = repo.plant(2);
    repo.tweak(2);
    repo.git(&["checkout", "-q", "side"]);
    for n in 1..=4 {
        repo.commit_readme(n);
    }
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["merge", "-q", "--no-ff", "-m", "Merge the notes", "side"]);
    let (answer, _) = answered(&repo, &[&good, "HEAD"], &planted);
    assert!(
        answer["notes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n
                .as_str()
                .is_some_and(|n| n.contains("first-parent history")))),
        "{answer:#}"
    );
}

/// On a machine without a GPU, a pipeline whose check needs one runs compile-only at BAD: that
/// run shows nothing to look for, so BAD is recorded as neither good nor bad and the bisection
/// says why it has no answer, never that BAD is "bad" with "no root cause".
#[test]
fn a_compile_only_bad_is_neither_good_nor_bad() {
    let mut repo = Repo::new();
    repo.write(
        "pipeline.yaml",
        &PIPELINE.replace("needs: { gpu: false }", "needs: { gpu: true, tools: [] }"),
    );
    let good = repo.commit_all("Every stage that runs the program needs a GPU");
    repo.tweaks_and_plant(4, 2);
    let out = repo.bisect(&[&good, "HEAD"]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(
        all.contains("BAD its run ran nothing on a GPU (compile-only)"),
        "{all}"
    );
    assert!(!all.contains("has no root cause"), "{all}");
    let kept = repo.kept();
    let steps = steps(&kept);
    assert_eq!(steps.len(), 1, "{kept:#}");
    assert_eq!(steps[0]["verdict"], "skip", "{kept:#}");
}
