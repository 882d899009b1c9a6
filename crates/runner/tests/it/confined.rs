//! Nothing outside a run directory is read, written, linked or deleted by `report`, `diff`,
//! `pack` or the cache: a path a manifest names resolves under the run directory through no
//! symbolic link, only regular files are opened, and a manifest is read up to a bound.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::util::{Project, code, stderr};

/// What a refusal may take: long enough for a loaded machine, short against a hang.
const PATIENCE: Duration = Duration::from_secs(30);

/// A project with one finished run; returns it and its run directory.
fn one_run() -> (Project, PathBuf) {
    let project = Project::new();
    let out = project.run(&["pipeline.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = project.runs().pop().expect("a run");
    (project, run)
}

fn read_manifest(run: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run.join("manifest.json")).expect("manifest"))
        .expect("JSON")
}

fn write_manifest(run: &Path, manifest: &Value) {
    std::fs::write(
        run.join("manifest.json"),
        serde_json::to_vec_pretty(manifest).expect("JSON"),
    )
    .expect("write the manifest");
}

/// Every log path of the manifest, mutably.
fn log_paths(manifest: &mut Value) -> Vec<&mut Value> {
    manifest["stages"]
        .as_array_mut()
        .expect("stages")
        .iter_mut()
        .flat_map(|s| s["logs"].as_array_mut().expect("logs").iter_mut())
        .map(|l| &mut l["path"])
        .collect()
}

fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn pack_refuses_a_log_path_outside_the_run_directory() {
    let outside = tempfile::tempdir().expect("a directory");
    let absolute = arg(&outside.path().join("outside.log"));
    for hostile in ["../../outside.log", absolute.as_str()] {
        let (project, run) = one_run();
        let target = if hostile.starts_with('/') {
            PathBuf::from(hostile)
        } else {
            project.root.join("outside.log")
        };
        std::fs::write(&target, "a file that is not the run's\n".repeat(100)).expect("write");
        let mut manifest = read_manifest(&run);
        let sass = log_paths(&mut manifest)
            .into_iter()
            .find(|p| p.as_str().is_some_and(|p| p.ends_with(".cubin.sass")))
            .expect("the sass log");
        *sass = Value::from(hostile);
        write_manifest(&run, &manifest);
        let before = std::fs::read(run.join("manifest.json")).expect("manifest");

        let out = project.run_within(&["pack", &arg(&run), "--min-bytes", "1"], PATIENCE);
        let err = stderr(&out);
        assert_ne!(code(&out), 0, "{err}");
        assert!(
            err.contains(hostile) && err.contains("outside the run directory"),
            "{err}"
        );
        assert!(target.is_file(), "{hostile}: the outside file was deleted");
        assert!(
            !target.with_extension("log.gz").exists(),
            "{hostile}: compressed"
        );
        assert_eq!(
            std::fs::read(run.join("manifest.json")).expect("manifest"),
            before,
            "the manifest was rewritten"
        );
    }
}

