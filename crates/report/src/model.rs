//! The program model: one account of the program a run exercised, built once at the join
//! (`join`) and read by the join and the rules. For each kernel the tools name: its
//! whole name, whose code it is ([`Provenance`]), whether the user's build produced it, and
//! where it left records at run time. Rules decide on this account instead of on each finding
//! alone: a library kernel in the user's process is never the user's fault, and a kernel that
//! left no record in a run that passed did not fail.

use std::collections::{BTreeMap, BTreeSet};

use parsers::{Finding, FindingKind};

use crate::kernel_id::KernelId;

/// A library the program calls, whose kernels run in the program's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Library {
    CuDnn,
    CuBlas,
    /// CUTLASS kernels a library ships (cuBLASLt's, PyTorch's): the user's own CUTLASS
    /// instantiations are [`Provenance::User`], since the user's build produced them.
    Cutlass,
    Nccl,
    /// PyTorch's own kernels (ATen, c10, its FlashAttention and memory-efficient attention).
    Torch,
    /// CUB and Thrust, as a library ships them.
    Cub,
    /// CuPy's own kernels, which it generates for its array routines and names `cupy_<routine>`
    /// (`cupy_sum`, `cupy_copy__float64_float64`); a user's `RawKernel` keeps the user's name.
    CuPy,
    /// Numba's own kernels: a device array's assignment and copies (`cudadrv::kernel`, from
    /// `numba.cuda.cudadrv`) and `cuda.reduce`'s `gpu_reduce_block_strided`; a user's
    /// `@cuda.jit` kernel is named in its own module (`__main__::block_sum`).
    Numba,
}

impl Library {
    /// The library's name as reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Library::CuDnn => "cuDNN",
            Library::CuBlas => "cuBLAS",
            Library::Cutlass => "CUTLASS (inside a library)",
            Library::Nccl => "NCCL",
            Library::Torch => "PyTorch (ATen)",
            Library::Cub => "CUB/Thrust",
            Library::CuPy => "CuPy",
            Library::Numba => "Numba",
        }
    }

    /// The library a shared object of a host frame is (`libcudnn_engines_precompiled.so.9`).
    fn of_module(module: &str) -> Option<Library> {
        let base = module.rsplit('/').next().unwrap_or(module);
        let table: [(&str, Library); 6] = [
            ("libcudnn", Library::CuDnn),
            ("libcublaslt", Library::CuBlas),
            ("libcublas", Library::CuBlas),
            ("libnccl", Library::Nccl),
            ("libtorch_cuda", Library::Torch),
            ("libc10_cuda", Library::Torch),
        ];
        let lower = base.to_ascii_lowercase();
        table
            .iter()
            .find(|(prefix, _)| lower.starts_with(prefix))
            .map(|(_, lib)| *lib)
    }

    /// The library a kernel's name says it belongs to, by the prefixes and namespaces the
    /// libraries give their kernels; names a user could give a kernel of their own (`gemv`)
    /// are not read as a library's. Read only for kernels the user's build did not produce.
    fn of_name(name: &str) -> Option<Library> {
        let name = name.trim();
        let name = name.strip_prefix("void ").unwrap_or(name).trim_start();
        let lower = name.to_ascii_lowercase();
        let starts = |p: &str| lower.starts_with(p);
        if starts("cudnn") || lower.contains("::cudnn") || starts("fmha_cudnn") {
            Some(Library::CuDnn)
        } else if lower.contains("xmma_")
            || starts("cublas")
            || starts("nvjet")
            || starts("ampere_sgemm")
            || starts("ampere_hgemm")
            || starts("sm90_sgemm")
        {
            Some(Library::CuBlas)
        } else if starts("nccl") {
            Some(Library::Nccl)
        } else if starts("at::")
            || starts("c10::")
            || starts("pytorch_flash::")
            || starts("fmha_cutlass")
            || (starts("(anonymous namespace)::")
                && (lower.contains("at::") || lower.contains("c10::")))
        {
            Some(Library::Torch)
        } else if starts("cutlass::") || starts("cutlass_") {
            Some(Library::Cutlass)
        } else if starts("cub::") || starts("thrust::") {
            Some(Library::Cub)
        } else if starts("cupy_") {
            Some(Library::CuPy)
        } else if starts("cudadrv::")
            || starts("gpu_reduce_block_strided")
            || lower.contains("::gpu_reduce_block_strided[")
        {
            Some(Library::Numba)
        } else {
            None
        }
    }
}

