//! `exhibit explain`: raw logs with no run directory, each detected and parsed as the runner
//! does, name the right root cause; a clean log is clean.

use report::{Level, OutputFormat, explain, render_explanation};

use crate::support::{assert_deterministic_text, explain_files, read};

#[test]
fn explain_names_the_root_cause_of_each_fault_log() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "ptxas/device_wmma_local.log",
                "compute-sanitizer/memcheck_wmma_local.log",
            ],
            "wmma-local-memory",
        ),
        (
            &[
                "compute-sanitizer/memcheck_wmma_local_small.log",
                "sass/device_wmma_local_cuobjdump.log",
                "ptxas/device_wmma_local.log",
            ],
            "wmma-local-memory",
        ),
        (
            &["compute-sanitizer/racecheck_race.log"],
            "shared-memory-race",
        ),
        (
            &["compute-sanitizer/racecheck_race_hazard.log"],
            "shared-memory-race",
        ),
        (
            &["compute-sanitizer/memcheck_oob_write.log"],
            "out-of-bounds",
        ),
        (
            &["compute-sanitizer/memcheck_oob_read.log"],
            "out-of-bounds",
        ),
        (&["compute-sanitizer/memcheck_templ.log"], "out-of-bounds"),
        (
            &["compute-sanitizer/initcheck_uninit.log"],
            "uninitialized-read",
        ),
        (
            &["compute-sanitizer/synccheck_syncdiv_warp.log"],
            "divergent-barrier",
        ),
        (
            &["compute-sanitizer/memcheck_misaligned_global.log"],
            "misaligned-access",
        ),
        (
            &["compute-sanitizer/memcheck_misaligned_shared.log"],
            "misaligned-access",
        ),
        (&["ptxas/nvcc13.0_compile_error.log"], "compile-error"),
        (&["ptxas/nvcc13.5_compile_error.log"], "compile-error"),
        (&["compute-sanitizer-xml/memcheck_oob.xml"], "out-of-bounds"),
        (
            &["compute-sanitizer-xml/racecheck_race.xml"],
            "shared-memory-race",
        ),
        (
            &["compute-sanitizer-xml/initcheck_uninit.xml"],
            "uninitialized-read",
        ),
        (
            &["compute-sanitizer-xml/synccheck_syncdiv.xml"],
            "divergent-barrier",
        ),
        (&["harness/check_tail_off_by_one.json"], "wrong-output"),
        (&["harness/stress_wmma_local_q.json"], "launch-failure"),
        (
            &[
                "report/wmma_local_q_ptxas.log",
                "report/wmma_local_q_sass.log",
                "harness/stress_wmma_local_q.json",
            ],
            "wmma-local-memory",
        ),
    ];
    for (files, rule) in cases {
        let e = explain_files(files);
        assert!(!e.is_clean(), "{files:?} explained as clean");
        let first = e
            .diagnoses
            .first()
            .unwrap_or_else(|| panic!("{files:?}: no diagnosis"));
        assert_eq!(&first.rule, rule, "{files:?}: {:#?}", e.diagnoses);
        assert_eq!(first.level, Level::Error, "{files:?}");
        let md = render_explanation(&e, OutputFormat::Markdown);
        assert_deterministic_text(&md);
        crate::gfm::assert_renders_on_github(&files.join(", "), &md);
    }
}

#[test]
fn explain_of_a_clean_log_is_clean() {
    for files in [
        &["compute-sanitizer/synccheck_syncdiv_block.log"][..],
        &["harness/check_attention.json"],
        &[
            "ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log",
            "sass/nvcc13.0_attention_d64_cuobjdump.log",
        ],
    ] {
        let e = explain_files(files);
        assert!(e.is_clean(), "{files:?}: {e:#?}");
    }
    let e = explain_files(&["compute-sanitizer/synccheck_syncdiv_block.log"]);
    assert!(render_explanation(&e, OutputFormat::Markdown).contains("No problems found"));
}

#[test]
fn explain_of_a_log_cut_before_its_summary_is_not_clean() {
    let text = read("compute-sanitizer/synccheck_syncdiv_block.log");
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    let e = explain(
        &[(
            "cut.log".to_string(),
            parsers::parse(parsers::Format::ComputeSanitizer, &cut),
        )],
        Vec::new(),
    );
    assert!(!e.is_clean());
    assert_eq!(e.verdict.kind, report::VerdictKind::Inconclusive);
}

#[test]
fn explain_markdown_snapshot() {
    let e = explain_files(&[
        "ptxas/device_wmma_local.log",
        "compute-sanitizer/memcheck_wmma_local.log",
    ]);
    insta::assert_snapshot!(
        "explain_wmma_local",
        render_explanation(&e, OutputFormat::Markdown)
    );
}

/// A source page's instruction mix is evidence of its own: a page that kept only the mix (its
/// source-line rows dropped) is read, never "nothing of this format in it", and the mix still
/// names the slow kernel's cause.
#[test]
fn explain_of_an_instruction_mix_alone_reads_it() {
    let mut log = parsers::parse(
        parsers::Format::NcuSource,
        &read("ncu-source/slow_no_tensor_source.log"),
    );
    log.source_lines.clear();
    assert!(!log.instruction_mix.is_empty());
    let e = explain(&[("mix.log".to_string(), log)], Vec::new());
    let row = &e.logs[0];
    assert_ne!(row.figure, "nothing of this format in it", "{e:#?}");
    assert_eq!(row.status, report::StageStatus::Findings, "{e:#?}");
    assert_eq!(e.verdict.kind, report::VerdictKind::Slow, "{e:#?}");
}
