//! ptxas resource usage, compiler diagnostics and SASS inventories.

use parsers::{FindingKind, Format, Kernel, ParsedLog};

use crate::{fixture, parse_fixture};

fn kernel<'a>(log: &'a ParsedLog, mangled: &str, arch: &str) -> &'a Kernel {
    log.kernels
        .iter()
        .find(|k| k.mangled == mangled && k.arch.as_deref() == Some(arch))
        .unwrap_or_else(|| panic!("no kernel {mangled} for {arch} in {:#?}", log.kernels))
}

#[test]
fn spills_and_the_maxrregcount_override() {
    for version in ["nvcc13.0", "nvcc13.5"] {
        let log = parse_fixture(&format!("ptxas/{version}_spill_maxrreg32.log"));
        assert!(log.complete);
        let k = kernel(&log, "_Z16many_live_valuesPKfPfi", "sm_90");
        assert_eq!(k.name, "many_live_values(float const*, float*, int)");
        assert_eq!(k.registers, Some(32));
        assert_eq!(k.barriers, Some(0));
        assert_eq!(
            (k.spill_store_bytes, k.spill_load_bytes),
            (Some(540), Some(564))
        );
        assert_eq!(
            (k.stack_frame_bytes, k.cumulative_stack_bytes),
            (Some(272), Some(272))
        );
        assert_eq!(k.max_registers_override, Some(32));
        assert_eq!(k.global_bytes, Some(0));
        let bounded = kernel(&log, "_Z19bounded_live_valuesPKfPfi", "sm_90");
        assert_eq!(
            (bounded.spill_store_bytes, bounded.max_registers_override),
            (Some(0), None)
        );
        let spills: Vec<_> = log
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::RegisterSpill)
            .collect();
        assert_eq!(spills.len(), 1);
        let spill = spills[0].facts.spill.as_deref().expect("the spill's facts");
        assert_eq!(spill.store_bytes, 540);
        assert_eq!(spill.max_registers_override, Some(32));
    }
}

#[test]
fn the_spill_warning_and_the_properties_line_are_one_finding() {
    let log = parse_fixture("ptxas/nvcc13.0_spill_warn.log");
    let spills: Vec<_> = log
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::RegisterSpill)
        .collect();
    assert_eq!(spills.len(), 1);
    assert!(spills[0].excerpt[0].contains("Registers are spilled to local memory"));
    assert!(
        log.findings
            .iter()
            .any(|f| f.kind == FindingKind::CompilerWarning
                && f.message.starts_with("Local memory used for function"))
    );
}

#[test]
fn a_missing_spill_line_means_unknown_not_zero() {
    // Malformed input: a real log with its "bytes stack frame" lines removed by hand.
    let text: String = fixture("ptxas/nvcc13.0_spill_maxrreg32.log")
        .lines()
        .filter(|l| !l.contains("bytes stack frame"))
        .map(|l| format!("{l}\n"))
        .collect();
    let log = parsers::parse(Format::Ptxas, &text);
    let k = kernel(&log, "_Z16many_live_valuesPKfPfi", "sm_90");
    assert_eq!(
        (k.spill_store_bytes, k.spill_load_bytes, k.stack_frame_bytes),
        (None, None, None)
    );
    assert_eq!(k.registers, Some(32));
    assert!(
        log.findings
            .iter()
            .all(|f| f.kind != FindingKind::RegisterSpill)
    );
}

#[test]
fn wmma_on_local_memory_in_both_capitalisations() {
    for (version, word) in [("nvcc13.0", "cannot"), ("nvcc13.5", "Cannot")] {
        let log = parse_fixture(&format!("ptxas/{version}_wmma_local.log"));
        let f = log
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::WmmaLocalMemory)
            .unwrap();
        assert!(f.message.starts_with(word), "{version}: {}", f.message);
        assert_eq!(f.line, Some(91));
        assert!(f.file.as_deref().unwrap().ends_with("crt/mma.hpp"));
        assert_eq!(
            kernel(&log, "_Z15wmma_from_localPK6__halfS1_Pf", "sm_90").registers,
            Some(4)
        );
    }
    // The same warning from the GPU machine's toolkit, other path, same fingerprint.
    let here = parse_fixture("ptxas/nvcc13.0_wmma_local.log");
    let there = parse_fixture("ptxas/device_wmma_local.log");
    assert_eq!(here.findings[0].fingerprint, there.findings[0].fingerprint);
}

