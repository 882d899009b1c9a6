//! `knobs:` and `experiments:`: the inputs a program takes that an experiment may vary (a size,
//! a register budget), and whether experiments run.

use report::experiment::{Knob, KnobInput, KnobRole};

use super::*;

/// One entry of `knobs:`: exactly one of `env`, `define` or `flag`, and for a size its tile.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawKnob {
    #[serde(default)]
    env: Option<String>,
    #[serde(default)]
    define: Option<String>,
    /// A build flag with `{value}` in it: `-maxrregcount={value}`.
    #[serde(default)]
    flag: Option<String>,
    /// A size's tile: the multiples the kernel covers without a tail (default 32).
    #[serde(default)]
    tile: Option<u64>,
}

/// `experiments:`: `auto` runs the experiments the report's hypotheses call for, `off` none.
/// Absent: on when the pipeline names `knobs:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentsMode {
    Auto,
    Off,
}

/// A knob as the pipeline gives it (or as the configs show it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KnobSpec {
    pub role: KnobRole,
    pub input: KnobInput,
    pub tile: Option<u64>,
    pub inferred: bool,
}

/// Reads `knobs:`: its keys are the roles (`size`, `registers`).
pub(super) fn knobs(raw: BTreeMap<String, RawKnob>) -> Result<Vec<KnobSpec>, (String, String)> {
    let mut out = Vec::new();
    for (key, k) in raw {
        let role = match key.as_str() {
            "size" => KnobRole::Size,
            "registers" => KnobRole::Registers,
            "block" => KnobRole::Block,
            "tile" => KnobRole::Tile,
            _ => {
                return Err((
                    format!("knobs.{key}"),
                    "unknown knob: name `size` (a size the program takes), `registers` (the \
                     build's register budget), `block` (threads per block) or `tile` (the tile \
                     a block computes)"
                        .into(),
                ));
            }
        };
        let input = match (k.env, k.define, k.flag) {
            (Some(e), None, None) => KnobInput::Env(e),
            (None, Some(d), None) => KnobInput::Define(d),
            (None, None, Some(f)) if f.contains("{value}") => KnobInput::Flag(f),
            (None, None, Some(_)) => {
                return Err((
                    format!("knobs.{key}.flag"),
                    "a flag knob writes `{value}` where the value goes, e.g. \
                     `-maxrregcount={value}`"
                        .into(),
                ));
            }
            _ => {
                return Err((
                    format!("knobs.{key}"),
                    "give exactly one of `env: NAME`, `define: NAME` or `flag: \"...{value}\"`"
                        .into(),
                ));
            }
        };
        if k.tile.is_some() && role != KnobRole::Size || k.tile == Some(0) {
            return Err((
                format!("knobs.{key}.tile"),
                "`tile:` is a size knob's, and at least 1".into(),
            ));
        }
        out.push(KnobSpec {
            role,
            input,
            tile: k.tile,
            inferred: false,
        });
    }
    Ok(out)
}

impl Pipeline {
    /// Whether experiments run: `experiments: auto`, or knobs named and experiments not off.
    pub fn experiments_on(&self) -> bool {
        match self.experiments {
            Some(ExperimentsMode::Auto) => true,
            Some(ExperimentsMode::Off) => false,
            None => self.knobs.iter().any(|k| !k.inferred),
        }
    }

