//! Each fault class with a real fixture: the report names its root cause first, with the raw
//! lines that show it, and the Markdown is pinned by a snapshot.

use parsers::Format;
use report::{Confidence, Level, StageKind, VerdictKind, analyze};

use crate::support::{
    Step, assert_deterministic_text, compile, evidence, markdown, sanitizer, sass,
};

const PROGRAMS: &str = "crates/parsers/fixtures/programs";

fn source(name: &str) -> String {
    format!("{PROGRAMS}/{name}")
}

/// Analyses a run and checks the first root cause's rule, level and location, then snapshots
/// the Markdown under `name`. Returns the ranked diagnoses.
fn check(
    name: &str,
    steps: &[Step],
    inputs: &[&str],
    rule: &str,
    line: Option<u32>,
) -> Vec<report::Diagnosis> {
    let ev = evidence(name, steps, inputs);
    let a = analyze(&ev);
    let first = a
        .diagnoses
        .first()
        .unwrap_or_else(|| panic!("{name}: no diagnosis"));
    assert_eq!(first.rule, rule, "{name}: first diagnosis {first:#?}");
    assert_eq!(first.level, Level::Error, "{name}");
    assert_eq!(a.verdict.kind, VerdictKind::Failing, "{name}");
    if let Some(line) = line {
        assert_eq!(
            first.location.as_ref().and_then(|l| l.line),
            Some(line),
            "{name}: {first:#?}"
        );
    }
    assert!(
        !first.evidence.is_empty() && first.evidence.iter().any(|e| !e.excerpt.is_empty()),
        "{name}: no raw excerpt"
    );
    let md = markdown(&ev);
    assert_deterministic_text(&md);
    insta::assert_snapshot!(name, md);
    a.diagnoses
}

#[test]
fn wmma_fragment_on_local_memory_is_named_from_warning_trap_and_sass() {
    let src = source("wmma_local.cu");
    let a = check(
        "wmma_local",
        &[
            compile("sm90", "ptxas/device_wmma_local.log"),
            sass("sm90", "sass/device_wmma_local_cuobjdump.log"),
            sanitizer(
                StageKind::Memcheck,
                "sm90",
                "compute-sanitizer/memcheck_wmma_local.log",
            ),
        ],
        &[&src],
        "wmma-local-memory",
        None,
    );
    let d = &a[0];
    // Warning, trap and BPT.TRAP: three independent signals.
    assert_eq!(d.confidence, Confidence::High);
    assert!(d.fix().markdown().contains("shared memory"));
    // The trap records and the launch failure they cause are one root cause, not several.
    assert_eq!(
        a.iter().filter(|d| d.level == Level::Error).count(),
        1,
        "{a:#?}"
    );
}

/// A `-G` build keeps `load_matrix_sync` a function of its own: memcheck's records sit inside
/// the toolkit's header, and the SASS line table's call into it names the user's line.
#[test]
fn a_debug_builds_wmma_fault_is_placed_at_the_users_call_from_the_line_table() {
    let src = "examples/real-code-classes/src/wmma_local.cu";
    let ev = evidence(
        "wmma_local_debug",
        &[
            compile("wmma_local_debug", "ptxas/device_wmma_local_debug.log"),
            crate::support::step(
                StageKind::Sass,
                "wmma_local_debug",
                "sass/wmma_local_debug_nvdisasm_g.log",
                Format::SassLines,
            ),
            sanitizer(
                StageKind::Memcheck,
                "wmma_local_debug",
                "compute-sanitizer/memcheck_wmma_local_debug.log",
            ),
        ],
        &[src],
    );
    let a = analyze(&ev);
    let d = a
        .diagnoses
        .iter()
        .find(|d| d.rule == "wmma-local-memory")
        .unwrap_or_else(|| panic!("{:#?}", a.diagnoses));
    let at = d.location.as_ref().expect("the user's line");
    assert!(at.file.ends_with("src/wmma_local.cu"), "{at:?}");
    assert_eq!(at.line, Some(27), "{d:#?}");
    // The toolkit's header stays a label.
    assert!(
        d.spans
            .iter()
            .any(|s| s.location.file.ends_with("mma.hpp") && !s.primary),
        "{:#?}",
        d.spans
    );
}

