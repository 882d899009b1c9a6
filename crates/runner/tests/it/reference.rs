//! The reference runs committed under `artifacts/reference/` (made on a GPU machine by
//! `exhibit pipeline.yaml` and `exhibit faults.yaml`) render with `exhibit report` on a machine with
//! no GPU and no CUDA tools, and their diagnoses are the ones the kernel and its planted faults
//! call for.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository root (this crate lives in `crates/runner`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed run whose manifest names `pipeline`.
fn reference_run(pipeline: &str) -> PathBuf {
    let dir = repo().join("artifacts/reference");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("artifacts/reference exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read(p.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|m| m["pipeline"] == pipeline)
        })
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no reference run of {pipeline}"))
}

fn report(run: &Path, format: &str) -> String {
    report_with(run, &["--format", format])
}

/// The error-level diagnoses of a JSON report.
fn errors(json: &Value) -> Vec<&Value> {
    json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .collect()
}

/// The one of `diagnoses` with `rule`.
fn with_rule<'a>(diagnoses: &[&'a Value], rule: &str) -> &'a Value {
    diagnoses
        .iter()
        .find(|d| d["rule"] == rule)
        .copied()
        .unwrap_or_else(|| panic!("no {rule} among {diagnoses:#?}"))
}

/// Rule -> configs it was diagnosed on, for root causes (errors).
fn root_causes(json: &Value) -> Vec<(String, Vec<String>)> {
    json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .map(|d| {
            let configs = d["configs"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (d["rule"].as_str().unwrap_or_default().to_string(), configs)
        })
        .collect()
}

/// The root causes of a run whose verdict must be failing.
fn failing_root_causes(run: &Path) -> Vec<(String, Vec<String>)> {
    let json: Value = serde_json::from_str(&report(run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "failing", "{}", json["verdict"]);
    root_causes(&json)
}

/// Whether `rule` is a root cause on `config`.
fn diagnosed(causes: &[(String, Vec<String>)], config: &str, rule: &str) -> bool {
    causes
        .iter()
        .any(|(r, configs)| r == rule && configs.iter().any(|c| c == config))
}

#[test]
fn the_reference_run_of_the_kernel_is_clean_with_every_stage_run() {
    let run = reference_run("pipeline.yaml");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    assert!(root_causes(&json).is_empty());
    // Every stage ran on the GPU: nothing skipped, failed or inconclusive.
    for unit in json["coverage"].as_array().unwrap() {
        assert_eq!(unit["status"], "passed", "{unit}");
    }
    for kind in [
        "compile",
        "sass",
        "memcheck",
        "racecheck",
        "initcheck",
        "synccheck",
        "check",
        "stress",
        "bench",
        "baseline",
        "profile",
    ] {
        assert!(
            json["coverage"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u["kind"] == kind),
            "no {kind} stage in the reference run"
        );
    }
    insta::assert_snapshot!("reference_pipeline", report(&run, "md"));
}

#[test]
fn the_reference_run_of_the_faults_names_each_planted_root_cause() {
    let run = reference_run("faults.yaml");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "failing", "{}", json["verdict"]);
    let causes = root_causes(&json);
    for (config, rule) in [
        ("wmma_local_q", "wmma-local-memory"),
        ("missing_kv_barrier", "shared-memory-race"),
        ("launch_counter_ring", "repeated-launch-failure"),
        ("uninit_row_sum", "uninitialized-read"),
        ("nan_masked_rows", "wrong-output"),
        ("tail_off_by_one", "wrong-output"),
    ] {
        assert!(
            diagnosed(&causes, config, rule),
            "{config}: no {rule} in {causes:?}"
        );
    }
    assert!(
        !causes
            .iter()
            .any(|(_, configs)| configs.iter().any(|c| c == "clean")),
        "a root cause on the clean kernel: {causes:?}"
    );
    // The races racecheck located in inlined helpers are the launched kernel's.
    for race in json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["rule"] == "shared-memory-race")
    {
        assert_eq!(
            race["kernels"],
            serde_json::json!(["attention_fwd_f16"]),
            "{race}"
        );
        assert_eq!(race["helpers"][0]["name"], "cp_async_16", "{race}");
    }
    insta::assert_snapshot!("reference_faults", report(&run, "md"));
}

/// The example projects' committed runs (`examples/*/reference/`, made on an H100 with
/// `examples/run-on-gpu.sh`): a user's own build and program, diagnosed by the same rules.
fn example_run(example: &str) -> PathBuf {
    let dir = repo()
        .join("examples")
        .join(example)
        .join("reference/artifacts");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    runs.sort();
    runs.pop().expect("a committed example run")
}

#[test]
fn the_torch_extension_example_names_both_seed_failures() {
    let json: Value =
        serde_json::from_str(&report(&example_run("torch-extension"), "json")).expect("JSON");
    let diagnoses = json["diagnoses"].as_array().expect("diagnoses");
    let errors: Vec<&Value> = diagnoses.iter().filter(|d| d["level"] == "error").collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    // The WMMA fragment on local memory, at the kernel's line and the oracle's call line.
    let wmma = errors
        .iter()
        .find(|d| d["rule"] == "wmma-local-memory")
        .expect("the wmma-local root cause");
    assert_eq!(wmma["configs"], serde_json::json!(["wmma_local"]));
    assert_eq!(wmma["location"]["file"], "csrc/attn_fwd.cu");
    assert_eq!(wmma["call_site"]["file"], "oracle.py");
    assert!(wmma["call_site"]["line"].as_u64().is_some());
    // The repeated-launch failure: its exact first failing count and memcheck's line there.
    let ring = errors
        .iter()
        .find(|d| d["configs"] == serde_json::json!(["launch_ring"]))
        .expect("the launch_ring root cause");
    assert_eq!(ring["location"]["file"], "csrc/attn_fwd.cu");
    let explanation = crate::util::prose(ring, "notes");
    assert!(
        explanation.contains("Fails only after repeated launches: clean at 8 launches, fails at 9"),
        "{explanation}"
    );
    // Nothing on the clean control.
    assert!(
        !errors.iter().any(|d| d["configs"]
            .as_array()
            .is_some_and(|c| c.contains(&"clean".into()))),
        "{errors:#?}"
    );
    let markdown = report(&example_run("torch-extension"), "md");
    assert!(markdown.contains("launched from `oracle.py:"), "{markdown}");
    // And why the clean build is 0.07x SDPA: its WMMA loads of the key and value tiles conflict
    // in shared memory (a 128-byte row pitch), at the toolkit's inlined fragment load, with the
    // kernel's own calls named and the padding to fix it.
    let bank = diagnoses
        .iter()
        .find(|d| d["rule"] == "slow-kernel" && d["key"] == "bank-conflicts")
        .or_else(|| {
            diagnoses.iter().find(|d| {
                d["rule"] == "slow-kernel"
                    && d["title"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("Shared-memory bank conflicts"))
            })
        })
        .unwrap_or_else(|| panic!("no bank-conflict cause: {diagnoses:#?}"));
    assert_eq!(bank["level"], "warning", "{bank:#}");
    let text = crate::util::prose(bank, "notes");
    for said in [
        "the toolkit's WMMA load of a `matrix_b` fragment",
        "`csrc/attn_fwd.cu:167`",
        "runs at 0.07x the speed of `sdpa:default`",
    ] {
        assert!(text.contains(said), "`{said}` not in {text}");
    }
    assert!(
        Some(crate::util::prose(bank, "help"))
            .as_deref()
            .is_some_and(|f| f.contains("ldm = COLS + 8")),
        "{bank:#}"
    );
}

