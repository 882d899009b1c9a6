//! Evidence built from the real tool output under `crates/parsers/fixtures/`: each fixture is
//! parsed with `parsers::parse` and placed in a run under the stage that would have produced it.
//! The run's commands, tool versions and GPU come from the fixtures' sidecars.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parsers::{Format, ParsedLog};
use report::{
    Case, Environment, Evidence, Git, Gpu, Log, Run, Stage, StageKind, StageStatus, TargetKind,
    Unit, Wrapper,
};

/// The parsers' fixture folder.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../parsers/fixtures")
}

/// A fixture's path: `report/<name>` is one of this crate's own captures
/// (`tests/fixtures/`), anything else is relative to the parsers' fixture folder.
pub fn path_of(rel: &str) -> PathBuf {
    match rel.strip_prefix("report/") {
        Some(own) => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(own),
        None => fixtures().join(rel),
    }
}

/// A fixture's text.
pub fn read(rel: &str) -> String {
    let path = path_of(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A fixture parsed as `format`.
pub fn parse(rel: &str, format: Format) -> ParsedLog {
    parsers::parse(format, &read(rel))
}

/// A fixture's sidecar.
pub fn sidecar(rel: &str) -> serde_json::Value {
    let stem = rel.rsplit_once('.').map(|(s, _)| s).unwrap_or(rel);
    serde_json::from_str(&read(&format!("{stem}.meta.json"))).unwrap_or(serde_json::Value::Null)
}

/// The sidecar's command as an argv, with `<repo>/` made repository-relative.
pub fn command(rel: &str) -> Vec<String> {
    sidecar(rel)
        .get("command")
        .and_then(|c| c.as_str())
        .unwrap_or("")
        .split_whitespace()
        .map(|a| a.replace("<repo>/", ""))
        .collect()
}

/// One stage execution of a test run, with the fixture it produced.
#[derive(Clone)]
pub struct Step {
    pub name: &'static str,
    pub kind: StageKind,
    pub config: Option<&'static str>,
    pub fixture: &'static str,
    pub format: Format,
    /// `None`: derived from the parsed log, as the runner classifies a tool that worked.
    pub status: Option<StageStatus>,
    /// Extra argv appended to the sidecar's command (e.g. `--kernel`, `--shape`).
    pub args: Vec<&'static str>,
}

pub fn step(kind: StageKind, config: &'static str, fixture: &'static str, format: Format) -> Step {
    Step {
        name: report::join::kind_name(kind),
        kind,
        config: Some(config),
        fixture,
        format,
        status: None,
        args: Vec::new(),
    }
}

pub fn compile(config: &'static str, fixture: &'static str) -> Step {
    step(StageKind::Compile, config, fixture, Format::Ptxas)
}

pub fn sass(config: &'static str, fixture: &'static str) -> Step {
    step(StageKind::Sass, config, fixture, Format::Sass)
}

pub fn sanitizer(kind: StageKind, config: &'static str, fixture: &'static str) -> Step {
    step(kind, config, fixture, Format::ComputeSanitizer)
}

pub fn profile(config: &'static str, fixture: &'static str) -> Step {
    step(StageKind::Profile, config, fixture, Format::NcuCsv)
}

pub fn harness(kind: StageKind, config: Option<&'static str>, fixture: &'static str) -> Step {
    Step {
        config,
        ..step(kind, "", fixture, Format::Harness)
    }
}

/// The GPU and driver the GPU fixtures were captured on, from the capture's version file.
fn gpu_environment() -> (Vec<Gpu>, Option<String>) {
    let text = read("versions-gpu-2026-11-22.txt");
    let line = text.lines().nth(1).unwrap_or("");
    let (name, driver) = line.split_once(", ").unwrap_or((line, ""));
    (
        vec![Gpu {
            name: name.trim().to_string(),
            ..Gpu::default()
        }],
        Some(driver.trim().to_string()),
    )
}

/// A run of `steps`, with the fixtures parsed as its logs. `inputs` are the repository files
/// the run hashed (the kernel sources).
pub fn evidence(id: &str, steps: &[Step], inputs: &[&str]) -> Evidence {
    let mut logs: BTreeMap<String, ParsedLog> = BTreeMap::new();
    let mut stages = Vec::new();
    let mut tools: BTreeMap<String, String> = BTreeMap::new();
    let mut gpu_used = false;
    for (i, s) in steps.iter().enumerate() {
        let file = s.fixture.rsplit('/').next().unwrap_or(s.fixture);
        let path = format!("{}/{}/{i}-{file}", s.name, s.config.unwrap_or("run"));
        let parsed = parse(s.fixture, s.format);
        let status = s.status.unwrap_or_else(|| derived_status(s.kind, &parsed));
        let meta = sidecar(s.fixture);
        if let Some(v) = meta.get("nvcc").and_then(|v| v.as_str()) {
            tools.insert("nvcc".into(), v.to_string());
        }
        if let Some(v) = meta.get("tool_version").and_then(|v| v.as_str()) {
            let tool = match s.format {
                Format::NcuCsv | Format::NcuSource => Some("ncu"),
                Format::ComputeSanitizer | Format::ComputeSanitizerXml => Some("compute-sanitizer"),
                Format::Sass => Some("cuobjdump"),
                Format::SassLines => Some("nvdisasm"),
                Format::Harness if v.starts_with("python3") => Some("python3"),
                Format::PytestBenchmark => Some("pytest-benchmark"),
                Format::GoogleBenchmark => Some("google-benchmark"),
                Format::Nvbench => Some("nvbench"),
                Format::Harness
                | Format::Ptxas
                | Format::ProgramResults
                | Format::JUnit
                | Format::TextTimings => None,
            };
            if let Some(tool) = tool {
                tools.insert(tool.into(), v.to_string());
            }
        }
        gpu_used |= meta.get("gpu").is_some();
        let mut command = command(s.fixture);
        command.extend(s.args.iter().map(|a| a.to_string()));
        let unit = unit(s.kind, &command);
        stages.push(Stage {
            name: s.name.to_string(),
            kind: s.kind,
            config: s.config.map(str::to_string),
            arch: Some("sm_90".to_string()),
            status,
            reason: None,
            command,
            exit_code: meta
                .get("exit_code")
                .and_then(|c| c.as_i64())
                .map(|c| c as i32),
            duration_ms: 1000 + i as u64,
            cached_from: None,
            input_hash: None,
            logs: vec![Log {
                path: path.clone(),
                format: Some(s.format),
            }],
            unit,
            launch_search: None,
            leftovers: Vec::new(),
            device: None,
            outputs: Default::default(),
            cut: Default::default(),
            split: Vec::new(),
            site_lines: Default::default(),
            seal: None,
            missing: Vec::new(),
        });
        logs.insert(path, parsed);
    }
    let (gpus, driver) = if gpu_used {
        gpu_environment()
    } else {
        (Vec::new(), None)
    };
    let run = Run {
        schema: report::RUN_SCHEMA.to_string(),
        id: id.to_string(),
        pipeline: "pipeline.yaml".to_string(),
        started: "2026-11-22T02:45:05Z".to_string(),
        finished: Some("2026-11-22T02:47:00Z".to_string()),
        interrupted: false,
        git: Some(Git {
            commit: "0000000000000000000000000000000000000000".to_string(),
            dirty: false,
        }),
        environment: Environment {
            os: "linux x86_64".to_string(),
            tools,
            toolchain_source: Some("path".to_string()),
            driver,
            gpu_unavailable: (!gpu_used)
                .then(|| "no CUDA driver: libcuda.so.1 not found".to_string()),
            gpus,
            counters_permitted: gpu_used.then_some(true),
            preflight_cached: Vec::new(),
            host: None,
            provisioning_failed: None,
        },
        inputs: inputs
            .iter()
            .map(|i| (i.to_string(), "sha256".to_string()))
            .collect(),
        stages,
        wall_ms: None,
        links: BTreeMap::new(),
        knobs: Vec::new(),
        experiments: Vec::new(),
        source_maps: Vec::new(),
    };
    Evidence {
        run,
        logs,
        missing: Default::default(),
        source_maps: Vec::new(),
        program_pairs: Default::default(),
        program_mismatches: Default::default(),
    }
}

/// The unit record of a fixture's stage on sm_90, with what its captured command (and the step's
/// extra args) names: the build's defines, source and register cap; the kernel, problem, mode
/// and launch count a run of the built-in harness was given. Every stage that launches a kernel
/// ran the built-in harness, as far as these runs say.
pub fn unit(kind: StageKind, command: &[String]) -> Unit {
    let mut unit = Unit {
        target: match kind {
            StageKind::Compile | StageKind::Sass | StageKind::Report => TargetKind::Tool,
            StageKind::Baseline => TargetKind::Baseline,
            _ => TargetKind::Harness,
        },
        wrapper: match kind {
            StageKind::Memcheck => Some(parsers::Tool::Memcheck),
            StageKind::Racecheck => Some(parsers::Tool::Racecheck),
            StageKind::Initcheck => Some(parsers::Tool::Initcheck),
            StageKind::Synccheck => Some(parsers::Tool::Synccheck),
            _ => None,
        }
        .map(|check| Wrapper::ComputeSanitizer { check })
        .or((kind == StageKind::Profile).then_some(Wrapper::Ncu)),
        arch: Some("sm_90".to_string()),
        ..Unit::default()
    };
    // `--flag value` or `--flag=value`.
    let value = |flag: &str| {
        let mut words = command.iter();
        let mut found = None;
        while let Some(word) = words.next() {
            if word == flag {
                found = words.next().cloned();
            } else if let Some(v) = word.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                found = Some(v.to_string());
            }
        }
        found
    };
    unit.kernel = value("--kernel");
    unit.mode = value("--mode");
    unit.launches = value("--launches").and_then(|n| n.parse().ok());
    unit.case = value("--shape").map(|shape| {
        let mut label = shape;
        if let Some(dtype) = value("--dtype") {
            label = format!("{label} {dtype}");
        }
        if command.iter().any(|w| w == "--causal") {
            label.push_str(" causal");
        }
        Case {
            name: String::new(),
            label,
            ..Case::default()
        }
    });
    if kind == StageKind::Compile {
        for word in command {
            if let Some(define) = word.strip_prefix("-D").filter(|d| !d.is_empty()) {
                let (name, value) = define.split_once('=').unwrap_or((define, "1"));
                unit.defines.insert(name.to_string(), value.to_string());
            } else if let Some(arch) = word.strip_prefix("-arch=") {
                unit.arch = Some(arch.to_string());
            } else if let Some(n) = word.strip_prefix("-maxrregcount=") {
                unit.max_registers = n.parse().ok();
            } else if word.ends_with(".cu") && unit.source.is_none() {
                unit.source = Some(word.clone());
            }
        }
    }
    unit
}

/// The status the runner gives a stage whose tool worked.
fn derived_status(kind: StageKind, log: &ParsedLog) -> StageStatus {
    let sanitizer = matches!(
        kind,
        StageKind::Memcheck | StageKind::Racecheck | StageKind::Initcheck | StageKind::Synccheck
    );
    if sanitizer && !log.complete {
        StageStatus::Inconclusive
    } else if log
        .findings
        .iter()
        .any(|f| f.severity == parsers::Severity::Error)
    {
        StageStatus::Findings
    } else {
        StageStatus::Passed
    }
}

/// Markdown with the run header's timestamps redacted, for snapshots.
pub fn redact(text: &str) -> String {
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").expect("valid regex");
    time.replace_all(text, "[time]").into_owned()
}

/// The rendered Markdown report, redacted. The report and its short form (the pull-request
/// comment) must render on GitHub as written.
pub fn markdown(evidence: &Evidence) -> String {
    let md = redact(&report::render(evidence, report::OutputFormat::Markdown));
    let name = &evidence.run.id;
    crate::gfm::assert_renders_on_github(name, &md);
    crate::gfm::assert_renders_on_github(
        &format!("{name} (summary)"),
        &report::render_summary(evidence),
    );
    md
}

/// Checks what every rendered report must hold to: no absolute paths and no raw addresses.
pub fn assert_deterministic_text(text: &str) {
    let address = regex::Regex::new(r"0x[0-9a-fA-F]{6,}").expect("valid regex");
    assert!(
        !address.is_match(text),
        "a raw address leaked into the report:\n{text}"
    );
    for prefix in ["/work/", "/root/", "/tmp/", "/home/", "/usr/local/"] {
        assert!(
            !text.contains(prefix),
            "an absolute path ({prefix}) leaked into the report"
        );
    }
}

/// `exhibit explain` on fixtures: each detected and parsed as the runner does, named by its file
/// name.
pub fn explain_files(files: &[&str]) -> report::Explanation {
    let logs: Vec<(String, parsers::ParsedLog)> = files
        .iter()
        .map(|f| {
            let text = read(f);
            let format =
                parsers::detect(&text).unwrap_or_else(|| panic!("{f}: format not detected"));
            (
                f.rsplit('/').next().unwrap_or(f).to_string(),
                parsers::parse(format, &text),
            )
        })
        .collect();
    report::explain(&logs, Vec::new())
}
