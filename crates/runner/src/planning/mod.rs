//! What a run does and when: the stages expanded over configs, archs and cases into units, and which units may run at once.

pub mod plan;
pub mod schedule;
