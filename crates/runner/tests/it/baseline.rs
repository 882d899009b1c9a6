//! `kernel/baselines/sdpa.py` times several problems in one Python process (torch is imported
//! once). It runs here on the real python3 with a stand-in torch (`torch_standin/`,
//! hand-written: its timings are made up).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::stderr;

/// The repository root (this crate lives in `crates/runner`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The stand-in torch package.
fn standin_torch() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/torch_standin")
}

/// Runs the repository's `sdpa.py` on the real python3 with `python_path` first on its path.
fn sdpa(python_path: &Path, args: &[&str]) -> Output {
    Command::new("python3")
        .arg(repo().join("kernel/baselines/sdpa.py"))
        .args(args)
        .env("PYTHONPATH", python_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("start python3")
}

#[test]
fn the_script_without_torch_exits_4_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    // Hides any torch installed here: the test means the same on every machine.
    std::fs::create_dir_all(dir.path().join("torch")).unwrap();
    std::fs::write(
        dir.path().join("torch/__init__.py"),
        "raise ImportError('hidden for this test')\n",
    )
    .unwrap();
    let out = sdpa(
        dir.path(),
        &[
            "--problem",
            "2,8,512,64:f16",
            "--problem",
            "4,16,4096,64:bf16:causal",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sdpa baseline skipped: no torch (hidden for this test)"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn the_script_refuses_a_malformed_problem_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["--problem", "2,8,512:f16"][..], "--problem '2,8,512'"),
        (&["--problem", "2,8,512,64:f32"], "dtype 'f32'"),
        (&["--problem", "2,8,512,64:f16:masked"], "not 'masked'"),
        (&["--problem", "2,8,512,64"], "expected B,H,S,D:dtype"),
        (
            &["--problem", "2,8,512,64:f16", "--shape", "2,8,512,64"],
            "not both",
        ),
        (&["--shape", "2,8,512,64"], "--shape and --dtype"),
        (&[], "name a problem"),
    ] {
        let out = sdpa(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// `(batch, heads, seq_len, head_dim, dtype, causal)` of a result.
fn problem_of(result: &Value) -> (u64, u64, u64, u64, String, bool) {
    let shape = &result["shape"];
    let n = |k: &str| shape[k].as_u64().expect("a dimension");
    (
        n("batch"),
        n("heads"),
        n("seq_len"),
        n("head_dim"),
        result["dtype"].as_str().expect("a dtype").to_string(),
        result["causal"].as_bool().expect("a mask flag"),
    )
}

#[test]
fn the_script_times_every_problem_in_one_document() {
    let out = sdpa(
        &standin_torch(),
        &[
            "--problem",
            "2,8,512,64:f16",
            "--problem",
            "1000,1,64,64:bf16:causal",
            "--problem",
            "1,2,200,64:bf16:causal",
            "--json",
        ],
    );
    // The stand-in cannot allocate a batch of 1000: that problem fails, the others count.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sdpa baseline failed on 1000,1,64,64 bf16 causal"),
        "{}",
        stderr(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["schema"], "exhibit.harness/1");
    assert_eq!(doc["producer"], "sdpa");
    let results = doc["results"].as_array().expect("results");
    let of = |p: (u64, u64, u64, u64, &str, bool)| -> Vec<&Value> {
        results
            .iter()
            .filter(|r| problem_of(r) == (p.0, p.1, p.2, p.3, p.4.to_string(), p.5))
            .collect()
    };
    for problem in [(2, 8, 512, 64, "f16", false), (1, 2, 200, 64, "bf16", true)] {
        let rs = of(problem);
        // Four backends, two timings each (cudnn is skipped by the stand-in, with its reason).
        assert_eq!(rs.len(), 8, "{problem:?}: {rs:#?}");
        let timed = rs.iter().filter(|r| r["bench"].is_object()).count();
        assert_eq!(timed, 6, "{problem:?}");
        assert!(rs.iter().any(|r| {
            r["skipped"]
                .as_str()
                .is_some_and(|s| s.contains("no cuDNN attention"))
        }));
    }
    let failed = of((1000, 1, 64, 64, "bf16", true));
    assert_eq!(failed.len(), 4, "{failed:#?}");
    for r in failed {
        assert!(
            r["error"]
                .as_str()
                .is_some_and(|e| e.contains("out of memory"))
        );
        assert_eq!(r["launched"], false);
    }
    assert_eq!(results.len(), 20);
}

#[test]
fn the_one_shape_form_still_works() {
    let out = sdpa(
        &standin_torch(),
        &[
            "--shape",
            "1,2,200,64",
            "--dtype",
            "bf16",
            "--causal",
            "--backend",
            "flash",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(problem_of(r), (1, 2, 200, 64, "bf16".to_string(), true));
    }
}
