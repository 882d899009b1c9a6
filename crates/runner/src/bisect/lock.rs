//! One bisection per repository at a time: an exclusive `flock` on `exhibit-bisect.lock` in the
//! repository's git directory, held for the whole search. The kernel drops it when the runner
//! ends, however it ends, so a killed bisection never leaves a stale lock.

use std::io::{Read, Seek, Write};
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};

use super::BisectError;

pub struct Lock {
    _file: Flock<std::fs::File>,
}

impl Lock {
    pub fn acquire(git_dir: &Path) -> Result<Lock, BisectError> {
        let path = git_dir.join("exhibit-bisect.lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| BisectError::Git(format!("open {}: {e}", path.display())))?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(file) => file,
            Err((mut file, _)) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(BisectError::Locked(format!(
                    "another `exhibit bisect` is running in this repository{}; wait for it to end or stop it",
                    if holder.is_empty() {
                        String::new()
                    } else {
                        format!(" (pid {holder})")
                    }
                )));
            }
        };
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        Ok(Lock { _file: file })
    }
}
