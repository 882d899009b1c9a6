//! The diagnoses in the report: each root cause with its one-line summary, places, evidence
//! and smoking-gun excerpt, the experiments that tested them, and the notes below them.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::analysis::Analysis;
use crate::diagnosis::{Diagnosis, Level};
use crate::text::{code_fence, html_text, md_cell, md_code, md_text};

use super::seconds;

/// The one-line summary under a diagnosis's heading: level, confidence, kernels, configs,
/// location and rule.
pub(crate) fn diagnosis_meta(d: &Diagnosis) -> String {
    let mut meta = vec![
        d.level.as_str().to_string(),
        format!("confidence {}", d.confidence.as_str()),
    ];
    if d.untested() {
        meta.push("untested".to_string());
    }
    if !d.kernels.is_empty() {
        let kernels = d
            .kernels
            .iter()
            .map(|k| md_code(k))
            .collect::<Vec<_>>()
            .join(", ");
        // The kernel first, then the inlined helpers the accesses are in.
        meta.push(match crate::diagnosis::inlined_in(&d.helpers) {
            Some(inlined) => format!("{kernels}, {}", inlined.markdown()),
            None => kernels,
        });
    }
    if !d.configs.is_empty() {
        meta.push(format!(
            "{} {}",
            if d.configs.len() == 1 {
                "config"
            } else {
                "configs"
            },
            d.configs
                .iter()
                .map(|c| md_code(c))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(loc) = &d.location {
        meta.push(md_code(&loc.to_string()));
    }
    if let Some(call) = &d.call_site {
        meta.push(format!("launched from {}", md_code(&call.to_string())));
    }
    meta.push(format!("rule {}", md_code(d.rule.as_str())));
    meta.join(" · ")
}

/// What one more run needs to test a diagnosis's suggestion, while no run has.
pub(crate) fn untested(d: &Diagnosis) -> Option<&crate::hypothesis::Settle> {
    d.hypothesis
        .as_ref()
        .filter(|h| h.untested())
        .and_then(|h| h.settle.as_ref())
}

/// The same in one sentence, for a note or a summary: "Untested: the pipeline names no
/// `registers` knob (add `knobs: registers: { flag: ... }`, `experiments: auto`)."
pub(crate) fn untested_sentence(d: &Diagnosis) -> Option<String> {
    let settle = untested(d)?;
    let paste: Vec<String> = settle.inline().iter().map(|l| md_code(l)).collect();
    Some(if paste.is_empty() {
        format!("Untested: {}.", settle.why)
    } else {
        format!(
            "Untested: {}; one more run settles it with {} in `pipeline.yaml`.",
            settle.why,
            crate::text::join_words(&paste)
        )
    })
}

/// The labelled places of a diagnosis that has supporting ones besides what the summary line
/// names (its place, its helpers, its launch): "Sites: `a.cu:12` (shared-memory race),
/// `a.cu:10` (the write)".
pub(crate) fn sites_line(d: &Diagnosis) -> Option<String> {
    let named = |s: &&crate::diagnosis::Span| {
        s.primary
            || d.call_site.as_ref() == Some(&s.location)
            || d.helpers
                .iter()
                .any(|h| h.location.as_ref() == Some(&s.location))
    };
    if d.secondary_spans().all(|s| named(&s)) {
        return None;
    }
    let sites: Vec<String> = d
        .spans
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                md_code(&s.location.to_string()),
                s.label.markdown()
            )
        })
        .collect();
    Some(format!("Sites: {}.", sites.join(", ")))
}

pub(super) fn root_causes(out: &mut String, a: &Analysis) {
    let causes: Vec<&Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.level > Level::Note)
        .collect();
    if causes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Root causes\n");
    for (i, d) in causes.iter().enumerate() {
        diagnosis_head(out, "###", i + 1, d);
        if let Some(settle) = untested(d) {
            let _ = writeln!(out, "**Untested:** {}.", settle.why);
            let yaml = settle.yaml();
            if yaml.is_empty() {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(
                    out,
                    "One more run settles it, with these lines in `pipeline.yaml`:\n\n```yaml\n{}\n```\n",
                    yaml.join("\n")
                );
            }
        }
        evidence_items(out, d);
    }
}

/// A numbered diagnosis's heading, its line of facts, its sites, its explanation and its fix:
/// the head both the report and `explain` show.
pub(crate) fn diagnosis_head(out: &mut String, heading: &str, number: usize, d: &Diagnosis) {
    let _ = writeln!(out, "{heading} {number}. {}\n", d.title.markdown());
    let _ = writeln!(out, "{}\n", diagnosis_meta(d));
    if let Some(sites) = sites_line(d) {
        let _ = writeln!(out, "{sites}\n");
    }
    let _ = writeln!(out, "{}\n", d.explanation().markdown());
    if !d.fix().is_empty() {
        let _ = writeln!(out, "**Fix:** {}\n", d.fix().markdown());
    }
}

fn evidence_items(out: &mut String, d: &Diagnosis) {
    if d.evidence.is_empty() {
        return;
    }
    let _ = writeln!(out, "Evidence:\n");
    for e in &d.evidence {
        let mut from = vec![format!("**{}**", md_text(&e.stage))];
        if let Some(c) = &e.config {
            from.push(md_code(c));
        }
        if !e.log.is_empty() {
            from.push(md_code(&e.log));
        }
        let _ = writeln!(out, "- {}: {}", from.join(" · "), e.summary.markdown());
        excerpt_block(out, &e.excerpt);
    }
    let _ = writeln!(out);
}

