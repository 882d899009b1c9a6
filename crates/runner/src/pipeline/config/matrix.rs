//! `matrix:`: the archs and the named configs, each its defines, environments and own source.

use super::*;

/// `matrix:`: the named configs and the target architectures.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Target architectures, e.g. `sm_90`. Only those matching the GPU present run GPU stages;
    /// the others are compile-only.
    #[serde(default = "default_arch")]
    pub arch: Vec<String>,
    /// Config name to its `-D` defines, and optionally its own source. Optional for a
    /// target: without it (an `arch:` list alone), one config, `default`.
    #[serde(default, deserialize_with = "unique")]
    pub configs: BTreeMap<String, Config>,
}

/// One named config: written either as a map of defines (`{HEAD_DIM: 64, BLOCK_M: 128}`) or,
/// to compile another translation unit with the same ABI (a fault variant), as
/// `{source: kernel/faults/x.cu, defines: {HEAD_DIM: 64}}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Config {
    /// Compiled instead of `kernel.source`, when set.
    pub source: Option<PathBuf>,
    /// The archs of `matrix.arch` this config is built for, when not all of them (a source that
    /// needs sm_90a's wgmma, or a path kept for other archs).
    pub arch: Option<Vec<String>>,
    pub defines: BTreeMap<String, Define>,
    /// Environment variables for the target's program under this config (every stage that
    /// runs it).
    pub env: BTreeMap<String, String>,
    /// Environment variables for the target's build under this config. Configs whose builds
    /// see the same defines and `build_env` share one build.
    pub build_env: BTreeMap<String, String>,
    /// Build flags after the defines in `{defines}`: set by an experiment (a register budget),
    /// never written in pipeline.yaml.
    #[serde(skip)]
    pub flags: Vec<String>,
}

/// A `-D` value: an integer or a plain word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Define(pub String);

pub(crate) fn is_define_value(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

pub(crate) fn is_arch(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("sm_") else {
        return false;
    };
    let digits = rest.trim_end_matches(['a', 'f']);
    !digits.is_empty()
        && digits.len() + 1 >= rest.len()
        && digits.chars().all(|c| c.is_ascii_digit())
}

pub(crate) fn default_arch() -> Vec<String> {
    vec!["sm_90".to_string()]
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Config;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a map of -D defines such as {HEAD_DIM: 64}, or {source: FILE, arch: [ARCH], defines: {...}, env: {...}, build_env: {...}}",
                )
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Config, A::Error> {
                let mut config = Config::default();
                let mut nested = false;
                let mut bare = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "source" => config.source = Some(map.next_value()?),
                        "arch" => {
                            nested = true;
                            config.arch = Some(map.next_value()?);
                        }
                        "defines" => {
                            nested = true;
                            let defines: UniqueMap<String, Define> = map.next_value()?;
                            config.defines.extend(defines.0);
                        }
                        "env" => {
                            nested = true;
                            let env: UniqueMap<String, String> = map.next_value()?;
                            config.env.extend(env.0);
                        }
                        "build_env" => {
                            nested = true;
                            let env: UniqueMap<String, String> = map.next_value()?;
                            config.build_env.extend(env.0);
                        }
                        _ => {
                            bare = true;
                            let value = map.next_value::<Define>()?;
                            if config.defines.contains_key(&key) {
                                return Err(de::Error::custom(format!(
                                    "duplicate key `{key}`: name each once"
                                )));
                            }
                            config.defines.insert(key, value);
                        }
                    }
                    if nested && bare {
                        return Err(de::Error::custom(
                            "write defines either all under `defines:` (beside `arch:`, `env:` and `build_env:`) or all bare, not both",
                        ));
                    }
                }
                if config.source.is_some() && bare {
                    return Err(de::Error::custom(
                        "a config with its own `source` lists its -D values under `defines:`",
                    ));
                }
                Ok(config)
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Define {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Define;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or a plain word for a -D define")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Define, E> {
                Ok(Define(v.to_string()))
            }
        }
        deserializer.deserialize_any(V)
    }
}