/// A race whose write sits in the toolkit's copy primitive, inlined: the SASS line table's
/// inlining (`nvdisasm -gi`) leads from `cuda_pipeline_helpers.h:190` up to the program's own
/// call that brought it in (`load_tile`'s `__pipeline_memcpy_async`, line 14).
#[test]
fn a_race_in_an_inlined_header_names_the_programs_call_from_the_line_table() {
    let src = "examples/real-code-classes/src/cp_async_twice.cu";
    let ev = evidence(
        "cp_async_twice",
        &[
            compile("cp_async_twice", "ptxas/device_cp_async_twice.log"),
            crate::support::step(
                StageKind::Sass,
                "cp_async_twice",
                "sass/cp_async_twice_nvdisasm_gi.log",
                Format::SassLines,
            ),
            sanitizer(
                StageKind::Racecheck,
                "cp_async_twice",
                "compute-sanitizer/racecheck_cp_async_twice.log",
            ),
        ],
        &[src],
    );
    let a = analyze(&ev);
    let d = a
        .diagnoses
        .iter()
        .find(|d| d.rule == "shared-memory-race")
        .unwrap_or_else(|| panic!("{:#?}", a.diagnoses));
    let calls: Vec<String> = d
        .spans
        .iter()
        .filter(|s| s.label == "the program's call that inlines the write")
        .map(|s| s.location.to_string())
        .collect();
    assert_eq!(calls.len(), 1, "{:#?}", d.spans);
    assert!(calls[0].ends_with("cp_async_twice.cu:14"), "{calls:?}");
}

#[test]
fn wmma_confidence_drops_without_the_sanitizer() {
    let src = source("wmma_local.cu");
    let ev = evidence(
        "wmma_local_compile_only",
        &[
            compile("sm90", "ptxas/device_wmma_local.log"),
            sass("sm90", "sass/device_wmma_local_cuobjdump.log"),
        ],
        &[&src],
    );
    let a = analyze(&ev);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "wmma-local-memory");
    assert_eq!(
        d.confidence,
        Confidence::Medium,
        "warning and BPT.TRAP only: {d:#?}"
    );
}

#[test]
fn shared_memory_race_names_the_missing_barriers() {
    let src = source("race.cu");
    let a = check(
        "race",
        &[
            compile("sm90", "ptxas/device_race.log"),
            sanitizer(
                StageKind::Racecheck,
                "sm90",
                "compute-sanitizer/racecheck_race.log",
            ),
        ],
        &[&src],
        "shared-memory-race",
        None,
    );
    let titles: Vec<String> = a
        .iter()
        .filter(|d| d.rule == "shared-memory-race")
        .map(|d| d.title.markdown())
        .collect();
    // race.cu: write at 10, read at 12 (RAW), write again at 14 (WAR).
    assert!(
        titles.iter().any(|t| t.contains("line 10 and line 12")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.contains("line 12") && t.contains("line 14")),
        "{titles:?}"
    );
}

#[test]
fn racecheck_hazard_form_leads_to_the_same_barrier() {
    let src = source("race.cu");
    check(
        "race_hazard",
        &[
            compile("sm90", "ptxas/device_race.log"),
            sanitizer(
                StageKind::Racecheck,
                "sm90",
                "compute-sanitizer/racecheck_race_hazard.log",
            ),
        ],
        &[&src],
        "shared-memory-race",
        Some(12),
    );
}

