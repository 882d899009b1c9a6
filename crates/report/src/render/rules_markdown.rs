//! `docs/rules.md`: every rule of [`RULES`] under a heading of its id, so that a SARIF rule's
//! `helpUri` can point at its section.

use crate::rules::{Proposes, RULES, Role};

/// The rules page, Markdown, from the rule table alone.
pub fn render() -> String {
    let mut out = String::from(
        "# Rules\n\n\
         Every rule Exhibit's report applies, in the order they run. A rule turns evidence into \
         drafts; the fold makes one root cause per fault from them. SARIF names each result's \
         rule by the id below.\n\
         This page is generated from the rule table (`crates/report/src/rules/mod.rs`) and a \
         test keeps it current (`EXHIBIT_BLESS=1` rewrites it).\n",
    );
    for rule in RULES {
        let id = rule.id.as_str();
        out.push_str(&format!(
            "\n## {id}\n\n**{}.** {}\n\n",
            rule.name, rule.description
        ));
        out.push_str(&format!("- What it is: {}.\n", role(rule.role)));
        if rule.slows {
            out.push_str("- Its warnings are measured performance causes: they make a run Slow.\n");
        }
        if let Some(experiment) = experiment(rule.proposes) {
            out.push_str(&format!("- The experiment it calls for: {experiment}.\n"));
        }
        out.push_str(&format!("- Source: `{}`.\n", rule.module));
    }
    out
}

fn role(role: Role) -> &'static str {
    match role {
        Role::SitedFault { unplaced: true, .. } => {
            "a fault, a root cause of its own even where the evidence names no place"
        }
        Role::SitedFault { .. } => "a fault a tool located: a root cause of its own",
        Role::FailingTest => {
            "a failing test: a root cause unless a tool located a fault in its config, whose \
             symptom it then is"
        }
        Role::Symptom { .. } => "a symptom, attached to the fault that explains it",
        Role::Performance => "a performance cause, beside the faults",
        Role::Context => "a fact that qualifies the other diagnoses, shown as a note",
        Role::CatchAll => {
            "what a tool reported that no other rule explains, alone only where no fault of its \
             config stands"
        }
        Role::Comparison => "a comparison of two runs (`runner diff`)",
    }
}

fn experiment(proposes: Proposes) -> Option<&'static str> {
    match proposes {
        Proposes::Hypothesis => None,
        Proposes::Tail => Some("the failing config again at sizes around the tile"),
        Proposes::Race => Some("identical runs of the racing config, their outputs compared"),
    }
}
