//! Precise advice for three failure classes, from real H100 captures (compute-sanitizer
//! 2025.3.1; programs in `crates/parsers/fixtures/programs/issue12/`): a race between lanes of
//! one warp needs `__syncwarp()`, a race between warps `__syncthreads()`, and a `__syncwarp(mask)`
//! whose mask leaves out calling lanes is its own diagnosis, not a divergent `__syncthreads()`.

use parsers::Format;
use report::{Diagnosis, Level, OutputFormat, StageKind, render_explanation};

use crate::support::{Step, assert_deterministic_text, evidence, explain_files, sanitizer, step};

/// The explanation's diagnoses of `rule`, checked to be errors, and its Markdown.
fn diagnoses(files: &[&str], rule: &str) -> (Vec<Diagnosis>, String) {
    let e = explain_files(files);
    assert!(!e.is_clean(), "{files:?} explained as clean");
    let first = e.diagnoses.first().expect("a diagnosis");
    assert_eq!(first.rule, rule, "{files:?}: {:#?}", e.diagnoses);
    assert!(
        e.diagnoses.iter().all(|d| d.rule != "sanitizer-error"),
        "{files:?}: a record was left unexplained: {:#?}",
        e.diagnoses
    );
    let md = render_explanation(&e, OutputFormat::Markdown);
    crate::gfm::assert_renders_on_github(&files.join(", "), &md);
    // The full-warp mask the `__syncwarp` advice names is a constant, not an address.
    assert_deterministic_text(&md.replace("0xffffffff", "FULL_WARP_MASK"));
    let found: Vec<Diagnosis> = e.diagnoses.into_iter().filter(|d| d.rule == rule).collect();
    // A read that may see the old value is an error, whichever severity racecheck gave it.
    for d in &found {
        assert_eq!(d.level, Level::Error, "{d:#?}");
    }
    (found, md)
}

fn at(d: &Diagnosis) -> (String, Option<u32>) {
    let l = d.location.as_ref().expect("a location");
    (l.file.clone(), l.line)
}

fn assert_warp_advice(d: &Diagnosis) {
    assert!(
        d.title
            .markdown()
            .starts_with("Shared-memory race within a warp: missing `__syncwarp()` between"),
        "{}",
        d.title
    );
    assert!(
        d.fix().markdown().starts_with("Add `__syncwarp()` between"),
        "{}",
        d.fix()
    );
    assert!(
        !d.fix().markdown().contains("Add `__syncthreads()`"),
        "a warp-level race is not fixed by __syncthreads(): {}",
        d.fix()
    );
    assert!(
        d.explanation().markdown().contains("one warp"),
        "{}",
        d.explanation()
    );
    assert!(
        d.explanation().markdown().contains("Volta"),
        "{}",
        d.explanation()
    );
    assert!(
        !d.fix().markdown().contains("cp.async"),
        "no cp.async here: {}",
        d.fix()
    );
    assert_eq!(
        d.figures.get("scope").and_then(|v| v.as_str()),
        Some("warp")
    );
}

/// Hazard mode (also `all`, and detect level info) on warp_race.cu: the lanes of one warp race
/// between the store at :26 and the load at :29, and the fix is `__syncwarp()` between them.
#[test]
fn a_warp_level_race_in_hazard_mode_asks_for_syncwarp() {
    for name in [
        "racecheck_warp_race_hazard.log",
        "racecheck_warp_race_all.log",
        "racecheck_warp_race_info.log",
    ] {
        let (ds, md) = diagnoses(
            &[&format!("compute-sanitizer/{name}")],
            "shared-memory-race",
        );
        assert_eq!(ds.len(), 1, "{name}: {ds:#?}");
        let d = &ds[0];
        assert_warp_advice(d);
        assert!(
            d.title.markdown().ends_with("between line 26 and line 29"),
            "{}",
            d.title
        );
        assert!(
            d.fix()
                .markdown()
                .contains("between the write at line 26 and the read at line 29"),
            "{}",
            d.fix()
        );
        assert_eq!(at(d), ("warp_race.cu".to_string(), Some(29)));
        assert_eq!(d.kernel.as_deref(), Some("warp_sum"));
        assert!(
            !md.contains("could not be read as records"),
            "{name}:\n{md}"
        );
        if name == "racecheck_warp_race_hazard.log" {
            insta::assert_snapshot!("precision_warp_race_hazard", md);
        }
    }
}

