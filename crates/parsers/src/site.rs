//! Folding many records into one [`Finding`] per distinct site, and the site's fingerprint.
//!
//! A site is what the fingerprint hashes: kind, kernel (parameters and return type removed),
//! source file (base name only), line, memory space, access size, and a short kind-specific
//! discriminator (e.g. the CUDA error and API call of a host error, or the hazard type and the
//! other side of a race). Addresses, thread and block indices, pids and PC offsets never enter it,
//! so the same fault found in two runs gets the same fingerprint.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use sha2::{Digest, Sha256};

use crate::memory_space::MemorySpace;
use crate::model::{Access, Finding, FindingKind, Severity};

/// How many example threads/blocks a finding keeps.
pub(crate) const MAX_EXAMPLES: usize = 4;
/// How many raw lines a finding's excerpt keeps.
pub(crate) const MAX_EXCERPT: usize = 24;

/// The identity of a site, borrowed from the record being folded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Site<'a> {
    pub kind: FindingKind,
    pub kernel: Option<&'a str>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    pub space: Option<MemorySpace>,
    pub size: Option<u32>,
    pub discriminator: &'a str,
}

/// A fast, non-cryptographic hasher (the multiply-rotate scheme of rustc's FxHash): sites are
/// hashed once per record, and nothing adversarial chooses them.
#[derive(Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            if let Some(d) = w.get_mut(..rest.len()) {
                d.copy_from_slice(rest);
            }
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

impl Site<'_> {
    fn hash64(&self) -> u64 {
        let mut h = FxHasher::default();
        self.kind.hash(&mut h);
        self.kernel.map(kernel_key).hash(&mut h);
        self.file.map(file_key).hash(&mut h);
        self.line.hash(&mut h);
        self.space.hash(&mut h);
        self.size.hash(&mut h);
        self.discriminator.hash(&mut h);
        h.finish()
    }

    /// The text the fingerprint is the hash of.
    fn canonical(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}",
            serde_json::to_string(&self.kind).unwrap_or_default(),
            self.kernel.map(kernel_key).unwrap_or(""),
            self.file.map(file_key).unwrap_or(""),
            self.line.map(|l| l.to_string()).unwrap_or_default(),
            self.space
                .map(|s| serde_json::to_string(&s).unwrap_or_default())
                .unwrap_or_default(),
            self.size.map(|s| s.to_string()).unwrap_or_default(),
            self.discriminator,
        )
    }
}

/// The fingerprint of a site: the first 16 hex digits of the SHA-256 of its canonical text.
pub(crate) fn fingerprint(site: &Site<'_>) -> String {
    let digest = Sha256::digest(site.canonical().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A kernel name reduced to what identifies it: no leading return type, no parameter list.
/// `void ns::k<float, (int)4>(T1 *, int)` becomes `ns::k<float, (int)4>`.
pub(crate) fn kernel_key(name: &str) -> &str {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name);
    // Cut at the first '(' outside template brackets.
    let mut depth = 0i32;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth <= 0 && i > 0 => {
                let head = name.get(..i).unwrap_or(name);
                if !head.ends_with("operator") {
                    return head.trim_end();
                }
            }
            _ => {}
        }
    }
    name
}

/// A source path reduced to its base name, so captures from different checkouts compare equal.
pub(crate) fn file_key(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// What a record contributes besides its site.
pub(crate) struct Record<'a> {
    pub site: Site<'a>,
    pub severity: Severity,
    pub access: Option<Access>,
    pub message: &'a str,
    pub example: Option<&'a str>,
    pub excerpt: &'a [String],
    /// How many occurrences this record stands for (1 for a plain record).
    pub occurrences: u64,
}

/// Folds records into findings, one per site, keeping first-seen order.
#[derive(Default)]
pub(crate) struct Sites {
    index: HashMap<u64, Vec<usize>, BuildHasherDefault<FxHasher>>,
    findings: Vec<Finding>,
    keys: Vec<OwnedSite>,
}

