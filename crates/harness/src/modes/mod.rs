//! The four modes. Each turns a loaded kernel and a problem into [`Record`]s: a schema result
//! with its mode's typed figures (the result's `details` object, `parsers::harness::figures`),
//! and a [`Verdict`] that decides the exit code.

mod bench;
mod check;
mod once;
mod stress;

pub use bench::run_bench;
pub use check::run_check;
pub use once::run_once;
pub use stress::run_stress;

use parsers::harness::HarnessResult;
use parsers::harness::figures::{Corruption, ResultFigures};

use crate::canary::GuardedLayout;
use crate::cli::{Mode, RunOptions};
use crate::float::{Dtype, POISON_BITS};
use crate::gpu::{AttentionKernel, CudaError, Gpu, GuardedBuffer, KernelArgs};
use crate::prng::SplitMix64;
use crate::problem::{Inputs, Problem};

/// How a result bears on the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Exit 0.
    Pass,
    /// Something outside the kernel failed (exit 3).
    Infrastructure,
    /// The kernel misbehaved: wrong output, fault, corrupted guard (exit 1).
    KernelFailure,
}

/// One entry of the document's `results`.
#[derive(Debug, Clone)]
pub struct Record {
    pub result: HarnessResult,
    pub verdict: Verdict,
}

impl Record {
    pub fn new(mode: Mode, kernel: &str, opts: &RunOptions, problem: &Problem) -> Self {
        Record {
            result: HarnessResult {
                mode: mode.to_schema(),
                kernel: kernel.to_string(),
                config: opts.config.clone(),
                shape: problem.shape.to_schema(),
                dtype: problem.dtype.name().to_string(),
                causal: problem.causal,
                launched: false,
                error: None,
                skipped: None,
                check: None,
                stress: None,
                bench: None,
                figures: ResultFigures::default(),
            },
            verdict: Verdict::Pass,
        }
    }

    /// Marks the result failed by a CUDA error. Faults in the kernel and launch rejections are
    /// the kernel's; `infrastructure` marks errors of the harness's own calls before launch.
    pub fn fail_cuda(&mut self, error: &CudaError, infrastructure: bool) {
        self.result.error = Some(format!("{} (at {})", error.summary(), error.call));
        self.result.figures.cuda_error_call = Some(error.call.to_string());
        self.result.figures.cuda_error_sticky = Some(error.is_sticky());
        self.verdict = self.verdict.max(if infrastructure {
            Verdict::Infrastructure
        } else {
            Verdict::KernelFailure
        });
    }
}

/// Q, K, V and O on the device, each in a guarded allocation, with the inputs uploaded.
pub struct DeviceProblem {
    pub problem: Problem,
    pub inputs: Inputs,
    pub q: GuardedBuffer,
    pub k: GuardedBuffer,
    pub v: GuardedBuffer,
    pub o: GuardedBuffer,
}

impl DeviceProblem {
    /// Draws the inputs from `seed` and uploads them.
    pub fn new(
        gpu: &Gpu,
        problem: Problem,
        seed: u64,
        guard_bytes: usize,
    ) -> Result<Self, SetupError> {
        let inputs = Inputs::generate(problem.shape, problem.dtype, seed);
        let bytes = problem.shape.elements() * problem.dtype.size_bytes();
        let layout = GuardedLayout::new(bytes, guard_bytes).map_err(SetupError::Layout)?;
        let guard_seed = SplitMix64::for_stream(seed, "guards").next_u64();
        let alloc =
            |name| GuardedBuffer::new(gpu, name, layout, guard_seed).map_err(SetupError::Cuda);
        let this = Self {
            problem,
            q: alloc("q")?,
            k: alloc("k")?,
            v: alloc("v")?,
            o: alloc("o")?,
            inputs,
        };
        gpu.upload(this.q.data_ptr(), &this.inputs.q)
            .map_err(SetupError::Cuda)?;
        gpu.upload(this.k.data_ptr(), &this.inputs.k)
            .map_err(SetupError::Cuda)?;
        gpu.upload(this.v.data_ptr(), &this.inputs.v)
            .map_err(SetupError::Cuda)?;
        Ok(this)
    }

    pub fn args(&self) -> KernelArgs {
        KernelArgs::new(
            &self.problem,
            self.q.data_ptr(),
            self.k.data_ptr(),
            self.v.data_ptr(),
            self.o.data_ptr(),
        )
    }

