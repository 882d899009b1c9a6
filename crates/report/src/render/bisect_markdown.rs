//! A bisection as Markdown: the answer first, then the evidence that flipped, the root cause as
//! BAD's report writes it, every step, and the notes. `summary` is the short form for a
//! pull-request comment.

use std::fmt::Write;

use crate::bisect::{Answer, Bisection, Commit, Sought, Step, StepVerdict};
use crate::text::{md_cell, md_code, md_text};

pub fn render(b: &Bisection) -> String {
    let mut out = String::new();
    head(&mut out, b);
    flipped(&mut out, b);
    if let Some(Sought::Cause(c)) = &b.sought {
        let _ = writeln!(out, "## The root cause, as BAD's report writes it\n");
        let _ = writeln!(
            out,
            "### {}\n\nrule {}{}{}\n",
            c.title,
            md_code(&c.rule),
            c.kernel
                .as_deref()
                .map(|k| format!(" · kernel {}", md_code(k)))
                .unwrap_or_default(),
            c.location
                .as_ref()
                .map(|l| format!(" · {}", md_code(&l.to_string())))
                .unwrap_or_default()
        );
        if !c.explanation.is_empty() {
            let _ = writeln!(out, "{}\n", c.explanation);
        }
        if !c.fix.is_empty() {
            let _ = writeln!(out, "**Fix:** {}\n", c.fix);
        }
    }
    steps(&mut out, b);
    if !b.notes.is_empty() {
        let _ = writeln!(out, "## Notes\n");
        for note in &b.notes {
            let _ = writeln!(out, "- {note}");
        }
        let _ = writeln!(out);
    }
    out
}

/// The answer, what was looked for, and what it cost, with one line per step.
pub fn summary(b: &Bisection) -> String {
    let mut out = String::new();
    head(&mut out, b);
    let _ = writeln!(out, "| Commit | Verdict | Why |\n|---|---|---|");
    for s in &b.steps {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            md_code(&s.commit.short),
            verdict_word(s),
            md_cell(&s.why)
        );
    }
    out
}

fn head(out: &mut String, b: &Bisection) {
    let _ = writeln!(out, "# Exhibit bisect: {}\n", b.headline());
    match &b.answer {
        Answer::Found { first_bad, .. } => {
            let _ = writeln!(out, "**First bad commit:** {}\n", commit_line(first_bad));
        }
        Answer::OneOf { commits, .. } => {
            let _ = writeln!(
                out,
                "**The first bad commit is one of these** (the ones before the last could not be judged):\n"
            );
            for c in commits {
                let _ = writeln!(out, "- {}", commit_line(c));
            }
            let _ = writeln!(out);
        }
        Answer::Unanswered { why } => {
            let _ = writeln!(out, "**No answer:** {}\n", md_text(why));
        }
        Answer::Interrupted => {
            let _ = writeln!(
                out,
                "**Interrupted** before an answer; the steps below ran.\n"
            );
        }
    }
    if let Some(sought) = &b.sought {
        let _ = writeln!(out, "Looked for: {}.\n", sought.line());
    }
    let states = match b.distinct_inputs {
        0 => String::new(),
        n => format!(", {n} distinct state{} of the pipeline's inputs", plural(n)),
    };
    let _ = writeln!(
        out,
        "Between GOOD {} and BAD {} (`{}`): {} commit{}{states}; {} pipeline run{}, {}.\n",
        md_code(&b.good.short),
        md_code(&b.bad.short),
        md_text(&b.pipeline),
        b.commits,
        plural(b.commits),
        b.runs,
        plural(b.runs),
        crate::text::duration(b.seconds)
    );
}

fn flipped(out: &mut String, b: &Bisection) {
    let (last_good, first_bad) = match &b.answer {
        Answer::Found {
            first_bad,
            last_good,
        } => (last_good, first_bad),
        Answer::OneOf { commits, last_good } => match commits.last() {
            Some(last) => (last_good, last),
            None => return,
        },
        _ => return,
    };
    let step = |c: &Commit| b.steps.iter().rev().find(|s| s.commit.hash == c.hash);
    let _ = writeln!(out, "## The evidence that flipped\n");
    for (c, fallback) in [
        (
            last_good,
            "good by the same inputs as a commit whose run showed it good",
        ),
        (first_bad, ""),
    ] {
        match step(c) {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "- {} ({}): {}",
                    md_code(&c.short),
                    verdict_word(s),
                    s.why
                );
                super::markdown::causes::excerpt_block(out, &s.excerpt);
            }
            None if !fallback.is_empty() => {
                let _ = writeln!(out, "- {}: {fallback}", md_code(&c.short));
            }
            None => {}
        }
    }
    if !out.ends_with("\n\n") {
        let _ = writeln!(out);
    }
}

fn steps(out: &mut String, b: &Bisection) {
    if b.steps.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Steps\n");
    let _ = writeln!(
        out,
        "| # | Commit | Subject | Verdict | Why | Run | Units (cached) | Time |"
    );
    let _ = writeln!(out, "|--:|---|---|---|---|---|--:|--:|");
    for (i, s) in b.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            md_code(&s.commit.short),
            md_cell(&md_text(&s.commit.subject)),
            verdict_word(s),
            md_cell(&s.why),
            s.run.as_deref().map_or_else(|| "none".to_string(), md_code),
            if s.run.is_some() {
                format!("{} ({})", s.units, s.cached)
            } else {
                "0".to_string()
            },
            crate::text::duration(s.seconds)
        );
    }
    let _ = writeln!(out);
}

fn verdict_word(s: &Step) -> String {
    let word = match s.verdict {
        StepVerdict::Good => "✅ good",
        StepVerdict::Bad => "❌ bad",
        StepVerdict::Skip => "⏭ skip",
        StepVerdict::Ambiguous => "❔ ambiguous",
    };
    if s.role == "candidate" {
        word.to_string()
    } else {
        format!("{word} ({})", s.role.to_uppercase())
    }
}

fn commit_line(c: &Commit) -> String {
    let mut line = format!(
        "{} {} ({})",
        md_code(&c.short),
        md_text(&c.subject),
        md_text(&c.date)
    );
    if !c.files.is_empty() {
        let shown: Vec<String> = c.files.iter().take(12).map(|f| md_code(f)).collect();
        let _ = write!(line, "; changed {}", shown.join(", "));
        if c.files.len() > shown.len() {
            let _ = write!(line, " and {} more", c.files.len() - shown.len());
        }
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