#[test]
fn the_cuda_cpp_example_names_the_race_the_failing_check_and_the_out_of_bounds_write() {
    let json: Value =
        serde_json::from_str(&report(&example_run("cuda-cpp"), "json")).expect("JSON");
    let mut errors: Vec<(String, String, String)> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .map(|d| {
            (
                d["rule"].as_str().unwrap_or_default().to_string(),
                d["configs"].to_string(),
                format!("{}:{}", d["location"]["file"], d["location"]["line"]),
            )
        })
        .collect();
    // One per plant, in whatever order they rank.
    errors.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        errors,
        [
            (
                "check-failed".to_string(),
                r#"["halo"]"#.to_string(),
                r#""tests/test_kernels.cu":230"#.to_string()
            ),
            (
                "out-of-bounds".to_string(),
                r#"["oob"]"#.to_string(),
                r#""src/kernels.cu":131"#.to_string()
            ),
            (
                "shared-memory-race".to_string(),
                r#"["race"]"#.to_string(),
                r#""src/kernels.cu":78"#.to_string()
            ),
        ]
    );
    // The halo plant fails the stencil test on three lengths at one line: one fault.
    let md = report(&example_run("cuda-cpp"), "md");
    assert!(
        md.contains("**Verdict:** ❌ Failing: 3 root causes"),
        "{md}"
    );
}

/// `exhibit report --summary`: the short form for a pull-request comment: the verdict, each root
/// cause with its place and its fix, and the timings; none of the long sections.
#[test]
fn the_summary_holds_the_verdict_root_causes_and_timings_only() {
    let run = example_run("torch-extension");
    let summary = report_with(&run, &["--summary"]);
    assert!(
        summary.contains("**Verdict:** ❌ Failing: 2 root causes"),
        "{summary}"
    );
    assert!(
        summary.contains("`csrc/attn_fwd.cu:126` · launched from `oracle.py:156`"),
        "{summary}"
    );
    assert!(summary.contains("| B=2 H=8 S=512 D=64 f16 |"), "{summary}");
    // Each of the four causes (two errors, two slow-kernel warnings) with its fix.
    let fixes = summary
        .lines()
        .filter(|l| l.starts_with("   **Fix:** "))
        .count();
    assert_eq!(fixes, 4, "{summary}");
    for long in ["## Evidence", "## Environment", "```text", "![bench]"] {
        assert!(!summary.contains(long), "`{long}` in {summary}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--summary", "--format", "json"])
        .arg(&run)
        .output()
        .expect("run the runner");
    assert_eq!(out.status.code(), Some(2));
}

