//! `toolchain:`: the CUDA version to provision and the tools to use; the tools the preflight knows.

use super::*;

/// `toolchain:`: the CUDA version to provision when none is installed, and tool overrides.
/// Optional: without it the tools installed are used and nothing is provisioned.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The CUDA compiler version the pipeline expects, e.g. `13.0.88`; names the provisioned
    /// cache directory. Empty: no version pinned.
    #[serde(default)]
    pub cuda: String,
    /// Whether to install the pinned wheels when no CUDA compiler is found (the default when
    /// `toolchain:` is written).
    #[serde(default = "yes")]
    pub provision: bool,
    /// PyPI wheel name to exact version. Every wheel is pinned: an unpinned one pulls the newest
    /// release of its dependencies.
    #[serde(default, deserialize_with = "unique")]
    pub wheels: BTreeMap<String, String>,
    /// Tool name to an explicit path (relative to the pipeline file), bypassing discovery.
    #[serde(default, deserialize_with = "unique")]
    pub tools: BTreeMap<String, PathBuf>,
}

/// Tool names a stage may need. `torch` means `python3 -c 'import torch'` works.
pub const KNOWN_TOOLS: &[&str] = &[
    "nvcc",
    "ptxas",
    "cuobjdump",
    "nvdisasm",
    "compute-sanitizer",
    "ncu",
    "python3",
    "torch",
    "harness",
];

pub(crate) fn tool_list() -> String {
    KNOWN_TOOLS.join(", ")
}

pub(crate) fn is_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

pub(crate) fn yes() -> bool {
    true
}