#[test]
fn a_symlinked_directory_inside_the_run_is_never_followed() {
    let (project, run) = one_run();
    let outside = tempfile::tempdir().expect("a directory");
    let moved = outside.path().join("sm_90");
    let unit = run.join("sass/small/sm_90");
    std::fs::rename(&unit, &moved).expect("move the unit out");
    std::os::unix::fs::symlink(&moved, &unit).expect("symlink");

    let out = project.run_within(&["report", &arg(&run)], PATIENCE);
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(
        err.contains("sass/small/sm_90/kernel.cubin.sass") && err.contains("symbolic link"),
        "{err}"
    );
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(!md.contains("✅ Clean"), "{md}");

    let out = project.run_within(&["diff", &arg(&run), &arg(&run)], PATIENCE);
    assert_eq!(code(&out), 3, "{}", stderr(&out));

    let out = project.run_within(&["pack", &arg(&run), "--min-bytes", "1"], PATIENCE);
    let err = stderr(&out);
    assert_ne!(code(&out), 0, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(
        moved.join("kernel.cubin.sass").is_file(),
        "the outside log was packed"
    );
    assert!(
        !moved.join("sass.log.gz").exists(),
        "the outside log was packed"
    );
}

#[test]
fn the_cache_refuses_a_planted_manifest_with_outside_paths() {
    let (project, run) = one_run();
    // The run's unit directories, copied outside, each with a file the cache must not take.
    let outside = tempfile::tempdir().expect("a directory");
    for entry in walkdir::WalkDir::new(&run) {
        let entry = entry.expect("walk");
        let to = outside
            .path()
            .join(entry.path().strip_prefix(&run).expect("inside"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
            std::fs::write(to.join("secret"), "outside\n").expect("write");
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
    let mut manifest = read_manifest(&run);
    for path in log_paths(&mut manifest) {
        let relative = path.as_str().expect("a path").to_string();
        *path = Value::from(arg(&outside.path().join(relative)));
    }
    let planted = project.root.join("artifacts/planted");
    std::fs::create_dir_all(&planted).expect("mkdir");
    write_manifest(&planted, &manifest);
    std::fs::remove_dir_all(&run).expect("remove the honest run");

    let out = project.run_within(&["pipeline.yaml"], Duration::from_secs(120));
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(
        err.contains("artifacts/planted") && err.contains("outside the run directory"),
        "the refusal is said: {err}"
    );
    let new = project
        .runs()
        .into_iter()
        .find(|r| !r.ends_with("planted"))
        .expect("the new run");
    let manifest = read_manifest(&new);
    for stage in manifest["stages"].as_array().expect("stages") {
        assert_eq!(stage["cached_from"], Value::Null, "{stage:#}");
    }
    for entry in walkdir::WalkDir::new(&new) {
        let entry = entry.expect("walk");
        assert_ne!(entry.file_name(), "secret", "{}", entry.path().display());
    }
}

/// Replaces the run's manifest with a FIFO, a link to `/dev/zero` or a sparse file past the
/// bound, and expects `report`, `diff` and `pack` to refuse it at once, naming it.
#[test]
fn a_manifest_that_is_a_fifo_a_device_or_huge_is_refused_unread() {
    for (damage, why) in [
        ("fifo", "not a regular file"),
        ("zero", "symbolic link"),
        ("huge", "bytes; at most 67108864"),
    ] {
        let (project, run) = one_run();
        let manifest = run.join("manifest.json");
        std::fs::remove_file(&manifest).expect("remove");
        match damage {
            "fifo" => {
                nix::unistd::mkfifo(&manifest, nix::sys::stat::Mode::from_bits_truncate(0o644))
                    .expect("mkfifo")
            }
            "zero" => std::os::unix::fs::symlink("/dev/zero", &manifest).expect("symlink"),
            _ => std::fs::File::create(&manifest)
                .and_then(|f| f.set_len((64 << 20) + 1))
                .expect("a sparse file"),
        }
        let run_arg = arg(&run);
        for command in [
            &["report", &run_arg][..],
            &["diff", &run_arg, &run_arg],
            &["pack", &run_arg],
        ] {
            let out = project.run_within(command, PATIENCE);
            let err = stderr(&out);
            assert_ne!(code(&out), 0, "{damage} {command:?}: {err}");
            assert!(
                err.contains("manifest.json") && err.contains(why),
                "{damage} {command:?}: {err}"
            );
        }
    }
}

#[test]
fn a_fifo_manifest_under_artifacts_does_not_hang_the_run() {
    let project = Project::new();
    let planted = project.root.join("artifacts/planted");
    std::fs::create_dir_all(&planted).expect("mkdir");
    nix::unistd::mkfifo(
        &planted.join("manifest.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .expect("mkfifo");
    std::os::unix::fs::symlink("/", project.root.join("artifacts/linked")).expect("symlink");
    let out = project.run_within(&["pipeline.yaml"], Duration::from_secs(120));
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(
        err.contains("artifacts/planted/manifest.json") && err.contains("not a regular file"),
        "{err}"
    );
    assert!(
        err.contains("artifacts/linked") && err.contains("symbolic link"),
        "{err}"
    );
}
