//! Receiving a run a remote sent back: only its own run directory and report reach the project.

use std::path::Path;

/// Unpacks a run a remote sent back into a fresh directory, then moves its run directory and
/// report into the project: nothing else. Only regular files and directories under
/// `artifacts/<id>/` and `reports/<id>.*` are taken; a link, a device, an absolute or `..`
/// member, or any other path refuses the whole run, naming the member, before anything reaches
/// the project. An `<id>` that is no run id, or a run the project already holds, is refused.
pub fn receive(tarball: &Path, root: &Path, id: &str, scratch: &Path) -> Result<(), String> {
    if !is_run_id(id) {
        return Err(format!(
            "`{id}` is not a run id (like 20261123T045414Z-1a2b3c4d)"
        ));
    }
    let open = || -> Result<tar::Archive<flate2::read::GzDecoder<std::fs::File>>, String> {
        let file = std::fs::File::open(tarball).map_err(|e| format!("open it: {e}"))?;
        Ok(tar::Archive::new(flate2::read::GzDecoder::new(file)))
    };
    // Every member checked before one is written.
    let mut archive = open()?;
    for entry in archive.entries().map_err(|e| format!("read it: {e}"))? {
        let entry = entry.map_err(|e| format!("read it: {e}"))?;
        let path = entry
            .path()
            .map_err(|e| format!("read a member's name: {e}"))?;
        let shown = path.display().to_string();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(format!(
                "member `{shown}` is a {}, not a file or a directory: refused",
                kind_name(kind)
            ));
        }
        if !member_allowed(&path, id) {
            return Err(format!(
                "member `{shown}` lies outside artifacts/{id}/ and reports/{id}.*: refused"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).map_err(|e| format!("create {}: {e}", scratch.display()))?;
    let mut archive = open()?;
    archive.set_preserve_permissions(false);
    archive.set_overwrite(false);
    archive
        .unpack(scratch)
        .map_err(|e| format!("unpack it: {e}"))?;
    let run = Path::new("artifacts").join(id);
    let target = root.join(&run);
    if target.exists() {
        return Err(format!("{} is there already: refused", run.display()));
    }
    if !scratch.join(&run).is_dir() {
        return Err(format!("it holds no {}", run.display()));
    }
    std::fs::create_dir_all(root.join("artifacts"))
        .map_err(|e| format!("create artifacts/: {e}"))?;
    move_into(&scratch.join(&run), &target)?;
    let reports = scratch.join("reports");
    if reports.is_dir() {
        std::fs::create_dir_all(root.join("reports"))
            .map_err(|e| format!("create reports/: {e}"))?;
        for entry in std::fs::read_dir(&reports).map_err(|e| format!("read reports/: {e}"))? {
            let entry = entry.map_err(|e| format!("read reports/: {e}"))?;
            move_into(&entry.path(), &root.join("reports").join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Whether a received member's path is one of the run's: `artifacts/<id>` and below, or
/// `reports/<id>.<ext>`, every component a plain name.
fn member_allowed(path: &Path, id: &str) -> bool {
    use std::path::Component;
    let parts: Option<Vec<&std::ffi::OsStr>> = path
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let Some(parts) = parts else {
        return false;
    };
    let name = |i: usize| parts.get(i).and_then(|p| p.to_str());
    match (name(0), name(1), parts.len()) {
        // The archive's own top directory (`./`).
        (None, None, 0) => true,
        (Some("artifacts"), None, 1) | (Some("reports"), None, 1) => true,
        (Some("artifacts"), Some(run), _) => run == id,
        (Some("reports"), Some(file), 2) => file
            .strip_prefix(id)
            .is_some_and(|ext| ext.starts_with('.') && !ext[1..].contains(['/', '.'])),
        _ => false,
    }
}

/// A run id as the runner makes them: `20261123T045414Z-1a2b3c4d` (an experiment's trials and
/// older runs may add `-` and letters), never a path.
fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().next().is_some_and(|c| c.is_ascii_digit())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn kind_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "FIFO",
        _ => "special member",
    }
}

/// Moves a received file or directory into the project: a rename, or a copy where the scratch
/// directory is on another file system.
fn move_into(from: &Path, to: &Path) -> Result<(), String> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)
                .map_err(|e| format!("create {}: {e}", dest.display()))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest)
                .map_err(|e| format!("copy to {}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{is_run_id, member_allowed};
    use std::path::Path;

    #[test]
    fn only_the_runs_own_members_are_received() {
        let id = "20261127T061006Z-840fa248";
        for ok in [
            "artifacts",
            "artifacts/20261127T061006Z-840fa248",
            "artifacts/20261127T061006Z-840fa248/manifest.json",
            "./artifacts/20261127T061006Z-840fa248/check/a/stdout.log",
            "reports/20261127T061006Z-840fa248.md",
        ] {
            assert!(member_allowed(Path::new(ok), id), "{ok}");
        }
        for refused in [
            "pipeline.yaml",
            ".git/hooks/pre-commit",
            "artifacts/other-run/manifest.json",
            "artifacts/20261127T061006Z-840fa248/../../pipeline.yaml",
            "/etc/passwd",
            "reports/latest.md",
            "reports/20261127T061006Z-840fa248.md/x",
            "reports/20261127T061006Z-840fa248.tar.gz",
        ] {
            assert!(!member_allowed(Path::new(refused), id), "{refused}");
        }
        assert!(is_run_id(id));
        assert!(!is_run_id("../../x"));
        assert!(!is_run_id(""));
    }
}