    /// The knobs: those `knobs:` names, then those the configs show by varying one integer
    /// value (an environment variable or a define) whose name says a size (`N`, `SIZE`,
    /// `LEN`, ...) or a register budget (`REG`), for a role `knobs:` leaves open.
    pub fn all_knobs(&self) -> Vec<KnobSpec> {
        let mut out = self.knobs.clone();
        // Cases whose shapes differ in their sequence length: a size, for a target's program
        // (the built-in kernel's own tail tile is a known layout, never a hypothesis).
        let lengths: BTreeSet<u32> = self.cases.values().map(|c| c.shape.seq_len).collect();
        if self.kernel.is_none()
            && lengths.len() > 1
            && !out.iter().any(|k| k.role == KnobRole::Size)
        {
            out.push(KnobSpec {
                role: KnobRole::Size,
                input: KnobInput::SeqLen,
                tile: None,
                inferred: true,
            });
        }
        let configs: Vec<&Config> = self.matrix.configs.values().collect();
        if configs.len() < 2 {
            return out;
        }
        let mut candidates: Vec<KnobInput> = Vec::new();
        let varying = |values: Vec<Option<&str>>| -> bool {
            values
                .iter()
                .all(|v| v.is_some_and(|v| v.trim().parse::<u64>().is_ok()))
                && values.iter().collect::<BTreeSet<_>>().len() > 1
        };
        let env_names: BTreeSet<&String> = configs.iter().flat_map(|c| c.env.keys()).collect();
        for name in env_names {
            if varying(
                configs
                    .iter()
                    .map(|c| c.env.get(name).map(String::as_str))
                    .collect(),
            ) {
                candidates.push(KnobInput::Env(name.clone()));
            }
        }
        let define_names: BTreeSet<&String> =
            configs.iter().flat_map(|c| c.defines.keys()).collect();
        for name in define_names {
            if varying(
                configs
                    .iter()
                    .map(|c| c.defines.get(name).map(|d| d.0.as_str()))
                    .collect(),
            ) {
                candidates.push(KnobInput::Define(name.clone()));
            }
        }
        for input in candidates {
            let upper = input.name().to_ascii_uppercase();
            let words: Vec<&str> = upper.split(['_', '-']).collect();
            let role = if upper.contains("REG") {
                KnobRole::Registers
            } else if upper.contains("TILE")
                || (words.len() > 1
                    && words
                        .first()
                        .is_some_and(|w| matches!(*w, "BLOCK" | "TILE"))
                    && words.last().is_some_and(|w| matches!(*w, "M" | "N" | "K")))
                || matches!(upper.as_str(), "BM" | "BN" | "BK")
            {
                // `TILE`, `TILE_N`, `BLOCK_M`, `BN`: the tile a block computes, not a size.
                KnobRole::Tile
            } else if matches!(
                upper.as_str(),
                "BLOCK"
                    | "BLOCK_SIZE"
                    | "BLOCKSIZE"
                    | "THREADS"
                    | "NUM_THREADS"
                    | "BLOCK_DIM"
                    | "THREADS_PER_BLOCK"
            ) {
                KnobRole::Block
            } else if words.iter().any(|w| {
                matches!(
                    *w,
                    "N" | "SIZE"
                        | "LEN"
                        | "LENGTH"
                        | "SEQ"
                        | "SEQLEN"
                        | "ROWS"
                        | "COLS"
                        | "M"
                        | "K"
                )
            }) {
                KnobRole::Size
            } else {
                continue;
            };
            if out.iter().any(|k| k.role == role) {
                continue;
            }
            out.push(KnobSpec {
                role,
                input,
                tile: None,
                inferred: true,
            });
        }
        out
    }
}

/// The pipeline's knobs as the run records them, with each config's value.
pub fn knobs_of(pipeline: &Pipeline) -> Vec<Knob> {
    pipeline
        .all_knobs()
        .into_iter()
        .map(|k| {
            let values = match &k.input {
                KnobInput::SeqLen => pipeline
                    .cases
                    .iter()
                    .map(|(name, c)| (name.clone(), c.shape.seq_len.to_string()))
                    .collect(),
                input => pipeline
                    .matrix
                    .configs
                    .iter()
                    .filter_map(|(name, c)| {
                        let v = match input {
                            KnobInput::Env(n) => c.env.get(n).cloned().or_else(|| {
                                pipeline.stages.iter().find_map(|s| s.env.get(n).cloned())
                            }),
                            KnobInput::Define(n) => c.defines.get(n).map(|d| d.0.clone()),
                            KnobInput::Flag(_) | KnobInput::SeqLen => None,
                        }?;
                        Some((name.clone(), v))
                    })
                    .collect(),
            };
            Knob {
                role: k.role,
                input: k.input,
                tile: k.tile,
                inferred: k.inferred,
                values,
            }
        })
        .collect()
}

impl Pipeline {
    /// A knob a build must see (a define, a flag) needs `{defines}` in the target's build
    /// command, where the runner writes them.
    pub(super) fn check_knobs(&self) -> Result<(), (String, String)> {
        let Some(target) = &self.target else {
            return Ok(());
        };
        let reaches_build = target
            .build
            .as_ref()
            .is_some_and(|b| b.command.iter().any(|w| w.contains("{defines}")));
        for k in &self.knobs {
            if matches!(k.input, KnobInput::Define(_) | KnobInput::Flag(_)) && !reaches_build {
                return Err((
                    format!("knobs.{}", k.role.as_str()),
                    "a define or flag knob reaches the build through `{defines}`: add \
                     \"{defines}\" to `target.build.command`"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}
