//! Nsight Compute CSV, details and raw pages.

use parsers::{
    Excessive, ExcessiveUnit, FindingKind, Format, OccupancyLimiter, ParsedLog, ProfilerRule,
    Severity, SpeedupType,
};

use crate::parse_fixture;

fn metric(log: &ParsedLog, name: &str) -> (String, Option<String>, f64) {
    let m = log
        .metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name}"));
    (m.kernel.clone(), m.unit.clone(), m.value)
}

#[test]
fn details_page_with_commas_in_names_and_numbers() {
    let log = parse_fixture("ncu-csv/templ_details.log");
    assert!(log.complete);
    let (kernel, unit, value) = metric(&log, "DRAM Frequency");
    assert_eq!(kernel, "void scale_tail<float, 4>(T1 *, int, T1)");
    assert_eq!(unit.as_deref(), Some("hz"));
    assert_eq!(value, 3_168_831_168.83);
    assert_eq!(metric(&log, "Elapsed Cycles").2, 4830.0);
    let m = log.metrics.iter().find(|m| m.name == "Duration").unwrap();
    assert_eq!(
        (m.section.as_deref(), m.launch),
        (Some("GPU Speed Of Light Throughput"), Some(0))
    );
    // The program's own lines between ncu's are counted, not mistaken for rows.
    assert_eq!(log.unparsed_lines, 2);
    assert!(log.unparsed_examples[0].starts_with("templ: "));
    let rule = log
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::ProfilerRule)
        .unwrap();
    let typed = rule.profiler_rule.as_deref().expect("a typed rule");
    assert_eq!(typed.name, "SOLBottleneck");
    assert_eq!(typed.rule_type, "OPT");
    assert_eq!(typed.section.as_deref(), Some("SpeedOfLight"));
    assert_eq!(rule.severity, Severity::Info);
}

#[test]
fn raw_page_takes_units_from_the_second_row() {
    let log = parse_fixture("ncu-csv/cpasync_trap_raw.log");
    let (kernel, unit, value) = metric(&log, "gpu__time_duration.sum");
    assert_eq!(
        kernel,
        "void tiled_axpy<float, 256>(const T1 *, T1 *, int, T1)"
    );
    assert_eq!((unit.as_deref(), value), (Some("ns"), 5504.0));
    assert_eq!(metric(&log, "launch__grid_size").2, 4096.0);
    assert!(
        log.metrics
            .iter()
            .all(|m| m.name != "Kernel Name" && m.name != "ID")
    );
}

#[test]
fn a_failed_profiling_run_is_incomplete_with_the_error_as_a_finding() {
    let log = parse_fixture("ncu-csv/cpasync_trap_details.log");
    assert!(!log.complete);
    let errors: Vec<_> = log
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::ToolError)
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        errors,
        [
            "LaunchFailed",
            "The application returned an error code (9)."
        ]
    );
    // The kernel profiled before the failure still has its metrics.
    assert!(!log.metrics.is_empty());
}

/// ncu on a launch that failed prints `==ERROR== LaunchFailed` and still writes its rows, every
/// metric `nan`: none of them is a measurement, and no rule result computed from them is kept.
#[test]
fn a_failed_launch_yields_no_metrics_and_no_rule_results() {
    let log = parsers::parse(
        parsers::Format::NcuCsv,
        &crate::fixture("ncu-csv/launch_failed_python.log"),
    );
    assert!(log.metrics.is_empty(), "{:?}", log.metrics);
    assert!(
        !log.findings
            .iter()
            .any(|f| f.kind == parsers::FindingKind::ProfilerRule),
        "{:#?}",
        log.findings
    );
    let failed = log
        .findings
        .iter()
        .find(|f| f.message == "LaunchFailed")
        .expect("the failed launch is reported");
    assert_eq!(failed.kind, parsers::FindingKind::ToolError);
    assert_eq!(failed.facts.nan_metrics, Some(13));
}

