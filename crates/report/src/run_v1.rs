//! Manifests written before the typed unit record ([`crate::Unit`]) held only each stage's argv.
//! This is the one place that reads such an argv back, so that stored runs (the committed
//! reference runs among them) render as they did; everything else reads [`crate::Stage::unit`].

use std::collections::BTreeMap;

use crate::join::is_sanitizer;
use crate::run::{Case, Stage, StageKind, TargetKind, Unit, Wrapper};

/// The unit an older manifest's stage ran, as far as its command line says.
pub fn unit_of(stage: &Stage) -> Unit {
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
    if is_sanitizer(stage.kind) {
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
        });
    }
    unit
}
