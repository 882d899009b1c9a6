//! SARIF 2.1.0 for code scanning: one result per diagnosis, located at its `.cu` file and line
//! (relative to the repository, so GitHub annotates the source), with the diagnosis fingerprint
//! in `partialFingerprints` so an alert survives unrelated edits.

use serde_json::{Value, json};

use crate::Run;
use crate::analysis::Analysis;
use crate::diagnosis::{Diagnosis, Level};
use crate::rules::RULES;
use crate::text::plain_text;

/// The `partialFingerprints` key Exhibit's fingerprints go under.
pub const FINGERPRINT_KEY: &str = "exhibitFingerprint/v1";

/// Renders the SARIF log, pretty-printed, with a trailing newline.
pub fn render(a: &Analysis, run: Option<&Run>) -> String {
    render_diagnoses(&a.diagnoses, run)
}

/// Renders a SARIF log of any diagnoses (a run's, or those `explain` found).
pub fn render_diagnoses(diagnoses: &[Diagnosis], run: Option<&Run>) -> String {
    let document = crate::render::json::strip(document(diagnoses, run));
    let mut text = serde_json::to_string_pretty(&document)
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The SARIF log as a value.
pub fn document(diagnoses: &[Diagnosis], run: Option<&Run>) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": pascal(r.id.as_str()),
                "shortDescription": { "text": r.name },
                "fullDescription": { "text": r.description },
                "help": { "text": format!("{} Rule source: {}.", r.description, r.module) },
                "properties": { "tags": ["cuda", "gpu"] },
            })
        })
        .collect();
    let results: Vec<Value> = diagnoses.iter().map(result).collect();
    let mut sarif_run = json!({
        "tool": {
            "driver": {
                "name": "exhibit",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }
        },
        "columnKind": "utf16CodeUnits",
        "results": results,
    });
    if let Some(run) = run
        && let Some(obj) = sarif_run.as_object_mut()
    {
        obj.insert(
            "automationDetails".to_string(),
            json!({ "id": format!("exhibit/{}/{}", run.pipeline, run.id) }),
        );
        if let Some(git) = &run.git {
            obj.insert(
                "properties".to_string(),
                json!({ "commit": git.commit, "dirty": git.dirty }),
            );
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [sarif_run],
    })
}

fn result(d: &Diagnosis) -> Value {
    let level = match d.level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Note => "note",
    };
    // SARIF viewers show `message.text` as plain text: the primary message, the notes, the
    // help.
    let mut text = format!("{}.", plain_text(&d.title));
    for note in &d.notes {
        text.push(' ');
        text.push_str(&plain_text(note));
    }
    for help in &d.help {
        text.push_str(" Fix: ");
        text.push_str(&plain_text(help));
    }
    if let Some(e) = d.evidence.iter().find(|e| !e.excerpt.is_empty()) {
        text.push_str(&format!(
            "\nEvidence ({}): {}",
            e.stage,
            e.excerpt.first().cloned().unwrap_or_default()
        ));
    }
    let mut locations = Vec::new();
    // Only repository files can be annotated; a toolkit header cannot.
    if let Some(loc) = d.location.as_ref().filter(|l| !l.file.starts_with('<')) {
        let mut physical =
            json!({ "artifactLocation": { "uri": loc.file, "uriBaseId": "%SRCROOT%" } });
        if let (Some(line), Some(obj)) = (loc.line, physical.as_object_mut()) {
            obj.insert("region".to_string(), json!({ "startLine": line.max(1) }));
        }
        let mut location = json!({ "physicalLocation": physical });
        if let (Some(kernel), Some(obj)) = (&d.kernel, location.as_object_mut()) {
            obj.insert(
                "logicalLocations".to_string(),
                json!([{ "name": kernel, "kind": "function" }]),
            );
        }
        locations.push(location);
    }
    // The supporting spans, each with its label as plain text.
    let related: Vec<Value> = d
        .secondary_spans()
        .filter(|s| !s.location.file.starts_with('<'))
        .enumerate()
        .map(|(id, s)| {
            let mut physical = json!({
                "artifactLocation": { "uri": s.location.file, "uriBaseId": "%SRCROOT%" }
            });
            if let (Some(line), Some(obj)) = (s.location.line, physical.as_object_mut()) {
                obj.insert("region".to_string(), json!({ "startLine": line.max(1) }));
            }
            json!({
                "id": id,
                "physicalLocation": physical,
                "message": { "text": plain_text(&s.label) },
            })
        })
        .collect();
    if let (Some(label), Some(obj)) = (
        d.spans
            .iter()
            .find(|s| s.primary)
            .map(|s| plain_text(&s.label)),
        locations.first_mut().and_then(Value::as_object_mut),
    ) {
        obj.insert("message".to_string(), json!({ "text": label }));
    }
    let mut result = json!({
        "ruleId": d.rule,
        "ruleIndex": d.rule as usize,
        "level": level,
        "message": { "text": text },
        "locations": locations,
        "partialFingerprints": { FINGERPRINT_KEY: d.fingerprint },
        "properties": {
            "confidence": d.confidence.as_str(),
            "configs": d.configs,
            "kernels": d.kernels,
        },
    });
    if let (false, Some(obj)) = (related.is_empty(), result.as_object_mut()) {
        obj.insert("relatedLocations".to_string(), Value::Array(related));
    }
    result
}

/// `wmma-local-memory` as `WmmaLocalMemory`.
fn pascal(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}
