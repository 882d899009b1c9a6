//! The typed form of `pipeline.yaml`.
//!
//! [`Pipeline::load`] reads the file, deserializes it with `yaml_serde` (every struct refuses
//! unknown keys, so a typo is an error with its line and column, never silently ignored) and then
//! checks what serde cannot: that stages name known cases, configs and tools, that shapes agree
//! with the configs they run on, and that the kernel sources exist. All relative paths in the
//! file are relative to the directory holding it, which is also where `artifacts/` and
//! `reports/` go.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use report::StageKind;
use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A validated pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The file as given on the command line.
    pub path: PathBuf,
    /// The directory holding the file: relative paths resolve against it.
    pub root: PathBuf,
    /// The built-in kernel: one translation unit the built-in harness launches.
    pub kernel: Option<Kernel>,
    /// The user's own project: their build and their program. A pipeline names `kernel` or
    /// `target`.
    pub target: Option<Target>,
    pub toolchain: Toolchain,
    pub matrix: Matrix,
    pub cases: BTreeMap<String, Case>,
    /// Enabled and disabled stages, in execution order.
    pub stages: Vec<Stage>,
    /// How long a stage gets between SIGTERM and SIGKILL.
    pub grace: Duration,
}

/// A configuration error, worded as a fragment that reads after "failed to ...".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not one a pipeline can be: a directory, a device, or too large.
    #[error("{path}: {message}")]
    NotAPipeline { path: PathBuf, message: String },
    /// The YAML is malformed, has an unknown key or a value of the wrong type.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The YAML is malformed and the parser gave no position.
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// The file parsed but its contents do not hold together.
    #[error("{path}{}: {key}: {message}", at.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Semantic {
        path: PathBuf,
        /// Line and column of the key, when it could be found in the text.
        at: Option<(usize, usize)>,
        key: String,
        message: String,
    },
}

/// `kernel:`: what to compile and which entry points to launch.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// The translation unit compiled once per config and arch.
    pub source: PathBuf,
    /// Further files the kernel depends on (headers): hashed as inputs, never compiled alone.
    #[serde(default)]
    pub includes: Vec<PathBuf>,
    /// Entry point per dtype.
    #[serde(deserialize_with = "unique")]
    pub entry_points: BTreeMap<Dtype, String>,
}

/// `target:`: a project of the user's own. Its build runs once per config and arch; its program
/// is what the GPU stages run, alone or inside compute-sanitizer or ncu.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Files and directories whose contents are the build's inputs: every file under them is
    /// hashed, so a changed header never serves stale evidence. Default: the pipeline's
    /// directory.
    #[serde(default)]
    pub sources: Vec<PathBuf>,
    /// How to build it; a target without a build runs its program as it is.
    #[serde(default)]
    pub build: Option<TargetBuild>,
    pub program: Program,
}

/// `target.build:`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetBuild {
    /// The build's argv, e.g. `[cmake, --build, "{build_dir}"]` or `[python3, build.py]`.
    pub command: Vec<String>,
    /// Extra environment variables for the build.
    #[serde(default, deserialize_with = "unique")]
    pub env: BTreeMap<String, String>,
    /// Directories, besides `{build_dir}`, walked for the build's products after it ran.
    #[serde(default)]
    pub products: Vec<PathBuf>,
}

/// `target.program:`: what the GPU stages run.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// The argv, e.g. `[python3, tests/oracle.py]` or `["{build_dir}/test_attn"]`.
    pub command: Vec<String>,
    /// Its working directory, relative to the pipeline file. Default: the pipeline's directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default, deserialize_with = "unique")]
    pub env: BTreeMap<String, String>,
    /// Whether it is a Python program (its allocator is then told not to cache under the
    /// sanitizers). Default: when the command starts with python, python3 or pytest.
    #[serde(default)]
    pub python: Option<bool>,
}

impl Program {
    /// Whether the program runs under Python.
    pub fn is_python(&self) -> bool {
        self.python.unwrap_or_else(|| {
            self.command.first().is_some_and(|word| {
                let name = Path::new(word)
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                name.starts_with("python") || name.starts_with("pytest")
            })
        })
    }
}

/// `toolchain:`: the CUDA version to provision when none is installed, and tool overrides.
/// Optional: without it the tools installed are used and nothing is provisioned.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The CUDA compiler version the pipeline expects, e.g. `13.0.88`; names the provisioned
    /// cache directory. Empty: no version pinned.
    #[serde(default)]
    pub cuda: String,
    /// Whether to install the pinned wheels when no CUDA compiler is found (the default when
    /// `toolchain:` is written).
    #[serde(default = "yes")]
    pub provision: bool,
    /// PyPI wheel name to exact version. Every wheel is pinned: an unpinned one pulls the newest
    /// release of its dependencies.
    #[serde(default, deserialize_with = "unique")]
    pub wheels: BTreeMap<String, String>,
    /// Tool name to an explicit path (relative to the pipeline file), bypassing discovery.
    #[serde(default, deserialize_with = "unique")]
    pub tools: BTreeMap<String, PathBuf>,
}

/// `matrix:`: the named configs and the target architectures.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Target architectures, e.g. `sm_90`. Only those matching the GPU present run GPU stages;
    /// the others are compile-only.
    #[serde(default = "default_arch")]
    pub arch: Vec<String>,
    /// Config name to its `-D` defines, and optionally its own source.
    #[serde(deserialize_with = "unique")]
    pub configs: BTreeMap<String, Config>,
}

/// One named config: written either as a map of defines (`{HEAD_DIM: 64, BLOCK_M: 128}`) or,
/// to compile another translation unit with the same ABI (a fault variant), as
/// `{source: kernel/faults/x.cu, defines: {HEAD_DIM: 64}}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Config {
    /// Compiled instead of `kernel.source`, when set.
    pub source: Option<PathBuf>,
    /// The archs of `matrix.arch` this config is built for, when not all of them (a source that
    /// needs sm_90a's wgmma, or a path kept for other archs).
    pub arch: Option<Vec<String>>,
    pub defines: BTreeMap<String, Define>,
    /// Environment variables for the target's program under this config (every stage that
    /// runs it).
    pub env: BTreeMap<String, String>,
    /// Environment variables for the target's build under this config. Configs whose builds
    /// see the same defines and `build_env` share one build.
    pub build_env: BTreeMap<String, String>,
}

/// A `-D` value: an integer or a plain word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Define(pub String);

/// A problem to run the kernel on: one shape, every listed dtype and mask.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub shape: Shape,
    #[serde(default = "default_dtypes")]
    pub dtypes: Vec<Dtype>,
    #[serde(default = "default_causal")]
    pub causal: Vec<bool>,
}

/// `B,H,S,D`: batch, heads, sequence length, head dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Shape {
    pub batch: u32,
    pub heads: u32,
    pub seq_len: u32,
    pub head_dim: u32,
}

/// Element type of Q, K, V and O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F16,
    Bf16,
}

