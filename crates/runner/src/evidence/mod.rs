//! What a run leaves and reads back: the run directory and its manifest, the cache of earlier results, packing large logs, a stored run read back for `exhibit report`, sha256 names, and sources a build wrote from the user's text.

pub mod cache;
pub mod gc;
pub mod hash;
pub mod inline_sources;
pub mod pack;
pub mod rundir;
pub mod site_lines;
pub mod stored;
pub mod trial_outputs;
