//! `stages:`: each stage's kind, timeout, needs and arguments, their defaults, and the kinds' vocabulary.

use parsers::text_timings::{TimeUnit, TimingPattern};

use super::*;

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
    /// `split: tests`: a sanitizer stage runs each test of a pytest program alone under its
    /// tool, so an error is attributed to the test that triggered it.
    pub split: Option<Split>,
    /// The baseline's command line (argv), before the shape arguments.
    pub command: Vec<String>,
    /// Whether an earlier run's result with the same inputs may be reused.
    pub cache: bool,
    /// A stress stage on a target's program: the most launches to try.
    pub launches: Option<u64>,
    /// A profile stage: the problem's size in elements, the program's and its baseline's, for
    /// figures per element (warp instructions per element beside the baseline).
    pub elements: Option<u64>,
    /// compute-sanitizer's `--suppressions` file, relative to the pipeline file.
    pub suppressions: Option<PathBuf>,
    /// Extra environment variables for the stage's process.
    pub env: BTreeMap<String, String>,
    /// A bench or baseline stage's `pattern:`: its timings read from the program's text.
    pub pattern: Option<Pattern>,
}

/// `pattern:`, with the `unit:` and `label:` beside it: a regular expression whose every match
/// in the program's output (its `{out}` file when its command names `{out}`, else its stdout)
/// is one sample of a timing (`parsers::text_timings`). Checked when the pipeline is read: it
/// compiles, has a `value` group, and gives a unit.
#[derive(Debug, Clone, Serialize)]
pub struct Pattern {
    /// The regular expression: `value`, and optionally `unit` and `label`, named groups.
    pub regex: String,
    /// The unit of a match without a `unit` group.
    pub unit: Option<TimeUnit>,
    /// The name of a match without a `label` group; `None`: the unit's config (the matrix's
    /// only config for a baseline, which runs once for every config).
    pub label: Option<String>,
    /// Whether the pattern has a `label` group.
    pub labelled: bool,
}

impl Pattern {
    /// The pattern as a unit records it, its label for unlabelled matches decided: `label:`, else
    /// `config` (the unit's), else `only_config` (the matrix's one config), else `stage`.
    pub fn recorded(
        &self,
        config: Option<&str>,
        only_config: Option<&str>,
        stage: &str,
    ) -> TimingPattern {
        TimingPattern {
            pattern: self.regex.clone(),
            unit: self.unit,
            label: self
                .label
                .as_deref()
                .or(config)
                .or(only_config)
                .unwrap_or(stage)
                .to_string(),
        }
    }
}

/// Reads a stage's `pattern:`, `unit:` and `label:`; `Err` is the key at fault and why.
fn pattern_of(stage: &RawStage) -> Result<Option<Pattern>, (&'static str, String)> {
    let Some(regex) = &stage.pattern else {
        if stage.unit.is_some() {
            return Err((
                "unit",
                "`unit:` is the unit of a `pattern:`, and there is none".into(),
            ));
        }
        if stage.label.is_some() {
            return Err((
                "label",
                "`label:` names the timing of a `pattern:`, and there is none".into(),
            ));
        }
        return Ok(None);
    };
    let unit = match stage.unit.as_deref() {
        None => None,
        Some(text) => Some(TimeUnit::parse(text).ok_or_else(|| {
            (
                "unit",
                format!("`{text}` is not a time unit; expected s, ms, us (or µs) or ns"),
            )
        })?),
    };
    if let Some(label) = &stage.label
        && label.trim().is_empty()
    {
        return Err(("label", "an empty name".into()));
    }
    let matcher = TimingPattern {
        pattern: regex.clone(),
        unit,
        label: String::new(),
    }
    .compile()
    .map_err(|e| ("pattern", e.to_string()))?;
    Ok(Some(Pattern {
        regex: regex.clone(),
        unit,
        label: stage.label.clone(),
        labelled: matcher.has_label_group(),
    }))
}

/// How a stage divides its program's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// One run per test the program holds.
    Tests,
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