/// Whose code a kernel is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provenance {
    /// The user's: their build produced it, or its records name a file among the run's inputs.
    User,
    /// A library the program calls, by its host frames' module or its name.
    Library(Library),
    /// Nothing in the evidence says; read as the user's.
    Unknown,
}

/// One kernel as the run saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFacts {
    pub id: KernelId,
    /// The longest spelling any tool gave (the demangled name with its template arguments).
    pub name: String,
    pub provenance: Provenance,
    /// The configs whose build (ptxas or the SASS inventory) listed it.
    pub built_in: BTreeSet<Option<String>>,
    /// Compiled by Triton at run time (its SASS came from Triton's cache): Triton issues
    /// ldmatrix for layout conversions too, not only to feed matrix products.
    pub triton: bool,
    /// The configs where a run-time record (a sanitizer record, a profiled launch, a harness
    /// result) names it: evidence that it launched there.
    pub ran_in: BTreeSet<Option<String>>,
    /// Launches counted per stage (by its name), where a tool lists them: Nsight Compute's
    /// profiled launches.
    pub launches: BTreeMap<String, u64>,
}

/// The program the run exercised.
#[derive(Debug, Clone, Default)]
pub struct ProgramModel {
    pub kernels: BTreeMap<KernelId, KernelFacts>,
    /// Findings (indices into the join's list) whose first record came after the program had
    /// printed the line its check failed on, in the same log: faults that happened after the
    /// failure, which cannot explain it.
    pub after_failure: BTreeSet<usize>,
}

/// Whether `printed`, a line of the program's output, is the line a check failed on, as its
/// stage's `reason` quotes it (after the runner's own words, with figures that may differ
/// from run to run): its words, figures left out, appear in the reason in order.
pub(crate) fn is_the_failure(printed: &str, reason: &str) -> bool {
    fn words(s: &str) -> Vec<&str> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty() && !w.chars().any(|c| c.is_ascii_digit()))
            .collect()
    }
    let printed: Vec<&str> = words(printed).into_iter().take(8).collect();
    let reason = words(reason);
    !printed.is_empty()
        && reason
            .windows(printed.len())
            .any(|w| w == printed.as_slice())
}

/// What the model is built from: the join's lists, before it indexes them.
pub(crate) struct Inputs<'i> {
    /// Each finding with its config and whether its log is a run-time one.
    pub findings: Vec<(&'i Finding, Option<&'i str>, bool)>,
    /// Kernels the build listed, by config.
    pub built: Vec<(&'i str, Option<&'i str>)>,
    /// Kernels whose SASS came from Triton's cache.
    pub triton: Vec<&'i str>,
    /// Each launch a tool listed: the kernel, the stage's name and the launch's id.
    pub listed: Vec<(&'i str, &'i str, u64)>,
    /// Kernels a run-time log measured or launched (ncu rows, harness results), by config.
    pub launched: Vec<(&'i str, Option<&'i str>)>,
    pub repo_files: &'i [String],
}