/// The default (analysis) report of the same program: both pairs racecheck names (:26/:29 and
/// :30/:29) are warp-level, so both get the `__syncwarp()` advice.
#[test]
fn a_race_in_analysis_mode_names_both_barriers_since_its_warning_says_no_scope() {
    // The analysis report's warning says neither warp nor block: racecheck gives it to this
    // program's lanes of one warp and to a block total read across the warps of a 64-thread
    // block alike (examples/program-model `block_reduce_race`, on an H100). The barrier that
    // orders both leads; `__syncwarp()` is named for the one-warp case.
    for name in [
        "racecheck_warp_race.log",
        "racecheck_warp_race_analysis.log",
    ] {
        let (ds, _) = diagnoses(
            &[&format!("compute-sanitizer/{name}")],
            "shared-memory-race",
        );
        assert_eq!(ds.len(), 2, "{name}: {ds:#?}");
        for d in &ds {
            assert!(!d.title.markdown().contains("within a warp"), "{}", d.title);
            assert!(
                d.fix().markdown().starts_with("Add `__syncthreads()`"),
                "{}",
                d.fix()
            );
            assert!(
                d.fix().markdown().contains("is `__syncwarp()` enough"),
                "{}",
                d.fix()
            );
        }
        let titles: Vec<String> = ds.iter().map(|d| d.title.markdown()).collect();
        assert!(
            titles
                .iter()
                .any(|t| t.ends_with("between line 26 and line 29")),
            "{titles:?}"
        );
        assert!(
            titles
                .iter()
                .any(|t| t.ends_with("between the read at line 29 and the write at line 30")),
            "{titles:?}"
        );
    }
}

/// block_race.cu: warp 1 stores (:20) what warp 0 loads (:23). Hazard, all and analysis mode
/// all give the `__syncthreads()` advice, with no cp.async in it (the program has none).
#[test]
fn a_block_level_race_keeps_the_syncthreads_advice() {
    for name in [
        "racecheck_block_race_hazard.log",
        "racecheck_block_race_all.log",
        "racecheck_block_race.log",
        "racecheck_block_race_analysis.log",
    ] {
        let (ds, md) = diagnoses(
            &[&format!("compute-sanitizer/{name}")],
            "shared-memory-race",
        );
        assert_eq!(ds.len(), 1, "{name}: {ds:#?}");
        let d = &ds[0];
        assert_eq!(
            d.title, "Shared-memory race: missing barrier between line 20 and line 23",
            "{name}"
        );
        assert_eq!(
            d.fix(),
            "Add `__syncthreads()` between the write at line 20 and the read at line 23.",
            "{name}"
        );
        assert!(
            !d.explanation().markdown().contains("warp"),
            "{}",
            d.explanation()
        );
        assert!(!d.figures.contains_key("scope"), "{name}");
        assert_eq!(at(d), ("block_race.cu".to_string(), Some(23)));
        if name == "racecheck_block_race_hazard.log" {
            insta::assert_snapshot!("precision_block_race_hazard", md);
        }
    }
}

/// The cp.async sentence is kept for a kernel whose SASS copies with LDGSTS: here the block
/// race's racecheck log sits in one config with a SASS listing of the attention kernel (which
/// uses cp.async). The pairing is made up; what it checks is the rule's condition.
#[test]
fn the_cp_async_sentence_needs_ldgsts_in_the_sass() {
    let race = sanitizer(
        StageKind::Racecheck,
        "sm90",
        "compute-sanitizer/racecheck_block_race.log",
    );
    let with_sass: Vec<Step> = vec![
        step(
            StageKind::Sass,
            "sm90",
            "sass/nvcc13.0_attention_d64_cuobjdump.log",
            Format::Sass,
        ),
        race.clone(),
    ];
    let fix = |steps: &[Step]| {
        let ev = evidence("cp_async", steps, &[]);
        let a = report::analyze(&ev);
        a.diagnoses
            .into_iter()
            .find(|d| d.rule == "shared-memory-race")
            .expect("a race diagnosis")
            .fix()
            .markdown()
    };
    let with = fix(&with_sass);
    assert!(with.contains("`cp.async.wait_group`"), "{with}");
    assert!(with.starts_with("Add `__syncthreads()` between"), "{with}");
    let without = fix(&[race]);
    assert!(!without.contains("cp.async"), "{without}");
}