#[test]
fn out_of_bounds_write_one_byte_past_the_end_is_an_off_by_one() {
    let src = source("oob.cu");
    let a = check(
        "oob_write",
        &[
            compile("sm90", "ptxas/device_oob.log"),
            sanitizer(
                StageKind::Memcheck,
                "sm90",
                "compute-sanitizer/memcheck_oob_write1.log",
            ),
        ],
        &[&src],
        "out-of-bounds",
        None,
    );
    let d = &a[0];
    assert!(d.title.markdown().starts_with("Off-by-one"), "{}", d.title);
    assert_eq!(d.figures.get("bytes_after"), Some(&serde_json::json!(1)));
    // The launch failure memcheck reports after the fault is its echo, not a second cause.
    assert!(
        !a.iter()
            .any(|d| d.rule == "sanitizer-error" && d.level == Level::Error),
        "{a:#?}"
    );
}

#[test]
fn out_of_bounds_read() {
    let src = source("oob.cu");
    check(
        "oob_read",
        &[
            compile("sm90", "ptxas/device_oob.log"),
            sanitizer(
                StageKind::Memcheck,
                "sm90",
                "compute-sanitizer/memcheck_oob_read.log",
            ),
        ],
        &[&src],
        "out-of-bounds",
        None,
    );
}

#[test]
fn uninitialised_read() {
    let src = source("uninit.cu");
    check(
        "uninit",
        &[
            compile("sm90", "ptxas/device_uninit.log"),
            sanitizer(
                StageKind::Initcheck,
                "sm90",
                "compute-sanitizer/initcheck_uninit.log",
            ),
        ],
        &[&src],
        "uninitialized-read",
        Some(9),
    );
}

#[test]
fn divergent_barrier() {
    let src = source("syncdiv.cu");
    check(
        "syncdiv_warp",
        &[
            compile("sm90", "ptxas/device_syncdiv.log"),
            sanitizer(
                StageKind::Synccheck,
                "sm90",
                "compute-sanitizer/synccheck_syncdiv_warp.log",
            ),
        ],
        &[&src],
        "divergent-barrier",
        Some(12),
    );
}

#[test]
fn misaligned_shared_access() {
    let src = source("misaligned.cu");
    check(
        "misaligned_shared",
        &[
            compile("sm90", "ptxas/device_misaligned.log"),
            sanitizer(
                StageKind::Memcheck,
                "sm90",
                "compute-sanitizer/memcheck_misaligned_shared.log",
            ),
        ],
        &[&src],
        "misaligned-access",
        Some(19),
    );
}

#[test]
fn a_trap_without_the_wmma_warning_is_not_blamed_on_wmma() {
    let src = source("cpasync_trap.cu");
    let a = check(
        "cpasync_trap",
        &[
            compile("sm90", "ptxas/device_cpasync_trap.log"),
            sanitizer(
                StageKind::Memcheck,
                "sm90",
                "compute-sanitizer/memcheck_cpasync_trap.log",
            ),
        ],
        &[&src],
        "sanitizer-error",
        Some(26),
    );
    assert!(!a.iter().any(|d| d.rule == "wmma-local-memory"));
}

#[test]
fn register_spills_are_a_performance_warning() {
    let src = source("spill.cu");
    let ev = evidence(
        "spill",
        &[
            compile("maxrreg32", "ptxas/nvcc13.0_spill_maxrreg32.log"),
            sass("maxrreg32", "sass/nvcc13.0_spill_cuobjdump.log"),
        ],
        &[&src],
    );
    let a = analyze(&ev);
    let d = a
        .diagnoses
        .iter()
        .find(|d| d.rule == "register-spills")
        .expect("a spill diagnosis");
    assert_eq!(d.level, Level::Warning);
    assert_eq!(a.verdict.kind, VerdictKind::Warnings);
    let md = markdown(&ev);
    assert_deterministic_text(&md);
    insta::assert_snapshot!("spill", md);
}

