//! Manifests of schema `exhibit.run/1`, written before every stage recorded its unit (the runner
//! recorded [`crate::run::Unit`] only for the units it ran, and older runners not at all). Reading
//! one gives each stage without the record the one its argv implies ([`upgrade`]), so that
//! stored runs (the examples' and measurements' runs) render as they did. This is the one place
//! that reads a command line back; the runner writes [`crate::run::RUN_SCHEMA`], whose stages all
//! record their unit, and everything else reads [`crate::run::Stage::unit`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::run::{
    Case, Environment, Experiment, Git, Knob, Run, SourceMap, Stage, StageKind, TargetKind, Unit,
    Wrapper,
};

/// The schema whose stages may lack their unit record.
pub const SCHEMA: &str = "exhibit.run/1";

/// A manifest as stored, read field by field as [`Run`] after [`upgrade`] gave an
/// `exhibit.run/1` manifest's stages their unit records. A field added to [`Run`] is added here.
#[derive(Deserialize)]
struct StoredRun {
    schema: String,
    id: String,
    pipeline: String,
    started: String,
    finished: Option<String>,
    interrupted: bool,
    git: Option<Git>,
    environment: Environment,
    inputs: BTreeMap<String, String>,
    stages: Vec<Stage>,
    #[serde(default)]
    wall_ms: Option<u64>,
    #[serde(default)]
    links: BTreeMap<String, String>,
    #[serde(default)]
    knobs: Vec<Knob>,
    #[serde(default)]
    experiments: Vec<Experiment>,
    #[serde(default)]
    source_maps: Vec<SourceMap>,
}

impl<'de> Deserialize<'de> for Run {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Run, D::Error> {
        use serde::de::Error;
        let mut manifest = serde_json::Value::deserialize(deserializer)?;
        upgrade(&mut manifest);
        let StoredRun {
            schema,
            id,
            pipeline,
            started,
            finished,
            interrupted,
            git,
            environment,
            inputs,
            stages,
            wall_ms,
            links,
            knobs,
            experiments,
            source_maps,
        } = serde_json::from_value(manifest).map_err(D::Error::custom)?;
        Ok(Run {
            schema,
            id,
            pipeline,
            started,
            finished,
            interrupted,
            git,
            environment,
            inputs,
            stages,
            wall_ms,
            links,
            knobs,
            experiments,
            source_maps,
        })
    }
}

/// Gives every stage of an `exhibit.run/1` manifest that lacks a unit record the one its command
/// line implies, and every unit's case the typed shape its label says; a manifest of any other
/// schema is left as it is. A stage that does not read
/// (no kind, a command that is not a list of words) is left for the manifest's reader to refuse.
pub fn upgrade(manifest: &mut Value) {
    if manifest.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
        return;
    }
    let Some(stages) = manifest.get_mut("stages").and_then(Value::as_array_mut) else {
        return;
    };
    for stage in stages {
        if stage.get("unit").is_none_or(|u| u.is_null())
            && let Ok(argv) = Argv::deserialize(&*stage)
            && let (Some(fields), Ok(unit)) =
                (stage.as_object_mut(), serde_json::to_value(unit_of(&argv)))
        {
            fields.insert("unit".into(), unit);
        }
        if let Some(case) = stage.pointer_mut("/unit/case") {
            typed_case(case);
        }
    }
}

/// A case an `exhibit.run/1` unit record names by its label alone (`B,H,S,D dtype [causal]`),
/// given the typed shape, element type and masking the label says.
fn typed_case(case: &mut Value) {
    let Some(label) = case.get("label").and_then(Value::as_str) else {
        return;
    };
    let mut words = label.split_whitespace();
    let Some(shape) = words.next().and_then(parse_shape) else {
        return;
    };
    let dtype = words.next().map(str::to_string);
    let causal = words.next() == Some("causal");
    let Ok(shape) = serde_json::to_value(shape) else {
        return;
    };
    if let Some(fields) = case.as_object_mut() {
        fields.entry("shape").or_insert(shape);
        if let Some(dtype) = dtype {
            fields.entry("dtype").or_insert(dtype.into());
        }
        fields.entry("causal").or_insert(causal.into());
    }
}

/// `B,H,S,D` as the harness's `--shape` takes it.
fn parse_shape(text: &str) -> Option<parsers::harness::Shape> {
    let mut it = text.split(',').map(|p| p.trim().parse::<u32>().ok());
    let shape = parsers::harness::Shape {
        batch: it.next()??,
        heads: it.next()??,
        seq_len: it.next()??,
        head_dim: it.next()??,
    };
    it.next().is_none().then_some(shape)
}

/// What an `exhibit.run/1` stage says about its unit besides the record.
#[derive(Deserialize)]
struct Argv {
    kind: StageKind,
    #[serde(default)]
    arch: Option<String>,
    #[serde(default)]
    command: Vec<String>,
}

