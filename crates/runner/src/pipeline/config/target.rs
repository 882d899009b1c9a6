//! `target:`: the user's build and program, the placeholders their argv may hold, and the needs a target's stage has by default.

use super::*;

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
    /// The Python modules of [`PYTHON_MODULES`] the build's and the program's scripts import
    /// (read when the file is read, [`Target::read_imports`]): stages that run them need those.
    #[serde(skip)]
    pub imports: Imports,
}

/// The modules a target's Python scripts import, found by reading them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imports {
    pub build: Vec<String>,
    pub program: Vec<String>,
}

impl Target {
    /// Reads the scripts the build and the program start (`python3 x.py`, or a pytest run's
    /// files and directories) for the modules they import, relative to `root`. A script that
    /// cannot be read imports nothing: this only adds needs, never refuses a pipeline.
    pub fn read_imports(mut self, root: &Path) -> Target {
        if let Some(build) = &self.build {
            self.imports.build = script_imports(&build.command, root);
        }
        let cwd = self
            .program
            .cwd
            .as_ref()
            .map_or_else(|| root.to_path_buf(), |c| root.join(c));
        self.imports.program = script_imports(&self.program.command, &cwd);
        self
    }
}

/// The modules of [`PYTHON_MODULES`] the Python files an argv names import.
fn script_imports(argv: &[String], dir: &Path) -> Vec<String> {
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let name = Path::new(first)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let pytest = is_pytest(argv);
    if !name.starts_with("python") && !pytest {
        return Vec::new();
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for word in argv
        .iter()
        .skip(1)
        .filter(|w| !w.starts_with('-') && !w.contains('{'))
    {
        let path = dir.join(word);
        if word.ends_with(".py") {
            files.push(path);
            if !pytest {
                break;
            }
        } else if pytest && path.is_dir() {
            // A pytest directory: its test files and conftest, one level down.
            if let Ok(entries) = std::fs::read_dir(&path) {
                let mut found: Vec<PathBuf> = entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "py"))
                    .collect();
                found.sort();
                files.extend(found.into_iter().take(64));
            }
        }
    }
    let mut modules: Vec<String> = Vec::new();
    for file in files {
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines() {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("import ")
                .or_else(|| line.strip_prefix("from "));
            let Some(rest) = rest else { continue };
            for part in rest.split(',') {
                let module = part
                    .trim()
                    .split(|c: char| c == '.' || c.is_whitespace())
                    .next()
                    .unwrap_or("");
                if PYTHON_MODULES.contains(&module) && !modules.iter().any(|m| m == module) {
                    modules.push(module.to_string());
                }
                if line.starts_with("from ") {
                    break;
                }
            }
        }
    }
    modules
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
    /// Exit statuses that mean something other than "the program found a problem".
    #[serde(default)]
    pub exit_codes: ExitCodes,
    /// Whether the program reads nothing of the sources but its build's products (the built-in
    /// harness reads its cubin): its units' cache keys then hold the build's identity, not the
    /// sources, so a change that leaves the build alike serves them from the cache. Not
    /// written in pipeline.yaml: a user's program may read any of its files.
    #[serde(skip)]
    pub reads_only_build: bool,
}

/// `target.program.exit_codes:`: the exit statuses by which a program says it did not test.
/// Any other non-zero status is the program's finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExitCodes {
    /// It could not test here (no GPU, an optional dependency missing): the unit is skipped,
    /// with the program's last line of stderr as the reason.
    #[serde(default)]
    pub skipped: Vec<i32>,
    /// It broke before testing (a usage error, its own infrastructure): the unit failed, and
    /// no finding is drawn from it.
    #[serde(default)]
    pub broken: Vec<i32>,
}

impl ExitCodes {
    /// The built-in harness's: 2 usage, 3 infrastructure error, 4 no CUDA driver or GPU.
    pub fn harness() -> ExitCodes {
        ExitCodes {
            skipped: vec![4],
            broken: vec![2, 3],
        }
    }
}

impl Target {
    /// What a stage that runs the program starts: its own `command`, else the program's.
    pub fn command_of<'a>(&'a self, stage: &'a Stage) -> &'a [String] {
        if stage.command.is_empty() {
            &self.program.command
        } else {
            &stage.command
        }
    }
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

/// Whether an argv runs pytest: `pytest ...`, `py.test ...` or `python3 -m pytest ...`.
pub fn is_pytest(argv: &[String]) -> bool {
    let name = |w: &String| {
        Path::new(w)
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    match argv.first().map(name).as_deref() {
        Some("pytest" | "py.test") => true,
        Some(first) if first.starts_with("python") => {
            argv.get(1).map(String::as_str) == Some("-m")
                && argv.get(2).map(String::as_str) == Some("pytest")
        }
        _ => false,
    }
}

/// The placeholders a target's build command may hold.
pub const BUILD_PLACEHOLDERS: &[&str] =
    &["{build_dir}", "{arch}", "{defines}", "{config}", "{source}"];
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
pub(crate) fn check_placeholders(argv: &[String], known: &[&str]) -> Result<(), String> {
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

/// The needs a stage of a target has when pipeline.yaml does not say: the tools its own
/// commands start that the preflight knows ([`started_tools`] of the build, the program or the
/// baseline; `python3` for a Python program), and compute-sanitizer or ncu around it.
pub fn target_needs(kind: StageKind, target: &Target, command: &[String]) -> Needs {
    let named = started_tools;
    let mut program = if target.program.is_python() {
        vec!["python3".to_string()]
    } else {
        named(&target.program.command)
    };
    program.extend(target.imports.program.iter().cloned());
    let (gpu, mut tools): (bool, Vec<String>) = match kind {
        StageKind::Compile => (
            false,
            target
                .build
                .as_ref()
                .map(|b| named(&b.command))
                .unwrap_or_default()
                .into_iter()
                .chain(target.imports.build.iter().cloned())
                .collect(),
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

/// The tools a command starts that the preflight knows (`nvcc`, `python3`, `cmake`, ...): its
/// first word, or, for a shell's script (`sh -c "cmake -S . -B b && cmake --build b"`), the
/// first word of each command in the script, past any `NAME=value` assignments.
pub fn started_tools(argv: &[String]) -> Vec<String> {
    let script = match argv {
        [shell, c, script, ..] if matches!(shell.as_str(), "sh" | "bash") && c == "-c" => script,
        _ => {
            return argv
                .first()
                .filter(|w| KNOWN_TOOLS.contains(&w.as_str()))
                .map(|w| vec![w.clone()])
                .unwrap_or_default();
        }
    };
    let mut tools: Vec<String> = Vec::new();
    for command in script.split(['&', '|', ';', '\n', '(', ')']) {
        let first = command.split_whitespace().find(|w| !w.contains('='));
        if let Some(tool) = first.filter(|w| KNOWN_TOOLS.contains(w))
            && !tools.iter().any(|t| t == tool)
        {
            tools.push(tool.to_string());
        }
    }
    tools
}
