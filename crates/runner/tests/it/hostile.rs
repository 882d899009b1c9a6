//! Hostile pipeline files: each is refused by `exhibit check` with exit code 2 and one error
//! line naming the file, the line and column where there is one, and what was expected, quickly
//! and without reading what it should not (FIFOs, devices, directories).
//!
//! The hand-written files in `hostile/` carry their expected error on their second line; the
//! large ones are generated here.

use std::time::{Duration, Instant};

use crate::util::{Project, code, stderr};

/// What a refusal may take: the YAML parser took 27 s on a 200 KB file of nested lists before
/// nesting was bounded. (Measured figures go in the notes, not here; this catches hangs, with
/// room for a machine busy with other builds.)
const PATIENCE: Duration = Duration::from_secs(20);

/// Runs `exhibit check pipeline.yaml` on `text` in a project with the stand-in tools; returns
/// the error line and how long it took.
fn refused(project: &Project) -> (String, Duration) {
    let started = Instant::now();
    let out = project.run(&["check", "pipeline.yaml"]);
    let elapsed = started.elapsed();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(elapsed < PATIENCE, "took {elapsed:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one error line: {err}");
    (err.trim_end().to_string(), elapsed)
}

#[test]
fn every_file_of_the_corpus_is_refused_with_its_expected_error() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/hostile");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} files", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a corpus file");
        let expected = text
            .lines()
            .nth(1)
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{}: no `# expect:` line", file.display()));
        let project = Project::new();
        project.pipeline(&text);
        let (err, elapsed) = refused(&project);
        assert_eq!(err, expected, "{}", file.display());
        eprintln!("{}: {elapsed:?}", file.display());
    }
}

/// Writes `text` as the pipeline and expects `exhibit check` to refuse it with `expected` in
/// its error.
fn generated(text: &str, expected: &str) {
    let project = Project::new();
    project.pipeline(text);
    let (err, elapsed) = refused(&project);
    assert!(err.contains(expected), "{err}");
    eprintln!("{} bytes: {elapsed:?}: {err}", text.len());
}

#[test]
fn deeply_nested_flow_collections_are_refused_before_parsing() {
    let depth = 100_000;
    generated(
        &format!("kernel: {}{}\n", "[".repeat(depth), "]".repeat(depth)),
        "pipeline.yaml:1:73: collections nested more than 64 levels deep",
    );
    generated(
        &format!("kernel: {}1{}\n", "{a: ".repeat(50_000), "}".repeat(50_000)),
        "pipeline.yaml:1:265: collections nested more than 64 levels deep",
    );
}

