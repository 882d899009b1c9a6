//! The environment section (GPU, driver, toolkit, tools) and the closing next steps.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::diagnosis::Level;
use crate::run::Run;
use crate::text::{md_code, md_text};

pub(super) fn environment(out: &mut String, a: &Analysis, run: &Run) {
    let Some(env) = &a.environment else {
        return;
    };
    let _ = writeln!(out, "## Environment\n");
    let _ = writeln!(out, "| Item | Value |");
    let _ = writeln!(out, "|---|---|");
    if env.gpus.is_empty() {
        let _ = writeln!(
            out,
            "| GPU | none{} |",
            env.gpu_unavailable
                .as_deref()
                .map(|r| format!(" ({})", md_text(r)))
                .unwrap_or_default()
        );
    }
    for g in &env.gpus {
        let mut parts = vec![g.name.clone()];
        if let Some(cc) = &g.compute_capability {
            parts.push(format!("sm_{}", cc.replace('.', "")));
        }
        if let Some(n) = g.sm_count {
            parts.push(format!("{n} SMs"));
        }
        if let Some(m) = g.memory_mib {
            parts.push(format!("{m} MiB"));
        }
        if let Some(c) = g.sm_clock_mhz {
            parts.push(format!("SM clock {c} MHz"));
        }
        if let Some(e) = &g.ecc {
            parts.push(format!("ECC {e}"));
        }
        if let Some(m) = &g.mig {
            parts.push(format!("MIG {m}"));
        }
        let _ = writeln!(out, "| GPU | {} |", md_text(&parts.join(", ")));
    }
    if let Some(d) = &env.driver {
        let _ = writeln!(out, "| Driver | {} |", md_text(d));
    }
    if let Some(p) = env.counters_permitted {
        let _ = writeln!(
            out,
            "| Performance counters | {} |",
            if p { "permitted" } else { "not permitted" }
        );
    }
    for (tool, version) in &env.tools {
        let _ = writeln!(out, "| {} | {} |", md_text(tool), md_text(version));
    }
    if let Some(s) = &env.toolchain_source {
        let _ = writeln!(out, "| Toolchain | {} |", md_text(s));
    }
    if let Some(failed) = &env.provisioning_failed {
        let _ = writeln!(out, "| Toolchain | failed to {} |", md_text(failed));
    }
    if let Some(git) = &run.git {
        let _ = writeln!(
            out,
            "| Commit | `{}`{} |",
            git.commit,
            if git.dirty { " (dirty)" } else { "" }
        );
    }
    if let Some(host) = &env.host {
        let _ = writeln!(out, "| Host | {} (`--host`) |", md_code(host));
    }
    let _ = writeln!(out, "| OS | {} |", md_text(&env.os));
    if !env.preflight_cached.is_empty() {
        let _ = writeln!(
            out,
            "| Preflight | from its cache of earlier runs (nothing they depend on changed): {} |",
            md_text(&env.preflight_cached.join(", "))
        );
    }
    let _ = writeln!(out);
}

pub(super) fn next_steps(out: &mut String, a: &Analysis) {
    let _ = writeln!(out, "## Next steps\n");
    let mut n = 0;
    let mut step = |out: &mut String, text: String| {
        n += 1;
        let _ = writeln!(out, "{n}. {text}");
    };
    for d in a.diagnoses.iter().filter(|d| d.level > Level::Note) {
        // The first sentence of the first help: the step to take.
        let first = d
            .help
            .first()
            .map(|h| h.first_sentence().markdown())
            .unwrap_or_default();
        step(
            out,
            format!(
                "{}{}: {}.",
                d.title.markdown(),
                d.location
                    .as_ref()
                    .map(|l| format!(" ({})", md_code(&l.to_string())))
                    .unwrap_or_default(),
                first
            ),
        );
    }
    for u in &a.verdict.unconcluded {
        step(
            out,
            format!(
                "Re-run {}{}: it {}{}.",
                md_code(&u.stage),
                u.config
                    .as_deref()
                    .map(|c| format!(" on {}", md_code(c)))
                    .unwrap_or_default(),
                md_text(&u.what),
                u.reason
                    .as_deref()
                    .map(|r| format!(" ({})", md_text(r)))
                    .unwrap_or_default()
            ),
        );
    }
    let mut reasons: Vec<String> = Vec::new();
    for nr in &a.verdict.not_run {
        if !reasons.contains(&nr.reason) {
            reasons.push(nr.reason.clone());
        }
    }
    for reason in reasons {
        let stages: Vec<String> = a
            .verdict
            .not_run
            .iter()
            .filter(|n| n.reason == reason)
            .map(|n| n.stage.clone())
            .collect();
        let mut stages = stages;
        stages.dedup();
        step(
            out,
            format!(
                "Run {} where they can run: skipped here ({}).",
                crate::text::join_words(&stages.iter().map(|s| md_code(s)).collect::<Vec<_>>()),
                md_text(&reason)
            ),
        );
    }
    if n == 0 {
        let _ = writeln!(out, "Nothing to fix: every stage that ran is clean.");
    }
    let _ = writeln!(out);
}
