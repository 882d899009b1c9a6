//! SARIF 2.1.0 for code scanning: one result per diagnosis, located at its `.cu` file and line
//! (relative to the repository, so GitHub annotates the source), with the diagnosis fingerprint
//! in `partialFingerprints` so an alert survives unrelated edits.

use serde_json::{Value, json};

use crate::analysis::Analysis;
use crate::diagnosis::{Diagnosis, Level};
use crate::render::{in_repository, pipeline_dir};
use crate::rules::RULES;
use crate::run::Run;

/// The `partialFingerprints` key Exhibit's fingerprints go under.
pub const FINGERPRINT_KEY: &str = "exhibitFingerprint/v1";

/// Where Exhibit's own documentation lives, for the SARIF driver's `informationUri` and each
/// rule's `helpUri`. The project has no fixed public address: whoever serves it says where (the
/// GitHub Action derives it from the repository it was fetched from).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Home {
    /// The tool's home page: the driver's `informationUri`.
    pub information_uri: Option<String>,
    /// The page listing the rules (`docs/rules.md` as served): each rule's `helpUri` is this
    /// page at the rule's id.
    pub rules_uri: Option<String>,
}

/// Renders the SARIF log, pretty-printed, with a trailing newline.
pub fn render(a: &Analysis, run: Option<&Run>, home: &Home) -> String {
    render_diagnoses(&a.diagnoses, run, home)
}

/// Renders a SARIF log of any diagnoses (a run's, or those `explain` found).
pub fn render_diagnoses(diagnoses: &[Diagnosis], run: Option<&Run>, home: &Home) -> String {
    let document = crate::render::json::strip(document(diagnoses, run, home));
    let mut text = serde_json::to_string_pretty(&document)
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The SARIF log as a value.
pub fn document(diagnoses: &[Diagnosis], run: Option<&Run>, home: &Home) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            let mut rule = json!({
                "id": r.id,
                "shortDescription": { "text": r.name },
                "fullDescription": { "text": r.description },
                "help": { "text": format!("{} Rule source: {}.", r.description, r.module) },
                "properties": { "tags": ["cuda", "gpu"] },
            });
            // SARIF wants `name` left out where it would only repeat the id (`bottleneck`).
            let name = pascal(r.id.as_str());
            if !name.eq_ignore_ascii_case(r.id.as_str())
                && let Some(obj) = rule.as_object_mut()
            {
                obj.insert("name".to_string(), json!(name));
            }
            if let Some(page) = &home.rules_uri
                && let Some(obj) = rule.as_object_mut()
            {
                obj.insert(
                    "helpUri".to_string(),
                    json!(format!("{page}#{}", r.id.as_str())),
                );
            }
            rule
        })
        .collect();
    // A note whose evidence names no source file would only annotate the pipeline's first
    // line: it stays in the Markdown and JSON reports, not in code scanning.
    let base = run.map(pipeline_dir).unwrap_or_default();
    let results: Vec<Value> = diagnoses
        .iter()
        .filter(|d| d.level != Level::Note || placement(d, &base, None).0.is_some())
        .map(|d| result(d, run))
        .collect();
    let mut sarif_run = json!({
        "tool": {
            "driver": {
                "name": "exhibit",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }
        },
        "columnKind": "utf16CodeUnits",
        "originalUriBaseIds": {
            "%SRCROOT%": { "description": { "text": "The root of the repository the run was made in." } }
        },
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
    if let Some(uri) = &home.information_uri
        && let Some(driver) = sarif_run
            .pointer_mut("/tool/driver")
            .and_then(Value::as_object_mut)
    {
        driver.insert("informationUri".to_string(), json!(uri));
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [sarif_run],
    })
}

fn result(d: &Diagnosis, run: Option<&Run>) -> Value {
    let level = match d.level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Note => "note",
    };
    // SARIF viewers show `message.text` as plain text: the primary message, the notes, the
    // help.
    let mut text = format!("{}.", d.title.plain());
    for note in &d.notes {
        text.push(' ');
        text.push_str(&note.plain());
    }
    for help in &d.help {
        text.push_str(" Fix: ");
        text.push_str(&help.plain());
    }
    if let Some(e) = d.evidence.iter().find(|e| !e.excerpt.is_empty()) {
        text.push_str(&format!(
            "\nEvidence ({}): {}",
            e.stage,
            e.excerpt.first().cloned().unwrap_or_default()
        ));
    }
    let base = run.map(pipeline_dir).unwrap_or_default();
    let mut locations = Vec::new();
    let (placed, said) = placement(d, &base, run);
    if let Some((uri, line)) = placed {
        let physical = json!({
            "artifactLocation": { "uri": uri, "uriBaseId": "%SRCROOT%" },
            "region": { "startLine": line.max(1) },
        });
        let mut location = json!({ "physicalLocation": physical });
        if let (Some(kernel), Some(obj)) = (&d.kernel, location.as_object_mut()) {
            obj.insert(
                "logicalLocations".to_string(),
                json!([{ "name": kernel, "kind": "function" }]),
            );
        }
        locations.push(location);
    }
    if let Some(said) = said {
        text.push(' ');
        text.push_str(said);
    }
    // The supporting spans, each with its label as plain text.
    let related: Vec<Value> = d
        .secondary_spans()
        .filter_map(|s| Some((s, in_repository(&base, &s.location.file)?)))
        .enumerate()
        .map(|(id, (s, uri))| {
            let mut physical = json!({
                "artifactLocation": { "uri": uri, "uriBaseId": "%SRCROOT%" }
            });
            if let (Some(line), Some(obj)) = (s.location.line, physical.as_object_mut()) {
                obj.insert("region".to_string(), json!({ "startLine": line.max(1) }));
            }
            json!({
                "id": id,
                "physicalLocation": physical,
                "message": { "text": s.label.plain() },
            })
        })
        .collect();
    if let (Some(label), Some(obj)) = (
        d.spans.iter().find(|s| s.primary).map(|s| s.label.plain()),
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

/// Where a result is placed, and what its message must add when the place is not the one the
/// evidence names: its own line; else a supporting place's line; else its file's first line;
/// else the pipeline's first line. Code scanning rejects a whole file for one result with no
/// location.
fn placement(
    d: &Diagnosis,
    base: &str,
    run: Option<&Run>,
) -> (Option<(String, u32)>, Option<&'static str>) {
    let own = d
        .location
        .as_ref()
        .and_then(|l| Some((in_repository(base, &l.file)?, l.line)));
    if let Some((uri, Some(line))) = &own {
        return (Some((uri.clone(), *line)), None);
    }
    if let Some((uri, line)) = d
        .secondary_spans()
        .find_map(|s| Some((in_repository(base, &s.location.file)?, s.location.line?)))
    {
        return (
            Some((uri, line)),
            Some("(Placed at a supporting place: the evidence names no line of its own.)"),
        );
    }
    if let Some((uri, None)) = own {
        return (
            Some((uri, 1)),
            Some("(Placed at the file's first line: the evidence names no line in it.)"),
        );
    }
    // The pipeline file, where the manifest names one inside the repository.
    match run.and_then(|r| in_repository("", &r.pipeline)) {
        Some(uri) if !uri.is_empty() => (
            Some((uri, 1)),
            Some("(Placed at the pipeline: the evidence names no source file.)"),
        ),
        _ => (None, None),
    }
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
