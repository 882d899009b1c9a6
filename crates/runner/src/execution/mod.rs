//! Running the units: the loop that starts them as the schedule allows ([`orchestrate`]), each
//! unit's command (the program alone or inside compute-sanitizer or ncu) and how its ending is
//! judged ([`stages`]), the launches a profile measures ([`profile_launches`]), the units of
//! several processes ([`steps`]), and a `target:` as data ([`target`]).

pub mod experiments;
pub mod orchestrate;
pub mod profile_launches;
pub mod split;
pub mod stages;
pub mod steps;
pub mod target;
