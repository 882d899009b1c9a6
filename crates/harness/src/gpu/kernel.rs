//! Loading a cubin, asking it for its launch description, and launching the attention kernel.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use super::{Call, CudaError, Gpu};
use crate::abi::{AbiError, LAUNCH_INFO_SYMBOL, LaunchInfo};
use crate::problem::Problem;

/// Why a cubin could not be made ready to launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("failed to load the cubin: {0}")]
    Module(CudaError),
    #[error("the cubin has no entry point `{name}`: {error}")]
    Function { name: String, error: CudaError },
    #[error("failed to run {LAUNCH_INFO_SYMBOL}: {0}")]
    Info(CudaError),
    #[error(transparent)]
    Abi(#[from] AbiError),
    #[error(
        "the kernel asks for {needed} bytes of shared memory per block, the device allows {available}"
    )]
    SharedMemory { needed: i64, available: i64 },
    #[error("failed to set the kernel's maximum dynamic shared memory: {0}")]
    Attribute(CudaError),
}

/// What the driver reports about the compiled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FunctionAttributes {
    pub num_regs: Option<i32>,
    /// Local memory per thread, bytes (non-zero means spills or local arrays).
    pub local_bytes: Option<i32>,
    pub static_smem_bytes: Option<i32>,
    pub max_threads_per_block: Option<i32>,
    /// SM version the binary was built for, e.g. 90.
    pub binary_version: Option<i32>,
}

/// The kernel's parameters, in ABI order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelArgs {
    pub q: u64,
    pub k: u64,
    pub v: u64,
    pub o: u64,
    pub batch: i32,
    pub heads: i32,
    pub seq_len: i32,
    pub softmax_scale: f32,
    pub causal: i32,
}

impl KernelArgs {
    /// Arguments for `problem` with the given data pointers. Shape dimensions were validated to
    /// fit `i32` when the shape was built.
    pub fn new(problem: &Problem, q: u64, k: u64, v: u64, o: u64) -> Self {
        let c = |x: usize| i32::try_from(x).unwrap_or(i32::MAX);
        Self {
            q,
            k,
            v,
            o,
            batch: c(problem.shape.batch),
            heads: c(problem.shape.heads),
            seq_len: c(problem.shape.seq_len),
            softmax_scale: problem.softmax_scale,
            causal: i32::from(problem.causal),
        }
    }
}

/// A loaded attention entry point with its launch description.
pub struct AttentionKernel {
    name: String,
    function: CudaFunction,
    info: LaunchInfo,
    attributes: FunctionAttributes,
    _module: Arc<CudaModule>,
}

impl AttentionKernel {
    /// Loads the cubin `image`, runs `attention_launch_info` once (one thread) and prepares the
    /// entry point `name` for its dynamic shared memory.
    pub fn load(gpu: &Gpu, image: Vec<u8>, name: &str) -> Result<Self, LoadError> {
        let module = gpu
            .context()
            .load_module(Ptx::from_binary(image))
            .call("cuModuleLoadData")
            .map_err(LoadError::Module)?;
        let lookup = |symbol: &str| {
            module
                .load_function(symbol)
                .call("cuModuleGetFunction")
                .map_err(|error| LoadError::Function {
                    name: symbol.to_string(),
                    error,
                })
        };
        let info_fn = lookup(LAUNCH_INFO_SYMBOL)?;
        let function = lookup(name)?;
        let info = Self::query_info(gpu, &info_fn)?;
        let attr = |a: CUfunction_attribute| function.get_attribute(a).ok();
        let attributes = FunctionAttributes {
            num_regs: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS),
            local_bytes: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            static_smem_bytes: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            max_threads_per_block: attr(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            ),
            binary_version: attr(CUfunction_attribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION),
        };
        let needed = i64::from(info.dynamic_smem_bytes)
            + i64::from(attributes.static_smem_bytes.unwrap_or(0));
        if let Some(optin) = gpu.info().max_shared_per_block_optin
            && needed > i64::from(optin)
        {
            return Err(LoadError::SharedMemory {
                needed,
                available: i64::from(optin),
            });
        }
        function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(info.dynamic_smem_bytes).unwrap_or(i32::MAX),
            )
            .call("cuFuncSetAttribute")
            .map_err(LoadError::Attribute)?;
        Ok(Self {
            name: name.to_string(),
            function,
            info,
            attributes,
            _module: module,
        })
    }

    fn query_info(gpu: &Gpu, info_fn: &CudaFunction) -> Result<LaunchInfo, LoadError> {
        let words_buf = gpu.alloc(32).map_err(LoadError::Info)?;
        gpu.fill(words_buf.ptr(), 0xFF, 32)
            .map_err(LoadError::Info)?;
        let ptr = words_buf.ptr();
        let mut builder = gpu.stream().launch_builder(info_fn);
        builder.arg(&ptr);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the ABI's `attention_launch_info(int* out)` writes 8 ints; `ptr` points to
        // 32 bytes that live until after the synchronisation below.
        unsafe { builder.launch(cfg) }
            .call("cuLaunchKernel")
            .map_err(LoadError::Info)?;
        gpu.synchronize().map_err(LoadError::Info)?;
        let mut words = [0i32; 8];
        gpu.download(&mut words, ptr).map_err(LoadError::Info)?;
        Ok(LaunchInfo::from_words(&words)?)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn info(&self) -> &LaunchInfo {
        &self.info
    }

    pub fn attributes(&self) -> &FunctionAttributes {
        &self.attributes
    }

    /// The launch geometry for `args`: grid (ceil(S/BLOCK_M), B*H), the kernel's threads and
    /// dynamic shared memory.
    pub fn config(&self, args: &KernelArgs) -> LaunchConfig {
        let seq_len = usize::try_from(args.seq_len).unwrap_or(0);
        let grid_x = u32::try_from(self.info.grid_x(seq_len)).unwrap_or(u32::MAX);
        let grid_y =
            u32::try_from(i64::from(args.batch) * i64::from(args.heads)).unwrap_or(u32::MAX);
        LaunchConfig {
            grid_dim: (grid_x, grid_y, 1),
            block_dim: (self.info.threads, 1, 1),
            shared_mem_bytes: self.info.dynamic_smem_bytes,
        }
    }

    /// Queues one launch. Errors the driver detects at launch time (bad configuration) come
    /// back here; faults inside the kernel surface at the next synchronisation.
    pub fn launch(&self, gpu: &Gpu, args: &KernelArgs) -> Result<(), CudaError> {
        let mut builder = gpu.stream().launch_builder(&self.function);
        builder
            .arg(&args.q)
            .arg(&args.k)
            .arg(&args.v)
            .arg(&args.o)
            .arg(&args.batch)
            .arg(&args.heads)
            .arg(&args.seq_len)
            .arg(&args.softmax_scale)
            .arg(&args.causal);
        // SAFETY: the argument list matches the ABI's signature `(const void* q, const void* k,
        // const void* v, void* o, int batch, int heads, int seq_len, float softmax_scale,
        // int causal)`, and the pointers address guarded buffers sized for `args`' shape that
        // outlive the launch (callers synchronise before dropping them).
        unsafe { builder.launch(self.config(args)) }
            .map(|_| ())
            .call("cuLaunchKernel")
    }
}
