//! The field corpus (`corpus/`): real runs of public code nobody on the project wrote, each with
//! the conclusion an expert draws (`expected.md`, written from the public account before
//! Exhibit's report was read) and, where Exhibit does not reach it yet, the gaps
//! (`gaps.md`). Every entry's packed run renders through `exhibit report`; every expectation
//! not listed as a gap must hold, and every listed gap must still be one (closing a gap means
//! taking it off the list).
//!
//! An `expect` block holds one expectation a line:
//! - `verdict: KIND`: the report's verdict kind (`failing`, `clean`, `slow`, ...);
//! - `root-causes: N`: how many root causes (errors and warnings) it lists;
//! - `root-cause: RULE` or `root-cause: RULE at FILE:LINE`: one of them is that rule (at a
//!   place whose file ends with FILE, at LINE); `slow-kernel` names the family of performance
//!   causes, met by any of them (`slow-kernel`, `bottleneck`);
//! - `mentions: TEXT`: one of its root causes (title, kernels, spans, notes, help) says TEXT,
//!   in any case;
//! - `top-mentions: TEXT`: the first root cause (the one the report ranks first) says TEXT;
//! - `no-root-cause: RULE`: none of its root causes is that rule;
//! - `note-mentions: TEXT`: one of its notes says TEXT.
//!
//! An entry added since the program model records its first try in `gaps.md`: a `first-try`
//! block naming the commit whose rules rendered the first capture (`rules: SHA`), `held-out`
//! when the entry was kept out of rule work, and each expectation once, as `held: ...` or
//! `missed: ...`. The rate over those entries is the figure `corpus/README.md` states.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::BIN;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// The lines of the first fenced block tagged `tag` in `text`.
fn block(text: &str, tag: &str) -> Vec<String> {
    let open = format!("```{tag}");
    text.split(&open)
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .map(|b| {
            b.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the rendered report meets one expectation.
fn holds(expectation: &str, json: &Value) -> bool {
    let (key, value) = expectation
        .split_once(':')
        .unwrap_or_else(|| panic!("an expectation is `key: value`: {expectation}"));
    let value = value.trim();
    let causes: Vec<&Value> = json["diagnoses"]
        .as_array()
        .map(|d| d.iter().filter(|d| d["level"] != "note").collect())
        .unwrap_or_default();
    match key.trim() {
        "verdict" => json["verdict"]["kind"] == value,
        "root-causes" => value.parse::<usize>().ok() == Some(causes.len()),
        "root-cause" => {
            let (rule, place) = match value.split_once(" at ") {
                Some((rule, place)) => (rule, Some(place)),
                None => (value, None),
            };
            causes.iter().any(|d| {
                let same =
                    d["rule"] == rule || (rule == "slow-kernel" && d["rule"] == "bottleneck");
                same && place.is_none_or(|place| {
                    let (file, line) = place.rsplit_once(':').expect("FILE:LINE");
                    d["location"]["file"]
                        .as_str()
                        .is_some_and(|f| f.ends_with(file))
                        && d["location"]["line"].as_u64().map(|l| l.to_string())
                            == Some(line.to_string())
                })
            })
        }
        "no-root-cause" => !causes.iter().any(|d| d["rule"] == value),
        "note-mentions" => json["diagnoses"]
            .as_array()
            .is_some_and(|all| all.iter().any(|d| d["level"] == "note" && says(d, value))),
        "mentions" => causes.iter().any(|d| says(d, value)),
        "top-mentions" => causes.first().is_some_and(|d| says(d, value)),
        // `experiment: tail confirmed`: an experiment of that kind came out that way.
        "experiment" => {
            let (kind, outcome) = value.split_once(' ').expect("KIND OUTCOME");
            json["experiments"].as_array().is_some_and(|all| {
                all.iter()
                    .any(|e| e["kind"] == kind && e["outcome"] == outcome.trim())
            })
        }
        "experiment-says" => json["experiments"].as_array().is_some_and(|all| {
            all.iter()
                .any(|e| e["sentence"].as_str().is_some_and(|s| s.contains(value)))
        }),
        other => panic!("unknown expectation `{other}`"),
    }
}

/// Whether a root cause says `value` in its title, kernels, spans, notes or help (in any case).
fn says(d: &Value, value: &str) -> bool {
    let text = |key: &str| {
        d[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    // The kernels a root cause names are on its first line, beside its level and place.
    let said = format!(
        "{} {} {} {} {} {}",
        d["title"],
        d["kernel"],
        text("kernels"),
        text("spans"),
        text("notes"),
        text("help")
    );
    said.to_lowercase().contains(&value.to_lowercase())
}

fn render(run: &Path, format: &str) -> String {
    let out = Command::new(BIN)
        .args(["report", "--format", format])
        .arg(run)
        .output()
        .expect("run exhibit report");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "exhibit report {}: {}",
        run.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_corpus_entry_renders_to_its_experts_conclusion_but_for_its_listed_gaps() {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("corpus/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.md").is_file())
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no corpus entries");
    let mut wrong: Vec<String> = Vec::new();
    for entry in &entries {
        let name = entry.file_name().unwrap_or_default().to_string_lossy();
        for file in ["SOURCE.md", "pipeline.yaml", "run.tar.xz"] {
            assert!(entry.join(file).is_file(), "{name}: no {file}");
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let status = Command::new("tar")
            .arg("-xJf")
            .arg(entry.join("run.tar.xz"))
            .arg("-C")
            .arg(dir.path())
            .status()
            .expect("run tar");
        assert!(status.success(), "{name}: run.tar.xz does not unpack");
        let run = dir.path().join("run");
        let json: Value =
            serde_json::from_str(&render(&run, "json")).expect("the JSON report parses");
        // The Markdown report renders too (its text is checked by the JSON's), and a run that
        // profiled its baseline sets the baseline's kernels beside the program's.
        let md = render(&run, "md");
        assert!(md.starts_with("# Exhibit report"), "{name}");
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(run.join("manifest.json")).expect("manifest.json"),
        )
        .expect("the manifest parses");
        let profiled_baseline = manifest["stages"].as_array().is_some_and(|stages| {
            stages.iter().any(|s| {
                s["kind"] == "profile"
                    && s["unit"]["target"] == "baseline"
                    && s["status"] == "passed"
            })
        });
        if profiled_baseline {
            assert!(md.contains("## Beside the baseline"), "{name}: {md}");
        }
        // Clean is no cause found, not at the limit: a clean run whose kernel was placed
        // against its limit says where its longest kernel stands.
        let placed =
            md.contains(" | DRAM ") || md.contains(" | L2 ") || md.contains("(attainable ");
        if json["verdict"]["kind"] == "clean" && placed {
            assert!(
                json["verdict"]["line"]
                    .as_str()
                    .is_some_and(|l| l.contains("Its longest kernel, ")),
                "{name}: {}",
                json["verdict"]
            );
        }
        let expected = std::fs::read_to_string(entry.join("expected.md")).expect("expected.md");
        let expectations = block(&expected, "expect");
        assert!(
            !expectations.is_empty(),
            "{name}: expected.md has no expect block"
        );
        let gaps = std::fs::read_to_string(entry.join("gaps.md"))
            .map(|g| block(&g, "gaps"))
            .unwrap_or_default();
        for gap in &gaps {
            assert!(
                expectations.contains(gap),
                "{name}: gap `{gap}` is no expectation of expected.md"
            );
        }
        for e in &expectations {
            let met = holds(e, &json);
            let gap = gaps.contains(e);
            if met && gap {
                wrong.push(format!("{name}: `{e}` now holds: take it off gaps.md"));
            } else if !met && !gap {
                wrong.push(format!("{name}: `{e}` does not hold"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What an entry's first capture met, rendered by the rules as they were then.
struct FirstTry {
    held: usize,
    total: usize,
    held_out: bool,
}

/// The `first-try` block of an entry's gaps.md, checked against its expectations.
fn first_try(name: &str, gaps: &str, expectations: &[String]) -> Option<FirstTry> {
    let lines = block(gaps, "first-try");
    if lines.is_empty() {
        return None;
    }
    assert!(
        lines
            .iter()
            .any(|l| l.strip_prefix("rules: ").is_some_and(|sha| sha.len() >= 7)),
        "{name}: the first-try block names no `rules: SHA`"
    );
    let mut held = 0;
    let mut listed = Vec::new();
    for line in &lines {
        if let Some(e) = line.strip_prefix("held: ") {
            held += 1;
            listed.push(e.to_string());
        } else if let Some(e) = line.strip_prefix("missed: ") {
            listed.push(e.to_string());
        }
    }
    let mut want = expectations.to_vec();
    want.sort();
    listed.sort();
    assert_eq!(
        listed, want,
        "{name}: the first-try block lists each expectation once, as held or missed"
    );
    Some(FirstTry {
        held,
        total: want.len(),
        held_out: lines.iter().any(|l| l == "held-out"),
    })
}

#[test]
fn the_first_try_rate_the_corpus_readme_states_is_the_entries_own() {
    let mut all = (0, 0, 0);
    let mut held_out = (0, 0, 0);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("corpus/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("gaps.md").is_file())
        .collect();
    entries.sort();
    for entry in &entries {
        let name = entry.file_name().unwrap_or_default().to_string_lossy();
        let expected = std::fs::read_to_string(entry.join("expected.md")).expect("expected.md");
        let gaps = std::fs::read_to_string(entry.join("gaps.md")).expect("gaps.md");
        let Some(first) = first_try(&name, &gaps, &block(&expected, "expect")) else {
            continue;
        };
        for tally in std::iter::once(&mut all).chain(first.held_out.then_some(&mut held_out)) {
            tally.0 += 1;
            tally.1 += first.held;
            tally.2 += first.total;
        }
    }
    assert!(all.0 > 0, "no entry records its first try");
    let readme = std::fs::read_to_string(corpus().join("README.md")).expect("corpus/README.md");
    let stated = format!(
        "First try: {} of {} expectations held over {} entries; held out: {} of {} over {} entries.",
        all.1, all.2, all.0, held_out.1, held_out.2, held_out.0
    );
    assert!(
        readme.contains(&stated),
        "corpus/README.md does not state the entries' own first-try rate: `{stated}`"
    );
}

/// A library-class Hopper kernel is placed against the roof its instruction mix binds: CUTLASS's
/// warp-specialized TMA + wgmma GEMM (`cutlass-sm90-gemm`, FP16 at 8192^3 on an H200), whose
/// captured source page counts its `HGMMA.64x128x16.F32` products, runs at 83.4% of the dense
/// FP16 tensor peak at its measured clock. Its compiler and Nsight Compute's source page name
/// it `cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...(cute::SM90::GMMA::Major)0
/// ...>>`, the details page `device_kernel<GemmUniversal<...0...>>`: one kernel, the program's
/// own. The verdict and the Nsight Compute table both name the roof.
#[test]
fn a_cutlass_sm90_kernel_is_placed_against_the_tensor_core_roof() {
    let (_dir, run) = unpack("cutlass-sm90-gemm");
    let json: Value = serde_json::from_str(&render(&run, "json")).expect("the JSON report");
    let verdict = json["verdict"]["line"].as_str().unwrap_or_default();
    assert!(
        verdict.starts_with("Clean: ")
            && verdict.contains(
                "device_kernel<…>, runs at 83.4% of the FP16 tensor peak, its binding roof"
            ),
        "{verdict}"
    );
    let md = render(&run, "md");
    let table = md
        .split("## Nsight Compute")
        .nth(1)
        .expect("an Nsight Compute table");
    let row = table
        .lines()
        .find(|l| l.starts_with("| default | `device_kernel<GemmUniversal<"))
        .expect("the GEMM's row");
    assert!(row.contains("| FP16 tensor 83.4% |"), "{row}");
    assert!(!md.contains("also measured, not the program's own"), "{md}");
    assert!(!md.contains("never launched"), "a filtered profile: {md}");
}

/// An entry's run, unpacked into a temporary directory (kept alive by the first value).
fn unpack(entry: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(corpus().join(entry).join("run.tar.xz"))
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("run tar");
    assert!(status.success(), "{entry}: run.tar.xz does not unpack");
    let run = dir.path().join("run");
    (dir, run)
}

/// XSBench's lookup (HeCBench `xsbench-cuda` on an H100): its scattered gathers fill the L2
/// (94.4% of its peak) with the DRAM at 49.7%, so the L2 is the roof the verdict names, the DRAM
/// beside it. `-Wall`'s one warning at seven lines of `io.cu` is one note, its other lines
/// secondary spans.
#[test]
fn a_kernel_that_fills_the_l2_is_placed_against_it_and_one_warning_is_one_note() {
    let (_dir, run) = unpack("hecbench-xsbench-registers");
    let json: Value = serde_json::from_str(&render(&run, "json")).expect("the JSON report");
    let verdict = json["verdict"]["line"].as_str().unwrap_or_default();
    assert!(
        verdict.contains(
            "in lookup, at 94.4% of L2 bandwidth, its binding roof at its intensity (DRAM 49.7%; \
             4.5% of the FP64 peak)"
        ),
        "{verdict}"
    );
    let warned: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["title"] == "compile: result of call is not used")
        .collect();
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert_eq!(warned[0]["location"]["line"], 447);
    let lines: Vec<u64> = warned[0]["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| &s["location"])
        .filter(|l| l["file"] == "io.cu")
        .filter_map(|l| l["line"].as_u64())
        .collect();
    assert_eq!(
        lines,
        [447, 458, 459, 460, 461, 462, 463],
        "{:#}",
        warned[0]
    );
}

/// warprnnt_numba's loss copy (`warprnnt-numba-costs-griddim`, numba-cuda on an H200) indexes
/// with `gridDim.x` for `blockDim.x`: losses from 44 on are never written. torch's message counts
/// 84 of 128 wrong; the values the program printed beside their references are all 0. The report
/// reads them as the mark of elements no thread wrote. The binding's `cuGetProcAddress`
/// lookups that filled memcheck's print limit are said, with the errors it did not print.
#[test]
fn wrong_elements_printed_as_zero_are_read_as_never_written() {
    let (_dir, run) = unpack("warprnnt-numba-costs-griddim");
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--format", "json"])
        .arg(&run)
        .output()
        .expect("run the runner");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let diagnoses = json["diagnoses"].as_array().cloned().unwrap_or_default();
    let wrong = diagnoses
        .iter()
        .find(|d| d["rule"] == "wrong-output")
        .unwrap_or_else(|| panic!("no wrong output: {diagnoses:#?}"));
    let said = wrong["notes"].to_string();
    assert!(said.contains("84 of 128 elements differ"), "{said}");
    assert!(said.contains("elements no thread wrote"), "{said}");
    assert!(!said.contains("computes a different function"), "{said}");
    let probes = diagnoses
        .iter()
        .find(|d| d["rule"] == "host-api-error")
        .unwrap_or_else(|| panic!("no probes: {diagnoses:#?}"));
    assert!(
        probes["title"].to_string().contains("did not print"),
        "{probes:#}"
    );
}
