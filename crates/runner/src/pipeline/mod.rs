//! The pipeline file: `pipeline.yaml` parsed into typed data and validated, with the line of any error.

pub mod config;
pub mod files;
