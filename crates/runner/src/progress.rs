//! The terminal display of a run: one line per unit with its status and elapsed time.
//!
//! Execution reports [`Event`]s and knows nothing about display. On a terminal, [`Terminal`]
//! shows a spinner for the running unit (indicatif) and prints a line when it ends; otherwise
//! it prints plain `stage config arch case  status  elapsed  reason` lines, one per unit, which
//! read well in CI logs.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use report::StageStatus;

/// Something the run wants the user to see.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A line of information (preflight results, provisioning).
    Note(&'a str),
    /// A unit started.
    Started { label: &'a str },
    /// A unit ended.
    Finished {
        label: &'a str,
        status: StageStatus,
        elapsed: Duration,
        reason: Option<&'a str>,
        cached_from: Option<&'a str>,
    },
}

/// Receives events.
pub trait Progress {
    fn event(&self, event: Event<'_>);
}

/// Writes to stderr: a spinner on a terminal, plain lines elsewhere.
pub struct Terminal {
    bar: Mutex<Option<ProgressBar>>,
    interactive: bool,
}

impl Terminal {
    /// Detects whether stderr is a terminal.
    pub fn new() -> Terminal {
        Terminal {
            bar: Mutex::new(None),
            interactive: std::io::stderr().is_terminal(),
        }
    }
}

impl Default for Terminal {
    fn default() -> Terminal {
        Terminal::new()
    }
}

impl Progress for Terminal {
    fn event(&self, event: Event<'_>) {
        let Ok(mut bar) = self.bar.lock() else {
            return;
        };
        match event {
            Event::Note(text) => match bar.as_ref() {
                Some(b) => b.println(text),
                None => eprintln!("{text}"),
            },
            Event::Started { label } => {
                if self.interactive {
                    let b = ProgressBar::new_spinner();
                    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                        b.set_style(style);
                    }
                    b.set_message(label.to_string());
                    b.enable_steady_tick(Duration::from_millis(120));
                    *bar = Some(b);
                }
            }
            Event::Finished {
                label,
                status,
                elapsed,
                reason,
                cached_from,
            } => {
                let line = line(label, status, elapsed, reason, cached_from);
                match bar.take() {
                    Some(b) => {
                        b.finish_and_clear();
                        eprintln!("{line}");
                    }
                    None => eprintln!("{line}"),
                }
            }
        }
    }
}

/// A unit's line: label, status, elapsed, then the reason or the cache origin.
pub fn line(
    label: &str,
    status: StageStatus,
    elapsed: Duration,
    reason: Option<&str>,
    cached_from: Option<&str>,
) -> String {
    let mut line = format!(
        "{label:<40} {:<12} {:>8}",
        status_word(status),
        format!("{:.2}s", elapsed.as_secs_f64())
    );
    if let Some(origin) = cached_from {
        line.push_str(&format!("  (cached from {origin})"));
    }
    if let Some(reason) = reason {
        line.push_str(&format!("  {reason}"));
    }
    line.trim_end().to_string()
}

/// The snake_case word the manifest uses for a status.
pub fn status_word(status: StageStatus) -> &'static str {
    match status {
        StageStatus::Passed => "passed",
        StageStatus::Findings => "findings",
        StageStatus::Failed => "failed",
        StageStatus::TimedOut => "timed_out",
        StageStatus::Skipped => "skipped",
        StageStatus::Inconclusive => "inconclusive",
        StageStatus::Interrupted => "interrupted",
    }
}

/// Discards every event (for library callers and tests).
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: Event<'_>) {}
}