/// The source page of a slow kernel (bank conflicts, captured on an H100): counters per source
/// line with the line holding the excessive shared wavefronts, and the function's instruction
/// mix; every prefix of the file (a log cut off anywhere) and a copy with bytes flipped parse
/// without panicking, and a cut-off file never reports more than the whole one.
#[test]
fn the_source_page_reads_per_line_counters_and_survives_damage() {
    let text = crate::fixture("ncu-source/slow_bank_source.log");
    let whole = parsers::parse(Format::NcuSource, &text);
    assert!(whole.complete);
    let hot = whole
        .source_lines
        .iter()
        .max_by_key(|l| l.shared_excessive)
        .expect("source lines");
    assert_eq!(hot.line, 45);
    assert!(hot.shared_excessive > 16_000_000, "{hot:?}");
    assert_eq!(whole.instruction_mix.len(), 1);
    let excessive: u64 = whole.source_lines.iter().map(|l| l.shared_excessive).sum();
    for cut in (0..text.len()).step_by(997) {
        let Some(prefix) = text.get(..cut) else {
            continue;
        };
        let part = parsers::parse(Format::NcuSource, prefix);
        let seen: u64 = part.source_lines.iter().map(|l| l.shared_excessive).sum();
        assert!(seen <= excessive, "cut at {cut}");
    }
    let mut damaged = text.clone().into_bytes();
    for i in (0..damaged.len()).step_by(89) {
        damaged[i] = damaged[i].wrapping_add(7);
    }
    let _ = parsers::parse(Format::NcuSource, &String::from_utf8_lossy(&damaged));
}

/// A source page's instruction mix is evidence of its own (the slow-kernel rule reads it): a
/// page that kept only the mix does not hold nothing.
#[test]
fn a_source_page_with_only_an_instruction_mix_holds_something() {
    let mut log = parsers::parse(
        Format::NcuSource,
        &crate::fixture("ncu-source/slow_no_tensor_source.log"),
    );
    log.source_lines.clear();
    assert_eq!(log.instruction_mix.len(), 1);
    assert!(!log.holds_nothing());
    log.instruction_mix.clear();
    assert!(log.holds_nothing());
}

/// ncu writes a source line's text unescaped: an inline `asm` statement with double quotes and
/// commas (the built-in kernel's `cp.async`, captured on an H100) still reads as one line with
/// its own counters, not cells shifted into the wrong columns.
#[test]
fn a_source_line_with_unescaped_quotes_keeps_its_counters_in_their_columns() {
    let text = crate::fixture("ncu-source/builtin_asm_quotes_source.log");
    let log = parsers::parse(Format::NcuSource, &text);
    let line = log
        .source_lines
        .iter()
        .find(|l| l.line == 17)
        .unwrap_or_else(|| panic!("line 17: {log:#?}"));
    assert!(
        line.text
            .starts_with("asm volatile(\"cp.async.cg.shared.global"),
        "{line:?}"
    );
    assert!(line.text.ends_with("\"r\"(src_size)"), "{line:?}");
    assert_eq!(line.stall_samples, 13673);
    assert_eq!(line.instructions, 22093824);
    assert_eq!(line.shared_excessive, 0);
    assert_eq!(line.shared_wavefronts, 34340864);
    assert_eq!(line.global_excessive, 0);
    assert_eq!(line.global_sectors, 136127520);
    assert_eq!(line.top_stall.as_deref(), Some("stall_long_sb"), "{line:?}");
}

/// The typed payload of the finding for ncu's rule `name` (the first, where kernels repeat it).
fn rule<'l>(log: &'l ParsedLog, name: &str) -> &'l ProfilerRule {
    log.findings
        .iter()
        .filter(|f| f.kind == FindingKind::ProfilerRule)
        .filter_map(|f| f.profiler_rule.as_deref())
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no rule {name}"))
}

#[test]
fn every_rule_result_carries_its_typed_payload() {
    for fixture in [
        "ncu-csv/clean_details.log",
        "ncu-csv/slow_bank_details.log",
        "ncu-csv/slow_local_details.log",
        "ncu-csv/templ_details.log",
    ] {
        let log = parse_fixture(fixture);
        for f in log
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::ProfilerRule)
        {
            let r = f.profiler_rule.as_deref().expect("a typed rule");
            assert!(!r.name.is_empty() && !r.rule_type.is_empty(), "{fixture}");
            assert!(
                f.message
                    .starts_with(&format!("{}: {}", r.name, r.headline)),
                "{fixture}"
            );
        }
    }
    // The payload is the serialised form (`exhibit parse --json`), and reads back the same.
    let log = parse_fixture("ncu-csv/slow_bank_details.log");
    let json = serde_json::to_string(&log).unwrap();
    assert!(json.contains("\"headline\"") && json.contains("\"bank_conflict_ways\""));
    let back: ParsedLog = serde_json::from_str(&json).unwrap();
    assert_eq!(back, log);
}