fn report_with(run: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("report")
        .args(args)
        .arg(run)
        .current_dir(repo())
        .output()
        .expect("run the runner");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Each config's resource row in the report: HGMMA (wgmma) counted, and no HMMA (mma.sync).
fn assert_wgmma_only(md: &str, configs: &[&str]) {
    for config in configs {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {config} | sm_90a | `attention_fwd_bf16`")))
            .unwrap_or_else(|| panic!("no resource row for {config}"));
        // The HGMMA column is the second last but one: HMMA 0, HGMMA > 0.
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let hgmma: u64 = cells[cells.len() - 3].parse().expect("an HGMMA count");
        assert!(hgmma > 0 && cells[cells.len() - 4] == "0", "{row}");
    }
}

/// The Hopper path's runs on an H100 (`docs/measurements/2026-11-23-h100-hopper/runs/`): the
/// pipeline with both paths is clean and counts HGMMA on the wgmma configs; the faults run names
/// both planted wgmma faults, says which tools were blind to the descriptor fault, and finds
/// nothing on the clean wgmma kernel.
#[test]
fn the_hopper_runs_are_clean_and_name_both_wgmma_faults() {
    let runs = repo().join("docs/measurements/2026-11-23-h100-hopper/runs");
    let pipeline = runs.join("20261123T071144Z-4c37cfb2");
    let json: Value = serde_json::from_str(&report(&pipeline, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    let md = report(&pipeline, "md");
    assert_wgmma_only(&md, &["wg_d64_m192_n128_s2", "wg_d128_m192_n64_s2"]);

    let faults = runs.join("20261123T071029Z-fae7d895");
    let causes = failing_root_causes(&faults);
    let on = |config: &str, rule: &str| diagnosed(&causes, config, rule);
    assert!(on("wgmma_k_desc_stride", "wrong-output"), "{causes:?}");
    assert!(
        on("wgmma_no_kv_barrier", "repeated-launch-failure"),
        "{causes:?}"
    );
    assert!(
        !causes
            .iter()
            .any(|(_, c)| c.iter().any(|c| c == "wg_clean")),
        "{causes:?}"
    );
    let md = report(&faults, "md");
    assert!(
        md.contains(
            "memcheck, racecheck, initcheck and synccheck ran on this config and reported no \
             error: they were blind to this defect, which the CPU-reference check caught. Its \
             SASS has 24 HGMMA (wgmma)"
        ),
        "{md}"
    );
}

/// `examples/triton` on an H200 (`docs/measurements/2026-11-27-h200-triton-clean/`): the
/// program profiles its own `softmax_kernel` and PyTorch's `softmax_warp_forward`, the
/// reference it checks against, which runs longer. The clean verdict speaks of the program's
/// own longest kernel, never of the framework's.
#[test]
fn the_clean_verdict_speaks_of_the_programs_own_longest_kernel() {
    let run = repo()
        .join("docs/measurements/2026-11-27-h200-triton-clean/runs/20261127T225907Z-c5832cfc");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    let line = json["verdict"]["line"].as_str().unwrap_or_default();
    assert!(
        line.contains("Its longest kernel, softmax_kernel, runs at 73.3% of L2 bandwidth"),
        "{line}"
    );
    assert!(!line.contains("softmax_warp_forward"), "{line}");
    // The framework's kernel is still shown, as measured and not the program's own.
    let md = report(&run, "md");
    assert!(
        md.contains("also measured, not the program's own: softmax_warp_forward"),
        "{md}"
    );
}

/// The default Hopper path (TMA producer, overlapped and turn-taking consumers) on an H100
/// (`docs/measurements/2026-11-23-h100-tma/runs/`): the pipeline is clean, counts HGMMA and TMA
/// copies on both wgmma configs, and its bench names them the fastest of the kernel's configs
/// at S=4096; the faults run names each planted wgmma and TMA fault, says that the sanitizers
/// were blind to the TMA ones, and finds nothing on either clean wgmma kernel.
#[test]
fn the_tma_runs_are_clean_and_name_every_planted_hopper_fault() {
    let runs = repo().join("docs/measurements/2026-11-23-h100-tma/runs");
    let pipeline = runs.join("20261123T083448Z-0f3ce43a");
    let json: Value = serde_json::from_str(&report(&pipeline, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "clean", "{}", json["verdict"]);
    let md = report(&pipeline, "md");
    assert_wgmma_only(&md, &["wg_d64_m192_n128_s4", "wg_d128_m128_n128_s2"]);
    for case in [
        "| B=4 H=16 S=4096 D=64 bf16 | **`wg_d64_m192_n128_s4`** (best)",
        "| B=4 H=16 S=4096 D=64 bf16 causal | **`wg_d64_m192_n128_s4`** (best)",
        "| B=4 H=16 S=4096 D=128 bf16 | **`wg_d128_m128_n128_s2`** (best)",
        "| B=4 H=16 S=4096 D=128 bf16 causal | **`wg_d128_m128_n128_s2`** (best)",
    ] {
        assert!(md.contains(case), "no `{case}` in the bench table:\n{md}");
    }

    let faults = runs.join("20261123T083424Z-2ae37b56");
    let causes = failing_root_causes(&faults);
    let on = |config: &str, rule: &str| diagnosed(&causes, config, rule);
    // One root cause per planted fault: the launch failure, the wrong results and the
    // launch-to-launch differences of `wgmma_no_full_wait` are one fault.
    for (config, rule) in [
        ("wgmma_k_desc_stride", "wrong-output"),
        ("wgmma_no_kv_barrier", "repeated-launch-failure"),
        ("wgmma_no_full_wait", "launch-failure"),
        ("wgmma_tma_box", "repeated-launch-failure"),
    ] {
        assert!(on(config, rule), "no {rule} on {config}: {causes:?}");
    }
    assert_eq!(causes.len(), 4, "{causes:?}");
    for clean in ["wg_clean", "wg_tma_clean"] {
        assert!(
            !causes.iter().any(|(_, c)| c.iter().any(|c| c == clean)),
            "{clean}: {causes:?}"
        );
    }
    let md = report(&faults, "md");
    assert!(
        md.contains("and 20 TMA copies (UTMALDG): TMA writes shared memory and wgmma reads it"),
        "{md}"
    );
    // The launch that failed at S=2048: the sanitizers had run only at the smaller shapes.
    assert!(
        md.contains(
            "at B=4 H=16 S=2048 D=64 bf16 returned CUDA_ERROR_LAUNCH_FAILED: unspecified launch \
             failure (at cuStreamSynchronize). No sanitizer finding for this config names a site, \
             so the fault is device-side but unlocated (memcheck, racecheck, initcheck and \
             synccheck ran on this config only at B=2 H=8 S=512 D=64 and B=1 H=2 S=200 D=64)"
        ),
        "{md}"
    );
    // Launch to launch differences after a single launch that is already wrong are timing, not
    // state that survives a launch.
    assert!(!md.contains("Fails only after repeated launches"), "{md}");
}

/// The error root causes of a run, with the title of each, by config.
fn titles(run: &Path) -> Vec<(Vec<String>, String)> {
    let json: Value = serde_json::from_str(&report(run, "json")).unwrap();
    json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .map(|d| {
            let configs = d["configs"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (configs, d["title"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// `faults.yaml` on an H100 (`docs/measurements/2026-11-24-h100-one-cause/`): exactly one root
/// cause per planted fault, none on the clean controls.
#[test]
fn the_faults_run_gives_one_root_cause_per_planted_fault() {
    let run =
        repo().join("docs/measurements/2026-11-24-h100-one-cause/runs/20261124T123011Z-947827a0");
    let causes = titles(&run);
    let mut configs: Vec<String> = causes.iter().flat_map(|(c, _)| c.clone()).collect();
    configs.sort();
    assert_eq!(
        configs,
        [
            "launch_counter_ring",
            "missing_kv_barrier",
            "nan_masked_rows",
            "tail_off_by_one",
            "uninit_row_sum",
            "wgmma_k_desc_stride",
            "wgmma_no_full_wait",
            "wgmma_no_kv_barrier",
            "wgmma_tma_box",
            "wmma_local_q",
        ],
        "{causes:#?}"
    );
    // The two read sites of the one missing barrier are one root cause, in two files.
    assert!(
        causes.iter().any(|(_, t)| t
            == "Shared-memory race: missing barrier between the write at `attention_common.cuh:17` and 2 sites that read it"),
        "{causes:#?}"
    );
}

/// `examples/fault-classes/` on an H100: one small program per fault class, each planted fault
/// one root cause with its mechanism, the clean controls clean.
#[test]
fn each_fault_class_is_one_root_cause_with_its_mechanism() {
    let run = repo().join("examples/fault-classes/reference/artifacts/20261124T122821Z-abcc59df");
    let causes = titles(&run);
    let title = |config: &str| {
        let found: Vec<&String> = causes
            .iter()
            .filter(|(c, _)| c.iter().any(|c| c == config))
            .map(|(_, t)| t)
            .collect();
        assert_eq!(found.len(), 1, "{config}: {causes:#?}");
        found[0].clone()
    };
    assert_eq!(causes.len(), 6, "{causes:#?}");
    assert_eq!(
        title("smem_launch"),
        "The launch of `transpose_tile` was rejected: invalid argument"
    );
    assert_eq!(
        title("block_size"),
        "The launch of `block_sum` was rejected: invalid argument"
    );
    assert_eq!(
        title("tail_tile"),
        "Unguarded tail: block (15,0,0) reads up to 3.6 KiB past the end of a 512000-byte buffer"
    );
    assert_eq!(
        title("off_by_one"),
        "Off-by-one: a global read of the element just past the end of a 4000-byte buffer"
    );
    assert_eq!(
        title("slot_counter"),
        "State that survives launches: from launch 9 on, a global write past the end of a 32-byte buffer"
    );
    assert_eq!(
        title("race"),
        "Shared-memory race: missing barrier between the write at `stencil.cuh:8` and 2 sites that read it"
    );
    let md = report(&run, "md");
    // The rejected launch: its likely limit from the build's numbers, and where the program
    // checked it.
    assert!(
        md.contains("`transpose_tile` accesses shared memory (")
            && md.contains("ptxas reports no static shared memory"),
        "{md}"
    );
    assert!(
        md.contains("the program checks it at `src/smem_launch.cu:34`"),
        "{md}"
    );
}

/// `examples/real-code-classes/` on an H100: the classes real code showed, in programs of the
/// project's own. Output without a trailing newline glued to memcheck's first record (every
/// record read), a tail overshoot smaller than a tile (never "a wrong stride"), a WMMA fragment
/// on local memory in a release and a `-G` build (one root cause, the toolkit's header only a
/// label), one fault seen in two template instantiations (one root cause), the clean controls
/// clean.
#[test]
fn the_classes_real_code_showed_are_one_root_cause_each() {
    let run = example_run("real-code-classes");
    assert!(
        run.ends_with("20261125T215641Z-9e6f77c2"),
        "{}",
        run.display()
    );
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    let causes = errors(&json);
    assert_eq!(causes.len(), 6, "{causes:#?}");
    let of_config = |config: &str| {
        causes
            .iter()
            .find(|d| d["configs"] == serde_json::json!([config]))
            .copied()
            .unwrap_or_else(|| panic!("no root cause for {config}: {causes:#?}"))
    };
    // Reads past a buffer the driver packed right against the next one: memcheck sees them only
    // with padding between allocations (this run's program, under memcheck without padding on
    // the same H100: 0 errors). The last 4 blocks of a grid sized 32 rows past the data: a tail.
    let adjacent = of_config("adjacent_read");
    assert_eq!(adjacent["location"]["file"], "src/adjacent_read.cu");
    assert_eq!(adjacent["location"]["line"], 18);
    assert_eq!(
        adjacent["title"],
        "Unguarded tail: 4 blocks read `m` up to 8.0 KiB past the end of a 983040-byte buffer",
        "{adjacent:#}"
    );
    // A 32-bit row offset in a buffer of more than 2^31 bytes: an overflow, not a wild pointer.
    let overflow = of_config("index_overflow");
    assert_eq!(overflow["rule"], "out-of-bounds");
    assert!(
        overflow["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("32-bit index overflow")),
        "{overflow:#}"
    );
    assert_eq!(overflow["figures"]["element_bytes"], 1, "{overflow:#}");
    assert_eq!(overflow["location"]["file"], "src/index_overflow.cu");
    // A pipeline that copies each tile twice: the read of the stage in flight, at the user's
    // line, in the kernel (the toolkit's copy primitive only a label).
    let copy = of_config("cp_async_twice");
    assert_eq!(copy["rule"], "shared-memory-race");
    assert_eq!(
        copy["title"],
        "cp.async race: shared memory read at `cp_async_twice.cu:28` while an asynchronous copy \
         into it is in flight"
    );
    assert_eq!(
        copy["kernels"],
        serde_json::json!(["tile_sums"]),
        "{copy:#}"
    );
    let tail = with_rule(&causes, "out-of-bounds");
    let tail = if tail["configs"] == serde_json::json!(["tail_write"]) {
        tail
    } else {
        causes
            .iter()
            .find(|d| d["configs"] == serde_json::json!(["tail_write"]))
            .copied()
            .expect("the tail_write root cause")
    };
    assert_eq!(
        tail["title"],
        "Unguarded tail: block (4799,0,0) writes `out` up to 252 B past the end of a 4914948-byte \
         buffer"
    );
    // The overshoot is measured against the buffer: 252 bytes of a 4.9 MB one, a tail.
    assert_eq!(tail["figures"]["overshoot_bytes"], 252, "{tail:#}");
    let wmma = with_rule(&causes, "wmma-local-memory");
    assert_eq!(
        wmma["configs"],
        serde_json::json!(["wmma_local", "wmma_local_debug"]),
        "{wmma:#}"
    );
    // The toolkit's header is no headline: the -G build's line table names the user's call,
    // the one place for both builds.
    assert_eq!(wmma["location"]["file"], "src/wmma_local.cu", "{wmma:#}");
    assert_eq!(wmma["location"]["line"], 27, "{wmma:#}");
    assert!(
        wmma["spans"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["location"]["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("mma.hpp")))),
        "{wmma:#}"
    );
    let templated = causes
        .iter()
        .find(|d| d["configs"] == serde_json::json!(["templated", "templated_wide"]))
        .unwrap_or_else(|| panic!("one templated root cause for both builds: {causes:#?}"));
    assert_eq!(templated["location"]["file"], "src/templated.cu");
    assert_eq!(templated["location"]["line"], 15);
    assert_eq!(
        templated["kernels"],
        serde_json::json!(["blur_rows<128>", "blur_rows<256>"]),
        "{templated:#}"
    );
    // The -G build is one note, not a finding per stack frame.
    let notes: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["rule"] == "debug-build")
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        !json["diagnoses"]
            .as_array()
            .expect("diagnoses")
            .iter()
            .any(|d| d["rule"] == "register-spills"),
        "{json:#}"
    );
    for clean in [
        "tail_write_clean",
        "wmma_local_clean",
        "templated_clean",
        "index_overflow_clean",
        "cp_async_twice_clean",
        "adjacent_read_clean",
    ] {
        assert!(
            !json["diagnoses"]
                .as_array()
                .expect("diagnoses")
                .iter()
                .any(|d| d["configs"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == clean))),
            "{clean} is clean: {json:#}"
        );
    }
}

/// `examples/slow-matmul/` on an H100: one fp32 matrix product, slow in two ways no Nsight
/// Compute rule names with a large gain. The report measures each against the FP32 peak of the
/// GPU the run recorded and names the unit that holds it back at its hottest line.
#[test]
fn a_kernel_far_below_the_peak_gets_its_bottleneck_when_no_ncu_rule_names_one() {
    let run = example_run("slow-matmul");
    assert!(
        run.ends_with("20261125T174343Z-f023eb7b"),
        "{}",
        run.display()
    );
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    assert_eq!(json["verdict"]["kind"], "slow", "{:#}", json["verdict"]);
    let of = |config: &str| -> &Value {
        json["diagnoses"]
            .as_array()
            .expect("diagnoses")
            .iter()
            .find(|d| d["rule"] == "bottleneck" && d["configs"] == serde_json::json!([config]))
            .unwrap_or_else(|| panic!("no bottleneck for {config}: {json:#}"))
    };
    let l1 = of("l1_reuse");
    assert!(
        l1["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("Bound by L1 traffic with no data reuse")),
        "{l1:#}"
    );
    assert_eq!(l1["location"]["line"], 29, "{l1:#}");
    assert_eq!(l1["figures"]["stall"], "stall_lg", "{l1:#}");
    let fraction = l1["figures"]["peak_fraction"].as_f64().expect("a fraction");
    assert!((0.05..0.15).contains(&fraction), "{fraction}");
    assert!(
        crate::util::prose(l1, "help").contains("shared memory"),
        "{l1:#}"
    );
    let mio = of("mio");
    assert!(
        mio["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("Bound by shared-memory loads (MIO queue)")),
        "{mio:#}"
    );
    assert_eq!(mio["location"]["line"], 43, "{mio:#}");
    assert!(
        crate::util::prose(mio, "help").contains("outputs per thread"),
        "{mio:#}"
    );
    // The register-tiled control: ncu's own rule names its bank conflicts; no bottleneck of
    // Exhibit's beside it.
    assert!(
        !json["diagnoses"]
            .as_array()
            .expect("diagnoses")
            .iter()
            .any(|d| d["rule"] == "bottleneck" && d["configs"] == serde_json::json!(["tiled"])),
        "{json:#}"
    );
}

/// A kernel written inline in Python (torch's `load_inline`, on an H100): memcheck names
/// `cuda.cu:9`, the file `load_inline` wrote from the string; the report names the Python file
/// and line that hold it, and the line the launch came from.
#[test]
fn a_load_inline_kernel_is_located_in_the_users_python_file() {
    let run = repo().join("examples/fault-classes/reference/artifacts/20261124T130802Z-cbf34f5a");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let causes = root_causes(&json);
    assert_eq!(causes.len(), 1, "{causes:?}");
    let d = &json["diagnoses"][0];
    assert_eq!(d["configs"], serde_json::json!(["plant"]), "{d:#}");
    assert_eq!(d["location"]["file"], "py/inline_scale.py", "{d:#}");
    assert_eq!(d["location"]["line"], 20, "{d:#}");
    assert_eq!(d["call_site"]["file"], "py/inline_scale.py", "{d:#}");
    assert_eq!(d["call_site"]["line"], 44, "{d:#}");
}

/// `examples/slow-kernels/` with only a profile stage, on an H100: each config's top-ranked
/// performance cause is the one its build planted, at its line; the run reads Slow; the fast
/// build has no warning.
#[test]
fn each_slow_kernel_config_ranks_its_planted_cause_first() {
    let run = repo().join("examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "slow", "{}", json["verdict"]);
    let causes: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["rule"] == "slow-kernel" && d["level"] == "warning")
        .collect();
    for (config, title, line) in [
        ("few_blocks", "Too few blocks: 4 for 132 SMs", 72),
        (
            "bank",
            "Shared-memory bank conflicts: 32-way on average",
            49,
        ),
        (
            "smem_occ",
            "Occupancy limited by shared memory: 2 blocks per SM",
            87,
        ),
        (
            "regs",
            "Occupancy limited by registers: 1 block per SM",
            114,
        ),
        (
            "small_blocks",
            "Occupancy limited by the blocks an SM can hold: 32 blocks per SM",
            154,
        ),
        (
            "uncoalesced",
            "Uncoalesced global access: 4.0 of 32 bytes used per sector",
            42,
        ),
        (
            "local",
            "Local memory: a 256-byte stack frame per thread",
            59,
        ),
        (
            "no_tensor",
            "No tensor cores: half-precision products on scalar FMA units",
            131,
        ),
    ] {
        // Diagnoses come ranked: the first that names this config is its top cause.
        let top = causes
            .iter()
            .find(|d| {
                d["configs"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c == config))
            })
            .unwrap_or_else(|| panic!("no cause on {config}"));
        assert_eq!(top["title"], title, "{config}: {top:#}");
        assert_eq!(top["location"]["file"], "src/slow.cu", "{config}");
        assert_eq!(top["location"]["line"], line, "{config}");
    }
    // The transpose's column writes move eight times the sectors they use through the L2 (at
    // 80.5% of its peak) while the DRAM is at 14.2%: the L2 is the roof it is at.
    let uncoalesced = causes
        .iter()
        .find(|d| d["configs"][0] == "uncoalesced")
        .expect("the uncoalesced config's cause");
    let explanation = uncoalesced["notes"][0].as_str().unwrap_or_default();
    assert!(
        explanation.contains("runs at 80.5% of L2 bandwidth (DRAM 14.2%)"),
        "{uncoalesced:#}"
    );
    // The lookup's scattered reads and the WMMA product's operand loads cost their kernels by
    // ncu's estimate, but each kernel is a small part of the program's GPU time: notes.
    assert!(
        !causes.iter().any(|d| d["configs"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "fast"))),
        "{causes:#?}"
    );
    // The profile stage says what it measured: each kernel and its launches.
    let md = report(&run, "md");
    assert!(
        md.contains("profiled axpb (1 launch), lookup_sum (1 launch), matmul (1 launch)"),
        "{md}"
    );
}

/// `examples/slow-reduction/` on an H100: one sum, five steps. The shared-memory tree is the
/// cause at its line in both tree builds, one element per thread at 28.4% of the DRAM
/// bandwidth and two at 52.7%. The shuffle build (two elements per thread, warp shuffles, one
/// barrier) is at 70.8% with 38% of its warps' stall samples away from its 8 bytes a thread:
/// too little work per thread, which the next build confirms by measurement (sixteen elements
/// per thread, the same shuffles: 91.3% of DRAM bandwidth, 88.1 µs a launch against 113.3 µs by
/// the program's own line), with no warning. Nor has the float4 grid-stride build (85.5%).
#[test]
fn a_reduction_held_back_by_its_own_tree_is_slow_at_any_share_of_the_bandwidth() {
    let run = example_run("slow-reduction");
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    assert_eq!(json["verdict"]["kind"], "slow", "{}", json["verdict"]);
    let warnings: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    let tree = warnings[0];
    assert_eq!(tree["rule"], "bottleneck", "{tree:#}");
    assert_eq!(tree["configs"], serde_json::json!(["tree1", "tree2"]));
    assert_eq!(tree["location"]["file"], "src/sum.cu", "{tree:#}");
    assert_eq!(tree["location"]["line"], 43, "{tree:#}");
    let evidence = tree["evidence"].to_string();
    assert!(
        evidence.contains("DRAM 52.7%"),
        "the two-per-thread build: {evidence}"
    );
    let said = format!("{} {}", tree["notes"], tree["help"]);
    for words in ["at barriers", "on shared memory", "__shfl_down_sync"] {
        assert!(said.contains(words), "{words}: {said}");
    }
    // The verdict leads with the root cause listed first.
    let verdict = json["verdict"]["line"].as_str().unwrap_or("");
    assert!(
        verdict
            .contains("top: Bound by on-chip memory traffic at 31.4% of L2 bandwidth (DRAM 28.4%)"),
        "{verdict}"
    );
    let thin = warnings[1];
    assert_eq!(thin["configs"], serde_json::json!(["shuffle2"]), "{thin:#}");
    assert_eq!(
        thin["title"], "Too little work per thread at 71.9% of L2 bandwidth (DRAM 70.8%)",
        "{thin:#}"
    );
    assert_eq!(thin["figures"]["bytes_per_thread"], 8.0, "{thin:#}");
    let said = format!("{} {}", thin["notes"], thin["help"]);
    for words in [
        "8 bytes",
        "38% of its warps' stall samples",
        "grid-stride loop",
    ] {
        assert!(said.contains(words), "{words}: {said}");
    }
    let md = report(&run, "md");
    for clean in [
        "| fast | `block_sum` | 94.5 | DRAM 85.5%",
        "| many16 | `block_sum` | 88.6 | DRAM 91.3%",
    ] {
        assert!(md.contains(clean), "{clean}: {md}");
    }
}

/// `exhibit diff` shows a performance cause that went and one that appeared: B is the
/// slow-kernels reference run with the `regs` config's profile replaced by the `fast` config's
/// (real exports of the same run), as if `poly` had been fixed.
#[test]
fn diff_shows_a_performance_cause_that_went_and_one_that_appeared() {
    let reference =
        repo().join("examples/slow-kernels/reference/artifacts/20261124T144251Z-434eb14a");
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for to in [&a, &b] {
        copy_tree(&reference, to);
    }
    let profile = |run: &Path, config: &str| run.join(format!("profile/{config}/sm_90"));
    for log in ["ncu.csv", "source.csv.gz"] {
        std::fs::copy(profile(&b, "fast").join(log), profile(&b, "regs").join(log)).unwrap();
    }
    let diff = |from: &Path, to: &Path| {
        Command::new(env!("CARGO_BIN_EXE_exhibit"))
            .arg("diff")
            .args([from, to])
            .output()
            .expect("run the runner")
    };
    let title = "**Occupancy limited by registers: 1 block per SM**";
    let fixed = diff(&a, &b);
    let text = String::from_utf8_lossy(&fixed.stdout);
    assert_eq!(fixed.status.code(), Some(0), "{text}");
    let section = text.split("## Fixed root causes").nth(1).unwrap_or("");
    let section = section.split("\n## ").next().unwrap_or("");
    assert!(section.contains(title), "{text}");
    let appeared = diff(&b, &a);
    let text = String::from_utf8_lossy(&appeared.stdout);
    assert_eq!(appeared.status.code(), Some(1), "{text}");
    let section = text.split("## New root causes").nth(1).unwrap_or("");
    let section = section.split("\n## ").next().unwrap_or("");
    assert!(section.contains(title), "{text}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

/// A performance cause on the built-in kernel says what makes it matter: the run's own
/// benchmark of that config against SDPA, in the case where it is furthest behind.
#[test]
fn a_built_in_performance_cause_carries_its_benchmark_against_sdpa() {
    let run = repo().join("artifacts/reference/20261122T040342Z-75f379fd");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let cause = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .find(|d| {
            d["rule"] == "slow-kernel"
                && d["config"] == "d128_m128_n32_s2_w4"
                && d["figures"]["baseline_ratio"].is_number()
        })
        .unwrap_or_else(|| panic!("no cause with a baseline ratio: {json:#}"));
    assert!(
        Some(crate::util::prose(cause, "notes"))
            .as_deref()
            .is_some_and(|e| e.contains(
                "config `d128_m128_n32_s2_w4` at B=4 H=16 S=4096 D=128 bf16 runs at 0.51x the \
             speed of `sdpa:default` (p50 1621.3 µs against 833.0 µs"
            )),
        "{cause:#}"
    );
}

/// `examples/triton/`: a Triton script with no build, run on an H100. Its kernel, compiled just
/// in time, is inventoried (SASS, registers) by the SASS stage after the program; ncu measured
/// PyTorch's reference softmax too, which is named apart and never taken for the program's.
/// One row of 1000 floats per program of 128 threads: 31 bytes read per thread, and 52% of the
/// warps' stall samples away from the loads (the row's max and sum): too little work per
/// thread. It is said against the roof that binds, as the kernel table's "Against the limit"
/// says it (L2 77.0%, DRAM 48.7%), and its fix in a Triton program's terms (its block, its loop
/// over blocks, its warps), never CUDA's shuffles or grid-stride loops.
#[test]
fn the_triton_examples_jit_kernel_is_inventoried_and_the_frameworks_is_not_its_own() {
    let run = example_run("triton");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    assert_eq!(json["verdict"]["kind"], "slow", "{}", json["verdict"]);
    let slow: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "warning")
        .collect();
    assert_eq!(slow.len(), 1, "{slow:#?}");
    assert_eq!(slow[0]["kernel"], "softmax_kernel", "{:#}", slow[0]);
    assert_eq!(
        slow[0]["title"], "Too little work per thread at 77.0% of L2 bandwidth (DRAM 48.7%)",
        "{:#}",
        slow[0]
    );
    let help = slow[0]["help"].to_string();
    assert!(
        help.contains("`BLOCK_SIZE`") && help.contains("`num_warps`"),
        "{help}"
    );
    assert!(
        !help.contains("grid-stride") && !help.contains("__shfl"),
        "{help}"
    );
    let kernels = json["kernels"].as_array().expect("kernels");
    let softmax = kernels
        .iter()
        .find(|k| k["kernel"] == "softmax_kernel")
        .unwrap_or_else(|| panic!("{kernels:#?}"));
    assert_eq!(softmax["registers"], 29, "{softmax:#}");
    assert_eq!(softmax["arch"], "sm_90a", "{softmax:#}");
    assert!(
        !kernels.iter().any(|k| k["kernel"]
            .as_str()
            .is_some_and(|n| n.starts_with("softmax_warp"))),
        "{kernels:#?}"
    );
    assert!(
        !json["diagnoses"]
            .as_array()
            .expect("diagnoses")
            .iter()
            .any(|d| d["kernel"]
                .as_str()
                .is_some_and(|k| k.starts_with("softmax_warp"))),
        "{:#}",
        json["diagnoses"]
    );
    let md = report(&run, "md");
    assert!(
        md.contains("profiled softmax_kernel (1 launch); 100 metrics, 12 source lines; also measured, not the program's own: softmax_warp_forward"),
        "{md}"
    );
}

/// The built-in pipeline through the one path (its kernel a target, run on an H100 on
/// 2026-11-24, `docs/measurements/2026-11-24-h100-one-path/`): the diagnosis it had as a
/// second path. The profiled problem comes from what the harness wrote under ncu, so the
/// wgmma D=64 build's occupancy, on a problem where it is as fast as SDPA, stays a note.
#[test]
fn the_built_in_pipeline_through_the_one_path_keeps_its_diagnosis() {
    let run =
        repo().join("docs/measurements/2026-11-24-h100-one-path/runs/20261124T185757Z-a106e7db");
    let md = report(&run, "md");
    assert!(
        md.contains(
            "**Verdict:** 🐢 Slow: 1 cause, top: Occupancy limited by registers and shared \
             memory: 2 blocks per SM in attention_fwd_bf16, at 39.6% of the FP16 tensor peak, \
             its binding roof."
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "config `d128_m128_n48_s2_w4` at B=4 H=16 S=4096 D=128 bf16 runs at 0.63x the speed \
             of `sdpa:default`"
        ),
        "{md}"
    );
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let wgmma = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .find(|d| d["rule"] == "slow-kernel" && d["config"] == "wg_d64_m192_n128_s4")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(wgmma["level"], "note", "{wgmma:#}");
    // Every unit ran through the target path: the build is nvcc's, the program the harness.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    let units: Vec<&Value> = manifest["stages"].as_array().unwrap().iter().collect();
    assert!(
        units
            .iter()
            .filter(|s| s["kind"] == "compile")
            .all(|s| s["unit"]["target"] == "build" && s["command"][0] == "nvcc")
    );
    assert!(
        units
            .iter()
            .filter(|s| s["kind"] == "memcheck")
            .all(|s| s["unit"]["target"] == "harness" && s["unit"]["mode"] == "once")
    );
}

/// `examples/pytest-triton/`, run on an H100: the check stage read the suite's JUnit XML, and
/// memcheck ran each of its 5 tests alone. The unguarded Triton load is named with the test that
/// made it, and the failing row-sum test, a fault of another test, is a root cause of its own,
/// at its assertion.
#[test]
fn the_pytest_examples_failing_test_and_its_memcheck_error_are_two_faults_each_with_its_test() {
    let run = example_run("pytest-triton");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let errors = errors(&json);
    assert_eq!(errors.len(), 2, "{json:#}");
    let oob = with_rule(&errors, "out-of-bounds");
    assert_eq!(
        oob["figures"]["test"],
        "tests/test_kernels.py::test_scale[1000]"
    );
    assert_eq!(oob["location"]["file"], "kernels.py");
    assert_eq!(oob["location"]["line"], 13);
    let test = with_rule(&errors, "check-failed");
    assert_eq!(
        test["figures"]["test"],
        "tests/test_kernels.py::test_rowsum[200]"
    );
    assert_eq!(test["location"]["file"], "tests/test_kernels.py");
    assert_eq!(test["location"]["line"], 20);
    let md = report(&run, "md");
    assert!(
        md.contains(
            "in `scale_kernel` at kernels.py:13, in test `tests/test_kernels.py::test_scale[1000]`"
        ),
        "{md}"
    );
    assert!(md.contains("| check | ❌ 3/4 passed; 1 skipped"), "{md}");
}

/// `examples/gtest-cuda/`, run on an H100: ctest's JUnit names one case for the binary; the
/// report names the GoogleTest test that failed in it, with its assertion and line. memcheck ran
/// each GoogleTest test alone (`split: tests`): the unguarded tile load is named with its test,
/// and the failing row-sum test, another test's fault, is a root cause of its own.
#[test]
fn the_gtest_examples_failing_test_is_named_from_ctests_junit() {
    let run = example_run("gtest-cuda");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let errors = errors(&json);
    assert_eq!(errors.len(), 2, "{json:#}");
    let oob = with_rule(&errors, "out-of-bounds");
    assert_eq!(oob["location"]["file"], "kernels.cuh");
    assert_eq!(oob["location"]["line"], 11);
    assert_eq!(oob["figures"]["test"], "Lengths/Scale.MatchesHost/1");
    let test = with_rule(&errors, "check-failed");
    assert_eq!(test["figures"]["test"], "Widths/RowSum.MatchesHost/1");
    assert_eq!(test["location"]["line"], 59);
    let md = report(&run, "md");
    assert!(
        md.contains(
            "Test `Widths/RowSum.MatchesHost/1` failed: Expected: (worst) \\< (1e-3), actual: \
             7.7907691637519747 vs 0.001; max abs error with 200 columns (8 in the last block)"
        ),
        "{md}"
    );
}

/// `examples/experiments/` on an H100: each hypothesis tested by more runs. The tail at N = 1000
/// (tiles of 64) fails exactly off the multiples; the race's output differs between identical
/// runs; one more block at 40 registers (from 43) is no faster than the build as it ran (benched
/// twice, 0.7% apart), so the occupancy suggestion is withdrawn; half the tile of a chase that
/// shared memory holds to 2 blocks per SM runs 1.19x faster, confirmed. Confidence follows: the
/// tail and the race are high, the note's help says it was withdrawn.
#[test]
fn the_experiments_example_tests_each_hypothesis_by_more_runs() {
    let run = example_run("experiments");
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    let experiments = json["experiments"].as_array().expect("experiments");
    let of = |kind: &str| {
        experiments
            .iter()
            .find(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind}: {experiments:#?}"))
    };
    let tail = of("tail");
    assert_eq!(tail["outcome"], "confirmed", "{tail:#}");
    assert_eq!(
        tail["sentence"],
        "Fails exactly when N % 64 != 0: 960 and 1024 pass, 1000 and 1056 fail."
    );
    assert_eq!(
        tail["runs"], 4,
        "four memcheck runs on the run's own build: {tail:#}"
    );
    let race = of("race");
    assert_eq!(race["outcome"], "confirmed", "{race:#}");
    assert!(
        race["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with("The output differs between identical runs: 7 of 8")),
        "{race:#}"
    );
    let registers = of("registers");
    assert_eq!(registers["outcome"], "refuted", "{registers:#}");
    assert_eq!(
        registers["sentence"],
        "43 -> 40 registers: no change beyond 3%, 0.97x (no spills; two runs of the build as it \
         ran differ by 0.7%): the suggestion is withdrawn."
    );
    // Nsight Compute's occupancy rule on the latency-bound chase names shared memory: its tile
    // halved, twice the blocks fit, and the kernel runs faster.
    let tile = of("tile");
    assert_eq!(tile["outcome"], "confirmed", "{tile:#}");
    assert_eq!(tile["rule"], "slow-kernel", "{tile:#}");
    assert_eq!(
        tile["sentence"],
        "TILE=48: 1.19x faster (no spills; two runs of the build as it ran differ by 0.0%)."
    );
    let diagnoses = json["diagnoses"].as_array().expect("diagnoses");
    let rule = |r: &str| {
        diagnoses
            .iter()
            .find(|d| d["rule"] == r)
            .unwrap_or_else(|| panic!("{r}: {diagnoses:#?}"))
    };
    assert_eq!(rule("out-of-bounds")["confidence"], "high");
    assert_eq!(rule("shared-memory-race")["confidence"], "high");
    assert!(
        rule("occupancy-limit")["help"]
            .to_string()
            .contains("Withdrawn by experiment"),
        "{:#}",
        rule("occupancy-limit")
    );
    // The short form for a pull request names each experiment's outcome.
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--summary"])
        .arg(&run)
        .output()
        .expect("run the runner");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("## Experiments"), "{summary}");
    assert!(
        summary.contains("(confirmed): Fails exactly when N % 64 != 0"),
        "{summary}"
    );
}

/// The runs of `examples/program-model/` (pipeline.yaml, then sdpa.yaml), by their run ids.
fn program_model_run(id: &str) -> PathBuf {
    repo()
        .join("examples/program-model/reference/artifacts")
        .join(id)
}

/// The configs a diagnosis was found in.
fn configs_of(d: &Value) -> Vec<&str> {
    d["configs"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `examples/program-model/` on an H100: one build of seven kernels that launches two (latent
/// traps), an atomic on a thread-local array, a block total read across warps with no barrier
/// (racecheck's analysis report calls it a warning), equal lanes that keep 1/32 of a row sum,
/// a scalar store through a pointer advanced per chunk, and a check that fails before a later
/// kernel writes past a buffer. One root cause per fault, each in the words its evidence
/// supports; the correct programs stay free of errors.
#[test]
fn the_program_models_classes_read_as_their_predictions() {
    let run = program_model_run("20261127T083705Z-5fb5cca6");
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    let causes = errors(&json);
    assert_eq!(causes.len(), 6, "{causes:#?}");
    let of_config_rule = |config: &str, rule: &str| {
        causes
            .iter()
            .find(|d| configs_of(d) == [config] && d["rule"] == rule)
            .copied()
            .unwrap_or_else(|| panic!("no {rule} root cause for {config} alone: {causes:#?}"))
    };
    let of_config = |config: &str| {
        causes
            .iter()
            .find(|d| configs_of(d) == [config])
            .copied()
            .unwrap_or_else(|| panic!("no root cause for {config} alone: {causes:#?}"))
    };
    // A scalar store, three blocks at one slot past the end: the pointer moved on per chunk,
    // not an index to guard.
    let slot = of_config("slot_per_row");
    assert_eq!(slot["rule"], "out-of-bounds");
    assert_eq!(
        slot["title"],
        "Out-of-bounds global write through `out`: 3 blocks write the same slot past the end of \
         a 4000-byte buffer"
    );
    let fix = slot["help"][0].as_str().unwrap_or_default();
    assert!(fix.starts_with("Store once per slot"), "{fix}");
    assert!(!fix.contains("if (i < n)"), "{fix}");
    // The check failed (and said so in memcheck's log) before the later kernel wrote past its
    // buffer: two root causes, the wrong output not under the write.
    let late = of_config_rule("late_fault", "out-of-bounds");
    assert_eq!(late["kernels"], serde_json::json!(["clear"]));
    assert!(
        !late["notes"].as_array().is_some_and(|n| n
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("Wrong output")))),
        "{late:#}"
    );
    let wrong = of_config_rule("late_fault", "wrong-output");
    let said = crate::util::prose(wrong, "notes");
    assert!(
        said.contains("came after the program had printed this line"),
        "{wrong:#}"
    );
    // The compiler-planted trap of an atomic: its own words, in the kernel that trapped.
    let atomic = of_config("local_atomic");
    assert_eq!(atomic["rule"], "wmma-local-memory");
    assert!(
        atomic["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("Atomic on thread-local memory")),
        "{atomic:#}"
    );
    assert_eq!(atomic["kernels"], serde_json::json!(["histogram"]));
    assert_eq!(atomic["location"]["file"], "src/local_atomic.cu");
    // racecheck's warning has a read on one side: a race that explains the failing check, and
    // with no scope said, the barrier that orders warps leads.
    let race = of_config("block_reduce_race");
    assert_eq!(race["rule"], "shared-memory-race");
    let fix = race["help"][0].as_str().unwrap_or_default();
    assert!(
        fix.starts_with(
            "Add `__syncthreads()` between the write at line 28 and the read at line 33"
        ),
        "{fix}"
    );
    assert!(
        race["notes"].as_array().is_some_and(|n| n.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.starts_with("Seen downstream: Wrong output")))),
        "{race:#}"
    );
    // Every row sum 1/32 of the reference: the headline says so.
    let lanes = of_config("equal_lanes");
    assert_eq!(lanes["rule"], "wrong-output");
    assert_eq!(
        lanes["title"],
        "Wrong output: the program's element is 1/32 of its reference (8.00 against 256)"
    );
    // Four kernels never launched hold a trap each: one note, no error.
    let notes: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "note" && configs_of(d) == ["latent_traps"])
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0]["figures"]["latent_kernels"], 4, "{:#}", notes[0]);
    for clean in [
        "latent_traps",
        "local_atomic_clean",
        "block_reduce_race_clean",
        "equal_lanes_clean",
        "slot_per_row_clean",
        "late_fault_clean",
    ] {
        assert!(
            !json["diagnoses"]
                .as_array()
                .expect("diagnoses")
                .iter()
                .any(|d| d["level"] != "note" && configs_of(d).contains(&clean)),
            "{clean}: {json:#}"
        );
    }
}

/// `examples/program-model/sdpa.yaml` on an H100: racecheck's hazards inside cuDNN's attention
/// kernel, which SDPA runs as the program's reference, are one note; the program's own wrong
/// output is the one root cause.
#[test]
fn a_librarys_hazards_beside_the_program_are_a_note_never_its_root_cause() {
    let run = program_model_run("20261127T061006Z-68e4bf99");
    let json: Value = serde_json::from_str(&report(&run, "json")).expect("JSON");
    let causes = errors(&json);
    assert_eq!(causes.len(), 1, "{causes:#?}");
    assert_eq!(causes[0]["rule"], "wrong-output");
    assert_eq!(configs_of(causes[0]), ["missing_scale"]);
    let library: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["rule"] == "library-kernel")
        .collect();
    assert_eq!(library.len(), 1, "{library:#?}");
    assert_eq!(library[0]["level"], "note");
    assert!(
        library[0]["title"]
            .as_str()
            .is_some_and(|t| t.ends_with("in cuDNN's kernel, not the program's code")),
        "{:#}",
        library[0]
    );
    assert!(
        library[0]["help"][0]
            .as_str()
            .is_some_and(|h| h.contains("--kernel-name-exclude kns=cudnn")),
        "{:#}",
        library[0]
    );
    assert_eq!(json["verdict"]["kind"], "failing");
}

/// The project's own program with a block of neighbouring shared-memory writes (lines 25-27)
/// racing with reads before and after them, and a fourth array's write further down (line 36)
/// after other reads, under racecheck on an H100
/// (`docs/measurements/2026-11-27-h100-write-block/`): the block is one root cause with a
/// barrier on each side of it; the write at 36 is another, also with a barrier on each side.
#[test]
fn neighbouring_writes_are_one_fault_and_a_write_further_down_another() {
    let run = repo()
        .join("docs/measurements/2026-11-27-h100-write-block/artifacts/20261127T140859Z-ef634e14");
    let json: Value = serde_json::from_str(&report(&run, "json")).unwrap();
    let causes: Vec<&Value> = json["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter(|d| d["level"] == "error")
        .collect();
    let lines: Vec<u64> = causes
        .iter()
        .filter_map(|d| d["location"]["line"].as_u64())
        .collect();
    assert_eq!(lines, [25, 36], "{causes:#?}");
    assert!(causes.iter().all(|d| d["rule"] == "shared-memory-race"));
    let fix = |d: &Value| d["help"][0].as_str().unwrap_or_default().to_string();
    assert!(
        fix(causes[0]).contains("one after the last write (`write_block.cu:27`) and before the first of `write_block.cu:31`")
            && fix(causes[0]).contains("and before the first write (`write_block.cu:25`)"),
        "{}",
        fix(causes[0])
    );
    assert!(
        fix(causes[1])
            .contains("one after `write_block.cu:32` and before the write (`write_block.cu:36`)"),
        "{}",
        fix(causes[1])
    );
}

/// The report the README quotes (`examples/fault-classes/`'s reference run) is what today's
/// renderer prints: every quoted line is a line of `exhibit report`'s Markdown, so a quote that
/// drifts from the code fails here.
#[test]
fn the_readmes_quoted_report_is_what_todays_code_renders() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let run = repo().join("examples/fault-classes/reference/artifacts/20261124T122821Z-abcc59df");
    let md = report(&run, "md");
    let rendered: Vec<&str> = md.lines().collect();
    let quoted: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("> "))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(quoted.len() >= 5, "the README quotes a report: {quoted:#?}");
    for line in quoted {
        assert!(
            rendered.contains(&line),
            "README.md quotes a line today's report does not print:\n{line}\n\n{md}"
        );
    }
}

/// `docs/rules.md` is what `exhibit rules` prints today: a rule added, renamed or reworded fails
/// here until the page is rewritten (`EXHIBIT_BLESS=1`).
#[test]
fn the_rules_page_is_what_runner_rules_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .arg("rules")
        .output()
        .expect("run the runner");
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let page = repo().join("docs/rules.md");
    if std::env::var_os("EXHIBIT_BLESS").is_some() {
        std::fs::write(&page, &printed).expect("write docs/rules.md");
    }
    let committed = std::fs::read_to_string(&page).expect("docs/rules.md");
    assert_eq!(
        committed, printed,
        "docs/rules.md drifted: EXHIBIT_BLESS=1 rewrites it"
    );
    let rules: Vec<&str> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect();
    assert!(
        rules.contains(&"shared-memory-race") && rules.len() >= 20,
        "{rules:?}"
    );
}

/// Given where Exhibit's documentation lives, the SARIF links its driver and every rule there;
/// without it, neither (a link to nowhere is worse than none); a relative address is refused.
#[test]
fn sarif_links_the_driver_and_each_rule_to_the_home_it_is_given() {
    let run = reference_run("faults.yaml");
    let plain: Value = serde_json::from_str(&report(&run, "sarif")).expect("SARIF");
    assert!(plain["runs"][0]["tool"]["driver"]["informationUri"].is_null());
    let linked = report_with(
        &run,
        &[
            "--format",
            "sarif",
            "--home",
            "https://github.com/example/exhibit",
            "--rules-uri",
            "https://github.com/example/exhibit/blob/v1/docs/rules.md",
        ],
    );
    let sarif: Value = serde_json::from_str(&linked).expect("SARIF");
    let driver = &sarif["runs"][0]["tool"]["driver"];
    assert_eq!(
        driver["informationUri"],
        "https://github.com/example/exhibit"
    );
    let rules = driver["rules"].as_array().expect("rules");
    for rule in rules {
        assert_eq!(
            rule["helpUri"].as_str(),
            Some(format!(
                "https://github.com/example/exhibit/blob/v1/docs/rules.md#{}",
                rule["id"].as_str().expect("id")
            ))
            .as_deref()
        );
    }
    let refused = Command::new(env!("CARGO_BIN_EXE_exhibit"))
        .args(["report", "--format", "sarif", "--home", "docs/rules.md"])
        .arg(&run)
        .output()
        .expect("run the runner");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("absolute http(s) URL"));
}

/// Code scanning gets what says something at a line: the fault-classes reference run's six
/// root causes, each at its source line, and none of its notes that name no source file (ncu's
/// advice on launches too short to judge), which would all annotate the pipeline's first line.
/// The Markdown report keeps them.
#[test]
fn sarif_leaves_out_notes_that_name_no_source_line() {
    let run = repo().join("examples/fault-classes/reference/artifacts/20261124T122821Z-abcc59df");
    let sarif: Value = serde_json::from_str(&report(&run, "sarif")).expect("SARIF");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let at_pipeline = |r: &&Value| {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .is_some_and(|u| u.ends_with("pipeline.yaml"))
    };
    assert_eq!(results.iter().filter(|r| r["level"] == "error").count(), 6);
    assert!(
        !results
            .iter()
            .any(|r| r["level"] == "note" && at_pipeline(&r)),
        "{results:#?}"
    );
    let md = report(&run, "md");
    assert!(md.contains("Too few blocks: 4 for 132 SMs"), "{md}");
}
