//! Ctrl-C and termination requests, as state the execution loop polls.
//!
//! SIGINT, SIGTERM and SIGHUP never end the runner by themselves: a thread counts them. The
//! first one stops the run: the running stage's process group receives that signal, then
//! SIGKILL after the pipeline's grace period, and the manifest is written, marked interrupted.
//! A second one during the grace period is forwarded to the group as well (a program may need
//! two Ctrl-C to stop); a third ends the grace period at once. The runner itself always waits
//! for the stage's processes and writes what it collected before it exits; its exit code is
//! decided in `main.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// The signals that interrupt a run.
pub const SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// A shared record of the interrupting signals received so far.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<State>);

#[derive(Debug, Default)]
struct State {
    count: AtomicUsize,
    /// The first signal's number, 0 before any.
    first: AtomicI32,
    /// The latest signal's number, 0 before any.
    latest: AtomicI32,
}

impl Interrupt {
    /// A record nothing changes except [`Interrupt::record`].
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// A record of SIGINT, SIGTERM and SIGHUP, kept by a thread that waits for them.
    pub fn from_signals() -> std::io::Result<Interrupt> {
        let interrupt = Interrupt::new();
        let mut signals = signal_hook::iterator::Signals::new(SIGNALS)?;
        let record = interrupt.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    record.record(signal);
                    if record.count() == 1 {
                        // Said at once, so a Ctrl-C never meets silence; stderr may be closed.
                        use std::io::Write;
                        let _ = writeln!(
                            std::io::stderr(),
                            "runner: {}: stopping the running stages, then writing what they \
                             left (a third signal kills them at once)",
                            name(signal)
                        );
                    }
                }
            })?;
        Ok(interrupt)
    }

    /// Whether the run was interrupted.
    pub fn is_set(&self) -> bool {
        self.count() > 0
    }

    /// How many interrupting signals arrived.
    pub fn count(&self) -> usize {
        self.0.count.load(Ordering::SeqCst)
    }

    /// The first signal, which decides the exit code.
    pub fn first(&self) -> Option<i32> {
        Some(self.0.first.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// The most recent signal, which is forwarded to the running stage.
    pub fn latest(&self) -> Option<i32> {
        Some(self.0.latest.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// Records a signal as if it had been received.
    pub fn record(&self, signal: i32) {
        let _ = self
            .0
            .first
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
        self.0.latest.store(signal, Ordering::SeqCst);
        self.0.count.fetch_add(1, Ordering::SeqCst);
    }
}

/// A signal's name, as the message on receiving it says it.
fn name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGINT => "interrupted (SIGINT)",
        signal_hook::consts::SIGTERM => "terminated (SIGTERM)",
        signal_hook::consts::SIGHUP => "hung up (SIGHUP)",
        _ => "interrupted",
    }
}