/// Whether a stage kind launches the kernel through the harness.
pub fn launches_kernel(kind: StageKind) -> bool {
    kind.row().launches
}

/// Whether a stage kind consumes the compile stage's cubin.
pub fn needs_cubin(kind: StageKind) -> bool {
    kind.row().reads_cubin || kind.row().launches
}

/// Whether a stage kind is one of compute-sanitizer's tools.
pub fn is_sanitizer(kind: StageKind) -> bool {
    kind.is_sanitizer()
}

/// Whether a stage kind runs the harness under another tool.
pub fn wraps_harness(kind: StageKind) -> bool {
    kind.row().wraps
}

/// The pipeline.yaml spelling of a stage kind.
pub fn kind_name(kind: StageKind) -> &'static str {
    kind.name()
}

pub(crate) fn kind_from_name(name: &str) -> Option<StageKind> {
    StageKind::of_name(name)
}

pub(crate) fn default_timeout(kind: StageKind) -> Duration {
    Duration::from_secs(60 * kind.row().timeout_min)
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

/// The needs a stage kind has when pipeline.yaml does not say.
pub fn default_needs(kind: StageKind) -> Needs {
    let row = kind.row();
    Needs {
        gpu: row.gpu,
        tools: row.tools.iter().map(|t| (*t).to_string()).collect(),
    }
}

pub(crate) fn order_stages(
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
                message: format!(
                    "unknown stage kind `{k}`{}; expected one of {}",
                    did_you_mean(k),
                    kind_list()
                ),
            })?,
            None if name == "build" => StageKind::Compile,
            None => kind_from_name(&name).ok_or_else(|| ConfigError::Semantic {
                path: path.to_path_buf(),
                at: None,
                key: format!("stages.{name}"),
                message: format!(
                    "`{name}` is not a stage kind{}, so give it a `kind:` (one of {})",
                    did_you_mean(&name),
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
        let pattern = pattern_of(&stage).map_err(|(field, message)| ConfigError::Semantic {
            path: path.to_path_buf(),
            at: None,
            key: format!("stages.{name}.{field}"),
            message,
        })?;
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
            split: stage.split,
            command: stage.command,
            cache: stage.cache.unwrap_or(true),
            launches: stage.launches,
            elements: stage.elements,
            suppressions: stage.suppressions,
            env: stage.env,
            pattern,
            name,
        });
    }
    stages.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    Ok(stages)
}

/// " (did you mean `memcheck`?)" for a name a typo or two from a stage kind's, else nothing.
fn did_you_mean(name: &str) -> String {
    report::KINDS
        .iter()
        .map(|r| r.name)
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, k)| *d > 0 && *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

pub(crate) fn kind_list() -> String {
    report::KINDS
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStage {
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
    split: Option<Split>,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    cache: Option<bool>,
    #[serde(default)]
    launches: Option<u64>,
    #[serde(default)]
    elements: Option<u64>,
    #[serde(default)]
    suppressions: Option<PathBuf>,
    #[serde(default, deserialize_with = "unique")]
    env: BTreeMap<String, String>,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    label: Option<String>,
}

/// A duration written for people: `90s`, `10m`, `1h 30m`; at most [`LONGEST`].
pub(crate) struct HumanDuration(pub(crate) Duration);

/// The longest duration a pipeline may give (a week): a deadline is an instant the clock can
/// reach, and a timeout longer than this is a mistake, not a plan.
pub(crate) const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `90s` or `10m`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                let d = humantime::parse_duration(v.trim()).map_err(|e| {
                    E::custom(format!(
                        "invalid duration `{v}` ({e}): expected e.g. `90s` or `10m`"
                    ))
                })?;
                if d > LONGEST {
                    return Err(E::custom(format!(
                        "duration `{v}` is longer than a week, the longest a pipeline may give"
                    )));
                }
                Ok(HumanDuration(d))
            }
        }
        deserializer.deserialize_str(V)
    }
}