#[test]
fn brackets_inside_comments_and_quoted_scalars_do_not_count_as_nesting() {
    let project = Project::new();
    let brackets = "[".repeat(100);
    let commented = crate::util::pipeline("").replace(
        "grace: 1s",
        &format!("# {brackets}\ngrace: 1s # '{brackets}"),
    );
    project.pipeline(&commented);
    let out = project.run(&["check", "pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The quoted value is read, and refused for what it is, not for its brackets.
    project.pipeline(&commented.replace("grace: 1s", &format!("grace: \"{brackets}\"")));
    let (err, _) = refused(&project);
    assert!(err.contains("grace: invalid duration"), "{err}");
    project.pipeline(&commented.replace("grace: 1s", &format!("grace: '{brackets}'")));
    let (err, _) = refused(&project);
    assert!(err.contains("grace: invalid duration"), "{err}");
}

#[test]
fn deeply_indented_and_huge_documents_answer_quickly() {
    // Block mappings nested by indentation up to the size limit (about 1,000 levels).
    let mut text = String::new();
    let mut level = 0;
    while text.len() < 1_000_000 {
        text.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
        level += 1;
    }
    generated(&text, "pipeline.yaml:1:1: unknown field `k0`");
    generated(
        &format!("{}x\n", "- ".repeat(300_000)),
        "pipeline.yaml:1:1: invalid type: sequence, expected a mapping",
    );
    generated(
        &format!("{}x\n", "? ".repeat(300_000)),
        "pipeline.yaml:1:3:",
    );
    generated(
        &format!("kernel: [{}]\n", vec!["[]"; 100_000].join(", ")),
        "pipeline.yaml:1:9: kernel: invalid type: sequence, expected a mapping (the kernel section)",
    );
    let huge: String = (0..500_000).map(|i| format!("  k{i}: v\n")).collect();
    generated(
        &format!("kernel:\n{huge}"),
        "pipeline.yaml: is 6388898 bytes; a pipeline file is at most 1048576 bytes (1 MiB)",
    );
}

#[test]
fn binary_and_control_characters_are_refused_with_their_position() {
    let project = Project::new();
    std::fs::write(
        project.root.join("pipeline.yaml"),
        b"kernel:\n  source: a\xff\xfeb\n",
    )
    .expect("write");
    let (err, _) = refused(&project);
    assert_eq!(err, "error: pipeline.yaml:2:12: not UTF-8 text");
    generated(
        "kernel:\n  source: a\u{0}b\n",
        "error: pipeline.yaml:2:12: control characters are not allowed",
    );
}

#[test]
fn a_directory_fifo_or_device_is_named_and_never_read() {
    let project = Project::new();
    std::fs::create_dir(project.root.join("dir.yaml")).expect("mkdir");
    nix::unistd::mkfifo(
        &project.root.join("fifo.yaml"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .expect("mkfifo");
    std::os::unix::fs::symlink("/dev/zero", project.root.join("zero.yaml")).expect("symlink");
    for (file, expected) in [
        (
            "dir.yaml",
            "error: dir.yaml: is a directory; expected a pipeline file (YAML)",
        ),
        (
            "fifo.yaml",
            "error: fifo.yaml: is not a regular file (a FIFO, socket or device); expected a \
             pipeline file (YAML)",
        ),
        (
            "zero.yaml",
            "error: zero.yaml: is not a regular file (a FIFO, socket or device); expected a \
             pipeline file (YAML)",
        ),
    ] {
        for command in [&["check", file][..], &[file][..]] {
            let started = Instant::now();
            let out = project.run(command);
            assert!(started.elapsed() < PATIENCE);
            assert_eq!(code(&out), 2, "{command:?}");
            assert_eq!(stderr(&out).trim_end(), expected, "{command:?}");
        }
    }
}

#[test]
fn aliases_that_expand_past_the_bound_are_refused_with_a_line() {
    // One 100 KB string, then 10,000 aliases to it: a 140 KB file that expands to 1 GB.
    let long = "x".repeat(100_000);
    let aliases = vec!["*long"; 10_000].join(", ");
    let text = crate::util::pipeline("").replace(
        "  compile:\n    timeout: 30s\n",
        &format!("  compile:\n    timeout: 30s\n    args: [&long \"{long}\", {aliases}]\n"),
    );
    assert!(text.len() < 200_000);
    let project = Project::new();
    project.pipeline(&text);
    let (err, elapsed) = refused(&project);
    assert!(
        err.starts_with("error: pipeline.yaml:")
            && err.contains("aliases")
            && err.contains("4194304 bytes"),
        "{err}"
    );
    let line: usize = err
        .split(':')
        .nth(2)
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("a line: {err}"));
    assert!((22..=26).contains(&line), "{err}");
    eprintln!(
        "{} bytes: {elapsed:?}: {}",
        text.len(),
        &err[..err.len().min(200)]
    );

    // Nested aliases (a billion laughs) are refused the same way.
    let mut laughs = String::from("    args: &l0 [\"lol\"]\n");
    for i in 1..=9 {
        laughs.push_str(&format!(
            "    x{i}: &l{i} [{}]\n",
            vec![format!("*l{}", i - 1); 10].join(", ")
        ));
    }
    let text = crate::util::pipeline("").replace(
        "  compile:\n    timeout: 30s\n",
        &format!("  compile:\n    timeout: 30s\n{laughs}"),
    );
    project.pipeline(&text);
    let (err, _) = refused(&project);
    assert!(err.contains("aliases"), "{err}");
}
