//! Compiles the repository's kernel with a real nvcc: the one on PATH, or the pipeline's pinned
//! compiler provisioned from PyPI where there is none (as in CI).

use crate::util::{code, stage, stderr};

#[test]
fn the_kernel_compiles_for_real_with_nvcc() {
    let _provisioning = crate::util::PROVISIONING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
    for file in [
        "kernel/attention.cu",
        "kernel/attention_abi.cuh",
        "kernel/attention_common.cuh",
    ] {
        std::fs::copy(repo.join(file), dir.path().join(file)).unwrap();
    }
    let pipeline = r#"kernel:
  source: kernel/attention.cu
  entry_points: { f16: attention_fwd_f16, bf16: attention_fwd_bf16 }
toolchain:
  cuda: 13.0.88
  provision: true
  wheels:
    nvidia-cuda-nvcc: 13.0.88
    nvidia-cuda-crt: 13.0.88
    nvidia-nvvm: 13.0.88
    nvidia-cuda-runtime: 13.0.96
    nvidia-cuda-cccl: 13.0.85
    nvidia-cuda-cuobjdump: 13.2.51
    nvidia-cuda-nvdisasm: 13.2.51
matrix:
  configs:
    d64: { HEAD_DIM: 64, BLOCK_M: 64, BLOCK_N: 64, STAGES: 2, WARPS: 4 }
stages:
  compile: { timeout: 5m }
  sass: { timeout: 1m }
"#;
    std::fs::write(dir.path().join("pipeline.yaml"), pipeline).unwrap();
    let out = std::process::Command::new(crate::util::BIN)
        .arg("pipeline.yaml")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let artifacts = dir.path().join("artifacts");
    let run = std::fs::read_dir(&artifacts)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(stage(&manifest, "compile")["status"], "passed");
    let ptxas = std::fs::read_to_string(run.join("compile/d64/sm_90/stderr.log")).unwrap();
    assert!(ptxas.contains("attention_fwd_f16"), "{ptxas}");
    let sass = std::fs::read_to_string(run.join("sass/d64/sm_90/kernel.cubin.sass")).unwrap();
    assert!(
        sass.contains("HMMA"),
        "no tensor-core instruction in the SASS"
    );
}
