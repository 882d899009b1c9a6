//! What a pipeline must keep beyond its syntax: `Pipeline::validate` runs these checks in order
//! and reports the first problem, naming its key. Each check is one rule of the file; a new
//! rule is one function and one entry of a list.

use std::collections::BTreeSet;
use std::path::Path;

use report::StageKind;

use super::matrix::{is_arch, is_define_value};
use super::stage::{is_sanitizer, kind_name, launches_kernel, needs_cubin, wraps_harness};
use super::target::is_pytest;
use super::toolchain::{
    DEFAULT_CUDA, KNOWN_TOOLS, PYTHON_MODULES, default_wheels_yaml, is_version, tool_list,
};
use super::{Pipeline, Stage, is_identifier, name_problem};

/// A problem: the key it names (`stages.memcheck.timeout`) and what is wrong there.
pub(super) type Problem = (String, String);

/// A check of the whole pipeline.
pub(super) type Check = fn(&Pipeline) -> Result<(), Problem>;

/// A check of one stage, in its pipeline.
pub(super) type StageCheck = fn(&Pipeline, &Stage) -> Result<(), Problem>;

/// The pipeline's checks, run before its stages'.
pub(super) const PIPELINE: &[Check] = &[toolchain, arches, configs, cases];

/// Each stage's checks, in order.
pub(super) const STAGE: &[StageCheck] = &[
    timeout,
    needs_tools,
    stage_configs,
    stage_cases,
    harness_cases,
    cases_run_here,
    print_limit,
    split,
    suppressions,
    harness_args,
    launches,
    elements,
    env,
    pattern,
    command,
    cubin,
    build,
];

/// The checks run after every stage's.
pub(super) const LAST: &[Check] = &[one_compile_stage];

fn at(key: String, message: String) -> Problem {
    (key, message)
}

/// The toolchain: the wheels a provisioned CUDA needs pinned, exact versions, known tools.
fn toolchain(p: &Pipeline) -> Result<(), Problem> {
    if p.toolchain.provision && !p.toolchain.wheels.contains_key("nvidia-cuda-nvcc") {
        return Err(at(
            "toolchain.wheels".into(),
            format!(
                "provisioning CUDA {} needs its wheels pinned, `nvidia-cuda-nvcc` and every \
                 wheel it needs (the runner's default set, filled in when `cuda` is {} or \
                 not given, pins {}); or `provision: false` to use what is installed",
                p.toolchain.cuda,
                DEFAULT_CUDA,
                default_wheels_yaml()
            ),
        ));
    }
    for (wheel, version) in &p.toolchain.wheels {
        if !is_version(version) {
            return Err(at(
                format!("toolchain.wheels.{wheel}"),
                format!("`{version}` is not an exact version such as 13.0.88"),
            ));
        }
    }
    if !p.toolchain.cuda.is_empty() && !is_version(&p.toolchain.cuda) {
        return Err(at(
            "toolchain.cuda".into(),
            format!(
                "`{}` is not an exact version such as 13.0.88",
                p.toolchain.cuda
            ),
        ));
    }
    for tool in p.toolchain.tools.keys() {
        if !KNOWN_TOOLS.contains(&tool.as_str()) || PYTHON_MODULES.contains(&tool.as_str()) {
            return Err(at(
                format!("toolchain.tools.{tool}"),
                format!("unknown tool; expected one of {}", tool_list()),
            ));
        }
    }
    Ok(())
}

/// `matrix.arch`: at least one, each an arch, each once.
fn arches(p: &Pipeline) -> Result<(), Problem> {
    if p.matrix.arch.is_empty() {
        return Err(at("matrix.arch".into(), "list at least one arch".into()));
    }
    let mut seen = BTreeSet::new();
    for (i, arch) in p.matrix.arch.iter().enumerate() {
        if !is_arch(arch) {
            return Err(at(
                format!("matrix.arch[{i}]"),
                format!("`{arch}` is not an arch such as sm_90 or sm_90a"),
            ));
        }
        if !seen.insert(arch) {
            return Err(at(format!("matrix.arch[{i}]"), format!("`{arch}` twice")));
        }
    }
    Ok(())
}