/// The unit an `exhibit.run/1` stage ran, as far as its command line says.
fn unit_of(stage: &Argv) -> Unit {
    let command = &stage.command;
    let mut unit = Unit {
        arch: stage.arch.clone(),
        ..Unit::default()
    };
    unit.target = match stage.kind {
        StageKind::Compile | StageKind::Sass | StageKind::Report => TargetKind::Tool,
        StageKind::Baseline => TargetKind::Baseline,
        _ => TargetKind::Harness,
    };
    if stage.kind.is_sanitizer() {
        let check = match stage.kind {
            StageKind::Racecheck => parsers::Tool::Racecheck,
            StageKind::Initcheck => parsers::Tool::Initcheck,
            StageKind::Synccheck => parsers::Tool::Synccheck,
            _ => parsers::Tool::Memcheck,
        };
        unit.wrapper = Some(Wrapper::ComputeSanitizer { check });
    } else if stage.kind == StageKind::Profile {
        unit.wrapper = Some(Wrapper::Ncu);
    }
    let mut shape = None;
    let mut dtype = None;
    let mut causal = false;
    let mut defines = BTreeMap::new();
    let mut args = command.iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| -> Option<String> {
            if arg == flag {
                args.next().cloned()
            } else {
                arg.strip_prefix(flag)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(str::to_string)
            }
        };
        if let Some(v) = value("--shape") {
            shape = Some(v);
        } else if let Some(v) = value("--dtype") {
            dtype = Some(v);
        } else if let Some(v) = value("--kernel") {
            unit.kernel = Some(v);
        } else if let Some(v) = value("--mode") {
            unit.mode = Some(v);
        } else if let Some(v) = value("--launches") {
            unit.launches = v.parse().ok();
        } else if arg == "--causal" {
            causal = true;
        } else if stage.kind == StageKind::Compile {
            if let Some(define) = arg.strip_prefix("-D").filter(|d| !d.is_empty()) {
                let (name, value) = define.split_once('=').unwrap_or((define, "1"));
                defines.insert(name.to_string(), value.to_string());
            } else if let Some(arch) = arg.strip_prefix("-arch=") {
                unit.arch = Some(arch.to_string());
            } else if let Some(n) = arg.strip_prefix("-maxrregcount=") {
                unit.max_registers = n.parse().ok();
            } else if arg.ends_with(".cu") && unit.source.is_none() {
                unit.source = Some(arg.clone());
            }
        }
    }
    unit.defines = defines;
    if let Some(shape) = shape {
        let mut label = shape;
        if let Some(d) = dtype {
            label.push(' ');
            label.push_str(&d);
        }
        if causal {
            label.push_str(" causal");
        }
        unit.case = Some(Case {
            name: String::new(),
            label,
            ..Case::default()
        });
    }
    unit
}

#[cfg(test)]
mod tests {
    use crate::{run::Run, run::TargetKind, run::Wrapper};

    /// A manifest of `schema` with one memcheck stage of the built-in harness, without a unit
    /// record.
    fn manifest(schema: &str) -> String {
        serde_json::json!({
            "schema": schema, "id": "r", "pipeline": "pipeline.yaml",
            "started": "2026-11-22T10:15:00Z", "finished": null, "interrupted": false,
            "git": null, "inputs": {},
            "environment": {"os": "linux", "tools": {}, "toolchain_source": null, "driver": null,
                "gpus": [], "gpu_unavailable": null, "counters_permitted": null},
            "stages": [{"name": "memcheck", "kind": "memcheck", "config": "small",
                "arch": "sm_90", "status": "skipped", "reason": "no GPU",
                "command": ["compute-sanitizer", "--tool", "memcheck", "runner", "harness",
                    "--kernel", "attention_fwd_f16", "--shape", "2,8,512,64", "--dtype", "f16",
                    "--mode", "once"],
                "exit_code": null, "duration_ms": 0, "cached_from": null, "input_hash": null,
                "logs": []}]
        })
        .to_string()
    }

    #[test]
    fn a_run_1_stage_without_a_unit_gets_the_one_its_command_implies() {
        let run: Run = serde_json::from_str(&manifest(super::SCHEMA)).expect("reads");
        let unit = run.stages[0].unit();
        assert_eq!(unit.target, TargetKind::Harness);
        assert_eq!(
            unit.wrapper,
            Some(Wrapper::ComputeSanitizer {
                check: parsers::Tool::Memcheck
            })
        );
        assert_eq!(unit.kernel.as_deref(), Some("attention_fwd_f16"));
        assert_eq!(unit.mode.as_deref(), Some("once"));
        let case = unit.case.as_ref().expect("a case");
        assert_eq!(case.label, "2,8,512,64 f16");
        // Typed from its label, as a case of today's runner is recorded.
        let shape = case.shape.as_ref().expect("a typed shape");
        let dims = (shape.batch, shape.heads, shape.seq_len, shape.head_dim);
        assert_eq!(dims, (2, 8, 512, 64));
        assert_eq!(
            (case.dtype.as_deref(), case.causal),
            (Some("f16"), Some(false))
        );
        assert_eq!(unit.arch.as_deref(), Some("sm_90"));
        // Written back, it is a manifest of the same schema whose stage records its unit.
        let again: Run = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(again, run);
    }

    #[test]
    fn a_run_2_stage_must_record_its_unit() {
        let error = serde_json::from_str::<Run>(&manifest(crate::run::RUN_SCHEMA))
            .expect_err("a stage without its unit");
        assert!(
            error.to_string().contains("missing field `unit`"),
            "{error}"
        );
    }
}
