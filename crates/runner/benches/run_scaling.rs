//! How a run's own cost grows with its units.
//!
//! A temporary project with stand-in tools (an nvcc that writes its `-o` file, a cuobjdump that
//! prints a captured listing) and a pipeline of N configs, each a compile and a SASS unit, is
//! run with `exhibit pipeline.yaml --force` (the median of `EXHIBIT_BENCH_REPEAT` runs, default
//! 3). The bench prints the time per unit: a run whose bookkeeping is linear in its units keeps
//! that figure flat from the smallest size to the largest, where a manifest rewritten after
//! every unit grows it with the run.
//!
//! Run with `cargo bench -p runner --bench run_scaling`; `EXHIBIT_BENCH_CONFIGS` takes other
//! sizes (`50,200,800` by default).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const NVCC: &str = r#"#!/bin/sh
# Stand-in for nvcc: writes the -o file.
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 0.0, V0.0.0 (stand-in)"; exit 0; fi
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
printf '\177ELF stand-in cubin\n' > "$out"
"#;

fn main() {
    let sizes: Vec<usize> = std::env::var("EXHIBIT_BENCH_CONFIGS")
        .unwrap_or_else(|_| "50,200,800".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("EXHIBIT_BENCH_CONFIGS: numbers, comma-separated")
        })
        .collect();
    let repeat: usize = std::env::var("EXHIBIT_BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    println!(
        "{:>8}  {:>8}  {:>10}  {:>14}",
        "configs", "units", "run", "per 100 units"
    );
    for n in sizes {
        let project = tempfile::tempdir().expect("a temporary directory");
        let cache = tempfile::tempdir().expect("a temporary directory");
        make_project(project.path(), n);
        let units = 2 * n + 1;
        let run = median(repeat, || {
            let started = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_exhibit"))
                .args(["pipeline.yaml", "--force"])
                .current_dir(project.path())
                .env("XDG_CACHE_HOME", cache.path())
                .output()
                .expect("runner starts");
            let elapsed = started.elapsed();
            assert!(
                out.status.code() == Some(0),
                "{:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            // Each repeat starts from an empty artifacts/: old runs are not what is measured.
            let _ = std::fs::remove_dir_all(project.path().join("artifacts"));
            elapsed
        });
        println!(
            "{n:>8}  {units:>8}  {:>9.2}s  {:>13.3}s",
            run.as_secs_f64(),
            run.as_secs_f64() * 100.0 / units as f64
        );
    }
}

fn median(repeat: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..repeat).map(|_| f()).collect();
    times.sort();
    times[times.len() / 2]
}

/// A project of `n` configs: kernel source, stand-in tools, pipeline.
fn make_project(root: &Path, n: usize) {
    use std::os::unix::fs::PermissionsExt;
    let write = |relative: &str, text: &str| {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    };
    write("kernel/attention.cu", "// stand-in kernel source\n");
    let listing = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../parsers/fixtures/sass/nvcc13.0_clean_cuobjdump.log");
    let cuobjdump = format!(
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo \"stand-in\"; exit 0; fi\ncat '{}'\n",
        listing.display()
    );
    for (name, script) in [("nvcc", NVCC), ("cuobjdump", cuobjdump.as_str())] {
        write(&format!("bin/{name}"), script);
        std::fs::set_permissions(
            root.join("bin").join(name),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
    }
    let mut configs = String::new();
    for i in 0..n {
        let _ = writeln!(configs, "    c{i}: {{ HEAD_DIM: 64, BLOCK_M: {} }}", 16 + i);
    }
    write(
        "pipeline.yaml",
        &format!(
            r#"kernel:
  source: kernel/attention.cu
  entry_points:
    f16: attention_fwd_f16
toolchain:
  cuda: 13.0.88
  provision: false
  wheels:
    nvidia-cuda-nvcc: 13.0.88
  tools:
    nvcc: bin/nvcc
    cuobjdump: bin/cuobjdump
matrix:
  arch: [sm_90]
  configs:
{configs}cases:
  seed: {{ shape: "2,8,512,64" }}
stages:
  compile:
    timeout: 30s
  sass:
    timeout: 30s
  report:
    timeout: 60s
"#
        ),
    );
}
