//! Raw device allocations, and guarded buffers laid out as `[before | data | after]`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, result};
use parsers::harness::figures::Corruption;

use super::{Call, CudaError, Gpu};
use crate::canary::{GuardedLayout, Side, find_corruption, guard_pattern};

/// One `cuMemAlloc` allocation, freed on drop.
pub struct DeviceBuffer {
    ptr: u64,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceBuffer {
    pub(crate) fn alloc(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Self, CudaError> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: allocates device memory; its content is never read before it is written.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }.call("cuMemAlloc")?;
        Ok(Self {
            ptr,
            bytes,
            ctx: ctx.clone(),
        })
    }

    /// The device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // A failure here (a context already broken by a kernel fault) leaves nothing to undo.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from cuMemAlloc and is freed once.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

/// A device buffer with guard regions on both sides of its data.
pub struct GuardedBuffer {
    name: &'static str,
    buffer: DeviceBuffer,
    layout: GuardedLayout,
    before: Vec<u8>,
    after: Vec<u8>,
}

impl GuardedBuffer {
    /// Allocates `layout.total_bytes()` and writes both guards' patterns (seeded by `seed` and
    /// the buffer's `name`). The data is left unset.
    pub fn new(
        gpu: &Gpu,
        name: &'static str,
        layout: GuardedLayout,
        seed: u64,
    ) -> Result<Self, CudaError> {
        let buffer = gpu.alloc(layout.total_bytes())?;
        let before = guard_pattern(seed, name, Side::Before, layout.guard_bytes());
        let after = guard_pattern(seed, name, Side::After, layout.guard_bytes());
        let this = Self {
            name,
            buffer,
            layout,
            before,
            after,
        };
        if layout.guard_bytes() > 0 {
            gpu.upload(this.guard_ptr(Side::Before), &this.before)?;
            gpu.upload(this.guard_ptr(Side::After), &this.after)?;
        }
        Ok(this)
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn layout(&self) -> &GuardedLayout {
        &self.layout
    }

    /// The pointer the kernel gets.
    pub fn data_ptr(&self) -> u64 {
        self.buffer.ptr() + self.layout.data_offset() as u64
    }

    pub fn guard_ptr(&self, side: Side) -> u64 {
        self.buffer.ptr() + self.layout.guard_offset(side) as u64
    }

    /// The pattern a guard must still hold.
    pub fn expected(&self, side: Side) -> &[u8] {
        match side {
            Side::Before => &self.before,
            Side::After => &self.after,
        }
    }

    /// Reads both guards back and reports those that changed.
    pub fn check_guards(&self, gpu: &Gpu) -> Result<Vec<Corruption>, CudaError> {
        let mut found = Vec::new();
        if self.layout.guard_bytes() == 0 {
            return Ok(found);
        }
        let mut actual = vec![0u8; self.layout.guard_bytes()];
        for side in [Side::Before, Side::After] {
            gpu.download(&mut actual, self.guard_ptr(side))?;
            if let Some(c) = find_corruption(self.name, side, self.expected(side), &actual) {
                found.push(c);
            }
        }
        Ok(found)
    }
}