impl ProgramModel {
    pub(crate) fn build(inputs: &Inputs) -> ProgramModel {
        let mut model = ProgramModel::default();
        for &(name, config) in &inputs.built {
            model
                .entry(name)
                .built_in
                .insert(config.map(str::to_string));
        }
        let mut listed: BTreeSet<(KernelId, &str, u64)> = BTreeSet::new();
        for &(name, stage, launch) in &inputs.listed {
            let id = model.entry(name).id.clone();
            listed.insert((id, stage, launch));
        }
        for (id, stage, _) in listed {
            if let Some(facts) = model.kernels.get_mut(&id) {
                *facts.launches.entry(stage.to_string()).or_default() += 1;
            }
        }
        for &name in &inputs.triton {
            model.entry(name).triton = true;
        }
        for &(name, config) in &inputs.launched {
            model.entry(name).ran_in.insert(config.map(str::to_string));
        }
        // Per kernel: a user file among its records' places, and the library its host frames
        // name.
        let mut own_file: BTreeSet<KernelId> = BTreeSet::new();
        let mut module: BTreeMap<KernelId, Library> = BTreeMap::new();
        for &(f, config, runtime) in &inputs.findings {
            let Some(name) = f.kernel.as_deref() else {
                continue;
            };
            let facts = model.entry(name);
            if runtime && is_record_of_a_launch(f) {
                facts.ran_in.insert(config.map(str::to_string));
            }
            let id = facts.id.clone();
            let files = f
                .file
                .iter()
                .chain(f.device_frames.iter().filter_map(|l| l.file.as_ref()));
            if files
                .map(|file| crate::text::relative_path(file, inputs.repo_files))
                .any(|file| inputs.repo_files.contains(&file))
            {
                own_file.insert(id.clone());
            }
            if let Some(lib) = launching_library(f) {
                module.entry(id).or_insert(lib);
            }
        }
        for facts in model.kernels.values_mut() {
            // CuPy compiles its own kernels at run time into the cache the program's kernels
            // share (the build directory's): its names say whose they are, build or not.
            let generated = Library::of_name(&facts.name).filter(|l| *l == Library::CuPy);
            facts.provenance = if let Some(lib) = generated {
                Provenance::Library(lib)
            } else if !facts.built_in.is_empty() || own_file.contains(&facts.id) {
                Provenance::User
            } else if let Some(lib) = module
                .get(&facts.id)
                .copied()
                .or_else(|| Library::of_name(&facts.name))
            {
                Provenance::Library(lib)
            } else {
                Provenance::Unknown
            };
        }
        model
    }

    fn entry(&mut self, name: &str) -> &mut KernelFacts {
        let id = KernelId::of(name);
        let facts = self
            .kernels
            .entry(id.clone())
            .or_insert_with(|| KernelFacts {
                id,
                name: String::new(),
                provenance: Provenance::Unknown,
                built_in: BTreeSet::new(),
                triton: false,
                ran_in: BTreeSet::new(),
                launches: BTreeMap::new(),
            });
        let whole = whole_name(name);
        if whole.len() > facts.name.len() {
            facts.name = whole.to_string();
        }
        facts
    }

    /// The facts of one kernel, by any tool's spelling or its id.
    pub fn kernel(&self, id: &KernelId) -> Option<&KernelFacts> {
        self.kernels.get(id)
    }

    /// Whose code a kernel is ([`Provenance::Unknown`] for a kernel no log names).
    pub fn provenance(&self, id: &KernelId) -> Provenance {
        self.kernel(id)
            .map_or(Provenance::Unknown, |facts| facts.provenance)
    }

    /// The library a kernel belongs to, when it is a library's.
    pub fn library(&self, id: &KernelId) -> Option<Library> {
        match self.provenance(id) {
            Provenance::Library(lib) => Some(lib),
            _ => None,
        }
    }

    /// Whether a run-time record names the kernel in this config (any config, for `None`
    /// evidence that names none).
    pub fn ran(&self, config: Option<&str>, id: &KernelId) -> bool {
        self.kernel(id).is_some_and(|k| {
            k.ran_in
                .iter()
                .any(|c| c.as_deref() == config || c.is_none() || config.is_none())
        })
    }
}

/// A name as printed, without its leading return type and trailing parameter list: the whole
/// qualified name with every template argument (`at::native::vectorized_elementwise_kernel<4,
/// at::native::FillFunctor<float>, std::array<char *, 1>>`).
pub fn whole_name(name: &str) -> &str {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name).trim_start();
    let mut depth = 0i32;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth <= 0 && i > 0 => {
                let head = &name[..i];
                // `(anonymous namespace)::` is a qualifier, `operator()` a name.
                if name[i..].starts_with("(anonymous namespace)") || head.ends_with("operator") {
                    continue;
                }
                return head.trim_end();
            }
            _ => {}
        }
    }
    name
}

