//! Measuring the SM clock without NVML: a one-thread kernel, JIT-compiled by the driver from
//! the PTX below (no NVRTC needed), spins for a fixed time on `%globaltimer` (nanoseconds) and
//! counts `%clock64` cycles meanwhile; cycles / nanoseconds is the clock of the SM it ran on.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use super::{Call, CudaError, Gpu};

const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry exhibit_clock_probe(
    .param .u64 out_ptr,
    .param .u64 spin_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [out_ptr];
    ld.param.u64 %rd2, [spin_ns];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd3, %globaltimer;
    mov.u64 %rd4, %clock64;
SPIN:
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd5, %rd3;
    setp.lt.u64 %p1, %rd6, %rd2;
    @%p1 bra SPIN;
    mov.u64 %rd7, %clock64;
    sub.u64 %rd8, %rd7, %rd4;
    st.global.u64 [%rd1], %rd8;
    st.global.u64 [%rd1+8], %rd6;
    ret;
}
"#;

/// How long each measurement spins: long enough that the timer's granularity (up to 1 us on
/// some GPUs) is under 0.1% of it.
const SPIN_NS: u64 = 2_000_000;

/// The loaded clock-measuring kernel.
pub struct ClockProbe {
    function: CudaFunction,
    _module: Arc<CudaModule>,
}

impl ClockProbe {
    pub fn load(gpu: &Gpu) -> Result<Self, CudaError> {
        let module = gpu
            .context()
            .load_module(Ptx::from_src(PTX))
            .call("cuModuleLoadData (clock probe PTX)")?;
        let function = module
            .load_function("exhibit_clock_probe")
            .call("cuModuleGetFunction")?;
        Ok(Self {
            function,
            _module: module,
        })
    }

    /// The SM clock in MHz over a 2 ms spin, measured now.
    pub fn measure_mhz(&self, gpu: &Gpu) -> Result<f64, CudaError> {
        let out = gpu.alloc(16)?;
        let ptr = out.ptr();
        let spin = SPIN_NS;
        let mut builder = gpu.stream().launch_builder(&self.function);
        builder.arg(&ptr).arg(&spin);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the PTX entry takes (u64 out_ptr, u64 spin_ns) and stores 16 bytes at
        // out_ptr, which points to a 16-byte allocation alive until after the download below.
        unsafe { builder.launch(cfg) }.call("cuLaunchKernel (clock probe)")?;
        let mut words = [0u64; 2];
        gpu.download(&mut words, ptr)?;
        let [cycles, nanos] = words;
        if nanos == 0 {
            return Ok(0.0);
        }
        Ok(cycles as f64 * 1e3 / nanos as f64)
    }
}