#[test]
fn compile_errors_carry_file_and_line() {
    let log = parse_fixture("ptxas/nvcc13.0_compile_error.log");
    let f = &log.findings[0];
    assert_eq!(f.kind, FindingKind::CompileError);
    assert!(f.file.as_deref().unwrap().ends_with("compile_error.cu"));
    assert_eq!(f.line, Some(3));
    assert_eq!(f.message, "identifier \"undeclared_scale\" is undefined");
    assert_eq!(
        f.excerpt.len(),
        3,
        "diagnostic, source line and caret: {:?}",
        f.excerpt
    );
    assert_eq!(log.unparsed_lines, 0);

    let log = parse_fixture("ptxas/nvcc13.0_smem_overflow.log");
    let f = log
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::CompileError)
        .unwrap();
    assert_eq!(f.kernel.as_deref(), Some("too_much_shared(float*)"));
    assert_eq!(
        kernel(&log, "_Z15too_much_sharedPf", "sm_90").shared_bytes,
        Some(262_144)
    );
}

#[test]
fn templates_keep_both_names_per_architecture() {
    let log = parse_fixture("ptxas/nvcc13.0_templ_two_arch.log");
    let mangled = "_ZN7exhibit6faults10scale_tailIfLi4EEEvPT_iS2_";
    let sm80 = kernel(&log, mangled, "sm_80");
    let sm90 = kernel(&log, mangled, "sm_90");
    assert_eq!(
        sm80.name,
        "void exhibit::faults::scale_tail<float, 4>(float*, int, float)"
    );
    assert_eq!(sm80.constant_bytes, Some(368));
    assert_eq!(sm90.constant_bytes, None);
    assert_eq!(log.kernels.len(), 2, "device functions are not kernels");
}

#[test]
fn attention_kernels_have_c_names() {
    let log = parse_fixture("ptxas/nvcc13.0_attention_d64_m128_n64_s2_w4.log");
    let k = kernel(&log, "attention_fwd_f16", "sm_90");
    assert_eq!(k.name, "attention_fwd_f16");
    assert!(k.registers.unwrap() > 0);
    assert_eq!(k.spill_store_bytes, Some(0));
}

#[test]
fn sass_inventories() {
    let log = parse_fixture("sass/nvcc13.0_wmma_local_cuobjdump.log");
    let k = kernel(&log, "_Z15wmma_from_localPK6__halfS1_Pf", "sm_90");
    let s = k.sass.as_ref().unwrap();
    assert!(s.bpt_trap >= 1 && s.hmma == 0, "{s:?}");

    let log = parse_fixture("sass/nvcc13.0_clean_cuobjdump.log");
    let s = kernel(&log, "_Z11wmma_sharedPK6__halfS1_Pf", "sm_90")
        .sass
        .clone()
        .unwrap();
    assert_eq!(
        (s.hmma, s.ldsm, s.ldgsts, s.bpt_trap, s.ldl, s.stl),
        (2, 2, 2, 0, 0, 0)
    );
    assert!(s.bar >= 1);

    let log = parse_fixture("sass/nvcc13.0_spill_cuobjdump.log");
    let s = kernel(&log, "_Z16many_live_valuesPKfPfi", "sm_90")
        .sass
        .clone()
        .unwrap();
    assert!(s.ldl > 0 && s.stl > 0, "{s:?}");

    let log = parse_fixture("sass/nvcc13.0_templ_two_arch_cuobjdump.log");
    let archs: Vec<_> = log
        .kernels
        .iter()
        .map(|k| k.arch.clone().unwrap())
        .collect();
    assert_eq!(archs, ["sm_80", "sm_90"]);

    // Hopper: one TMA tile load (UTMALDG) and one wgmma (HGMMA), no mma.sync or cp.async.
    let log = parse_fixture("sass/nvcc13.0_tma_wgmma_cuobjdump.log");
    let s = kernel(&log, "tma_tile", "sm_90a").sass.clone().unwrap();
    assert_eq!((s.tma, s.hgmma, s.hmma, s.ldgsts), (1, 1, 0, 0), "{s:?}");
}

