//! SARIF, JUnit and JSON renderings of a real fault: valid, located at the .cu line, with the
//! fingerprints code scanning tracks alerts by.

use report::{OutputFormat, StageKind, render};

use crate::support::{assert_deterministic_text, compile, evidence, sanitizer};

fn race() -> report::Evidence {
    evidence(
        "race",
        &[
            compile("sm90", "ptxas/device_race.log"),
            sanitizer(
                StageKind::Racecheck,
                "sm90",
                "compute-sanitizer/racecheck_race.log",
            ),
        ],
        &["crates/parsers/fixtures/programs/race.cu"],
    )
}

#[test]
fn sarif_locates_each_root_cause_at_its_cu_line_with_a_fingerprint() {
    let text = render(&race(), OutputFormat::Sarif);
    assert_deterministic_text(&text);
    let sarif: serde_json::Value = serde_json::from_str(&text).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    let results = run["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for r in results {
        let id = r["ruleId"].as_str().expect("ruleId");
        assert!(rules.contains(&id), "{id} is not a declared rule");
        assert_eq!(
            rules.get(r["ruleIndex"].as_u64().expect("ruleIndex") as usize),
            Some(&id)
        );
        assert!(
            r["partialFingerprints"]["exhibitFingerprint/v1"]
                .as_str()
                .is_some_and(|f| f.len() == 16)
        );
    }
    let race = results
        .iter()
        .find(|r| r["ruleId"] == "shared-memory-race")
        .expect("a race result");
    let location = &race["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"],
        "crates/parsers/fixtures/programs/race.cu"
    );
    assert!(location["region"]["startLine"].as_u64().is_some());
    insta::assert_snapshot!("race_sarif", text);
}

#[test]
fn junit_fails_the_stage_with_findings() {
    let text = render(&race(), OutputFormat::Junit);
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut failures = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e)) if e.name().as_ref() == "failure" => {
                failures += 1
            }
            Ok(_) => {}
            Err(e) => panic!("JUnit is not well-formed XML: {e}\n{text}"),
        }
    }
    assert_eq!(failures, 1, "{text}");
    assert!(
        text.contains(r#"<testsuite name="racecheck" tests="1" failures="1""#),
        "{text}"
    );
    insta::assert_snapshot!("race_junit", text);
}

#[test]
fn json_report_carries_verdict_and_diagnoses() {
    let text = render(&race(), OutputFormat::Json);
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["schema"], "exhibit.report/1");
    assert_eq!(json["verdict"]["kind"], "failing");
    assert_eq!(json["diagnoses"][0]["rule"], "shared-memory-race");
    insta::assert_json_snapshot!("race_json", json, {
        ".run.started" => "[time]",
        ".run.finished" => "[time]",
    });
}

#[test]
fn rendering_is_deterministic() {
    let ev = race();
    for format in [
        OutputFormat::Markdown,
        OutputFormat::Json,
        OutputFormat::Sarif,
        OutputFormat::Junit,
    ] {
        assert_eq!(render(&ev, format), render(&ev, format));
    }
}
