//! The device, its context and stream, copies, events and graphs.

use std::sync::Arc;

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, CudaEvent, CudaGraph, CudaStream, result};

use super::{Call, CudaError, DeviceBuffer};

/// Whether `libcuda` can be loaded. Must be asked before any other cudarc call, which would
/// panic without it.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the candidate library names and closes them again.
    unsafe { sys::is_culib_present() }
}

/// Why no device could be opened (exit code 4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("no CUDA driver: libcuda.so.1 not found")]
    NoDriver,
    #[error("no CUDA device: {0}")]
    NoDevice(CudaError),
}

/// What the driver says about the device (the probe's output).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub device_count: Option<i32>,
    pub name: String,
    pub sm_count: Option<u32>,
    pub compute_capability: Option<(i32, i32)>,
    /// `cuDriverGetVersion`: the CUDA version the driver supports, e.g. 13000 for 13.0.
    pub driver_cuda_version: Option<i32>,
    pub l2_bytes: Option<u64>,
    pub memory_bytes: Option<u64>,
    /// `CU_DEVICE_ATTRIBUTE_CLOCK_RATE`: the maximum SM clock, kHz.
    pub max_sm_clock_khz: Option<i32>,
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`, kHz.
    pub memory_clock_khz: Option<i32>,
    pub memory_bus_bits: Option<i32>,
    /// Shared memory one block may opt in to, bytes.
    pub max_shared_per_block_optin: Option<i32>,
    pub max_shared_per_sm: Option<i32>,
    pub ecc_enabled: Option<bool>,
}

impl DeviceInfo {
    /// `13.0` from 13000.
    pub fn driver_version_string(&self) -> Option<String> {
        self.driver_cuda_version
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }

    /// Theoretical DRAM bandwidth from the memory clock and bus width (double data rate), GB/s;
    /// a datasheet-style figure, reported beside the measured copy bandwidth.
    pub fn theoretical_dram_gbps(&self) -> Option<f64> {
        let clock = self.memory_clock_khz? as f64 * 1e3;
        let bus = self.memory_bus_bits? as f64 / 8.0;
        Some(2.0 * clock * bus / 1e9)
    }

    pub fn to_schema(&self) -> parsers::harness::Device {
        parsers::harness::Device {
            name: self.name.clone(),
            sm_count: self.sm_count,
            compute_capability: self
                .compute_capability
                .map(|(major, minor)| format!("{major}.{minor}")),
            driver_version: self.driver_version_string(),
            l2_bytes: self.l2_bytes,
            memory_bytes: self.memory_bytes,
        }
    }
}

/// An open device: its primary context and one non-blocking stream that all work goes to.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
}

impl Gpu {
    /// Opens device `ordinal`. Fails with [`OpenError::NoDriver`] when `libcuda` is missing and
    /// [`OpenError::NoDevice`] when the driver finds no usable device.
    pub fn open(ordinal: usize) -> Result<Gpu, OpenError> {
        if !driver_present() {
            return Err(OpenError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal)
            .call("cuInit/cuDevicePrimaryCtxRetain")
            .map_err(OpenError::NoDevice)?;
        // One stream carries everything, so cudarc's cross-stream event tracking is not needed,
        // and it would add event records to every launch (and break stream capture).
        // SAFETY: no CudaSlice is ever shared between streams here.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .call("cuStreamCreate")
            .map_err(OpenError::NoDevice)?;
        let info = query_info(&ctx, ordinal);
        Ok(Gpu { ctx, stream, info })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits for everything queued so far; the first asynchronous error surfaces here.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize().call("cuStreamSynchronize")
    }

    /// Free and total device memory, bytes.
    pub fn memory_info(&self) -> Result<(usize, usize), CudaError> {
        self.ctx.mem_get_info().call("cuMemGetInfo")
    }

    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, CudaError> {
        DeviceBuffer::alloc(&self.ctx, bytes)
    }

    /// Copies host data to device address `dst` and waits for the copy.
    pub fn upload<T: Plain>(&self, dst: u64, src: &[T]) -> Result<(), CudaError> {
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: `dst` points into a live allocation of at least size_of_val(src) bytes
        // (callers pass pointers from DeviceBuffer/GuardedBuffer ranges), and the stream is
        // synchronised before `src` can be dropped.
        unsafe { result::memcpy_htod_async(dst, src, self.stream.cu_stream()) }
            .call("cuMemcpyHtoDAsync")?;
        self.synchronize()
    }

    /// Copies from device address `src` into `dst` and waits for the copy.
    pub fn download<T: Plain>(&self, dst: &mut [T], src: u64) -> Result<(), CudaError> {
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: `src` points into a live allocation of at least size_of_val(dst) bytes, every
        // bit pattern is a valid `T` (Plain), and the stream is synchronised before returning.
        unsafe { result::memcpy_dtoh_async(dst, src, self.stream.cu_stream()) }
            .call("cuMemcpyDtoHAsync")?;
        self.synchronize()
    }

    /// Queues a byte fill of `len` bytes at `dst`.
    pub fn fill(&self, dst: u64, byte: u8, len: usize) -> Result<(), CudaError> {
        // SAFETY: `dst..dst+len` lies inside a live allocation (callers' invariant).
        unsafe { result::memset_d8_async(dst, byte, len, self.stream.cu_stream()) }
            .call("cuMemsetD8Async")
    }

    /// Queues a device-to-device copy of `len` bytes.
    pub fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), CudaError> {
        // SAFETY: both ranges lie inside live allocations (callers' invariant).
        unsafe { result::memcpy_dtod_async(dst, src, len, self.stream.cu_stream()) }
            .call("cuMemcpyDtoDAsync")
    }

    /// An event that records time stamps.
    pub fn timer_event(&self) -> Result<TimerEvent, CudaError> {
        self.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .call("cuEventCreate")
            .map(TimerEvent)
    }

    /// Queues a time stamp.
    pub fn record(&self, event: &TimerEvent) -> Result<(), CudaError> {
        event.0.record(&self.stream).call("cuEventRecord")
    }

    /// Captures the work `body` queues into a CUDA graph instead of running it. The capture is
    /// always ended, also when `body` fails.
    pub fn capture(
        &self,
        body: impl FnOnce() -> Result<(), CudaError>,
    ) -> Result<TimedGraph, CudaError> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .call("cuStreamBeginCapture")?;
        let queued = body();
        let ended = self
            .stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .call("cuStreamEndCapture/cuGraphInstantiate");
        queued?;
        match ended? {
            Some(graph) => {
                graph.upload().call("cuGraphUpload")?;
                Ok(TimedGraph(graph))
            }
            None => Err(CudaError {
                call: "cuStreamEndCapture",
                code: 0,
                name: "EMPTY_GRAPH".to_string(),
                description: "the capture recorded no work".to_string(),
            }),
        }
    }

    /// Queues one replay of a graph.
    pub fn replay(&self, graph: &TimedGraph) -> Result<(), CudaError> {
        graph.0.launch().call("cuGraphLaunch")
    }
}

/// A time-stamp event.
pub struct TimerEvent(CudaEvent);

impl TimerEvent {
    /// Milliseconds from `self` to `end`, waiting for both.
    pub fn elapsed_ms(&self, end: &TimerEvent) -> Result<f64, CudaError> {
        self.0
            .elapsed_ms(&end.0)
            .map(f64::from)
            .call("cuEventElapsedTime")
    }

    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.0.synchronize().call("cuEventSynchronize")
    }
}

/// An instantiated CUDA graph.
pub struct TimedGraph(CudaGraph);

/// Plain data that any bit pattern is a valid value of, so it may be copied to and from the
/// device byte for byte.
pub trait Plain: Copy + sealed::Sealed {}

impl Plain for u8 {}
impl Plain for u16 {}
impl Plain for i32 {}
impl Plain for u32 {}
impl Plain for u64 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

fn query_info(ctx: &Arc<CudaContext>, ordinal: usize) -> DeviceInfo {
    let attr = |a: CUdevice_attribute| ctx.attribute(a).ok();
    let mut driver_version = 0i32;
    // SAFETY: writes one int through a valid pointer.
    let driver_cuda_version = unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .ok()
        .map(|()| driver_version);
    DeviceInfo {
        ordinal,
        device_count: CudaContext::device_count().ok(),
        name: ctx.name().unwrap_or_else(|_| "unknown".to_string()),
        sm_count: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .and_then(|v| u32::try_from(v).ok()),
        compute_capability: ctx.compute_capability().ok(),
        driver_cuda_version,
        l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .and_then(|v| u64::try_from(v).ok()),
        memory_bytes: ctx.total_mem().ok().map(|v| v as u64),
        max_sm_clock_khz: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        max_shared_per_block_optin: attr(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        ),
        max_shared_per_sm: attr(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        ),
        ecc_enabled: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_ECC_ENABLED).map(|v| v != 0),
    }
}