/// Each experiment: the hypothesis it tests, its prediction, its runs, its conclusion and what
/// it cost; then the stress stages' launch searches in the same form.
pub(super) fn experiments(out: &mut String, a: &Analysis) {
    if a.experiments.is_empty() && a.launch_searches.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Experiments\n");
    for c in &a.experiments {
        let kernel = c
            .kernel
            .as_deref()
            .map(|k| format!(" · {}", md_code(k)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "### {}: {}\n\n{}{kernel} · config {}\n",
            c.cause,
            c.outcome.as_str(),
            md_code(c.rule.as_str()),
            md_code(&c.config)
        );
        let _ = writeln!(out, "**Prediction:** {}\n", md_text(&c.prediction));
        let _ = writeln!(out, "| run | outcome | evidence |\n|---|---|---|");
        for r in &c.rows {
            let _ = writeln!(
                out,
                "| {} | {}{} | {} |",
                md_cell(&r.label),
                md_cell(&r.outcome),
                if r.cached { " (cached)" } else { "" },
                r.evidence.as_deref().map(md_code).unwrap_or_default()
            );
        }
        let _ = writeln!(
            out,
            "\n**Conclusion ({}):** {}\n\nCost: {}, {} of them from the cache, {} of unit time.\n",
            c.outcome.as_str(),
            c.sentence.markdown(),
            crate::text::plural(c.runs as u64, "run", "runs"),
            c.cached,
            seconds(c.cost_ms)
        );
    }
    // Searches that found nothing say one thing together: which configs stayed clean, and up
    // to how many launches.
    let (quiet, told): (Vec<_>, Vec<_>) = a
        .launch_searches
        .iter()
        .partition(|s| s.outcome == crate::experiment::Outcome::NotSeen);
    for s in told {
        let tried: Vec<String> = s
            .tried
            .iter()
            .map(|(n, ok)| format!("{n} {}", if *ok { "clean" } else { "fails" }))
            .collect();
        let _ = writeln!(
            out,
            "### Repeated launches: {}\n\nstage {}{}\n\n**Prediction:** if the fault needs \
             repeated launches, the program runs clean at few and fails from some count \
             on.\n\nTried: {}.\n\n**Conclusion ({}):** {}\n",
            s.outcome.as_str(),
            md_code(&s.stage),
            s.config
                .as_deref()
                .map(|c| format!(" · config {}", md_code(c)))
                .unwrap_or_default(),
            tried.join(", "),
            s.outcome.as_str(),
            s.sentence.markdown()
        );
    }
    if let Some(most) = quiet.iter().flat_map(|s| s.tried.iter().map(|t| t.0)).max() {
        let configs: Vec<String> = quiet
            .iter()
            .map(|s| {
                s.config
                    .as_deref()
                    .map(md_code)
                    .unwrap_or_else(|| "the run".into())
            })
            .collect();
        let stages: std::collections::BTreeSet<String> =
            quiet.iter().map(|s| md_code(&s.stage)).collect();
        let _ = writeln!(
            out,
            "### Repeated launches: not seen\n\nstage {} · {}: clean at every count tried, up \
             to {} launches.\n",
            stages.into_iter().collect::<Vec<_>>().join(", "),
            crate::text::plural(configs.len() as u64, "config", "configs"),
            most
        );
        let _ = writeln!(out, "{}\n", configs.join(", "));
    }
}

pub(super) fn notes(out: &mut String, a: &Analysis) {
    let notes: Vec<&Diagnosis> = a
        .diagnoses
        .iter()
        .filter(|d| d.level == Level::Note)
        .collect();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Notes\n");
    // One title per kind of note, with how many kernels (or notes) share it.
    let mut grouped: Vec<(String, Vec<&Diagnosis>)> = Vec::new();
    for d in &notes {
        let title = d.title.markdown();
        match grouped.iter_mut().find(|(t, _)| *t == title) {
            Some((_, same)) => same.push(d),
            None => grouped.push((title, vec![d])),
        }
    }
    let titles: Vec<String> = grouped
        .iter()
        .map(|(title, same)| {
            let kernels: BTreeSet<&str> = same.iter().filter_map(|d| d.kernel.as_deref()).collect();
            let configs: BTreeSet<&str> = same.iter().filter_map(|d| d.config.as_deref()).collect();
            match same.len() {
                1 => title.to_string(),
                n if kernels.len() == n => format!("{title}: {n} kernels"),
                n if configs.len() == n => format!("{title}: {n} configs"),
                n => format!("{title} ({n} notes)"),
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "<details><summary>{}</summary>\n",
        html_text(&crate::text::join_words(&titles))
    );
    for d in notes {
        let _ = writeln!(
            out,
            "- **{}** ({}). {}",
            d.title.markdown(),
            diagnosis_meta(d),
            format!(
                "{} {} {}",
                d.explanation().markdown(),
                d.fix().markdown(),
                untested_sentence(d).unwrap_or_default()
            )
            .trim_end()
        );
        for e in &d.evidence {
            let _ = writeln!(
                out,
                "  - {}{}: {}",
                md_text(&e.stage),
                e.config
                    .as_deref()
                    .map(|c| format!(" {}", md_code(c)))
                    .unwrap_or_default(),
                e.summary.markdown()
            );
        }
    }
    let _ = writeln!(out, "\n</details>\n");
}

/// Raw lines quoted under a list item: an indented code block, fenced longer than any run of
/// backticks in them; nothing when there are none.
pub(crate) fn excerpt_block(out: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let fence = code_fence(lines);
    let _ = writeln!(out, "\n  {fence}text");
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "  {fence}\n");
}
