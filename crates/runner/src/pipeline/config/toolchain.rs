//! `toolchain:`: the CUDA version to provision and the tools to use; the tools the preflight knows;
//! the default set the runner provisions when a pipeline pins none.

use super::*;

/// `toolchain:`: the CUDA version to provision when none is installed, and tool overrides.
/// Optional: without it the tools installed are used, and where there is no CUDA compiler the
/// runner provisions its default set ([`DEFAULT_CUDA`], [`DEFAULT_WHEELS`]); a partial one is
/// completed from that set ([`Toolchain::completed`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// The CUDA compiler version the pipeline expects, e.g. `13.0.88`; names the provisioned
    /// cache directory. Empty as written: the pinned `nvidia-cuda-nvcc` wheel's version, else
    /// [`DEFAULT_CUDA`].
    #[serde(default)]
    pub cuda: String,
    /// Whether to install the pinned wheels when no CUDA compiler is found (the default).
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

/// The CUDA compiler the runner provisions by default: the version of [`DEFAULT_WHEELS`]'s
/// `nvidia-cuda-nvcc`. The project's own `pipeline.yaml` pins the same set (a test holds them
/// together).
pub const DEFAULT_CUDA: &str = "13.0.88";

/// The wheels of the default set, each pinned: an unpinned `nvidia-nvvm` pulls a newer PTX ISA
/// than the 13.0 ptxas accepts, and PyPI has no 13.0 cuobjdump or nvdisasm (13.2.51 reads 13.0
/// cubins).
pub const DEFAULT_WHEELS: &[(&str, &str)] = &[
    ("nvidia-cuda-nvcc", "13.0.88"),
    ("nvidia-cuda-crt", "13.0.88"),
    ("nvidia-nvvm", "13.0.88"),
    ("nvidia-cuda-runtime", "13.0.96"),
    ("nvidia-cuda-cccl", "13.0.85"),
    ("nvidia-cuda-cuobjdump", "13.2.51"),
    ("nvidia-cuda-nvdisasm", "13.2.51"),
];

impl Default for Toolchain {
    /// No `toolchain:`: what is installed, else the default set, provisioned.
    fn default() -> Toolchain {
        Toolchain {
            cuda: String::new(),
            provision: true,
            wheels: BTreeMap::new(),
            tools: BTreeMap::new(),
        }
        .completed()
    }
}

impl Toolchain {
    /// The toolchain as written, completed from the default set: no `cuda` takes the pinned
    /// `nvidia-cuda-nvcc` wheel's version, else [`DEFAULT_CUDA`]; for the default version, every
    /// wheel of [`DEFAULT_WHEELS`] not pinned here is added. Another version's wheels are never
    /// guessed: they must be pinned (validation says so).
    pub fn completed(mut self) -> Toolchain {
        if self.cuda.is_empty() {
            self.cuda = self
                .wheels
                .get("nvidia-cuda-nvcc")
                .cloned()
                .unwrap_or_else(|| DEFAULT_CUDA.to_string());
        }
        if self.cuda == DEFAULT_CUDA {
            for (name, version) in DEFAULT_WHEELS {
                self.wheels
                    .entry((*name).to_string())
                    .or_insert_with(|| (*version).to_string());
            }
        }
        self
    }
}

/// The default set as `toolchain.wheels` would pin it, for messages.
pub(crate) fn default_wheels_yaml() -> String {
    DEFAULT_WHEELS
        .iter()
        .map(|(name, version)| format!("{name}: {version}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Tool names a stage may need. `torch` means `python3 -c 'import torch'` works; `triton`,
/// `cupy` and `numba` that Python finds the module.
pub const KNOWN_TOOLS: &[&str] = &[
    "nvcc",
    "ptxas",
    "cuobjdump",
    "nvdisasm",
    "compute-sanitizer",
    "ncu",
    "python3",
    "cmake",
    "torch",
    "triton",
    "cupy",
    "numba",
    "harness",
];

/// The tools of [`KNOWN_TOOLS`] that are Python modules, found by `python3` rather than on
/// `PATH`.
pub const PYTHON_MODULES: &[&str] = &["torch", "triton", "cupy", "numba"];

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