/// synccheck's "Invalid arguments" at `__syncwarp(0x0000ffff)` called by all 32 lanes: its own
/// diagnosis at the user's line (the device frame under the toolkit header), with the mask
/// advice, not the divergent-barrier one.
#[test]
fn an_invalid_syncwarp_mask_is_diagnosed_as_a_mask_error() {
    let (ds, md) = diagnoses(
        &["compute-sanitizer/synccheck_syncwarp_mask.log"],
        "divergent-barrier",
    );
    assert_eq!(ds.len(), 1, "{ds:#?}");
    let d = &ds[0];
    assert_eq!(
        d.title.markdown(),
        "Invalid `__syncwarp(mask)`: the mask does not name exactly the lanes that call it"
    );
    assert!(!d.title.markdown().contains("Divergent"), "{}", d.title);
    assert_eq!(at(d), ("syncwarp_mask.cu".to_string(), Some(18)));
    assert_eq!(d.kernel.as_deref(), Some("half_sync"));
    assert!(
        d.explanation()
            .markdown()
            .contains("own bit set in the mask"),
        "{}",
        d.explanation()
    );
    assert!(
        d.fix()
            .markdown()
            .contains("Pass a mask naming exactly the lanes"),
        "{}",
        d.fix()
    );
    assert!(d.fix().markdown().contains("`0xffffffff`"), "{}", d.fix());
    assert!(
        d.fix().markdown().contains("`__activemask()` only where"),
        "{}",
        d.fix()
    );
    assert!(!d.fix().markdown().contains("__syncthreads"), "{}", d.fix());
    insta::assert_snapshot!("precision_syncwarp_mask", md);
}

/// The real divergent barriers keep their diagnosis.
#[test]
fn a_divergent_barrier_is_still_divergent() {
    for (files, scope) in [
        (
            &["compute-sanitizer/synccheck_syncdiv_warp.log"][..],
            "warp",
        ),
        (&["compute-sanitizer-xml/synccheck_syncdiv.xml"][..], "warp"),
    ] {
        let (ds, _) = diagnoses(files, "divergent-barrier");
        let d = &ds[0];
        assert_eq!(
            d.title.markdown(),
            format!("Divergent barrier: not every thread of the {scope} reaches it"),
            "{files:?}"
        );
        assert!(
            d.fix()
                .markdown()
                .starts_with("Make every thread of the block reach the barrier")
        );
    }
}

/// The explanation of each captured class, as a reviewer reads it: a failed allocation, the
/// sticky-error cascade after a fault, a partly initialised buffer, an access nearest another
/// allocation, a Triton kernel without its mask.
#[test]
fn host_errors_partial_initialisation_and_triton_read_as_their_class() {
    for (name, file, rule) in [
        (
            "precision_malloc_fail",
            "compute-sanitizer/memcheck_malloc_fail_huge.log",
            "host-api-error",
        ),
        (
            "precision_invalid_value",
            "compute-sanitizer/memcheck_invalid_value.log",
            "host-api-error",
        ),
        (
            "precision_sticky",
            "compute-sanitizer/memcheck_sticky.log",
            "out-of-bounds",
        ),
        (
            "precision_initcheck_partial",
            "compute-sanitizer/initcheck_partial.log",
            "uninitialized-read",
        ),
        (
            "precision_oob_after",
            "compute-sanitizer/memcheck_oob_after.log",
            "out-of-bounds",
        ),
        (
            "precision_triton_oob",
            "compute-sanitizer/memcheck_triton_oob.log",
            "out-of-bounds",
        ),
    ] {
        let (_, md) = diagnoses(&[file], rule);
        insta::assert_snapshot!(name, md);
    }
}
