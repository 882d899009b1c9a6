//! `kernel:`: the built-in attention kernel, written as the target it is.
//!
//! A pipeline that names `kernel:` runs the same path as one that names `target:`. Once the file
//! is validated, [`as_target`] writes the kernel's target: its build is nvcc per config and arch
//! (`-cubin -O3 -lineinfo -Xptxas -v`, the config's defines and the compile stage's args) into
//! one cubin in the build directory; its program is the built-in harness, the case as its
//! arguments (`{shape}`, `{dtype}`, `{causal}`) and the entry point of each dtype named; each
//! stage that launches it says the harness's mode in its command; the baseline command gets
//! every case of its stage as `--problem B,H,S,D:dtype[:causal]`.

use super::*;

/// The cubin a build of the built-in kernel writes into its build directory.
pub const CUBIN: &str = "kernel.cubin";

/// The pipeline's `kernel:` as a target, and its stages' commands for it. A pipeline with no
/// `kernel:` is left as it is.
pub(super) fn as_target(pipeline: &mut Pipeline) {
    let Some(kernel) = pipeline.kernel.clone() else {
        return;
    };
    let cubin = format!("{{build_dir}}/{CUBIN}");
    let mut build: Vec<String> = [
        "nvcc",
        "-cubin",
        "-O3",
        "-lineinfo",
        "-arch={arch}",
        "-Xptxas",
        "-v",
        "{defines}",
    ]
    .map(String::from)
    .to_vec();
    if let Some(compile) = pipeline
        .stages
        .iter_mut()
        .find(|s| s.kind == StageKind::Compile)
    {
        build.append(&mut compile.args);
    }
    build.extend(["-o".to_string(), cubin.clone(), "{source}".to_string()]);
    let mut program = vec!["harness".to_string(), "--cubin".to_string(), cubin];
    for (dtype, entry) in &kernel.entry_points {
        program.extend(["--entry-point".to_string(), format!("{dtype}={entry}")]);
    }
    program.extend(
        [
            "--shape", "{shape}", "--dtype", "{dtype}", "--causal", "{causal}", "--config",
            "{config}", "--out", "{out}",
        ]
        .map(String::from),
    );
    let problems: Vec<Vec<String>> = pipeline
        .stages
        .iter()
        .map(|stage| {
            pipeline
                .case_instances(stage, None)
                .iter()
                .flat_map(|case| ["--problem".to_string(), problem(case)])
                .collect()
        })
        .collect();
    for (stage, problems) in pipeline.stages.iter_mut().zip(problems) {
        let mode = match stage.kind {
            StageKind::Baseline => {
                stage.command.extend(problems);
                stage.command.push("--json".into());
                continue;
            }
            kind if wraps_harness(kind) => "once",
            kind if launches_kernel(kind) => kind_name(kind),
            _ => continue,
        };
        let mut command = program.clone();
        command.extend(["--mode".to_string(), mode.to_string()]);
        // The harness's own arguments under a wrapper; the stage's `args` are the wrapper's.
        command.append(&mut stage.harness_args);
        stage.command = command;
    }
    let mut sources: Vec<PathBuf> = pipeline.sources().iter().map(|p| p.to_path_buf()).collect();
    // Every C, C++ and CUDA file beside a translation unit, listed or not: a changed header
    // never serves stale evidence.
    let dirs: BTreeSet<PathBuf> = sources
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    for dir in dirs {
        sources.extend(crate::pipeline::files::headers_near(&pipeline.root, &dir));
    }
    let mut seen = BTreeSet::new();
    sources.retain(|s| seen.insert(s.clone()));
    for config in pipeline.matrix.configs.values_mut() {
        config.source.get_or_insert_with(|| kernel.source.clone());
    }
    pipeline.target = Some(Target {
        sources,
        imports: Imports::default(),
        build: Some(TargetBuild {
            command: build,
            env: BTreeMap::new(),
            products: Vec::new(),
        }),
        program: Program {
            command: program,
            cwd: None,
            env: BTreeMap::new(),
            python: Some(false),
            exit_codes: ExitCodes::harness(),
            reads_only_build: true,
        },
    });
}

/// A case as the baseline command takes it: `B,H,S,D:dtype`, with `:causal` when masked.
pub fn problem(case: &CaseInstance) -> String {
    format!(
        "{}:{}{}",
        case.shape,
        case.dtype,
        if case.causal { ":causal" } else { "" }
    )
}
