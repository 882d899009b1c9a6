//! A newcomer's own kernel, first try (issue 38), through the CLI as they would do it: an empty
//! cache, a small `.cu` file, the README's smallest pipeline (no `toolchain:`), a run, the
//! report. It builds for real: with the CUDA compiler installed where there is one, else with
//! the pinned set the runner provisions from PyPI into the empty cache, as the other tests that
//! need a real nvcc do (CI has none installed, and provisions).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{BIN, code, stage, stages, stderr};

/// A CUDA file with its own `main`, as a newcomer writes one: a kernel, a launch, a check.
const ADD_CU: &str = r#"#include <cstdio>

__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1000;
  float *a, *b, *c;
  cudaMallocManaged(&a, n * sizeof(float));
  cudaMallocManaged(&b, n * sizeof(float));
  cudaMallocManaged(&c, n * sizeof(float));
  for (int i = 0; i < n; ++i) { a[i] = i; b[i] = 2 * i; }
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { printf("CUDA error: %s\n", cudaGetErrorString(err)); return 1; }
  for (int i = 0; i < n; ++i) {
    if (c[i] != 3.0f * i) { printf("c[%d] = %f\n", i, c[i]); return 1; }
  }
  printf("ok\n");
  return 0;
}
"#;

/// The README's smallest pipeline: its YAML block that builds `add.cu`.
fn readme_pipeline() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).expect("README.md");
    text.split("```yaml\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .find(|block| block.contains("add.cu"))
        .expect("a YAML block in README.md that builds add.cu")
        .to_string()
}

/// Where discovery finds an installed nvcc on this machine, when it does (the directories of
/// the PATH the test gives the runner, and `/usr/local/cuda`): the runner must use it.
fn installed_nvcc(path: &str) -> Option<(PathBuf, &'static str)> {
    std::env::split_paths(path)
        .map(|dir| (dir.join("nvcc"), "path"))
        .chain([(PathBuf::from("/usr/local/cuda/bin/nvcc"), "/usr/local/cuda")])
        .find(|(nvcc, _)| nvcc.is_file())
}

#[test]
fn a_newcomers_kernel_builds_and_reports_from_an_empty_cache() {
    let _provisioning = crate::util::PROVISIONING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = tempfile::tempdir().expect("a project directory");
    let cache = tempfile::tempdir().expect("an empty cache directory");
    let root = project.path();
    let yaml = readme_pipeline();
    assert!(!yaml.contains("toolchain"), "{yaml}");
    std::fs::write(root.join("add.cu"), ADD_CU).expect("write add.cu");
    std::fs::write(root.join("pipeline.yaml"), &yaml).expect("write the pipeline");
    // A newcomer's shell: the system's tools (sh, python3, the host compiler), no CUDA
    // variables.
    let path = "/usr/local/bin:/usr/bin:/bin";
    let out = Command::new(BIN)
        .arg("pipeline.yaml")
        .current_dir(root)
        .env("XDG_CACHE_HOME", cache.path())
        .env("PATH", path)
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .expect("run the runner");
    let err = stderr(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(code(&out), 0, "{err}\n{stdout}");
    assert!(
        !err.contains("from the cache of an earlier run"),
        "a first run, from an empty cache: {err}"
    );

    let run = std::fs::read_dir(root.join("artifacts"))
        .expect("artifacts/")
        .flatten()
        .next()
        .expect("a run directory")
        .path();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("manifest.json")).expect("a manifest"),
    )
    .expect("JSON");
    // The compiler: the one installed, else the runner's default set, provisioned into the
    // empty cache.
    let source = manifest["environment"]["toolchain_source"]
        .as_str()
        .unwrap_or_default();
    match installed_nvcc(path) {
        Some((nvcc, installed)) => {
            assert_eq!(source, installed, "{} is installed", nvcc.display());
        }
        None => {
            assert_eq!(source, "provisioned 13.0.88", "{err}");
            assert!(
                err.contains("no CUDA compiler found: provisioning CUDA 13.0.88 from PyPI"),
                "{err}"
            );
            assert!(
                cache
                    .path()
                    .join("exhibit/cuda-13.0.88/.exhibit-complete")
                    .is_file(),
                "provisioned into the empty cache"
            );
        }
    }
    let build = stage(&manifest, "build");
    assert_eq!(build["status"], "passed", "{build:#}\n{err}");
    let ptxas = std::fs::read_to_string(run.join("build/default/sm_90/stderr.log"))
        .expect("the build's log");
    assert!(
        ptxas.contains("_Z3addPKfS0_Pfi"),
        "ptxas -v named the kernel: {ptxas}"
    );
    assert_eq!(stage(&manifest, "sass")["status"], "passed", "{err}");
    // Each GPU stage either ran (a GPU here) or says why not, once.
    for name in ["memcheck", "check", "profile"] {
        let unit = stage(&manifest, name);
        let status = unit["status"].as_str().unwrap_or_default();
        if status == "skipped" {
            let reason = unit["reason"].as_str().expect("a reason");
            let lines: Vec<&str> = err.lines().filter(|l| l.starts_with(name)).collect();
            assert_eq!(lines.len(), 1, "{err}");
            assert!(lines[0].ends_with(reason), "{err}");
        } else {
            assert!(status == "passed", "{unit:#}");
        }
    }
    assert_eq!(stages(&manifest, "report").len(), 1);

    // The report: where the run printed it is, from where the command ran.
    let id = manifest["id"].as_str().expect("an id");
    assert!(
        stdout.contains(&format!("report: reports/{id}.md")),
        "{stdout}"
    );
    let report =
        std::fs::read_to_string(root.join(format!("reports/{id}.md"))).expect("the report");
    let verdict = report
        .lines()
        .find(|l| l.starts_with("**Verdict:**"))
        .expect("a verdict");
    assert!(
        verdict.contains("Compile-only: build and sass found no error on 1 config")
            || verdict.contains("Clean"),
        "{verdict}"
    );
    // The kernel's resources, from ptxas: its registers.
    let row = report
        .lines()
        .find(|l| l.starts_with("| default | sm_90 | `add` |"))
        .unwrap_or_else(|| panic!("no row for the kernel `add` in\n{report}"));
    let registers: u32 = row
        .split('|')
        .nth(4)
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or_else(|| panic!("no register count in {row}"));
    assert!(registers > 0, "{row}");
}
