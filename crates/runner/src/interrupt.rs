//! Ctrl-C and termination requests, as a flag the execution loop polls.
//!
//! The first SIGINT, SIGTERM or SIGHUP sets the flag: the running stage's process group is
//! killed and the manifest is written, marked interrupted. A second signal ends the runner at
//! once, for when even that hangs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared "stop now" flag.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag nothing sets except [`Interrupt::set`].
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// A flag set by SIGINT, SIGTERM and SIGHUP; a second such signal exits the process.
    pub fn from_signals() -> std::io::Result<Interrupt> {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            // Order matters: the conditional shutdown fires only once the flag is already set.
            signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
            signal_hook::flag::register(signal, Arc::clone(&flag))?;
        }
        Ok(Interrupt(flag))
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