#[test]
fn compile_error_points_at_its_line() {
    let src = source("compile_error.cu");
    let mut step = compile("sm90", "ptxas/nvcc13.0_compile_error.log");
    step.status = Some(report::StageStatus::Findings);
    let ev = evidence("compile_error", &[step], &[&src]);
    let a = analyze(&ev);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "compile-error");
    assert_eq!(
        d.location.as_ref().map(|l| l.file.as_str()),
        Some(src.as_str())
    );
    insta::assert_snapshot!("compile_error", markdown(&ev));
}

#[test]
fn an_incomplete_sanitizer_log_is_never_clean() {
    // The synccheck log of a clean program, cut before its summary line.
    let text = crate::support::read("compute-sanitizer/synccheck_syncdiv_block.log");
    let cut: String = text
        .lines()
        .take_while(|l| !l.contains("ERROR SUMMARY"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut ev = evidence(
        "cut",
        &[sanitizer(
            StageKind::Synccheck,
            "sm90",
            "compute-sanitizer/synccheck_syncdiv_block.log",
        )],
        &[],
    );
    let path = ev.run.stages[0].logs[0].path.clone();
    ev.logs
        .insert(path, parsers::parse(Format::ComputeSanitizer, &cut));
    let a = analyze(&ev);
    assert_eq!(
        a.verdict.kind,
        VerdictKind::Inconclusive,
        "{}",
        a.verdict.line
    );
    assert!(!a.verdict.is_clean());
}

#[test]
fn wmma_fault_variant_is_named_from_its_build_and_its_failing_launches() {
    // kernel/faults/wmma_local_q.cu: the f16 entry traps, the bf16 entry computes through a
    // stack frame. The compile and SASS are this crate's captures (tests/fixtures), the stress
    // run the harness capture of the same variant.
    let a = check(
        "wmma_local_q",
        &[
            compile("wmma_local_q", "report/wmma_local_q_ptxas.log"),
            sass("wmma_local_q", "report/wmma_local_q_sass.log"),
            sanitizer(
                StageKind::Memcheck,
                "wmma_local_q",
                "compute-sanitizer/memcheck_harness_wmma_local_q.log",
            ),
            crate::support::harness(
                StageKind::Stress,
                Some("wmma_local_q"),
                "harness/stress_wmma_local_q.json",
            ),
        ],
        &["kernel/faults/wmma_local_q.cu"],
        "wmma-local-memory",
        // memcheck's trap record names the fragment load in the variant's source.
        Some(88),
    );
    let d = &a[0];
    // Warning, trap and BPT.TRAP: the sm_90 signature in full.
    assert_eq!(d.confidence, Confidence::High);
    // The warning at the toolkit's header belongs to the kernel whose SASS holds the trap it
    // planted: the bf16 entry compiles the same fragment loads to ordinary loads that accept
    // local memory (correct, slow), and no launch of it failed.
    assert_eq!(d.kernels, vec!["attention_fwd_f16".to_string()]);
    // The failing launches are this root cause's symptom, not a second one.
    assert!(
        d.explanation().markdown().contains("Seen downstream"),
        "{}",
        d.explanation()
    );
    assert_eq!(
        a.iter().filter(|d| d.level == Level::Error).count(),
        1,
        "{a:#?}"
    );
}

#[test]
fn tail_off_by_one_variant_fails_its_check_with_nan() {
    // kernel/faults/tail_off_by_one.cu at S=500 (not a multiple of BLOCK_N=64): the harness
    // capture. One failing shape and no passing one: the report names the NaN output and does
    // not claim a pattern it cannot see.
    // memcheck ran the same launch and reported 0 errors: the read past the allocation is a
    // cp.async it does not flag, so the check is the evidence.
    let ev = evidence(
        "tail_off_by_one",
        &[
            sanitizer(
                StageKind::Memcheck,
                "tail_off_by_one",
                "compute-sanitizer/memcheck_harness_tail_off_by_one.log",
            ),
            crate::support::harness(
                StageKind::Check,
                Some("tail_off_by_one"),
                "harness/check_tail_off_by_one.json",
            ),
        ],
        &["kernel/faults/tail_off_by_one.cu"],
    );
    let a = analyze(&ev);
    let d = &a.diagnoses[0];
    assert_eq!(d.rule, "wrong-output");
    assert_eq!(d.title, "NaN outputs");
    insta::assert_snapshot!("tail_off_by_one", markdown(&ev));
}

#[test]
fn a_race_in_inlined_helpers_names_the_launched_kernel_first() {
    // racecheck's "Race reported between" records name the device functions the accesses are
    // in (cp_async_16 writes, ldmatrix_x4 reads); the stage launched attention_fwd_f16.
    let ev = evidence(
        "missing_kv_barrier",
        &[sanitizer(
            StageKind::Racecheck,
            "missing_kv_barrier",
            "report/racecheck_missing_kv_barrier.log",
        )],
        &["kernel/attention.cu"],
    );
    let a = analyze(&ev);
    let race = a
        .diagnoses
        .iter()
        .find(|d| {
            d.rule == "shared-memory-race"
                && d.explanation().markdown().contains("attention.cu:136")
        })
        .unwrap_or_else(|| panic!("no race at line 136: {:#?}", a.diagnoses));
    assert_eq!(
        race.kernel.as_deref(),
        Some("attention_fwd_f16"),
        "{race:#?}"
    );
    assert_eq!(race.kernels, ["attention_fwd_f16"]);
    let helpers: Vec<(&str, String)> = race
        .helpers
        .iter()
        .map(|h| {
            (
                h.name.as_str(),
                h.location
                    .as_ref()
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        helpers,
        [
            ("cp_async_16", "kernel/attention.cu:120".to_string()),
            ("ldmatrix_x4", "kernel/attention.cu:136".to_string()),
            // The second read site of the same missing barrier: one root cause.
            ("ldmatrix_x4_trans", "kernel/attention.cu:142".to_string())
        ]
    );
    assert!(
        race.explanation().markdown().starts_with(
            "racecheck reports 2246080 hazards in total in `attention_fwd_f16`, in the inlined \
             helpers `cp_async_16` (`kernel/attention.cu:120`), `ldmatrix_x4` \
             (`kernel/attention.cu:136`) and `ldmatrix_x4_trans` (`kernel/attention.cu:142`), \
             between the write at `attention.cu:120` and 2 other sites"
        ),
        "{}",
        race.explanation()
    );
    let md = markdown(&ev);
    assert!(
        md.contains(
            "error · confidence high · `attention_fwd_f16`, in the inlined helpers `cp_async_16` \
             (`kernel/attention.cu:120`), `ldmatrix_x4` (`kernel/attention.cu:136`) and \
             `ldmatrix_x4_trans` (`kernel/attention.cu:142`) · config `missing_kv_barrier`"
        ),
        "{md}"
    );
}

/// A program whose other kernels ran (the profiler measured one) and one launch was refused:
/// memcheck's record at `cudaLaunchKernel` is one root cause, naming the kernels the build
/// defined that never ran, not a kernel that did.
#[test]
fn a_refused_launch_beside_kernels_that_ran_is_one_root_cause() {
    let ev = evidence(
        "refused_beside_others",
        &[
            compile("cfg", "ptxas/device_oob.log"),
            sanitizer(
                StageKind::Memcheck,
                "cfg",
                "compute-sanitizer/memcheck_invalid_config.log",
            ),
            crate::support::profile("cfg", "ncu-csv/clean_details.log"),
        ],
        &[],
    );
    let a = analyze(&ev);
    let errors: Vec<&report::Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.level == Level::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let d = errors[0];
    assert_eq!(d.rule, "launch-rejected", "{d:#?}");
    assert!(
        d.title
            .markdown()
            .starts_with("The launch of one of `read_past_end` and `write_past_end` was rejected"),
        "{}",
        d.title
    );
    assert!(
        !d.explanation().markdown().contains("profiled no launch"),
        "{}",
        d.explanation()
    );
}