#[test]
fn bank_conflict_rules_state_the_ways_and_excessive_wavefronts() {
    let log = parse_fixture("ncu-csv/slow_bank_details.log");
    let conflicts = rule(&log, "SharedMemoryConflicts");
    assert_eq!(conflicts.rule_type, "OPT");
    assert_eq!(conflicts.estimated_speedup, Some(86.3));
    assert_eq!(conflicts.speedup_type, Some(SpeedupType::Global));
    assert_eq!(conflicts.bank_conflict_ways, Some(32.2));
    let shared = rule(&log, "UncoalescedSharedAccess");
    assert_eq!(shared.estimated_speedup, Some(91.46));
    assert_eq!(
        shared.excessive,
        Some(Excessive {
            count: 16_252_928,
            unit: ExcessiveUnit::Wavefronts,
            percent: 94
        })
    );
    assert_eq!(shared.bank_conflict_ways, None);
    let info = rule(&log, "SOLBottleneck");
    assert_eq!((info.rule_type.as_str(), info.speedup_type), ("INF", None));
    assert_eq!(info.estimated_speedup, None);
}

#[test]
fn uncoalesced_rules_state_bytes_per_sector_and_excessive_sectors() {
    let log = parse_fixture("ncu-csv/slow_uncoalesced_details.log");
    let global = rule(&log, "UncoalescedGlobalAccess");
    assert_eq!(
        global.excessive,
        Some(Excessive {
            count: 14_680_064,
            unit: ExcessiveUnit::Sectors,
            percent: 78
        })
    );
    let pattern = rule(&log, "MemoryCacheAccessPattern");
    assert_eq!(pattern.sector_bytes_used, Some(4.0));
    assert_eq!(pattern.estimated_speedup, Some(45.97));
    assert_eq!(
        pattern.headline,
        "The memory access pattern for global stores to L1TEX might not be optimal"
    );
}

#[test]
fn few_blocks_rules_state_the_grid() {
    let log = parse_fixture("ncu-csv/slow_few_blocks_details.log");
    let launch = rule(&log, "LaunchConfiguration");
    assert_eq!(launch.grid_blocks, Some(4));
    assert!(launch.fewer_blocks_than_sms && !launch.grid_too_small);
    let sol = rule(&log, "SOLBottleneck");
    assert!(sol.grid_too_small && !sol.fewer_blocks_than_sms);
    assert_eq!(sol.grid_blocks, None);
    // A single block is "1 block": not read as a grid of blocks.
    let log = parse_fixture("ncu-csv/templ_details.log");
    let single = log
        .findings
        .iter()
        .filter_map(|f| f.profiler_rule.as_deref())
        .find(|r| r.name == "LaunchConfiguration" && r.estimated_speedup == Some(99.24));
    if let Some(single) = single {
        assert_eq!(single.grid_blocks, None);
        assert!(!single.fewer_blocks_than_sms);
    }
}

#[test]
fn a_stall_on_local_and_global_memory_is_an_lg_throttle() {
    let log = parse_fixture("ncu-csv/slow_local_details.log");
    let stalls: Vec<&ProfilerRule> = log
        .findings
        .iter()
        .filter_map(|f| f.profiler_rule.as_deref())
        .filter(|r| r.name == "CPIStall")
        .collect();
    assert!(stalls.iter().any(|r| r.lg_throttle), "{stalls:?}");
    assert!(
        stalls
            .iter()
            .filter(|r| r.rule_type == "INF")
            .all(|r| !r.lg_throttle)
    );
    let occupancy = rule(&log, "TheoreticalOccupancy");
    assert_eq!(occupancy.theoretical_warps_per_scheduler, Some(12.0));
    assert_eq!(occupancy.occupancy_limiters, [OccupancyLimiter::Registers]);
}

