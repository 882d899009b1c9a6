//! Processes: one in its own process group with a deadline and an output bound, Ctrl-C turned
//! into a flag, what a process left behind, the terminal display, and runs on another machine
//! (`--host`) or as Slurm jobs, and the supervisor that ends a run's processes when the runner
//! dies.

pub mod exec;
pub mod interrupt;
pub mod leftovers;
pub mod progress;
pub mod remote;
pub mod slurm;
pub mod supervisor;
