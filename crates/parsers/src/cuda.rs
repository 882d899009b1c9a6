//! CUDA's own vocabulary as tools and programs print it: an error by its runtime
//! (`cudaErrorX`) or driver (`CUDA_ERROR_X`) name or by the words the runtime prints for it, and
//! an API call by what it does. The report's rules read these types, never the text.

/// A CUDA error the report tells apart; any other is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaError {
    /// `cudaErrorInvalidValue`, `CUDA_ERROR_INVALID_VALUE`: "invalid argument".
    InvalidValue,
    /// `cudaErrorInvalidConfiguration`: "invalid configuration argument".
    InvalidConfiguration,
    /// `cudaErrorLaunchOutOfResources`: "too many resources requested for launch".
    LaunchOutOfResources,
    /// `cudaErrorMemoryAllocation`, `CUDA_ERROR_OUT_OF_MEMORY`: "out of memory".
    MemoryAllocation,
    /// `cudaErrorInvalidDevicePointer`.
    InvalidDevicePointer,
    /// `cudaErrorInvalidMemcpyDirection`.
    InvalidMemcpyDirection,
    /// A kernel's fault, which every later call of the context reports again (the error is
    /// sticky): an illegal or misaligned address, an illegal instruction, a failed assert, a
    /// launch failure or timeout, a hardware stack error, an invalid program counter.
    Sticky,
    /// Any other.
    Other,
}

impl CudaError {
    /// The error a runtime or driver error name names.
    pub fn of_name(name: &str) -> CudaError {
        match name {
            "cudaErrorInvalidValue" | "CUDA_ERROR_INVALID_VALUE" => CudaError::InvalidValue,
            "cudaErrorInvalidConfiguration" => CudaError::InvalidConfiguration,
            "cudaErrorLaunchOutOfResources" | "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" => {
                CudaError::LaunchOutOfResources
            }
            "cudaErrorMemoryAllocation" | "CUDA_ERROR_OUT_OF_MEMORY" => CudaError::MemoryAllocation,
            "cudaErrorInvalidDevicePointer" => CudaError::InvalidDevicePointer,
            "cudaErrorInvalidMemcpyDirection" => CudaError::InvalidMemcpyDirection,
            "cudaErrorLaunchFailure"
            | "cudaErrorIllegalAddress"
            | "cudaErrorMisalignedAddress"
            | "cudaErrorIllegalInstruction"
            | "cudaErrorInvalidPc"
            | "cudaErrorHardwareStackError"
            | "cudaErrorAssert"
            | "cudaErrorLaunchTimeout"
            | "CUDA_ERROR_LAUNCH_FAILED"
            | "CUDA_ERROR_ILLEGAL_ADDRESS"
            | "CUDA_ERROR_MISALIGNED_ADDRESS"
            | "CUDA_ERROR_ILLEGAL_INSTRUCTION"
            | "CUDA_ERROR_INVALID_PC"
            | "CUDA_ERROR_HARDWARE_STACK_ERROR"
            | "CUDA_ERROR_ASSERT"
            | "CUDA_ERROR_LAUNCH_TIMEOUT" => CudaError::Sticky,
            _ => CudaError::Other,
        }
    }

    /// The launch error a line of a program's or a framework's output names: a launch out of
    /// resources or with an invalid configuration, by its name or the runtime's own words for
    /// it (never a generic "out of resources", which other libraries say of other things),
    /// anywhere in the line; an invalid value only where the line also names a launch or the error query that
    /// follows one (`cudaGetLastError`), since "invalid argument" alone is any call's.
    pub fn of_launch_line(line: &str) -> Option<CudaError> {
        let t = line.to_ascii_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if any(&[
            "too many resources requested for launch",
            "launchoutofresources",
            "launch_out_of_resources",
        ]) {
            Some(CudaError::LaunchOutOfResources)
        } else if any(&[
            "invalid configuration argument",
            "cudaerrorinvalidconfiguration",
        ]) {
            Some(CudaError::InvalidConfiguration)
        } else if any(&["invalid argument", "cudaerrorinvalidvalue"])
            && any(&["getlasterror", "launch", "peekatlasterror"])
        {
            Some(CudaError::InvalidValue)
        } else {
            None
        }
    }
}

/// What an API call does, by its name (`cudaMalloc`, `cuMemAlloc_v2`, `cudaLaunchKernel`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiCall {
    /// Allocates device memory.
    Allocation,
    /// Launches a kernel.
    Launch,
    /// Copies or sets memory.
    Copy,
    /// Returns an earlier call's error (`cudaGetLastError`, `cudaPeekAtLastError`).
    ErrorQuery,
    /// Looks up a driver function by name (`cuGetProcAddress`, `cudaGetDriverEntryPoint`): a
    /// binding asks for entry points the driver may not have, and an error is its answer.
    EntryPoint,
    /// Any other.
    Other,
}

impl ApiCall {
    /// The kind of call a runtime or driver API name is.
    pub fn of_name(name: &str) -> ApiCall {
        let has = |w: &str| name.contains(w);
        if has("GetLastError") || has("PeekAtLastError") {
            ApiCall::ErrorQuery
        } else if has("GetProcAddress") || has("GetDriverEntryPoint") {
            ApiCall::EntryPoint
        } else if has("Malloc") || has("MemAlloc") {
            ApiCall::Allocation
        } else if has("Launch") {
            ApiCall::Launch
        } else if has("Memcpy") || has("Memset") {
            ApiCall::Copy
        } else {
            ApiCall::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiCall, CudaError};

    #[test]
    fn an_error_is_known_by_its_runtime_and_its_driver_name() {
        assert_eq!(
            CudaError::of_name("CUDA_ERROR_OUT_OF_MEMORY"),
            CudaError::of_name("cudaErrorMemoryAllocation")
        );
        assert_eq!(
            CudaError::of_name("cudaErrorIllegalAddress"),
            CudaError::Sticky
        );
        assert_eq!(CudaError::of_name("cudaErrorNotReady"), CudaError::Other);
    }

    #[test]
    fn a_launch_error_is_read_from_the_words_a_program_printed() {
        assert_eq!(
            CudaError::of_launch_line("CUDA error: too many resources requested for launch"),
            Some(CudaError::LaunchOutOfResources)
        );
        assert_eq!(
            CudaError::of_launch_line("kernel launch failed: invalid argument"),
            Some(CudaError::InvalidValue)
        );
        // "invalid argument" of a copy names no launch.
        assert_eq!(
            CudaError::of_launch_line("cudaMemcpy: invalid argument"),
            None
        );
    }

    #[test]
    fn a_call_is_known_by_what_it_does() {
        assert_eq!(ApiCall::of_name("cuMemAlloc_v2"), ApiCall::Allocation);
        assert_eq!(ApiCall::of_name("cudaLaunchKernel"), ApiCall::Launch);
        assert_eq!(ApiCall::of_name("cudaMemcpyAsync"), ApiCall::Copy);
        assert_eq!(ApiCall::of_name("cudaPeekAtLastError"), ApiCall::ErrorQuery);
        assert_eq!(ApiCall::of_name("cudaStreamSynchronize"), ApiCall::Other);
    }
}
