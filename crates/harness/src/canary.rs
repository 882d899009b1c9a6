//! Guard regions: every device buffer is allocated as `[before | data | after]`, the kernel gets
//! a pointer to `data`, and both guards hold a seeded byte pattern that is read back and compared
//! after each launch. An out-of-bounds write that does not fault (it lands inside the allocation)
//! still shows up as a changed guard byte.
//!
//! The `after` guard starts at the first byte past the data, whatever the data's length, so a
//! write one element too far is caught. The guard length is a multiple of 256 bytes, so the data
//! pointer keeps the 256-byte alignment of `cuMemAlloc`.
//!
//! Under compute-sanitizer memcheck, guards hide out-of-bounds accesses from the sanitizer
//! (they stay inside the allocation): run it with `--guard-bytes 0`.

use parsers::harness::figures::Corruption;

use crate::prng::SplitMix64;

/// Bytes of each guard region unless `--guard-bytes` says otherwise.
pub const DEFAULT_GUARD_BYTES: usize = 64 * 1024;

/// Guard lengths must be a multiple of this, so that data pointers stay aligned.
pub const GUARD_ALIGN: usize = 256;

/// Which guard of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Before,
    After,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Before => "before",
            Side::After => "after",
        }
    }
}

/// The byte layout of one guarded allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardedLayout {
    guard_bytes: usize,
    data_bytes: usize,
}

/// A guard length that would misalign the data pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("guard length {0} is not a multiple of {GUARD_ALIGN} bytes")]
pub struct LayoutError(pub usize);

impl GuardedLayout {
    pub fn new(data_bytes: usize, guard_bytes: usize) -> Result<Self, LayoutError> {
        if !guard_bytes.is_multiple_of(GUARD_ALIGN) {
            return Err(LayoutError(guard_bytes));
        }
        Ok(Self {
            guard_bytes,
            data_bytes,
        })
    }

    /// Bytes to allocate.
    pub fn total_bytes(&self) -> usize {
        2 * self.guard_bytes + self.data_bytes
    }

    /// Offset of the data from the start of the allocation.
    pub fn data_offset(&self) -> usize {
        self.guard_bytes
    }

    pub fn data_bytes(&self) -> usize {
        self.data_bytes
    }

    pub fn guard_bytes(&self) -> usize {
        self.guard_bytes
    }

    /// Offset of a guard from the start of the allocation.
    pub fn guard_offset(&self, side: Side) -> usize {
        match side {
            Side::Before => 0,
            Side::After => self.guard_bytes + self.data_bytes,
        }
    }
}

/// The expected content of one guard: seeded bytes, different for every buffer and side, so
/// that a shifted copy of another guard or of data does not match by accident.
pub fn guard_pattern(seed: u64, buffer: &str, side: Side, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::for_stream(seed, &format!("guard:{buffer}.{}", side.name()));
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// `buffer.side`, the name a corrupted guard is reported under (e.g. `o.after`).
pub fn region_name(buffer: &str, side: Side) -> String {
    format!("{buffer}.{}", side.name())
}

/// Compares a guard read back from the device with its expected pattern.
pub fn find_corruption(
    buffer: &str,
    side: Side,
    expected: &[u8],
    actual: &[u8],
) -> Option<Corruption> {
    let len = expected.len().max(actual.len());
    let changed: Vec<usize> = (0..len)
        .filter(|&i| expected.get(i) != actual.get(i))
        .collect();
    let (&first, &last) = (changed.first()?, changed.last()?);
    let (nearest, farthest) = match side {
        Side::After => (first, last),
        Side::Before => (len - 1 - last, len - 1 - first),
    };
    Some(Corruption {
        region: region_name(buffer, side),
        bytes_changed: changed.len(),
        nearest_to_data: nearest,
        farthest_from_data: farthest,
    })
}