#[test]
fn occupancy_rules_state_warps_per_scheduler_and_their_limiters() {
    let cases: [(&str, f64, &[OccupancyLimiter], Option<SpeedupType>); 4] = [
        (
            "ncu-csv/slow_smem_occ_details.log",
            4.0,
            &[OccupancyLimiter::SharedMemory],
            Some(SpeedupType::Global),
        ),
        (
            "ncu-csv/slow_small_blocks_details.log",
            8.0,
            &[
                OccupancyLimiter::BlocksPerSm,
                OccupancyLimiter::SharedMemory,
            ],
            Some(SpeedupType::Global),
        ),
        (
            "ncu-csv/slow_regs_details.log",
            2.0,
            &[OccupancyLimiter::Registers],
            Some(SpeedupType::Global),
        ),
        (
            "ncu-csv/slow_regs_compute_bound_details.log",
            2.0,
            &[OccupancyLimiter::Registers],
            Some(SpeedupType::Local),
        ),
    ];
    for (fixture, warps, limiters, speedup_type) in cases {
        let log = parse_fixture(fixture);
        let r = rule(&log, "TheoreticalOccupancy");
        assert_eq!(r.theoretical_warps_per_scheduler, Some(warps), "{fixture}");
        assert_eq!(r.occupancy_limiters, limiters, "{fixture}");
        assert_eq!(r.speedup_type, speedup_type, "{fixture}");
    }
    assert_eq!(
        OccupancyLimiter::SharedMemory.block_limit_metric(),
        "Block Limit Shared Mem"
    );
}

/// A kernel whose cooperative-groups calls are inlined (cuda-samples `reduce5`, captured on an
/// H100): the page lists the barrier's instruction under the kernel's file and again under
/// three headers of the inlining chain. The instruction mix and the stall samples count each
/// instruction once: 12,648,448 warp instructions executed, 1,048,576 of them the barrier (five
/// listings would make it 5,242,880), and 3,920 samples, 614 of them at the barrier. Its
/// two `LDG.E` loads of 4 bytes, each executed by all 8,388,608 threads, ask 64 MiB of global
/// memory: 8 bytes a thread.
#[test]
fn an_instruction_listed_under_every_file_of_its_inlining_counts_once() {
    let log = parsers::parse(
        Format::NcuSource,
        &crate::fixture("ncu-source/cuda_samples_reduce5_source.log"),
    );
    let mix = log.instruction_mix.first().expect("one function");
    assert_eq!(log.instruction_mix.len(), 1);
    assert_eq!(mix.executed, 12_648_448);
    assert_eq!(mix.stalls.values().sum::<u64>(), 3_920);
    assert_eq!(mix.stalls.get("stall_barrier"), Some(&614));
    assert_eq!(mix.stalls.get("stall_long_sb"), Some(&2_010));
    assert_eq!(mix.global_load_bytes, 2 * 8_388_608 * 4);
    // The line with the global load keeps its own breakdown.
    let load = log
        .source_lines
        .iter()
        .find(|l| l.text.contains("g_idata[i + blockSize]"))
        .expect("the second load's line");
    assert_eq!(load.top_stall.as_deref(), Some("stall_long_sb"));
    assert_eq!(load.stalls.get("stall_long_sb"), Some(&2_010));
}

/// PyTorch's float32 attention kernel (CUTLASS, no line information) on an H100 runs its
/// products as `HMMA.1688.F32.TF32`: m16n8k8, 2,048 FLOP per warp instruction, all of them on
/// TF32 inputs, whose peak is half the FP16 one.
#[test]
fn tensor_core_products_on_tf32_inputs_are_counted_apart() {
    let log = parsers::parse(
        Format::NcuSource,
        &crate::fixture("ncu-source/sdpa_cutlass_tf32_sass_only_source.log"),
    );
    let mix = log.instruction_mix.first().expect("the kernel's mix");
    assert!(
        mix.function.starts_with("fmha_cutlassF_f32"),
        "{}",
        mix.function
    );
    assert_eq!(mix.mma, 75_497_472);
    assert_eq!(mix.tensor_flops, 75_497_472 * 2_048);
    assert_eq!(mix.tensor_tf32_flops, mix.tensor_flops);
}
