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

mod builtin;
mod cases;
mod checks;
mod knobs;
mod matrix;
mod stage;
mod syntax;
mod target;
mod toolchain;

pub use builtin::{CUBIN, problem};
pub use cases::*;
pub use knobs::{ExperimentsMode, KnobSpec, knobs_of};
pub use matrix::*;
pub use stage::*;
pub use syntax::*;
pub use target::*;
pub use toolchain::*;

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
    /// `knobs:`: the inputs an experiment may vary.
    pub knobs: Vec<KnobSpec>,
    /// `experiments:`, when given.
    pub experiments: Option<ExperimentsMode>,
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

impl Pipeline {
    /// Reads, parses and validates a pipeline file.
    pub fn load(path: &Path) -> Result<Pipeline, ConfigError> {
        Pipeline::parse(path, &read(path)?)
    }

    /// [`Pipeline::load`], then what `exhibit check` adds about this machine: every tool
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
        // A problem with a key the checks name, located in the file.
        let semantic = |(key, message): (String, String)| {
            locate(ConfigError::Semantic {
                path: path.to_path_buf(),
                at: None,
                key,
                message,
            })
        };
        // The modules its scripts import are needs of the stages that run them.
        let raw_target = raw.target.map(|t| t.read_imports(&root));
        let mut pipeline = Pipeline {
            path: path.to_path_buf(),
            root,
            kernel: raw.kernel,
            target: raw_target.clone(),
            toolchain: raw.toolchain.completed(),
            matrix: match raw.matrix {
                // A target's `matrix:` may list archs alone: one config, as without a matrix.
                Some(mut matrix) if raw_target.is_some() && matrix.configs.is_empty() => {
                    matrix
                        .configs
                        .insert("default".to_string(), Config::default());
                    matrix
                }
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
            knobs: knobs::knobs(raw.knobs).map_err(semantic)?,
            experiments: raw.experiments,
        };
        pipeline.validate().map_err(locate)?;
        pipeline.check_knobs().map_err(semantic)?;
        // From here on the built-in kernel is a target like any other.
        builtin::as_target(&mut pipeline);
        // JIT-compiled kernels appear only once the program ran: a target's SASS inventory
        // comes after the stages that run it.
        pipeline.stages.sort_by_key(|s| match s.kind {
            StageKind::Sass => (1, s.kind),
            StageKind::Report => (2, s.kind),
            kind => (0, kind),
        });
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

    /// The archs `config` is built for: its own `arch` list, or every arch of the matrix.
    pub fn archs_of(&self, config: &str) -> &[String] {
        self.matrix
            .configs
            .get(config)
            .and_then(|c| c.arch.as_deref())
            .unwrap_or(&self.matrix.arch)
    }

    /// Every source file the built-in kernel's builds depend on: `kernel.source`,
    /// `kernel.includes` and the configs' own sources, each once. A target's sources are
    /// walked instead (`files::source_files`).
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
        let problem = |(key, message): checks::Problem| self.semantic(key, message);
        for check in checks::PIPELINE {
            check(self).map_err(problem)?;
        }
        for stage in &self.stages {
            for check in checks::STAGE {
                check(self, stage).map_err(problem)?;
            }
        }
        for check in checks::LAST {
            check(self).map_err(problem)?;
        }
        Ok(())
    }
}

impl Pipeline {
    /// What a stage's `pattern:` needs beyond itself (its own checks are `stage.rs`'s): a bench
    /// or baseline stage that runs a program whose text it can read, and, for a baseline that
    /// runs once for several configs, a name for the timing it gives, so that it pairs with the
    /// bench's.
    fn validate_pattern(&self, stage: &Stage, pattern: &Pattern) -> Result<(), String> {
        match stage.kind {
            StageKind::Bench if self.kernel.is_some() => Err(
                "the built-in harness writes its timings as JSON; `pattern:` reads a target's \
                 program or a baseline command"
                    .into(),
            ),
            StageKind::Bench => Ok(()),
            StageKind::Baseline
                if !pattern.labelled
                    && pattern.label.is_none()
                    && self.matrix.configs.len() > 1
                    && !stage
                        .command
                        .iter()
                        .chain(stage.args.iter())
                        .chain(stage.env.values())
                        .any(|w| names_config(w)) =>
            {
                Err(
                    "the baseline runs once for every config, so its pattern names its timing: \
                     give `label:` (the name of the bench timing it is compared with) or a \
                     `label` group, or name `{build_dir}` or `{config}` in its command to run \
                     it in each config"
                        .into(),
                )
            }
            StageKind::Baseline => Ok(()),
            kind => Err(format!(
                "only bench and baseline stages read timings with a pattern, not a {} stage",
                kind_name(kind)
            )),
        }
    }

