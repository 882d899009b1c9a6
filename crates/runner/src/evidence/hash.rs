//! sha256 of files and bytes, as lowercase hex.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The sha256 of `bytes`.
pub fn bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sha256 of a file's contents, read in blocks.
pub fn file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(buffer.get(..n).unwrap_or_default());
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
