//! Committed references never drift from today's code (issue 51): every reference report under
//! `examples/*/reference/reports/` (and the charts it links) is what `exhibit report` renders
//! from its run today, and every `file:line` the docs give for an example's reference run is a
//! site today's report of that run names. `EXHIBIT_BLESS=1` rewrites the reports and charts.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `exhibit report RUN` (Markdown), as a user renders a stored run.
fn rendered(run: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("report")
        .arg(run)
        .output()
        .expect("run the runner");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        run.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Every committed reference report: `(the directory of its run, report file, run id)`: the
/// examples' (`examples/*/reference/{reports,artifacts}/`) and the repository's own
/// (`reports/reference/`, `artifacts/reference/`).
fn reference_reports() -> Vec<(PathBuf, PathBuf, String)> {
    let mut out = Vec::new();
    let mut places: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(repo().join("examples"))
        .expect("examples/")
        .flatten()
        .map(|e| e.path().join("reference"))
        .filter(|p| p.join("reports").is_dir())
        .map(|p| (p.join("reports"), p.join("artifacts")))
        .collect();
    places.sort();
    places.push((
        repo().join("reports/reference"),
        repo().join("artifacts/reference"),
    ));
    for (reports_dir, artifacts) in places {
        let mut reports: Vec<PathBuf> = std::fs::read_dir(&reports_dir)
            .expect("reports/")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        reports.sort();
        for report in reports {
            let text = std::fs::read_to_string(&report).expect("a reference report");
            let id = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("# Exhibit report: "))
                .unwrap_or_else(|| panic!("{}: no run id on its first line", report.display()))
                .to_string();
            out.push((artifacts.clone(), report, id));
        }
    }
    out
}

#[test]
fn every_committed_reference_report_is_what_todays_code_renders() {
    let bless = std::env::var_os("EXHIBIT_BLESS").is_some();
    let references = reference_reports();
    assert!(references.len() >= 10, "{references:#?}");
    let mut drifted = Vec::new();
    for (artifacts, report, id) in &references {
        let run = artifacts.join(id);
        assert!(
            run.join("manifest.json").is_file(),
            "{} names run {id}, which is not committed beside it",
            report.display()
        );
        let today = rendered(&run);
        // The charts the report links, as today's code draws them.
        let evidence = runner::evidence::stored::load(&run).expect("the stored run");
        let analysis = report::analyze(&evidence);
        let charts = [
            (
                report::bench_svg_file_name(&evidence.run),
                report::render_bench_svg(&analysis),
            ),
            (
                report::roofline_svg_file_name(&evidence.run),
                report::render_roofline_svg(&analysis),
            ),
        ];
        let dir = report.parent().expect("reports/");
        if bless {
            std::fs::write(report, &today).expect("rewrite the reference report");
            for (name, svg) in &charts {
                if let Some(svg) = svg {
                    std::fs::write(dir.join(name), svg).expect("write a chart");
                }
            }
        }
        let committed = std::fs::read_to_string(report).expect("the reference report");
        if committed != today {
            drifted.push(report.display().to_string());
        }
        for (name, svg) in &charts {
            let linked = today.contains(&format!("]({name})"));
            let kept = std::fs::read_to_string(dir.join(name)).ok();
            if linked && kept.as_ref() != svg.as_ref() {
                drifted.push(dir.join(name).display().to_string());
            }
        }
        // A `load_inline` file is the user's Python line, never a machine's path.
        assert!(
            !today.contains("<abs>/cuda.cu") && !today.contains("<abs>/main.cpp"),
            "{}: a generated file by its machine path",
            report.display()
        );
    }
    assert!(
        drifted.is_empty(),
        "these references drifted from what today's code renders (EXHIBIT_BLESS=1 rewrites \
         them):\n{}",
        drifted.join("\n")
    );
}

/// The `file:line` references of a docs paragraph about `examples/<name>` (`src/k.cu:65`,
/// and `:78` for the same file), with the example's name.
fn docs_sites(text: &str) -> Vec<(String, String, u32)> {
    let mut out = Vec::new();
    let mut example: Option<String> = None;
    let mut file = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("- `examples/") {
            example = rest.split('`').next().map(str::to_string);
        } else if !line.starts_with("  ") {
            example = None;
        }
        let Some(example) = &example else { continue };
        for quoted in line.split('`').skip(1).step_by(2) {
            let (path, number) = match quoted.rsplit_once(':') {
                Some((path, number)) => (path, number),
                None => continue,
            };
            let Ok(number) = number.parse::<u32>() else {
                continue;
            };
            if !path.is_empty() {
                if !path.contains('.') || path.contains(' ') {
                    continue;
                }
                file = path.to_string();
            }
            if !file.is_empty() {
                out.push((example.clone(), file.clone(), number));
            }
        }
    }
    out
}

#[test]
fn the_docs_line_numbers_of_the_examples_are_sites_their_reference_runs_name() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for doc in ["docs/pipeline.md", "docs/reference-runs.md", "README.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).expect("a doc");
        for (example, file, line) in docs_sites(&text) {
            let reference = repo().join("examples").join(&example).join("reference");
            let Ok(runs) = std::fs::read_dir(reference.join("artifacts")) else {
                continue;
            };
            let reports: String = runs
                .flatten()
                .filter(|r| r.path().join("manifest.json").is_file())
                .map(|r| rendered(&r.path()))
                .collect();
            checked += 1;
            let source = repo().join("examples").join(&example).join(&file);
            let lines = std::fs::read_to_string(&source)
                .map(|t| t.lines().count())
                .unwrap_or(0);
            if usize::try_from(line).unwrap_or(usize::MAX) > lines
                || !reports.contains(&format!("{file}:{line}"))
            {
                wrong.push(format!(
                    "{doc}: `examples/{example}`'s `{file}:{line}` is no site today's report of \
                     its reference run names"
                ));
            }
        }
    }
    assert!(
        checked >= 3,
        "the docs' example paragraphs give line numbers"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The check above fails on a drifted line number: the docs' old `src/kernels.cu:127`.
#[test]
fn a_drifted_docs_line_number_is_caught() {
    let sites = docs_sites(
        "- `examples/cuda-cpp` (28 stage runs): the race between `src/kernels.cu:65` and `:78`\n  \
         (racecheck), the write at `src/kernels.cu:127` (memcheck)\nafter\n",
    );
    assert_eq!(
        sites,
        [
            ("cuda-cpp".to_string(), "src/kernels.cu".to_string(), 65),
            ("cuda-cpp".to_string(), "src/kernels.cu".to_string(), 78),
            ("cuda-cpp".to_string(), "src/kernels.cu".to_string(), 127),
        ]
    );
    let run = repo().join("examples/cuda-cpp/reference/artifacts");
    let today: String = std::fs::read_dir(run)
        .expect("the cuda-cpp reference run")
        .flatten()
        .map(|r| rendered(&r.path()))
        .collect();
    assert!(today.contains("src/kernels.cu:131"));
    assert!(!today.contains("src/kernels.cu:127"));
}
