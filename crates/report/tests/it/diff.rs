//! `exhibit diff`: two runs compared by fingerprint, resources and timings.

use report::{DiffOptions, Level, OutputFormat, diff, render_diff};

use crate::support::{compile, evidence, redact, sass};

#[test]
fn new_spills_are_a_regression_and_their_removal_a_fix() {
    let src = "crates/parsers/fixtures/programs/spill.cu";
    let before = evidence(
        "before",
        &[compile("cfg", "ptxas/nvcc13.0_spill_default.log")],
        &[src],
    );
    let after = evidence(
        "after",
        &[
            compile("cfg", "ptxas/nvcc13.0_spill_maxrreg32.log"),
            sass("cfg", "sass/nvcc13.0_spill_cuobjdump.log"),
        ],
        &[src],
    );
    let d = diff(&before, &after, &DiffOptions::default());
    assert!(d.has_regression(), "{d:#?}");
    assert!(
        d.new
            .iter()
            .any(|n| n.rule == "register-spills" && n.level == Level::Warning)
    );
    assert!(
        d.resources.iter().any(|r| r.field == "registers"),
        "{:#?}",
        d.resources
    );
    insta::assert_snapshot!(
        "diff_spills",
        redact(&render_diff(&d, OutputFormat::Markdown))
    );

    let back = diff(&after, &before, &DiffOptions::default());
    assert!(!back.has_regression(), "{back:#?}");
    // The spills were found by the compile and the SASS stages; `before` re-ran only the
    // compile, so they are not known to be fixed.
    assert!(back.fixed.is_empty(), "{back:#?}");
    let spills = back
        .not_retested
        .iter()
        .find(|n| n.item.rule == "register-spills")
        .expect("the spills are not re-tested");
    assert_eq!(spills.why, ["sass on cfg, sm_90: not run in B"]);
    assert_eq!(back.verdict, report::DiffVerdict::Incomplete);

    // With the SASS stage re-run too, the register spills are fixed.
    let again = evidence(
        "again",
        &[
            compile("cfg", "ptxas/nvcc13.0_spill_default.log"),
            sass("cfg", "sass/nvcc13.0_spill_cuobjdump.log"),
        ],
        &[src],
    );
    let fixed = diff(&after, &again, &DiffOptions::default());
    assert!(
        fixed
            .not_retested
            .iter()
            .all(|n| n.item.rule != "register-spills"),
        "{fixed:#?}"
    );
}

#[test]
fn compiler_upgrade_diff_shows_resource_changes() {
    let before = evidence(
        "nvcc13.0",
        &[
            compile(
                "d64_m128_n64_s2_w4",
                "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log",
            ),
            sass(
                "d64_m128_n64_s2_w4",
                "sass/nvcc13.0_attention_d64_cuobjdump.log",
            ),
        ],
        &["kernel/attention.cu"],
    );
    let after = evidence(
        "nvcc13.5",
        &[
            compile(
                "d64_m128_n64_s2_w4",
                "ptxas/nvcc13.5_attention_d64_m128_n64_s2_w4.log",
            ),
            sass(
                "d64_m128_n64_s2_w4",
                "sass/nvcc13.5_attention_d64_cuobjdump.log",
            ),
        ],
        &["kernel/attention.cu"],
    );
    let d = diff(&before, &after, &DiffOptions::default());
    // Neither run holds a timing: nothing to compare, nothing refused.
    assert!(d.perf.is_empty());
    insta::assert_snapshot!(
        "diff_compiler_upgrade",
        redact(&render_diff(&d, OutputFormat::Markdown))
    );
    let same = diff(&before, &before, &DiffOptions::default());
    assert!(!same.has_regression());
    assert!(same.new.is_empty() && same.fixed.is_empty() && same.resources.is_empty());
}