/// `matrix.configs`: at least one, each named, its archs among the matrix's, its source a file, its defines C identifiers with plain values.
fn configs(p: &Pipeline) -> Result<(), Problem> {
    if p.matrix.configs.is_empty() {
        return Err(at(
            "matrix.configs".into(),
            "define at least one config (the built-in kernel's configs are its defines)".into(),
        ));
    }
    for (name, config) in &p.matrix.configs {
        if let Some(problem) = name_problem("config", name) {
            return Err(at(format!("matrix.configs.{name}"), problem));
        }
        if let Some(archs) = &config.arch {
            if archs.is_empty() {
                return Err(at(
                    format!("matrix.configs.{name}.arch"),
                    "list at least one arch of matrix.arch".into(),
                ));
            }
            for (i, arch) in archs.iter().enumerate() {
                if !p.matrix.arch.contains(arch) || archs[..i].contains(arch) {
                    return Err(at(
                        format!("matrix.configs.{name}.arch[{i}]"),
                        format!(
                            "`{arch}`: expected one of matrix.arch ({}), each once",
                            p.matrix.arch.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(source) = &config.source
            && !p.resolve(source).is_file()
        {
            return Err(at(
                format!("matrix.configs.{name}.source"),
                format!("`{}` does not exist", source.display()),
            ));
        }
        for (define, value) in &config.defines {
            if !is_identifier(define) {
                return Err(at(
                    format!("matrix.configs.{name}.{define}"),
                    "not a C identifier".into(),
                ));
            }
            if !is_define_value(&value.0) {
                return Err(at(
                    format!("matrix.configs.{name}.{define}"),
                    format!("`{}` is not an integer or a plain word", value.0),
                ));
            }
        }
    }
    Ok(())
}

/// `cases`: each named, with dtypes and causal flags, a shape within limits, an entry point for each dtype.
fn cases(p: &Pipeline) -> Result<(), Problem> {
    for (name, case) in &p.cases {
        if let Some(problem) = name_problem("case", name) {
            return Err(at(format!("cases.{name}"), problem));
        }
        if case.dtypes.is_empty() || case.causal.is_empty() {
            return Err(at(
                format!("cases.{name}"),
                "`dtypes` and `causal` must not be empty".into(),
            ));
        }
        if let Some(problem) = case.shape.too_large() {
            return Err(at(format!("cases.{name}.shape"), problem));
        }
        for dtype in &case.dtypes {
            if let Some(kernel) = &p.kernel
                && !kernel.entry_points.contains_key(dtype)
            {
                return Err(at(
                    format!("cases.{name}.dtypes"),
                    format!("no entry point for {dtype} in kernel.entry_points"),
                ));
            }
        }
    }
    Ok(())
}

/// A timeout longer than zero.
fn timeout(_: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    if stage.timeout.is_zero() {
        return Err(at(key("timeout"), "must be longer than zero".into()));
    }
    Ok(())
}

/// Only tools the runner knows.
fn needs_tools(_: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    for tool in &stage.needs.tools {
        if !KNOWN_TOOLS.contains(&tool.as_str()) {
            return Err(at(
                key("needs.tools"),
                format!("unknown tool `{tool}`; expected one of {}", tool_list()),
            ));
        }
    }
    Ok(())
}

/// Only configs the matrix defines.
fn stage_configs(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    for (i, config) in stage.configs.iter().enumerate() {
        if !p.matrix.configs.contains_key(config) {
            return Err(at(
                format!("stages.{}.configs[{i}]", stage.name),
                format!("no config `{config}` in matrix.configs"),
            ));
        }
    }
    Ok(())
}

/// Only cases `cases:` defines.
fn stage_cases(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    for (i, case) in stage.cases.iter().enumerate() {
        if !p.cases.contains_key(case) {
            let known: Vec<&str> = p.cases.keys().map(String::as_str).collect();
            return Err(at(
                format!("stages.{}.cases[{i}]", stage.name),
                format!(
                    "no case `{case}` in cases (defined: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// A stage that launches the built-in kernel names its cases, and each runs on one of its configs.
fn harness_cases(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let launches = launches_kernel(stage.kind) || stage.kind == StageKind::Baseline;
    let builtin = p.kernel.is_some();
    if builtin && launches && stage.enabled && stage.cases.is_empty() {
        return Err(at(
            key("cases"),
            "this stage launches the kernel: name the cases it runs".into(),
        ));
    }
    if builtin && launches && stage.enabled {
        let configs: Vec<&String> = p
            .matrix
            .configs
            .keys()
            .filter(|c| stage.configs.is_empty() || stage.configs.contains(c))
            .collect();
        for (i, case) in stage.cases.iter().enumerate() {
            let runs = configs.iter().any(|c| {
                p.case_instances(stage, Some(c))
                    .iter()
                    .any(|instance| instance.case == *case)
            });
            if !runs && stage.kind != StageKind::Baseline {
                let dims: BTreeSet<u32> = configs.iter().filter_map(|c| p.head_dim(c)).collect();
                return Err(at(
                    format!("stages.{}.cases[{i}]", stage.name),
                    format!(
                        "case `{case}` runs on no config: its head dimension is not the \
                         HEAD_DIM of any config of this stage ({})",
                        dims.iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Cases only where the stage runs the program.
fn cases_run_here(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    let launches = launches_kernel(stage.kind) || stage.kind == StageKind::Baseline;
    // A target's program takes cases in the stages that run it: each case one unit,
    // its values as placeholders and `EXHIBIT_*` variables.
    let runs_program = !matches!(
        stage.kind,
        StageKind::Compile | StageKind::Sass | StageKind::Report | StageKind::Baseline
    );
    if !stage.cases.is_empty() && !(if builtin { launches } else { runs_program }) {
        return Err(at(
            key("cases"),
            format!("a {} stage runs no cases", kind_name(stage.kind)),
        ));
    }
    Ok(())
}

/// A print limit only on a compute-sanitizer stage.
fn print_limit(_: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    if stage.print_limit.is_some() && !is_sanitizer(stage.kind) {
        return Err(at(
            key("print_limit"),
            "only compute-sanitizer stages take a print limit".into(),
        ));
    }
    Ok(())
}

/// `split: tests` only on a compute-sanitizer stage, of a program whose tests can be listed.
fn split(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    if stage.split.is_some() {
        if !is_sanitizer(stage.kind) {
            return Err(at(
                key("split"),
                "only compute-sanitizer stages split their run by test".into(),
            ));
        }
        let command = p.target.as_ref().map(|t| t.command_of(stage));
        // A Python program that is not pytest has no tests to list.
        let python = |argv: &[String]| {
            argv.first()
                .and_then(|w| Path::new(w).file_name())
                .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        };
        if builtin || !command.is_some_and(|c| is_pytest(c) || !python(c)) {
            return Err(at(
                key("split"),
                "`split: tests` needs a pytest program (`pytest ...` or `python3 -m \
                 pytest ...`, listed with `--collect-only`) or a GoogleTest binary \
                 (listed with `--gtest_list_tests`)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// A suppressions file only on a compute-sanitizer stage, and one that exists.
fn suppressions(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    if let Some(file) = &stage.suppressions {
        if !is_sanitizer(stage.kind) {
            return Err(at(
                key("suppressions"),
                "only compute-sanitizer stages take a suppressions file".into(),
            ));
        }
        if !p.resolve(file).is_file() {
            return Err(at(
                key("suppressions"),
                format!("`{}` is not a file", file.display()),
            ));
        }
    }
    Ok(())
}

/// Harness arguments only where a stage wraps the built-in kernel's harness.
fn harness_args(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    if !stage.harness_args.is_empty() && (!wraps_harness(stage.kind) || !builtin) {
        return Err(at(
            key("harness_args"),
            "only sanitizer and profile stages of the built-in kernel wrap the harness".into(),
        ));
    }
    Ok(())
}

/// `launches` only on a target's stress stage, and at least 1.
fn launches(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    if stage.launches.is_some() && (builtin || stage.kind != StageKind::Stress) {
        return Err(at(
            key("launches"),
            "only a target's stress stage takes `launches` (the built-in harness takes \
             `args: [--launches, N]`)"
                .into(),
        ));
    }
    if stage.launches == Some(0) {
        return Err(at(key("launches"), "must be at least 1".into()));
    }
    Ok(())
}

/// `elements` only on a profile stage, and at least 1.
fn elements(_: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = format!("stages.{}.elements", stage.name);
    match stage.elements {
        Some(_) if stage.kind != StageKind::Profile => Err(at(
            key,
            "only a profile stage takes `elements` (the problem's size, for figures per \
             element)"
                .into(),
        )),
        Some(0) => Err(at(key, "must be at least 1".into())),
        _ => Ok(()),
    }
}

/// `env` only on a target's stages.
fn env(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    if !stage.env.is_empty() && builtin {
        return Err(at(
            key("env"),
            "only the stages of a target take `env`".into(),
        ));
    }
    Ok(())
}

/// A timing pattern only where a stage reads timings from text it can see.
fn pattern(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    if let Some(pattern) = &stage.pattern {
        p.validate_pattern(stage, pattern)
            .map_err(|m| at(key("pattern"), m))?;
    }
    Ok(())
}

/// A command only where the stage runs one: a baseline (which needs it) or a target's program.
fn command(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let key = |field: &str| format!("stages.{}.{field}", stage.name);
    let builtin = p.kernel.is_some();
    match stage.kind {
        StageKind::Baseline if stage.command.is_empty() => {
            return Err(at(
                key("command"),
                "a baseline stage needs its command, e.g. [python3, kernel/baselines/sdpa.py]"
                    .into(),
            ));
        }
        StageKind::Baseline => {}
        kind if !builtin && launches_kernel(kind) => {}
        _ if !stage.command.is_empty() => {
            return Err(at(
                key("command"),
                if builtin {
                    "only baseline stages take a command"
                } else {
                    "only the stages that run the program take a command"
                }
                .into(),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// A stage of the built-in kernel that needs the cubin has a compile stage to take it from.
fn cubin(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let builtin = p.kernel.is_some();
    let has_compile = p.stages.iter().any(|s| s.kind == StageKind::Compile);
    if builtin && needs_cubin(stage.kind) && stage.enabled && !has_compile {
        return Err(at(
            format!("stages.{}", stage.name),
            "needs the cubin of a compile stage, and there is none".into(),
        ));
    }
    Ok(())
}

/// A target's build stage has `target.build` to run.
fn build(p: &Pipeline, stage: &Stage) -> Result<(), Problem> {
    let builtin = p.kernel.is_some();
    if !builtin
        && stage.kind == StageKind::Compile
        && p.target.as_ref().is_some_and(|t| t.build.is_none())
    {
        return Err(at(
            format!("stages.{}", stage.name),
            "a build stage needs `target.build`".into(),
        ));
    }
    Ok(())
}

/// One compile stage at most.
fn one_compile_stage(p: &Pipeline) -> Result<(), Problem> {
    if p.stages
        .iter()
        .filter(|s| s.kind == StageKind::Compile)
        .count()
        > 1
    {
        return Err(at("stages".into(), "more than one compile stage".into()));
    }
    Ok(())
}
