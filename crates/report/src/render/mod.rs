//! The renderers: one module per output format. Each takes an [`crate::Analysis`] and the run,
//! and returns text; none reads anything else.

pub mod bisect_markdown;
pub mod diff_markdown;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod svg;
