//! Everything that calls the CUDA driver, through cudarc. This is the only module of the crate
//! (and of the workspace) with `unsafe` code: raw device allocations, kernel launches with
//! untyped arguments, and stream capture. Every call's result is checked and turned into a
//! [`CudaError`] that names the driver call; nothing here panics on a driver error.
//!
//! cudarc loads `libcuda` lazily and panics when it is missing, so [`Gpu::open`] asks
//! [`driver_present`] first and reports [`OpenError::NoDriver`] instead.
#![allow(unsafe_code)]

mod clock;
mod device;
mod kernel;
mod memory;

pub use clock::ClockProbe;
pub use device::{DeviceInfo, Gpu, OpenError, TimedGraph, TimerEvent, driver_present};
pub use kernel::{AttentionKernel, FunctionAttributes, KernelArgs, LoadError};
pub use memory::{DeviceBuffer, GuardedBuffer};

use cudarc::driver::DriverError;

/// A failed driver call: which call, and the driver's name and description of the error, e.g.
/// `CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure (cuStreamSynchronize)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {description} ({call})")]
pub struct CudaError {
    /// The driver call that returned the error.
    pub call: &'static str,
    /// The `CUresult` value.
    pub code: u32,
    /// `cuGetErrorName`, e.g. `CUDA_ERROR_LAUNCH_FAILED`.
    pub name: String,
    /// `cuGetErrorString`, e.g. `unspecified launch failure`.
    pub description: String,
}

impl CudaError {
    pub(crate) fn from_driver(call: &'static str, error: DriverError) -> Self {
        let name = error
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", error.0));
        let description = error
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "no description from cuGetErrorString".to_string());
        Self {
            call,
            code: error.0 as u32,
            name,
            description,
        }
    }

    /// `NAME: description`, the form the JSON's `error` field starts with.
    pub fn summary(&self) -> String {
        format!("{}: {}", self.name, self.description)
    }

    /// Whether the error leaves the context unusable: every later call in this process fails
    /// with the same error (a fault inside a kernel).
    pub fn is_sticky(&self) -> bool {
        matches!(
            self.name.as_str(),
            "CUDA_ERROR_ILLEGAL_ADDRESS"
                | "CUDA_ERROR_LAUNCH_FAILED"
                | "CUDA_ERROR_MISALIGNED_ADDRESS"
                | "CUDA_ERROR_ILLEGAL_INSTRUCTION"
                | "CUDA_ERROR_INVALID_ADDRESS_SPACE"
                | "CUDA_ERROR_INVALID_PC"
                | "CUDA_ERROR_HARDWARE_STACK_ERROR"
                | "CUDA_ERROR_ASSERT"
                | "CUDA_ERROR_LAUNCH_TIMEOUT"
                | "CUDA_ERROR_ECC_UNCORRECTABLE"
                | "CUDA_ERROR_TENSOR_MEMORY_LEAK"
        )
    }
}

/// Shorthand for wrapping a driver result.
pub(crate) trait Call<T> {
    fn call(self, name: &'static str) -> Result<T, CudaError>;
}

impl<T> Call<T> for Result<T, DriverError> {
    fn call(self, name: &'static str) -> Result<T, CudaError> {
        self.map_err(|e| CudaError::from_driver(name, e))
    }
}
