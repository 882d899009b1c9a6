//! The terminal display of a run: one line per unit with its status and elapsed time.
//!
//! Execution reports [`Event`]s and knows nothing about display. On a terminal, [`Terminal`]
//! shows one spinner line naming the units running now (indicatif) and prints a line as each
//! ends, as nextest does; otherwise it prints plain `stage config arch case  status  elapsed
//! reason` lines, one per unit as it ends, which read well in CI logs. Skipped units are not
//! printed as they end: the run says why once per stage and reason ([`Event::Skipped`]), in
//! plan order.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use report::StageStatus;

/// Something the run wants the user to see.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A line of information (provisioning, preflight's warnings).
    Note(&'a str),
    /// A line of preflight's summary (a tool's version, the GPU, how long it took), printed as
    /// `preflight: LINE` unless the run is quiet.
    Preflight(&'a str),
    /// A unit started.
    Started { label: &'a str },
    /// Units of one stage skipped for one reason: one line (`memcheck (12 units)  skipped
    /// no CUDA driver: ...`, or the unit's own label when there is one).
    Skipped { label: &'a str, reason: &'a str },
    /// A unit ended. A skipped one that was not served from the cache is not printed: the run
    /// reports it with its stage as [`Event::Skipped`].
    Finished {
        label: &'a str,
        status: StageStatus,
        elapsed: Duration,
        reason: Option<&'a str>,
        cached_from: Option<&'a str>,
    },
    /// The run is over: flush what is pending.
    Done,
}

/// Receives events.
pub trait Progress {
    fn event(&self, event: Event<'_>);
}

/// Writes to stderr: a spinner on a terminal, plain lines elsewhere.
pub struct Terminal {
    state: Mutex<State>,
    interactive: bool,
    /// `-q`: no preflight lines and no line for a unit that passed.
    quiet: bool,
}

#[derive(Default)]
struct State {
    bar: Option<ProgressBar>,
    /// The units running now, in the order they started.
    running: Vec<String>,
    /// Units ended so far.
    ended: usize,
}

impl State {
    /// Prints a line without the terminal escape sequences a program's text may carry.
    fn print(&self, line: &str) {
        self.print_styled(&report::text::strip_controls(line));
    }

    /// Prints a line [`line`] made: its text is stripped already, its colour is its own.
    fn print_styled(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => say!("{line}"),
        }
    }

    /// The spinner's message: how many units run and which.
    fn show_running(&self) {
        if let Some(b) = &self.bar {
            let names = self.running.join(", ");
            let names: String = if names.chars().count() > 100 {
                names.chars().take(99).chain(['…']).collect()
            } else {
                names
            };
            b.set_message(report::text::without_controls(format!(
                "{} running, {} done: {names}",
                self.running.len(),
                self.ended
            )));
        }
    }
}

impl Terminal {
    /// Detects whether stderr is a terminal.
    pub fn new() -> Terminal {
        Terminal {
            state: Mutex::new(State::default()),
            interactive: std::io::stderr().is_terminal(),
            quiet: false,
        }
    }

    /// With `quiet`, only what needs attention is printed: the preflight's lines and the lines
    /// of units that passed are left out.
    pub fn quiet(self, quiet: bool) -> Terminal {
        Terminal { quiet, ..self }
    }
}

impl Default for Terminal {
    fn default() -> Terminal {
        Terminal::new()
    }
}

impl Progress for Terminal {
    fn event(&self, event: Event<'_>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Event::Finished { label, .. } = &event {
            state.running.retain(|l| l != label);
            state.ended += 1;
            state.show_running();
        }
        if let Event::Finished {
            status: StageStatus::Skipped,
            cached_from: None,
            ..
        } = &event
        {
            return;
        }
        if self.quiet {
            match &event {
                Event::Preflight(_) => return,
                Event::Finished {
                    status: StageStatus::Passed,
                    ..
                } => return,
                _ => {}
            }
        }
        match event {
            Event::Note(text) => state.print(text),
            Event::Preflight(text) => state.print(&format!("preflight: {text}")),
            Event::Skipped { label, reason } => state.print_styled(&line(
                label,
                StageStatus::Skipped,
                Duration::ZERO,
                Some(reason),
                None,
            )),
            Event::Started { label } => {
                state.running.push(label.to_string());
                if self.interactive && state.bar.is_none() {
                    let b = ProgressBar::new_spinner();
                    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
                        b.set_style(style);
                    }
                    b.enable_steady_tick(Duration::from_millis(120));
                    state.bar = Some(b);
                }
                state.show_running();
            }
            Event::Finished {
                label,
                status,
                elapsed,
                reason,
                cached_from,
            } => {
                state.print_styled(&line(label, status, elapsed, reason, cached_from));
            }
            Event::Done => {
                if let Some(b) = state.bar.take() {
                    b.finish_and_clear();
                }
            }
        }
    }
}

/// A unit's line: label, status, elapsed, then the reason or the cache origin. The program's
/// words are stripped of control characters; the status word is coloured where stderr takes
/// colour (a terminal, `NO_COLOR` unset, or `--color always`).
pub fn line(
    label: &str,
    status: StageStatus,
    elapsed: Duration,
    reason: Option<&str>,
    cached_from: Option<&str>,
) -> String {
    use report::text::strip_controls as plain;
    let word = format!("{:<12}", status_word(status));
    let style = console::Style::new().for_stderr();
    let style = match status {
        StageStatus::Passed => style.green(),
        StageStatus::Findings | StageStatus::Failed => style.red().bold(),
        StageStatus::Skipped => style.dim(),
        StageStatus::TimedOut | StageStatus::Inconclusive | StageStatus::Interrupted => {
            style.yellow()
        }
    };
    let mut line = format!(
        "{:<40} {} {:>8}",
        plain(label),
        style.apply_to(word),
        format!("{:.2}s", elapsed.as_secs_f64())
    );
    if let Some(origin) = cached_from {
        line.push_str(&format!("  (cached from {})", plain(origin)));
    }
    if let Some(reason) = reason {
        line.push_str(&format!("  {}", plain(reason)));
    }
    line.trim_end().to_string()
}

/// `--color`: whether stderr's lines are coloured, as cargo and nextest decide it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set (or `CLICOLOR_FORCE` forces it).
    #[default]
    Auto,
    Always,
    Never,
}

impl Color {
    /// Sets it for the rest of the process.
    pub fn apply(self) {
        match self {
            Color::Auto => {}
            Color::Always => console::set_colors_enabled_stderr(true),
            Color::Never => console::set_colors_enabled_stderr(false),
        }
    }
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
