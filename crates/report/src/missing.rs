//! What a machine lacked for a run's skipped stages, and how to get it: the runner records the
//! names of what each skipped unit needed and did not find (`Stage::missing`: `gpu`, `torch`,
//! `triton`, a tool's name); this module says each in words with the command that installs it.

use serde::Serialize;

use crate::run::{Stage, StageStatus};

/// One thing the machine lacked, as the report says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The name the runner recorded (`torch`, `gpu`, `compute-sanitizer`).
    pub name: String,
    /// What it is, in words ("an NVIDIA GPU with its driver", "torch").
    pub what: String,
    /// The command that installs it, where one does (`pip install torch`).
    pub command: Option<String>,
    /// How to get it otherwise, in words.
    pub how: Option<String>,
    /// Why the runner found it missing, from a skipped stage it was the first need of.
    pub reason: Option<String>,
    /// The stages it kept from running, in run order, each once.
    pub stages: Vec<String>,
}

/// Everything the skipped stages of a run lacked, in the order they first name it.
pub fn of_stages(stages: &[Stage]) -> Vec<Missing> {
    let mut out: Vec<Missing> = Vec::new();
    for stage in stages.iter().filter(|s| s.status == StageStatus::Skipped) {
        for (i, name) in stage.missing.iter().enumerate() {
            let at = match out.iter().position(|m| &m.name == name) {
                Some(at) => at,
                None => {
                    let (what, command, how) = describe(name);
                    out.push(Missing {
                        name: name.clone(),
                        what,
                        command,
                        how,
                        reason: None,
                        stages: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let item = &mut out[at];
            // A stage's reason is its first need's.
            if i == 0 && item.reason.is_none() {
                item.reason.clone_from(&stage.reason);
            }
            if !item.stages.contains(&stage.name) {
                item.stages.push(stage.name.clone());
            }
        }
    }
    out
}

/// A recorded name in words, the command that installs it, and how to get it otherwise.
fn describe(name: &str) -> (String, Option<String>, Option<String>) {
    let toolkit = "install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), or \
                   name the binary under `toolchain.tools`";
    let (what, command, how): (&str, Option<&str>, Option<&str>) = match name {
        "gpu" => (
            "an NVIDIA GPU with its driver",
            None,
            Some("run where there is one: on that machine, or `exhibit --host HOST` or `--slurm`"),
        ),
        "torch" => ("torch", Some("pip install torch"), None),
        "triton" => ("triton", Some("pip install triton"), None),
        "cupy" => ("CuPy", Some("pip install cupy-cuda13x"), None),
        "numba" => (
            "Numba's CUDA target",
            Some("pip install numba-cuda[cu13]"),
            None,
        ),
        "python3" => (
            "python3",
            None,
            Some("install Python 3 (Debian and Ubuntu: `apt install python3`)"),
        ),
        "compute-sanitizer" | "nvcc" | "ptxas" | "cuobjdump" | "nvdisasm" => {
            (name, None, Some(toolkit))
        }
        "ncu" => (
            "ncu",
            None,
            Some(
                "install Nsight Compute (it comes with the CUDA toolkit), or name the binary \
                  under `toolchain.tools`",
            ),
        ),
        "cmake" | "ctest" => (name, Some("pip install cmake"), None),
        "counters" => (
            "permission to read the GPU's performance counters",
            None,
            Some("run as root, or load the driver with `NVreg_RestrictProfilingToAdminUsers=0`"),
        ),
        other => (other, None, Some("install it, or put it on `PATH`")),
    };
    (
        what.to_string(),
        command.map(str::to_string),
        how.map(str::to_string),
    )
}