#[test]
fn cuobjdump_and_nvdisasm_count_the_same_instructions() {
    for version in ["nvcc13.0", "nvcc13.5"] {
        for program in ["clean", "attention_d64"] {
            let a = parse_fixture(&format!("sass/{version}_{program}_cuobjdump.log"));
            let b = parse_fixture(&format!("sass/{version}_{program}_nvdisasm.log"));
            let mut ka: Vec<_> = a
                .kernels
                .iter()
                .map(|k| (k.mangled.clone(), k.sass.clone()))
                .collect();
            let mut kb: Vec<_> = b
                .kernels
                .iter()
                .map(|k| (k.mangled.clone(), k.sass.clone()))
                .collect();
            ka.sort_by(|x, y| x.0.cmp(&y.0));
            kb.sort_by(|x, y| x.0.cmp(&y.0));
            assert_eq!(ka, kb, "{version} {program}");
        }
    }
    let log = parse_fixture("sass/nvcc13.0_attention_d64_cuobjdump.log");
    let s = kernel(&log, "attention_fwd_f16", "sm_90")
        .sass
        .clone()
        .unwrap();
    assert!(s.hmma > 0 && s.ldsm > 0 && s.ldgsts > 0, "{s:?}");
}

/// `cuobjdump -sass -res-usage` on a fat binary (sm_80 and sm_90, captured with nvcc 13.0):
/// each kernel's registers, stack frame and static shared memory join its SASS counts, and read
/// as ptxas's figures for the same build do: from sm_90 on the driver's 1 KiB per block is taken
/// off cuobjdump's SHARED.
#[test]
fn resource_usage_joins_the_sass_and_reads_as_ptxas_does() {
    let text = crate::fixture("sass/cuda_cpp_fatbin_res_usage.log");
    let log = parsers::parse(Format::Sass, &text);
    assert!(log.complete);
    let kernel = |name: &str, arch: &str| {
        log.kernels
            .iter()
            .find(|k| k.mangled == name && k.arch.as_deref() == Some(arch))
            .unwrap_or_else(|| panic!("{name} {arch}: {:#?}", log.kernels))
    };
    // (kernel, arch, ptxas's registers, ptxas's bytes smem)
    for (name, arch, registers, shared) in [
        ("_Z17stencil_1d_kernelPKfPfi", "sm_80", 18, 1048),
        ("_Z16transpose_kernelPKfPfii", "sm_80", 30, 4224),
        ("_Z16block_sum_kernelPKfPfi", "sm_80", 12, 1024),
        ("_Z17stencil_1d_kernelPKfPfi", "sm_90", 22, 1048),
        ("_Z16transpose_kernelPKfPfii", "sm_90", 30, 4224),
        ("_Z16block_sum_kernelPKfPfi", "sm_90", 14, 1024),
    ] {
        let k = kernel(name, arch);
        assert_eq!(k.registers, Some(registers), "{k:?}");
        assert_eq!(k.shared_bytes, Some(shared), "{k:?}");
        assert_eq!(k.stack_frame_bytes, Some(0), "{k:?}");
        assert!(k.sass.as_ref().is_some_and(|s| s.total > 0), "{k:?}");
    }
    assert_eq!(log.kernels.len(), 6, "{:#?}", log.kernels);
}

#[test]
fn an_atomic_on_local_memory_is_the_planted_trap_family_with_its_operation() {
    let log = parse_fixture("ptxas/device_local_atomic.log");
    let f = log
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::LocalMemoryOperation)
        .expect("the local-memory atomic warning");
    assert_eq!(parsers::local_memory_operation(&f.message), Some("atomic"));
    assert!(
        f.file
            .as_deref()
            .unwrap()
            .ends_with("device_atomic_functions.hpp")
    );
    assert_eq!(f.line, Some(112));
    // The WMMA warning keeps its kind, and names its operation the same way.
    let wmma = parse_fixture("ptxas/nvcc13.0_wmma_local.log");
    let w = wmma
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::WmmaLocalMemory)
        .expect("the WMMA warning");
    assert_eq!(
        parsers::local_memory_operation(&w.message),
        Some("wmma load or store")
    );
    // An ordinary warning is neither.
    assert_eq!(
        parsers::local_memory_operation("variable x was declared but never referenced"),
        None
    );
}