    /// The matrix's config when it has only one.
    pub fn only_config(&self) -> Option<&str> {
        match self.matrix.configs.keys().collect::<Vec<_>>().as_slice() {
            [one] => Some(one.as_str()),
            _ => None,
        }
    }

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
        // `{env:NAME}` takes the config's value: every config gives one.
        for word in &target.program.command {
            for name in word
                .split("{env:")
                .skip(1)
                .filter_map(|t| t.split_once('}'))
            {
                let name = name.0;
                if let Some((config, _)) = self
                    .matrix
                    .configs
                    .iter()
                    .find(|(_, c)| !c.env.contains_key(name))
                {
                    return Err(self.semantic(
                        "target.program.command".into(),
                        format!(
                            "`{{env:{name}}}` takes the config's `{name}`, and config `{config}` \
                             has none in its `env:`"
                        ),
                    ));
                }
            }
        }
        if let Some(cwd) = &target.program.cwd
            && !self.resolve(cwd).is_dir()
        {
            return Err(self.semantic(
                "target.program.cwd".into(),
                format!("`{}` is not a directory", cwd.display()),
            ));
        }
        let takes_source = target
            .build
            .as_ref()
            .is_some_and(|b| b.command.iter().any(|w| w.contains("{source}")));
        for (name, config) in &self.matrix.configs {
            if config.source.is_some() && !takes_source {
                return Err(self.semantic(
                    format!("matrix.configs.{name}.source"),
                    "the target's build command does not name `{source}`: give the config \
                     `defines` (they reach the build as `{defines}`) or `env`, or put \
                     `{source}` in target.build.command"
                        .into(),
                ));
            }
        }
        for stage in &self.stages {
            check_placeholders(&stage.command, PROGRAM_PLACEHOLDERS)
                .and_then(|()| check_placeholders(&stage.args, PROGRAM_PLACEHOLDERS))
                .and_then(|()| unresolved_placeholder(stage, target.build.is_some()))
                .map_err(|m| self.semantic(format!("stages.{}.command", stage.name), m))?;
        }
        Ok(())
    }
}

/// Whether a command word names a value that differs between configs.
pub fn names_config(word: &str) -> bool {
    ["{build_dir}", "{config}", "{arch}", "{source}", "{env:"]
        .iter()
        .any(|p| word.contains(p))
}

/// Refuses a placeholder in a stage's own command that has no value where the stage runs it:
/// `{build_dir}` without a build (it would name a directory nothing made), `{launches}` outside
/// a stress stage, and a case's `{case}`, `{shape}`, `{dtype}` or `{causal}` in a stage that
/// runs no case (a baseline runs none). Each would expand to a path or a word the user did not
/// mean, and the program would fail to start or run something else.
fn unresolved_placeholder(stage: &Stage, has_build: bool) -> Result<(), String> {
    let words = || stage.command.iter().chain(stage.args.iter());
    let used = |p: &str| words().find(|w| w.contains(p));
    if !has_build && let Some(word) = used("{build_dir}") {
        return Err(format!(
            "`{word}` names `{{build_dir}}`, the config's build directory, and the target has \
             no build: give `target.build`, or name the program's path"
        ));
    }
    if stage.kind != StageKind::Stress
        && let Some(word) = used("{launches}")
    {
        return Err(format!(
            "`{word}` names `{{launches}}`, which only a stress stage's run has a value for"
        ));
    }
    if stage.cases.is_empty() {
        for p in ["{case}", "{shape}", "{dtype}", "{causal}"] {
            if let Some(word) = used(p) {
                return Err(format!(
                    "`{word}` names `{p}`, and this stage runs no case: name its `cases:`{}",
                    if stage.kind == StageKind::Baseline {
                        " (a target's baseline runs none: give the problem in its command)"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    Ok(())
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPipeline {
    #[serde(default)]
    kernel: Option<Kernel>,
    #[serde(default)]
    target: Option<Target>,
    /// Absent: the default set ([`Toolchain::default`]).
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
    #[serde(default, deserialize_with = "unique")]
    knobs: BTreeMap<String, knobs::RawKnob>,
    #[serde(default)]
    experiments: Option<ExperimentsMode>,
}