#[derive(PartialEq)]
struct OwnedSite {
    kind: FindingKind,
    kernel: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    space: Option<MemorySpace>,
    size: Option<u32>,
    discriminator: String,
}

impl OwnedSite {
    fn matches(&self, s: &Site<'_>) -> bool {
        self.kind == s.kind
            && self.kernel.as_deref().map(kernel_key) == s.kernel.map(kernel_key)
            && self.file.as_deref().map(file_key) == s.file.map(file_key)
            && self.line == s.line
            && self.space == s.space
            && self.size == s.size
            && self.discriminator == s.discriminator
    }
}

impl Sites {
    /// The finding of a site already seen, if any.
    pub(crate) fn find(&self, site: &Site<'_>) -> Option<usize> {
        self.find_hashed(site, site.hash64())
    }

    fn find_hashed(&self, site: &Site<'_>, hash: u64) -> Option<usize> {
        self.index
            .get(&hash)?
            .iter()
            .copied()
            .find(|&i| self.keys.get(i).is_some_and(|k| k.matches(site)))
    }

    /// Counts one more record for finding `i`.
    pub(crate) fn bump(&mut self, i: usize, occurrences: u64, example: Option<&str>) {
        if let Some(f) = self.findings.get_mut(i) {
            f.count = f.count.saturating_add(occurrences);
            if let Some(example) = example
                && f.examples.len() < MAX_EXAMPLES
            {
                f.examples.push(example.to_string());
            }
        }
    }

    /// Adds a record; returns the index of its finding and whether the finding is new, so the
    /// caller can fill kind-specific facts once.
    pub(crate) fn add(&mut self, r: Record<'_>) -> (usize, bool) {
        let hash = r.site.hash64();
        if let Some(i) = self.find_hashed(&r.site, hash) {
            self.bump(i, r.occurrences, r.example);
            return (i, false);
        }
        let i = self.findings.len();
        self.findings.push(Finding {
            kind: r.site.kind,
            severity: r.severity,
            count: r.occurrences,
            fingerprint: fingerprint(&r.site),
            kernel: r.site.kernel.map(str::to_string),
            file: r.site.file.map(str::to_string),
            line: r.site.line,
            space: r.site.space,
            access: r.access,
            size: r.site.size,
            message: r.message.to_string(),
            excerpt: r.excerpt.iter().take(MAX_EXCERPT).cloned().collect(),
            examples: r.example.map(|e| vec![e.to_string()]).unwrap_or_default(),
            related: Vec::new(),
            sides: Vec::new(),
            race_accesses: None,
            sync_scope: None,
            invalid_arguments: false,
            threads: Vec::new(),
            device_frames: Vec::new(),
            host_frames: Vec::new(),
            facts: Default::default(),
            output_before: None,
            profiler_rule: None,
        });
        self.keys.push(OwnedSite {
            kind: r.site.kind,
            kernel: r.site.kernel.map(str::to_string),
            file: r.site.file.map(str::to_string),
            line: r.site.line,
            space: r.site.space,
            size: r.site.size,
            discriminator: r.site.discriminator.to_string(),
        });
        self.index.entry(hash).or_default().push(i);
        (i, true)
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Finding> {
        self.findings.get_mut(i)
    }

    pub(crate) fn into_findings(self) -> Vec<Finding> {
        self.findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_key_drops_return_type_and_parameters() {
        assert_eq!(
            kernel_key("void exhibit::faults::scale_tail<float, (int)4>(T1 *, int, T1)"),
            "exhibit::faults::scale_tail<float, (int)4>"
        );
        assert_eq!(
            kernel_key("read_past_end(const float *, float *, int, int)"),
            "read_past_end"
        );
        assert_eq!(kernel_key("read_past_end"), "read_past_end");
        assert_eq!(kernel_key("operator()(int)"), "operator()");
    }

    #[test]
    fn file_key_is_the_base_name() {
        assert_eq!(
            file_key("<repo>/crates/parsers/fixtures/programs/oob.cu"),
            "oob.cu"
        );
        assert_eq!(file_key("oob.cu"), "oob.cu");
    }
}