/// Whether a finding is a record of a kernel running (a sanitizer record, a trap), not a
/// compiler's message about it.
fn is_record_of_a_launch(f: &Finding) -> bool {
    !matches!(
        f.kind,
        FindingKind::WmmaLocalMemory
            | FindingKind::RegisterSpill
            | FindingKind::CompilerWarning
            | FindingKind::DebugBuild
            | FindingKind::CompileError
            | FindingKind::ProfilerRule
    )
}

/// The library whose code launched the kernel of a record: the first host frame, above the
/// CUDA runtime and driver, that sits in a library's shared object.
fn launching_library(f: &Finding) -> Option<Library> {
    f.host_frames
        .iter()
        .filter_map(|frame| frame.file.as_deref())
        .filter(|module| {
            let m = module.rsplit('/').next().unwrap_or(module);
            !(m.starts_with("libcuda.") || m.starts_with("libcudart"))
        })
        .find_map(Library::of_module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_names_keep_template_arguments_and_anonymous_namespaces() {
        assert_eq!(
            whole_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
                 std::array<char *, 1>>(int, T2, T3)"
            ),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
             std::array<char *, 1>>"
        );
        assert_eq!(
            whole_name(
                "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, \
                 float>(int, float, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)"
            ),
            "at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
        );
    }

    #[test]
    fn library_kernels_are_told_by_name_only_when_the_build_did_not_produce_them() {
        assert_eq!(
            Library::of_name(
                "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_6_64x128x64"
            ),
            Some(Library::CuDnn)
        );
        assert_eq!(
            Library::of_name("void at::native::(anonymous namespace)::softmax_warp_forward<>()"),
            Some(Library::Torch)
        );
        assert_eq!(Library::of_name("flash_attention_s512_v3_kernel<>"), None);
        // Numba's own, as Nsight Compute named them on an H200 (numba-cuda 0.30.4): a device
        // array's `d[:] = 1.0` and `cuda.reduce`; the program's `@cuda.jit` kernel beside them.
        let tag = "v2,cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3Cw6igA9duC0hkwnNGiHEkYkrqQBFBTDEwCyQe21eqwcFW3UoDGjzpQEsgzrtUEAA_3d_3d";
        for name in [
            format!(
                "cudadrv::kernel[{tag}](Array<float, 1, C, mutable, aligned>, Array<double, 1, C, mutable, aligned>)"
            ),
            format!(
                "kernels::gpu_reduce_block_strided[{tag}](Array<float, 1, C, mutable, aligned>, Array<float, 1, C, mutable, aligned>, float, bool)"
            ),
        ] {
            assert_eq!(Library::of_name(&name), Some(Library::Numba), "{name}");
        }
        assert_eq!(
            Library::of_name(&format!(
                "__main__::user_kernel[{tag}](Array<float, 1, C, mutable, aligned>)"
            )),
            None
        );
        assert_eq!(Library::of_name("kernels::my_reduce"), None);
        let built = "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>";
        let inputs = Inputs {
            findings: Vec::new(),
            built: vec![(built, Some("default"))],
            triton: Vec::new(),
            listed: vec![("cutlass::Kernel2<cutlass_80_wmma>", "profile", 3)],
            launched: vec![("cutlass::Kernel2<cutlass_80_wmma>", Some("default"))],
            repo_files: &[],
        };
        let model = ProgramModel::build(&inputs);
        assert_eq!(
            model.provenance(&KernelId::of(built)),
            Provenance::User,
            "the user's own CUTLASS instantiation"
        );
        let wmma = KernelId::of("cutlass::Kernel2<cutlass_80_wmma>");
        assert_eq!(model.library(&wmma), Some(Library::Cutlass));
        assert!(model.ran(Some("default"), &wmma));
        assert_eq!(
            model
                .kernel(&wmma)
                .map(|k| k.launches.get("profile").copied()),
            Some(Some(1))
        );
        assert!(!model.ran(Some("default"), &KernelId::of(built)));
    }
}
