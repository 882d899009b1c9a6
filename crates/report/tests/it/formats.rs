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

/// Code scanning rejects a whole SARIF file for one result with no location: every result of a
/// run with notes and causes the evidence places at no line (occupancy, compiler warnings at a
/// toolkit header) is placed all the same, and says where and why. A pipeline in a subfolder
/// places its files relative to the repository root.
#[test]
fn sarif_places_every_result_relative_to_the_repository_root() {
    let mut ev = race();
    ev.run.pipeline = "bench/gpu/pipeline.yaml".into();
    let sarif: serde_json::Value =
        serde_json::from_str(&render(&ev, OutputFormat::Sarif)).expect("SARIF is JSON");
    let run = &sarif["runs"][0];
    assert!(
        run["originalUriBaseIds"]["%SRCROOT%"].is_object(),
        "{run:#}"
    );
    let results = run["results"].as_array().expect("results");
    assert!(results.len() > 1, "{results:#?}");
    for r in results {
        let physical = &r["locations"][0]["physicalLocation"];
        let uri = physical["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or_else(|| panic!("a result with no location: {r:#}"));
        assert!(uri.starts_with("bench/gpu/"), "{uri}: {r:#}");
        assert_eq!(physical["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert!(
            physical["region"]["startLine"]
                .as_u64()
                .is_some_and(|l| l >= 1),
            "{r:#}"
        );
    }
    let race = results
        .iter()
        .find(|r| r["ruleId"] == "shared-memory-race")
        .expect("a race result");
    assert_eq!(
        race["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "bench/gpu/crates/parsers/fixtures/programs/race.cu"
    );
    // A note the evidence places in a file but at no line (ptxas's occupancy figures, on the
    // captured clean run) is placed at the file's first line, and says so.
    let mut ev = crate::clean::clean_gpu();
    ev.run.pipeline = "bench/gpu/pipeline.yaml".into();
    let sarif: serde_json::Value =
        serde_json::from_str(&render(&ev, OutputFormat::Sarif)).expect("SARIF is JSON");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let occupancy = results
        .iter()
        .find(|r| r["ruleId"] == "occupancy-limit")
        .expect("the occupancy note");
    let physical = &occupancy["locations"][0]["physicalLocation"];
    assert_eq!(
        physical["artifactLocation"]["uri"],
        "bench/gpu/kernel/attention.cu"
    );
    assert_eq!(physical["region"]["startLine"], 1);
    assert!(
        occupancy["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("(Placed at the file's first line")),
        "{occupancy:#}"
    );
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

/// Test publishers show JUnit's messages as plain text and place a case by its `file` and
/// `line`: the race's case is placed at its `.cu` line relative to the repository root, and no
/// Markdown escape or code span reaches the XML.
#[test]
fn junit_cases_are_plain_text_and_placed_at_their_site() {
    let mut ev = race();
    ev.run.pipeline = "bench/pipeline.yaml".into();
    let text = render(&ev, OutputFormat::Junit);
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut placed = Vec::new();
    let mut texts = String::new();
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e)) if e.name().as_ref() == "testcase" => {
                let attr = |name: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == name)
                        .map(|a| a.value.into_owned())
                };
                if let (Some(file), Some(line)) = (attr("file"), attr("line")) {
                    placed.push((file, line));
                }
            }
            Ok(quick_xml::events::Event::Start(e)) if e.name().as_ref() == "failure" => {
                for a in e.attributes().flatten() {
                    texts.push_str(&a.value);
                }
            }
            Ok(quick_xml::events::Event::Text(t)) => texts.push_str(&t),
            Ok(_) => {}
            Err(e) => panic!("JUnit is not well-formed XML: {e}\n{text}"),
        }
    }
    assert!(
        placed.iter().any(
            |(file, line)| file == "bench/crates/parsers/fixtures/programs/race.cu"
                && line.parse::<u32>().is_ok()
        ),
        "{placed:?}\n{text}"
    );
    assert!(!texts.is_empty(), "{text}");
    for markdown in ["\\[", "\\_", "`"] {
        assert!(!texts.contains(markdown), "{markdown} in {texts}");
    }
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