    pub fn buffers(&self) -> [&GuardedBuffer; 4] {
        [&self.q, &self.k, &self.v, &self.o]
    }

    pub fn output_bytes(&self) -> usize {
        self.o.layout().data_bytes()
    }

    /// Queues the poison fill of O (every element becomes [`POISON_BITS`]).
    pub fn poison_output(&self, gpu: &Gpu) -> Result<(), CudaError> {
        let [byte, _] = POISON_BITS.to_le_bytes();
        gpu.fill(self.o.data_ptr(), byte, self.output_bytes())
    }

    pub fn read_output(&self, gpu: &Gpu) -> Result<Vec<u16>, CudaError> {
        let mut out = vec![0u16; self.problem.shape.elements()];
        gpu.download(&mut out, self.o.data_ptr())?;
        Ok(out)
    }

    /// Every guard of every buffer that changed.
    pub fn check_guards(&self, gpu: &Gpu) -> Result<Vec<Corruption>, CudaError> {
        let mut found = Vec::new();
        for buffer in self.buffers() {
            found.extend(buffer.check_guards(gpu)?);
        }
        Ok(found)
    }

    /// Names (`q.data`, ...) of the inputs whose device copy no longer matches the host's.
    pub fn changed_inputs(&self, gpu: &Gpu) -> Result<Vec<String>, CudaError> {
        let mut changed = Vec::new();
        let mut scratch = vec![0u16; self.problem.shape.elements()];
        for (buffer, host) in [
            (&self.q, &self.inputs.q),
            (&self.k, &self.inputs.k),
            (&self.v, &self.inputs.v),
        ] {
            gpu.download(&mut scratch, buffer.data_ptr())?;
            if &scratch != host {
                changed.push(format!("{}.data", buffer.name()));
            }
        }
        Ok(changed)
    }
}

/// Why a problem could not be set up on the device (infrastructure).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("failed to set up device buffers: {0}")]
    Cuda(CudaError),
    #[error(transparent)]
    Layout(crate::canary::LayoutError),
}

/// Counts of the output bit patterns that no correct kernel leaves: (poison, other NaN, inf).
pub fn scan_output(dtype: Dtype, out: &[u16]) -> (u64, u64, u64) {
    let (mut poison, mut nan, mut inf) = (0, 0, 0);
    for &bits in out {
        if bits == POISON_BITS {
            poison += 1;
        } else if dtype.is_nan(bits) {
            nan += 1;
        } else if dtype.is_infinite(bits) {
            inf += 1;
        }
    }
    (poison, nan, inf)
}

/// Sets up a problem, turning a failure into an infrastructure result.
pub(crate) fn setup(
    gpu: &Gpu,
    opts: &RunOptions,
    problem: Problem,
    record: &mut Record,
) -> Option<DeviceProblem> {
    match DeviceProblem::new(gpu, problem, opts.seed, opts.guard_bytes) {
        Ok(dp) => Some(dp),
        Err(e) => {
            record.result.error = Some(e.to_string());
            record.verdict = record.verdict.max(Verdict::Infrastructure);
            if let SetupError::Cuda(c) = &e
                && c.is_sticky()
            {
                record.verdict = Verdict::KernelFailure;
            }
            None
        }
    }
}

/// Poisons O, launches the kernel once, synchronises and reads O back. A failed fill or read is
/// recorded as an infrastructure error, a failed launch or synchronisation as the kernel's, and
/// gives `None`; `launched` is set once the launch was accepted.
pub(crate) fn launch_and_read(
    gpu: &Gpu,
    kernel: &AttentionKernel,
    dp: &DeviceProblem,
    record: &mut Record,
) -> Option<Vec<u16>> {
    if let Err(e) = dp.poison_output(gpu) {
        record.fail_cuda(&e, true);
        return None;
    }
    if let Err(e) = kernel.launch(gpu, &dp.args()) {
        record.fail_cuda(&e, false);
        return None;
    }
    record.result.launched = true;
    if let Err(e) = gpu.synchronize() {
        record.fail_cuda(&e, false);
        return None;
    }
    match dp.read_output(gpu) {
        Ok(out) => Some(out),
        Err(e) => {
            record.fail_cuda(&e, true);
            None
        }
    }
}

/// Replaces a non-finite figure with a JSON-safe value (JSON has no NaN or infinity).
pub fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else if x.is_nan() {
        -1.0
    } else {
        f64::MAX.copysign(x)
    }
}
