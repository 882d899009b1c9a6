//! The report crate's integration tests: reports rendered from real tool output (the parsers'
//! fixtures), through the public entry points.

mod chart;
mod clean;
mod diff;
mod explain;
mod faults;
mod formats;
mod gfm;
mod launch;
mod logic;
mod precision;
mod programs;
mod support;