/// One entry of `stages:`.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    /// The key in `stages:`.
    pub name: String,
    pub kind: StageKind,
    pub enabled: bool,
    pub timeout: Duration,
    pub needs: Needs,
    /// Extra arguments for the stage's tool (nvcc, cuobjdump, compute-sanitizer, ncu, the
    /// harness for check/stress/bench, the baseline command).
    pub args: Vec<String>,
    /// Extra arguments for the harness when a tool wraps it (sanitizers, profile).
    pub harness_args: Vec<String>,
    /// Case names; required by stages that launch the kernel.
    pub cases: Vec<String>,
    /// Restricts the stage to these configs; empty means all.
    pub configs: Vec<String>,
    /// compute-sanitizer's `--print-limit`.
    pub print_limit: Option<u32>,
    /// The baseline's command line (argv), before the shape arguments.
    pub command: Vec<String>,
    /// Whether an earlier run's result with the same inputs may be reused.
    pub cache: bool,
    /// A stress stage on a target's program: the most launches to try.
    pub launches: Option<u64>,
    /// compute-sanitizer's `--suppressions` file, relative to the pipeline file.
    pub suppressions: Option<PathBuf>,
    /// Extra environment variables for the stage's process.
    pub env: BTreeMap<String, String>,
}

/// What a stage needs from the machine.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Needs {
    #[serde(default)]
    pub gpu: bool,
    #[serde(default)]
    pub tools: Vec<String>,
}

/// Tool names a stage may need. `torch` means `python3 -c 'import torch'` works.
pub const KNOWN_TOOLS: &[&str] = &[
    "nvcc",
    "ptxas",
    "cuobjdump",
    "nvdisasm",
    "compute-sanitizer",
    "ncu",
    "python3",
    "torch",
    "harness",
];

impl Pipeline {
    /// Reads, parses and validates a pipeline file.
    pub fn load(path: &Path) -> Result<Pipeline, ConfigError> {
        Pipeline::parse(path, &read(path)?)
    }

    /// [`Pipeline::load`], then what `runner check` adds about this machine: every tool
    /// override names an executable file. (A run reports a missing override as its stages'
    /// failure instead, so that a pipeline shared between machines still runs what it can.)
    pub fn load_and_check_tools(path: &Path) -> Result<Pipeline, ConfigError> {
        let text = read(path)?;
        let pipeline = Pipeline::parse(path, &text)?;
        for (tool, override_path) in &pipeline.toolchain.tools {
            if let Some(problem) = not_executable(&pipeline.resolve(override_path)) {
                return Err(located(
                    pipeline.semantic(
                        format!("toolchain.tools.{tool}"),
                        format!("`{}` {problem}", override_path.display()),
                    ),
                    &text,
                ));
            }
        }
        Ok(pipeline)
    }

    /// Parses and validates pipeline text; `path` names the file in errors and anchors
    /// relative paths.
    pub fn parse(path: &Path, text: &str) -> Result<Pipeline, ConfigError> {
        check_nesting(path, text)?;
        check_expansion(path, text)?;
        let raw: RawPipeline =
            yaml_serde::from_str(text).map_err(|e| syntax_error(path, text, &e))?;
        let root = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let locate = |error: ConfigError| located(error, text);
        let raw_target = raw.target;
        let mut pipeline = Pipeline {
            path: path.to_path_buf(),
            root,
            kernel: raw.kernel,
            target: raw_target.clone(),
            toolchain: raw.toolchain,
            matrix: match raw.matrix {
                Some(matrix) => matrix,
                // A target needs no matrix: one config, built for the default arch.
                None if raw_target.is_some() => Matrix {
                    arch: default_arch(),
                    configs: BTreeMap::from([("default".to_string(), Config::default())]),
                },
                None => {
                    return Err(located(
                        ConfigError::Semantic {
                            path: path.to_path_buf(),
                            at: None,
                            key: "matrix".into(),
                            message: "the built-in kernel needs `matrix:` with its configs (the \
                                      defines each build gets)"
                                .into(),
                        },
                        text,
                    ));
                }
            },
            cases: raw.cases,
            stages: order_stages(path, raw.stages, raw_target.as_ref()).map_err(locate)?,
            grace: raw.grace.map_or(Duration::from_secs(5), |g| g.0),
        };
        pipeline.validate().map_err(locate)?;
        if pipeline.target.is_some() {
            // JIT-compiled kernels appear only once the program ran: a target's SASS inventory
            // comes after the stages that run it.
            pipeline.stages.sort_by_key(|s| match s.kind {
                StageKind::Sass => (1, s.kind),
                StageKind::Report => (2, s.kind),
                kind => (0, kind),
            });
        }
        Ok(pipeline)
    }

    /// The stage called `name`, if any.
    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// Resolves a path from the file against [`Pipeline::root`].
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        }
    }

    /// The source a config of the built-in kernel compiles: its own, or `kernel.source`.
    /// The archs `config` is built for: its own `arch` list, or every arch of the matrix.
    pub fn archs_of(&self, config: &str) -> &[String] {
        self.matrix
            .configs
            .get(config)
            .and_then(|c| c.arch.as_deref())
            .unwrap_or(&self.matrix.arch)
    }

    pub fn source_of(&self, config: &str) -> Option<&Path> {
        self.matrix
            .configs
            .get(config)
            .and_then(|c| c.source.as_deref())
            .or(self.kernel.as_ref().map(|k| k.source.as_path()))
    }

    /// Every source file the built-in kernel's builds depend on: `kernel.source`,
    /// `kernel.includes` and the configs' own sources, each once. A target's sources are
    /// walked instead (`target::source_files`).
    pub fn sources(&self) -> Vec<&Path> {
        let Some(kernel) = &self.kernel else {
            return Vec::new();
        };
        let mut sources: Vec<&Path> = vec![kernel.source.as_path()];
        sources.extend(kernel.includes.iter().map(PathBuf::as_path));
        for config in self.matrix.configs.values() {
            if let Some(source) = &config.source {
                sources.push(source);
            }
        }
        let mut seen = BTreeSet::new();
        sources.retain(|s| seen.insert(*s));
        sources
    }

    /// The `HEAD_DIM` define of a config, when it has a numeric one.
    pub fn head_dim(&self, config: &str) -> Option<u32> {
        self.matrix
            .configs
            .get(config)
            .and_then(|c| c.defines.get("HEAD_DIM"))
            .and_then(|v| v.0.parse().ok())
    }

    /// Every (case, dtype, causal) a stage runs for `config`, or for any config when `None`.
    pub fn case_instances(&self, stage: &Stage, config: Option<&str>) -> Vec<CaseInstance> {
        let mut out = Vec::new();
        for name in &stage.cases {
            let Some(case) = self.cases.get(name) else {
                continue;
            };
            if let Some(config) = config
                && let Some(d) = self.head_dim(config)
                && d != case.shape.head_dim
            {
                continue;
            }
            for &dtype in &case.dtypes {
                for &causal in &case.causal {
                    out.push(CaseInstance {
                        case: name.clone(),
                        shape: case.shape,
                        dtype,
                        causal,
                    });
                }
            }
        }
        out
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let err = |key: String, message: String| ConfigError::Semantic {
            path: self.path.clone(),
            at: None,
            key,
            message,
        };
        match (&self.kernel, &self.target) {
            (Some(kernel), None) => self.validate_kernel(kernel)?,
            (None, Some(target)) => self.validate_target(target)?,
            (Some(_), Some(_)) => {
                return Err(err(
                    "target".into(),
                    "name either `kernel:` (the built-in harness) or `target:` (your own \
                     program), not both"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(err(
                    "kernel".into(),
                    "name what to run: `kernel:` (a kernel for the built-in harness) or \
                     `target:` (your own build and program)"
                        .into(),
                ));
            }
        }
        self.validate_env()?;
        if self.toolchain.provision && !self.toolchain.wheels.contains_key("nvidia-cuda-nvcc") {
            return Err(err(
                "toolchain.wheels".into(),
                "provisioning needs a pinned `nvidia-cuda-nvcc` wheel".into(),
            ));
        }
        for (wheel, version) in &self.toolchain.wheels {
            if !is_version(version) {
                return Err(err(
                    format!("toolchain.wheels.{wheel}"),
                    format!("`{version}` is not an exact version such as 13.0.88"),
                ));
            }
        }
        if self.toolchain.provision && self.toolchain.cuda.is_empty() {
            return Err(err(
                "toolchain.cuda".into(),
                "provisioning needs the CUDA version to install, such as 13.0.88 (or \
                 `provision: false` to use what is installed)"
                    .into(),
            ));
        }
        if !self.toolchain.cuda.is_empty() && !is_version(&self.toolchain.cuda) {
            return Err(err(
                "toolchain.cuda".into(),
                format!(
                    "`{}` is not an exact version such as 13.0.88",
                    self.toolchain.cuda
                ),
            ));
        }
        for tool in self.toolchain.tools.keys() {
            if !KNOWN_TOOLS.contains(&tool.as_str()) || tool == "torch" {
                return Err(err(
                    format!("toolchain.tools.{tool}"),
                    format!("unknown tool; expected one of {}", tool_list()),
                ));
            }
        }
        if self.matrix.arch.is_empty() {
            return Err(err("matrix.arch".into(), "list at least one arch".into()));
        }
        let mut seen = BTreeSet::new();
        for (i, arch) in self.matrix.arch.iter().enumerate() {
            if !is_arch(arch) {
                return Err(err(
                    format!("matrix.arch[{i}]"),
                    format!("`{arch}` is not an arch such as sm_90 or sm_90a"),
                ));
            }
            if !seen.insert(arch) {
                return Err(err(format!("matrix.arch[{i}]"), format!("`{arch}` twice")));
            }
        }
        if self.matrix.configs.is_empty() {
            return Err(err(
                "matrix.configs".into(),
                "define at least one config".into(),
            ));
        }
        for (name, config) in &self.matrix.configs {
            if let Some(problem) = name_problem("config", name) {
                return Err(err(format!("matrix.configs.{name}"), problem));
            }
            if let Some(archs) = &config.arch {
                if archs.is_empty() {
                    return Err(err(
                        format!("matrix.configs.{name}.arch"),
                        "list at least one arch of matrix.arch".into(),
                    ));
                }
                for (i, arch) in archs.iter().enumerate() {
                    if !self.matrix.arch.contains(arch) || archs[..i].contains(arch) {
                        return Err(err(
                            format!("matrix.configs.{name}.arch[{i}]"),
                            format!(
                                "`{arch}`: expected one of matrix.arch ({}), each once",
                                self.matrix.arch.join(", ")
                            ),
                        ));
                    }
                }
            }
            if let Some(source) = &config.source
                && !self.resolve(source).is_file()
            {
                return Err(err(
                    format!("matrix.configs.{name}.source"),
                    format!("`{}` does not exist", source.display()),
                ));
            }
            for (define, value) in &config.defines {
                if !is_identifier(define) {
                    return Err(err(
                        format!("matrix.configs.{name}.{define}"),
                        "not a C identifier".into(),
                    ));
                }
                if !is_define_value(&value.0) {
                    return Err(err(
                        format!("matrix.configs.{name}.{define}"),
                        format!("`{}` is not an integer or a plain word", value.0),
                    ));
                }
            }
        }
        for (name, case) in &self.cases {
            if let Some(problem) = name_problem("case", name) {
                return Err(err(format!("cases.{name}"), problem));
            }
            if case.dtypes.is_empty() || case.causal.is_empty() {
                return Err(err(
                    format!("cases.{name}"),
                    "`dtypes` and `causal` must not be empty".into(),
                ));
            }
            if let Some(problem) = case.shape.too_large() {
                return Err(err(format!("cases.{name}.shape"), problem));
            }
            for dtype in &case.dtypes {
                if let Some(kernel) = &self.kernel
                    && !kernel.entry_points.contains_key(dtype)
                {
                    return Err(err(
                        format!("cases.{name}.dtypes"),
                        format!("no entry point for {dtype} in kernel.entry_points"),
                    ));
                }
            }
        }
        let has_compile = self.stages.iter().any(|s| s.kind == StageKind::Compile);
        for stage in &self.stages {
            let key = |field: &str| format!("stages.{}.{field}", stage.name);
            if stage.timeout.is_zero() {
                return Err(err(key("timeout"), "must be longer than zero".into()));
            }
            for tool in &stage.needs.tools {
                if !KNOWN_TOOLS.contains(&tool.as_str()) {
                    return Err(err(
                        key("needs.tools"),
                        format!("unknown tool `{tool}`; expected one of {}", tool_list()),
                    ));
                }
            }
            for (i, config) in stage.configs.iter().enumerate() {
                if !self.matrix.configs.contains_key(config) {
                    return Err(err(
                        format!("stages.{}.configs[{i}]", stage.name),
                        format!("no config `{config}` in matrix.configs"),
                    ));
                }
            }
            for (i, case) in stage.cases.iter().enumerate() {
                if !self.cases.contains_key(case) {
                    let known: Vec<&str> = self.cases.keys().map(String::as_str).collect();
                    return Err(err(
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
            let launches = launches_kernel(stage.kind) || stage.kind == StageKind::Baseline;
            let builtin = self.kernel.is_some();
            if builtin && launches && stage.enabled && stage.cases.is_empty() {
                return Err(err(
                    key("cases"),
                    "this stage launches the kernel: name the cases it runs".into(),
                ));
            }
            if builtin && launches && stage.enabled {
                let configs: Vec<&String> = self
                    .matrix
                    .configs
                    .keys()
                    .filter(|c| stage.configs.is_empty() || stage.configs.contains(c))
                    .collect();
                for (i, case) in stage.cases.iter().enumerate() {
                    let runs = configs.iter().any(|c| {
                        self.case_instances(stage, Some(c))
                            .iter()
                            .any(|instance| instance.case == *case)
                    });
                    if !runs && stage.kind != StageKind::Baseline {
                        let dims: BTreeSet<u32> =
                            configs.iter().filter_map(|c| self.head_dim(c)).collect();
                        return Err(err(
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
            // A target's program takes cases in the stages that run it: each case one unit,
            // its values as placeholders and `EXHIBIT_*` variables.
            let runs_program = !matches!(
                stage.kind,
                StageKind::Compile | StageKind::Sass | StageKind::Report | StageKind::Baseline
            );
            if !stage.cases.is_empty() && !(if builtin { launches } else { runs_program }) {
                return Err(err(
                    key("cases"),
                    format!("a {} stage runs no cases", kind_name(stage.kind)),
                ));
            }
            if stage.print_limit.is_some() && !is_sanitizer(stage.kind) {
                return Err(err(
                    key("print_limit"),
                    "only compute-sanitizer stages take a print limit".into(),
                ));
            }
            if let Some(file) = &stage.suppressions {
                if !is_sanitizer(stage.kind) {
                    return Err(err(
                        key("suppressions"),
                        "only compute-sanitizer stages take a suppressions file".into(),
                    ));
                }
                if !self.resolve(file).is_file() {
                    return Err(err(
                        key("suppressions"),
                        format!("`{}` is not a file", file.display()),
                    ));
                }
            }
            if !stage.harness_args.is_empty() && (!wraps_harness(stage.kind) || !builtin) {
                return Err(err(
                    key("harness_args"),
                    "only sanitizer and profile stages of the built-in kernel wrap the harness"
                        .into(),
                ));
            }
            if stage.launches.is_some() && (builtin || stage.kind != StageKind::Stress) {
                return Err(err(
                    key("launches"),
                    "only a target's stress stage takes `launches` (the built-in harness takes \
                     `args: [--launches, N]`)"
                        .into(),
                ));
            }
            if stage.launches == Some(0) {
                return Err(err(key("launches"), "must be at least 1".into()));
            }
            if !stage.env.is_empty() && builtin {
                return Err(err(
                    key("env"),
                    "only the stages of a target take `env`".into(),
                ));
            }
            match stage.kind {
                StageKind::Baseline if stage.command.is_empty() => {
                    return Err(err(
                        key("command"),
                        "a baseline stage needs its command, e.g. [python3, kernel/baselines/sdpa.py]"
                            .into(),
                    ));
                }
                StageKind::Baseline => {}
                kind if !builtin && launches_kernel(kind) => {}
                _ if !stage.command.is_empty() => {
                    return Err(err(
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
            if builtin && needs_cubin(stage.kind) && stage.enabled && !has_compile {
                return Err(err(
                    format!("stages.{}", stage.name),
                    "needs the cubin of a compile stage, and there is none".into(),
                ));
            }
            if !builtin
                && stage.kind == StageKind::Compile
                && self.target.as_ref().is_some_and(|t| t.build.is_none())
            {
                return Err(err(
                    format!("stages.{}", stage.name),
                    "a build stage needs `target.build`".into(),
                ));
            }
        }
        if self
            .stages
            .iter()
            .filter(|s| s.kind == StageKind::Compile)
            .count()
            > 1
        {
            return Err(err("stages".into(), "more than one compile stage".into()));
        }
        Ok(())
    }
}

impl Pipeline {
    fn semantic(&self, key: String, message: String) -> ConfigError {
        ConfigError::Semantic {
            path: self.path.clone(),
            at: None,
            key,
            message,
        }
    }

    /// Every environment map's names are POSIX names (they reach a shell in a Slurm job
    /// script) and its values hold no NUL (no process environment can).
    fn validate_env(&self) -> Result<(), ConfigError> {
        let target = self.target.as_ref();
        let maps = [
            (
                "target.build.env".to_string(),
                target.and_then(|t| t.build.as_ref()).map(|b| &b.env),
            ),
            (
                "target.program.env".to_string(),
                target.map(|t| &t.program.env),
            ),
        ]
        .into_iter()
        .chain(
            self.matrix
                .configs
                .iter()
                .map(|(name, c)| (format!("matrix.configs.{name}.env"), Some(&c.env))),
        )
        .chain(
            self.stages
                .iter()
                .map(|s| (format!("stages.{}.env", s.name), Some(&s.env))),
        );
        for (key, env) in maps {
            for (name, value) in env.into_iter().flatten() {
                if !is_identifier(name) {
                    return Err(self.semantic(
                        key,
                        format!(
                            "`{name}` is not an environment variable name; expected letters, \
                             digits and `_`, not starting with a digit"
                        ),
                    ));
                }
                if value.contains('\0') {
                    return Err(self.semantic(
                        key,
                        format!("{name}: the value holds a NUL byte, which no environment can"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_kernel(&self, kernel: &Kernel) -> Result<(), ConfigError> {
        if let Some(problem) = not_a_file(&self.resolve(&kernel.source)) {
            return Err(self.semantic(
                "kernel.source".into(),
                format!("`{}` {problem}", kernel.source.display()),
            ));
        }
        for (i, include) in kernel.includes.iter().enumerate() {
            if let Some(problem) = not_a_file(&self.resolve(include)) {
                return Err(self.semantic(
                    format!("kernel.includes[{i}]"),
                    format!("`{}` {problem}", include.display()),
                ));
            }
        }
        if kernel.entry_points.is_empty() {
            return Err(self.semantic(
                "kernel.entry_points".into(),
                "name at least one entry point (f16 or bf16)".into(),
            ));
        }
        for (dtype, name) in &kernel.entry_points {
            if !is_identifier(name) {
                return Err(self.semantic(
                    format!("kernel.entry_points.{dtype}"),
                    format!("`{name}` is not a C identifier"),
                ));
            }
        }
        for (name, config) in &self.matrix.configs {
            if !config.env.is_empty() {
                return Err(self.semantic(
                    format!("matrix.configs.{name}.env"),
                    "only a target's configs take `env` (the built-in kernel takes defines)".into(),
                ));
            }
        }
        Ok(())
    }

    fn validate_target(&self, target: &Target) -> Result<(), ConfigError> {
        for (i, source) in target.sources.iter().enumerate() {
            if !self.resolve(source).exists() {
                return Err(self.semantic(
                    format!("target.sources[{i}]"),
                    format!("`{}` does not exist", source.display()),
                ));
            }
        }
        if let Some(build) = &target.build {
            if build.command.is_empty() {
                return Err(self.semantic(
                    "target.build.command".into(),
                    "give the build's argv, e.g. [cmake, --build, \"{build_dir}\"]".into(),
                ));
            }
            check_placeholders(&build.command, BUILD_PLACEHOLDERS)
                .map_err(|m| self.semantic("target.build.command".into(), m))?;
        }
        if target.program.command.is_empty() {
            return Err(self.semantic(
                "target.program.command".into(),
                "give the program's argv, e.g. [python3, tests/oracle.py]".into(),
            ));
        }
        check_placeholders(&target.program.command, PROGRAM_PLACEHOLDERS)
            .map_err(|m| self.semantic("target.program.command".into(), m))?;
        if let Some(cwd) = &target.program.cwd
            && !self.resolve(cwd).is_dir()
        {
            return Err(self.semantic(
                "target.program.cwd".into(),
                format!("`{}` is not a directory", cwd.display()),
            ));
        }
        for (name, config) in &self.matrix.configs {
            if config.source.is_some() {
                return Err(self.semantic(
                    format!("matrix.configs.{name}.source"),
                    "a target's build decides what it compiles: give the config `defines` \
                     (they reach the build as `{defines}`) or `env`"
                        .into(),
                ));
            }
        }
        for stage in &self.stages {
            check_placeholders(&stage.command, PROGRAM_PLACEHOLDERS)
                .and_then(|()| check_placeholders(&stage.args, PROGRAM_PLACEHOLDERS))
                .map_err(|m| self.semantic(format!("stages.{}.command", stage.name), m))?;
        }
        Ok(())
    }
}

/// The placeholders a target's build command may hold.
pub const BUILD_PLACEHOLDERS: &[&str] = &["{build_dir}", "{arch}", "{defines}", "{config}"];
/// The placeholders a target's program command may hold.
pub const PROGRAM_PLACEHOLDERS: &[&str] = &[
    "{build_dir}",
    "{arch}",
    "{config}",
    "{launches}",
    "{out}",
    "{case}",
    "{shape}",
    "{dtype}",
    "{causal}",
];

/// Refuses a `{word}` that is not one of `known`.
fn check_placeholders(argv: &[String], known: &[&str]) -> Result<(), String> {
    for word in argv {
        let mut rest = word.as_str();
        while let Some(start) = rest.find('{') {
            let tail = rest.get(start..).unwrap_or("");
            let Some(end) = tail.find('}') else { break };
            let placeholder = tail.get(..=end).unwrap_or("");
            let is_word = placeholder
                .trim_matches(['{', '}'])
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_');
            if is_word && !known.contains(&placeholder) {
                return Err(format!(
                    "unknown placeholder `{placeholder}` in `{word}`; expected one of {}",
                    known.join(", ")
                ));
            }
            rest = tail.get(end + 1..).unwrap_or("");
        }
    }
    Ok(())
}

/// One concrete problem a stage runs: a case with one dtype and one mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseInstance {
    pub case: String,
    pub shape: Shape,
    pub dtype: Dtype,
    pub causal: bool,
}

impl CaseInstance {
    /// A name usable as a path component, e.g. `seed-f16` or `long-bf16-causal`.
    pub fn label(&self) -> String {
        let mut label = format!("{}-{}", self.case, self.dtype);
        if self.causal {
            label.push_str("-causal");
        }
        label
    }
}

/// Whether a stage kind launches the kernel through the harness.
pub fn launches_kernel(kind: StageKind) -> bool {
    is_sanitizer(kind)
        || matches!(
            kind,
            StageKind::Check | StageKind::Stress | StageKind::Bench | StageKind::Profile
        )
}

/// Whether a stage kind consumes the compile stage's cubin.
pub fn needs_cubin(kind: StageKind) -> bool {
    kind == StageKind::Sass || launches_kernel(kind)
}

/// Whether a stage kind is one of compute-sanitizer's tools.
pub fn is_sanitizer(kind: StageKind) -> bool {
    matches!(
        kind,
        StageKind::Memcheck | StageKind::Racecheck | StageKind::Initcheck | StageKind::Synccheck
    )
}

/// Whether a stage kind runs the harness under another tool.
pub fn wraps_harness(kind: StageKind) -> bool {
    is_sanitizer(kind) || kind == StageKind::Profile
}

/// The pipeline.yaml spelling of a stage kind.
pub fn kind_name(kind: StageKind) -> &'static str {
    report::join::kind_name(kind)
}

const ALL_KINDS: &[StageKind] = &[
    StageKind::Compile,
    StageKind::Sass,
    StageKind::Memcheck,
    StageKind::Racecheck,
    StageKind::Initcheck,
    StageKind::Synccheck,
    StageKind::Check,
    StageKind::Stress,
    StageKind::Bench,
    StageKind::Baseline,
    StageKind::Profile,
    StageKind::Report,
];

fn kind_from_name(name: &str) -> Option<StageKind> {
    ALL_KINDS.iter().copied().find(|k| kind_name(*k) == name)
}

fn default_timeout(kind: StageKind) -> Duration {
    let minutes = match kind {
        StageKind::Sass | StageKind::Report => 1,
        StageKind::Compile | StageKind::Check => 5,
        _ => 10,
    };
    Duration::from_secs(60 * minutes)
}

/// Whether a run of `stages` (`--only`; empty: all) plans `stage`: a stage it names, or the
/// compile stage when a stage it names needs the cubin.
pub fn runs(pipeline: &Pipeline, stages: &[String], stage: &Stage) -> bool {
    let selected = |name: &str| stages.is_empty() || stages.iter().any(|s| s == name);
    if stage.kind == StageKind::Compile {
        pipeline
            .stages
            .iter()
            .any(|s| selected(&s.name) && (s.kind == StageKind::Compile || needs_cubin(s.kind)))
    } else {
        selected(&stage.name)
    }
}

/// The needs a stage of a target has when pipeline.yaml does not say: the tools its own
/// commands start that the preflight knows (the build's, the program's or the baseline's first
/// word; `python3` for a Python program), and compute-sanitizer or ncu around it.
pub fn target_needs(kind: StageKind, target: &Target, command: &[String]) -> Needs {
    // A command's first word when it is a tool the preflight knows (`nvcc`, `python3`, ...).
    let named = |argv: &[String]| -> Vec<String> {
        argv.first()
            .filter(|w| KNOWN_TOOLS.contains(&w.as_str()) && w.as_str() != "harness")
            .map(|w| vec![w.clone()])
            .unwrap_or_default()
    };
    let program = if target.program.is_python() {
        vec!["python3".to_string()]
    } else {
        named(&target.program.command)
    };
    let (gpu, mut tools): (bool, Vec<String>) = match kind {
        StageKind::Compile => (
            false,
            target
                .build
                .as_ref()
                .map(|b| named(&b.command))
                .unwrap_or_default(),
        ),
        StageKind::Sass => (false, vec!["cuobjdump".to_string()]),
        StageKind::Report => (false, Vec::new()),
        StageKind::Baseline if !command.is_empty() => (true, named(command)),
        StageKind::Profile => (true, vec!["ncu".to_string()]),
        kind if is_sanitizer(kind) => (true, vec!["compute-sanitizer".to_string()]),
        _ => (true, Vec::new()),
    };
    // The stages that run the program (a baseline with its own command runs that instead).
    let runs_program = match kind {
        StageKind::Compile | StageKind::Sass | StageKind::Report => false,
        StageKind::Baseline => command.is_empty(),
        _ => true,
    };
    if runs_program {
        tools.extend(program);
    }
    Needs { gpu, tools }
}

/// The needs a stage kind has when pipeline.yaml does not say.
pub fn default_needs(kind: StageKind) -> Needs {
    let (gpu, tools): (bool, &[&str]) = match kind {
        StageKind::Compile => (false, &["nvcc"]),
        StageKind::Sass => (false, &["cuobjdump"]),
        StageKind::Memcheck
        | StageKind::Racecheck
        | StageKind::Initcheck
        | StageKind::Synccheck => (true, &["compute-sanitizer", "harness"]),
        StageKind::Check | StageKind::Stress | StageKind::Bench => (true, &["harness"]),
        StageKind::Baseline => (true, &["python3", "torch"]),
        StageKind::Profile => (true, &["ncu", "harness"]),
        StageKind::Report => (false, &[]),
    };
    Needs {
        gpu,
        tools: tools.iter().map(|t| (*t).to_string()).collect(),
    }
}

fn order_stages(
    path: &Path,
    mut raw: BTreeMap<String, RawStage>,
    target: Option<&Target>,
) -> Result<Vec<Stage>, ConfigError> {
    // A report is written unless the pipeline disables it (`report: { enabled: false }`).
    let reports = |name: &String, stage: &RawStage| {
        stage
            .kind
            .as_deref()
            .map_or(name == "report", |k| k == "report")
    };
    if !raw.iter().any(|(name, stage)| reports(name, stage)) && !raw.contains_key("report") {
        raw.insert("report".to_string(), RawStage::default());
    }
    let mut stages = Vec::with_capacity(raw.len());
    for (name, stage) in raw {
        let kind = match stage.kind.as_deref() {
            Some(k) => kind_from_name(k).ok_or_else(|| ConfigError::Semantic {
                path: path.to_path_buf(),
                at: None,
                key: format!("stages.{name}.kind"),
                message: format!("unknown stage kind `{k}`; expected one of {}", kind_list()),
            })?,
            None if name == "build" => StageKind::Compile,
            None => kind_from_name(&name).ok_or_else(|| ConfigError::Semantic {
                path: path.to_path_buf(),
                at: None,
                key: format!("stages.{name}"),
                message: format!(
                    "`{name}` is not a stage kind, so give it a `kind:` (one of {})",
                    kind_list()
                ),
            })?,
        };
        let reserved = RESERVED_NAMES.contains(&name.as_str())
            && !(name == "build" && kind == StageKind::Compile);
        let problem = name_problem("stage", &name).or_else(|| {
            reserved.then(|| {
                format!(
                    "`{name}` is a name the run directory keeps for itself ({}; `build` only \
                     for a compile stage); name the stage otherwise",
                    RESERVED_NAMES.join(", ")
                )
            })
        });
        if let Some(message) = problem {
            return Err(ConfigError::Semantic {
                path: path.to_path_buf(),
                at: None,
                key: format!("stages.{name}"),
                message,
            });
        }
        stages.push(Stage {
            kind,
            enabled: stage.enabled.unwrap_or(true),
            timeout: stage.timeout.map_or_else(|| default_timeout(kind), |t| t.0),
            needs: stage.needs.unwrap_or_else(|| match target {
                Some(target) => target_needs(kind, target, &stage.command),
                None => default_needs(kind),
            }),
            args: stage.args,
            harness_args: stage.harness_args,
            cases: stage.cases,
            configs: stage.configs,
            print_limit: stage.print_limit,
            command: stage.command,
            cache: stage.cache.unwrap_or(true),
            launches: stage.launches,
            suppressions: stage.suppressions,
            env: stage.env,
            name,
        });
    }
    stages.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    Ok(stages)
}

fn syntax_error(path: &Path, source: &str, error: &yaml_serde::Error) -> ConfigError {
    let text = error.to_string();
    // libyaml's reader reports bad characters by byte offset, with no line.
    if let Some((head, tail)) = text.split_once(" at position ") {
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(offset) = digits.parse::<usize>() {
            let (line, column) = line_column(&source.as_bytes()[..offset.min(source.len())]);
            return ConfigError::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                message: head.to_string(),
            };
        }
    }
    match error.location() {
        Some(location) => {
            // The library appends " at line L column C"; the location leads the message instead.
            let mut message = plain_words(&without_positions(&text));
            let at = source
                .lines()
                .nth(location.line().saturating_sub(1))
                .and_then(|l| l.chars().nth(location.column().saturating_sub(1)));
            if message.contains("cannot start any token") && at == Some('\t') {
                message.push_str(": a tab; YAML indents with spaces");
            }
            if let Some(lines) = duplicate_lines(&message, source, location.line()) {
                message.push_str(&format!(" (lines {lines})"));
            }
            ConfigError::Syntax {
                path: path.to_path_buf(),
                line: location.line(),
                column: location.column(),
                message,
            }
        }
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            message: text,
        },
    }
}

/// The message without the positions libyaml writes into it (" at line L column C"): the
/// error's own location leads the message instead.
fn without_positions(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((head, tail)) = rest.split_once(" at line ") {
        out.push_str(head);
        let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let line = digits(tail);
        let after_line = &tail[line..];
        match after_line.strip_prefix(" column ") {
            Some(col) if line > 0 && digits(col) > 0 => rest = &col[digits(col)..],
            _ => {
                out.push_str(" at line ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// serde's words for the Rust types it expected, in the pipeline's words.
fn plain_words(message: &str) -> String {
    let message = message
        .replace(
            "expected struct RawPipeline",
            "expected a mapping with `kernel` or `target`, `toolchain`, `matrix`, `cases` and \
             `stages`",
        )
        .replace("expected field identifier", "expected a key name");
    match message.split_once("expected struct ") {
        Some((head, rest)) => {
            let name: String = rest
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            let tail = &rest[name.len()..];
            format!(
                "{head}expected a mapping (the {} section){tail}",
                name.to_lowercase()
            )
        }
        None => message,
    }
}

/// For a duplicate-key error, the lines (from the map's own line on) where that key is written,
/// so the message names both places.
fn duplicate_lines(message: &str, source: &str, from: usize) -> Option<String> {
    let (_, rest) = message
        .split_once("duplicate key `")
        .or_else(|| message.split_once("duplicate field `"))?;
    let key = rest.split_once('`')?.0;
    let found: Vec<String> = source
        .lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .filter(|(_, line)| {
            line.match_indices(key).any(|(at, _)| {
                let before = line.get(..at).unwrap_or("").trim_end();
                let after = line.get(at + key.len()..).unwrap_or("").trim_start();
                after.starts_with(':')
                    && (before.is_empty() || before.ends_with('{') || before.ends_with(','))
            })
        })
        .map(|(i, _)| (i + 1).to_string())
        .take(2)
        .collect();
    (found.len() == 2).then(|| found.join(" and "))
}

/// Finds the line and column of a dotted key such as `stages.memcheck.cases[0]` in block-style
/// YAML: each segment is looked for as `segment:` below the previous one, more indented.
fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut indent: Option<usize> = None;
    let mut found = None;
    let segments: Vec<&str> = key.split('.').collect();
    let mut next = 0;
    while next < segments.len() {
        // A name may hold dots (`manifest.json`, `.hidden`): the shortest run of segments that
        // is a key here, else the rest of them.
        let (index, column, used) = (next + 1..=segments.len()).find_map(|end| {
            let joined = segments[next..end].join(".");
            let name = joined.split('[').next().unwrap_or(&joined);
            locate_segment(&lines, from, indent, name).map(|(i, c)| (i, c, end))
        })?;
        found = Some((index + 1, column + 1));
        from = index + 1;
        indent = Some(column);
        next = used;
    }
    found
}

/// The line and column of `name:` from line `from` on, inside the block indented past
/// `indent`, or in a flow mapping on the line before.
fn locate_segment(
    lines: &[&str],
    from: usize,
    indent: Option<usize>,
    name: &str,
) -> Option<(usize, usize)> {
    if name.is_empty() {
        return None;
    }
    lines
        .iter()
        .enumerate()
        .skip(from)
        .take_while(|(i, line)| {
            // Stop at the end of the enclosing block.
            let _ = i;
            indent.is_none_or(|ind| {
                line.trim().is_empty()
                    || line.trim_start().starts_with('#')
                    || line.len() - line.trim_start().len() > ind
            })
        })
        .find_map(|(i, line)| {
            let trimmed = line.trim_start();
            let col = line.len() - trimmed.len();
            let rest = trimmed.strip_prefix(name)?;
            let rest = rest.strip_prefix('"').unwrap_or(rest);
            (rest.starts_with(':') && indent.is_none_or(|ind| col > ind)).then_some((i, col))
        })
        .or_else(|| {
            // A flow mapping on the previous key's line: `seed: { shape: "..." }`.
            let line = lines.get(from.checked_sub(1)?)?;
            let start = indent? + 1;
            let col = line.get(start..)?.find(&format!("{name}:"))? + start;
            let boundary = line[..col].trim_end();
            (boundary.ends_with('{') || boundary.ends_with(',')).then_some((from - 1, col))
        })
}

/// A pipeline file is a few kilobytes; anything past this is refused before parsing.
pub const MAX_PIPELINE_BYTES: u64 = 1 << 20;

/// Flow collections nest a few levels in a pipeline; the YAML parser's time grows with the
/// square of the depth, so deeper ones are refused before it runs.
pub const MAX_NESTING: usize = 64;

/// Reads a pipeline file: a regular file of at most [`MAX_PIPELINE_BYTES`], never a directory,
/// FIFO or device (which could block).
fn read(path: &Path) -> Result<String, ConfigError> {
    let refuse = |message: String| ConfigError::NotAPipeline {
        path: path.to_path_buf(),
        message,
    };
    let read_error = |error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if meta.is_dir() {
        return Err(refuse(
            "is a directory; expected a pipeline file (YAML)".into(),
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            "is not a regular file (a FIFO, socket or device); expected a pipeline file (YAML)"
                .into(),
        ));
    }
    if meta.len() > MAX_PIPELINE_BYTES {
        return Err(refuse(format!(
            "is {} bytes; a pipeline file is at most {MAX_PIPELINE_BYTES} bytes (1 MiB)",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(&e.as_bytes()[..e.utf8_error().valid_up_to()]);
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: "not UTF-8 text".into(),
        }
    })
}

/// The 1-based line and column just after `before`.
fn line_column(before: &[u8]) -> (usize, usize) {
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Refuses flow collections (`[`, `{`) nested deeper than [`MAX_NESTING`], outside quoted
/// scalars and comments. Brackets inside plain scalars count too: a false alarm needs 64 of
/// them unclosed.
fn check_nesting(path: &Path, text: &str) -> Result<(), ConfigError> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    // The byte before, ignoring nothing: quotes open a scalar only after a separator.
    let mut previous = b'\n';
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'#' if previous.is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                previous = b'\n';
                continue;
            }
            b'"' | b'\''
                if matches!(previous, b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':') =>
            {
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if b == b'"' => i += 1,
                        b'\'' if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
                        c if c == b => break,
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    let (line, column) = line_column(&bytes[..i]);
                    return Err(ConfigError::Syntax {
                        path: path.to_path_buf(),
                        line,
                        column,
                        message: format!(
                            "collections nested more than {MAX_NESTING} levels deep; a pipeline \
                             nests a few, so the file is refused before parsing"
                        ),
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = b;
        i += 1;
    }
    Ok(())
}

/// What a pipeline may expand to through its aliases (`&name` ... `*name`): scalar text plus
/// [`NODE_BYTES`] per node. A pipeline is a few kilobytes; a file of aliases to aliases (or to one
/// long string) can expand to gigabytes, so the expansion is counted, without keeping it, before
/// the pipeline is read.
pub const MAX_EXPANDED_BYTES: usize = 4 << 20;

/// What each node (scalar, sequence, mapping) counts towards [`MAX_EXPANDED_BYTES`].
const NODE_BYTES: usize = 16;

/// Walks the document as the deserializer replays it (aliases expanded) and refuses it once
/// its expansion passes [`MAX_EXPANDED_BYTES`], or the YAML library's own bound on alias
/// repetitions, with the position where it did. Any other error is left to the typed parse,
/// which says it in the pipeline's words.
fn check_expansion(path: &Path, text: &str) -> Result<(), ConfigError> {
    let mut left = MAX_EXPANDED_BYTES;
    let walked =
        Expansion { left: &mut left }.deserialize(yaml_serde::Deserializer::from_str(text));
    let Err(error) = walked else { return Ok(()) };
    let exceeded = left == 0 || error.to_string().contains("repetition limit exceeded");
    if !exceeded {
        return Ok(());
    }
    let message = format!(
        "the document expands to more than {MAX_EXPANDED_BYTES} bytes through its aliases \
         (`*name`); a pipeline is a few kilobytes, so it is refused"
    );
    Err(match error.location() {
        Some(at) => ConfigError::Syntax {
            path: path.to_path_buf(),
            line: at.line(),
            column: at.column(),
            message,
        },
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        },
    })
}

/// A [`serde::de::DeserializeSeed`] that visits every node and keeps none, counting each
/// against `left`; it fails when `left` runs out (and leaves it at 0).
struct Expansion<'a> {
    left: &'a mut usize,
}

impl Expansion<'_> {
    fn take<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        match self.left.checked_sub(bytes + NODE_BYTES) {
            Some(rest) => {
                *self.left = rest;
                Ok(())
            }
            None => {
                *self.left = 0;
                Err(E::custom("expansion limit"))
            }
        }
    }

    fn again(&mut self) -> Expansion<'_> {
        Expansion {
            left: &mut *self.left,
        }
    }
}

impl<'de> de::DeserializeSeed<'de> for Expansion<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Expansion<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take(0)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take(0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.take(v.len())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take(0)
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take(0)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.again().take(0)?;
        while seq.next_element_seed(self.again())?.is_some() {}
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.again().take(0)?;
        while map.next_key_seed(self.again())?.is_some() {
            map.next_value_seed(self.again())?;
        }
        Ok(())
    }
    fn visit_enum<A: de::EnumAccess<'de>>(mut self, data: A) -> Result<(), A::Error> {
        // A tagged node (`!tag value`): the tag, then the value.
        let ((), variant) = data.variant_seed(self.again())?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }
}

/// Why `path` cannot be run as a tool, if it cannot.
fn not_executable(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(_) => Some("does not exist"),
        Ok(m) if m.is_dir() => Some("is a directory, not an executable"),
        Ok(m) if !m.is_file() => Some("is not a regular file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Some("is not executable"),
        Ok(_) => None,
    }
}

/// Why `path` is not a file to read, if it is not.
fn not_a_file(path: &Path) -> Option<&'static str> {
    match std::fs::metadata(path) {
        Err(_) => Some("does not exist"),
        Ok(m) if m.is_dir() => Some("is a directory; expected a file"),
        Ok(m) if !m.is_file() => Some("is not a regular file"),
        Ok(_) => None,
    }
}

/// A semantic error with the line and column of its key, found in the text.
fn located(error: ConfigError, text: &str) -> ConfigError {
    match error {
        ConfigError::Semantic {
            path,
            at: None,
            key,
            message,
        } => ConfigError::Semantic {
            at: locate(text, &key),
            path,
            key,
            message,
        },
        other => other,
    }
}

fn kind_list() -> String {
    ALL_KINDS
        .iter()
        .map(|k| kind_name(*k))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tool_list() -> String {
    KNOWN_TOOLS.join(", ")
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The longest config, case or stage name: each becomes a directory of the run, several deep,
/// under file systems' 255-byte limit per name.
pub const MAX_NAME: usize = 64;

/// The names of a run directory's own entries, which no stage may take: its unit directories
/// sit beside them (`build/` holds a target's build when it has no compile stage).
pub const RESERVED_NAMES: &[&str] = &["manifest.json", "build", "reports", "artifacts"];

/// Why `name` cannot name a config, case or stage (`what`), if it cannot: the run directory
/// holds it as a directory.
fn name_problem(what: &str, name: &str) -> Option<String> {
    if name.chars().count() > MAX_NAME {
        return Some(format!(
            "{what} names are at most {MAX_NAME} characters; this one has {}",
            name.chars().count()
        ));
    }
    (!is_path_component(name) || name.starts_with('.')).then(|| {
        format!("{what} names use letters, digits, `_`, `-` and `.`, and do not start with `.`")
    })
}

fn is_path_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn is_define_value(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn is_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn is_arch(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("sm_") else {
        return false;
    };
    let digits = rest.trim_end_matches(['a', 'f']);
    !digits.is_empty()
        && digits.len() + 1 >= rest.len()
        && digits.chars().all(|c| c.is_ascii_digit())
}

fn yes() -> bool {
    true
}

fn default_arch() -> Vec<String> {
    vec!["sm_90".to_string()]
}

fn default_dtypes() -> Vec<Dtype> {
    vec![Dtype::F16]
}

fn default_causal() -> Vec<bool> {
    vec![false]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPipeline {
    #[serde(default)]
    kernel: Option<Kernel>,
    #[serde(default)]
    target: Option<Target>,
    #[serde(default)]
    toolchain: Toolchain,
    #[serde(default)]
    matrix: Option<Matrix>,
    #[serde(default, deserialize_with = "unique")]
    cases: BTreeMap<String, Case>,
    #[serde(deserialize_with = "unique")]
    stages: BTreeMap<String, RawStage>,
    #[serde(default)]
    grace: Option<HumanDuration>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStage {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    timeout: Option<HumanDuration>,
    #[serde(default)]
    needs: Option<Needs>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    harness_args: Vec<String>,
    #[serde(default)]
    cases: Vec<String>,
    #[serde(default)]
    configs: Vec<String>,
    #[serde(default)]
    print_limit: Option<u32>,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    cache: Option<bool>,
    #[serde(default)]
    launches: Option<u64>,
    #[serde(default)]
    suppressions: Option<PathBuf>,
    #[serde(default, deserialize_with = "unique")]
    env: BTreeMap<String, String>,
}

/// A duration written for people: `90s`, `10m`, `1h 30m`.
struct HumanDuration(Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `90s` or `10m`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                humantime::parse_duration(v.trim())
                    .map(HumanDuration)
                    .map_err(|e| {
                        E::custom(format!(
                            "invalid duration `{v}` ({e}): expected e.g. `90s` or `10m`"
                        ))
                    })
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shape `B,H,S,D` of four positive integers, e.g. \"2,8,512,64\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Shape, E> {
                v.parse().map_err(|()| {
                    E::custom(format!(
                        "invalid shape `{v}`: expected `B,H,S,D`, four positive integers such as \"2,8,512,64\""
                    ))
                })
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl std::str::FromStr for Shape {
    type Err = ();
    fn from_str(s: &str) -> Result<Shape, ()> {
        let parts: Vec<u32> = s
            .split(',')
            .map(|p| p.trim().parse::<u32>().map_err(|_| ()))
            .collect::<Result<_, _>>()?;
        match parts.as_slice() {
            &[batch, heads, seq_len, head_dim]
                if batch > 0 && heads > 0 && seq_len > 0 && head_dim > 0 =>
            {
                Ok(Shape {
                    batch,
                    heads,
                    seq_len,
                    head_dim,
                })
            }
            _ => Err(()),
        }
    }
}

/// The most device memory any GPU offers (288 GB of HBM3e on B300), as a bound on shapes.
pub const LARGEST_DEVICE_MEMORY: u128 = 288_000_000_000;

impl Shape {
    /// Elements in each of Q, K, V and O.
    pub fn elements(&self) -> u128 {
        [self.batch, self.heads, self.seq_len, self.head_dim]
            .iter()
            .map(|&n| u128::from(n))
            .product()
    }

    /// Why no GPU could hold this shape's Q, K, V and O in 16-bit floats, if none could.
    pub fn too_large(&self) -> Option<String> {
        let bytes = self.elements() * 4 * 2;
        (bytes > LARGEST_DEVICE_MEMORY).then(|| {
            format!(
                "shape `{self}` has {} elements per tensor: Q, K, V and O in 16-bit floats take \
                 {:.1} GB of device memory, more than any GPU has ({} GB)",
                self.elements(),
                bytes as f64 / 1e9,
                LARGEST_DEVICE_MEMORY / 1_000_000_000
            )
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.batch, self.heads, self.seq_len, self.head_dim
        )
    }
}

impl From<Shape> for String {
    fn from(shape: Shape) -> String {
        shape.to_string()
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        })
    }
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Config;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a map of -D defines such as {HEAD_DIM: 64}, or {source: FILE, arch: [ARCH], defines: {...}, env: {...}, build_env: {...}}",
                )
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Config, A::Error> {
                let mut config = Config::default();
                let mut nested = false;
                let mut bare = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "source" => config.source = Some(map.next_value()?),
                        "arch" => {
                            nested = true;
                            config.arch = Some(map.next_value()?);
                        }
                        "defines" => {
                            nested = true;
                            let defines: UniqueMap<String, Define> = map.next_value()?;
                            config.defines.extend(defines.0);
                        }
                        "env" => {
                            nested = true;
                            let env: UniqueMap<String, String> = map.next_value()?;
                            config.env.extend(env.0);
                        }
                        "build_env" => {
                            nested = true;
                            let env: UniqueMap<String, String> = map.next_value()?;
                            config.build_env.extend(env.0);
                        }
                        _ => {
                            bare = true;
                            let value = map.next_value::<Define>()?;
                            if config.defines.contains_key(&key) {
                                return Err(de::Error::custom(format!(
                                    "duplicate key `{key}`: name each once"
                                )));
                            }
                            config.defines.insert(key, value);
                        }
                    }
                    if nested && bare {
                        return Err(de::Error::custom(
                            "write defines either all under `defines:` (beside `arch:`, `env:` and `build_env:`) or all bare, not both",
                        ));
                    }
                }
                if config.source.is_some() && bare {
                    return Err(de::Error::custom(
                        "a config with its own `source` lists its -D values under `defines:`",
                    ));
                }
                Ok(config)
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Define {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Define;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a plain word for a -D define")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A map that refuses a key given twice (YAML itself lets the last one win silently).
struct UniqueMap<K, V>(BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for UniqueMap<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V2<K, V>(std::marker::PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for V2<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Display,
            V: Deserialize<'de>,
        {
            type Value = UniqueMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<K>()? {
                    if out.contains_key(&key) {
                        return Err(de::Error::custom(format!(
                            "duplicate key `{key}`: name each once"
                        )));
                    }
                    let value = map.next_value()?;
                    out.insert(key, value);
                }
                Ok(UniqueMap(out))
            }
        }
        deserializer.deserialize_map(V2(std::marker::PhantomData))
    }
}

/// `deserialize_with` for maps whose keys must be unique.
fn unique<'de, D, K, V>(deserializer: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    UniqueMap::deserialize(deserializer).map(|m| m.0)
}
