//! The way past the FP32 (or FP16) ceiling: a kernel whose instructions are mostly scalar
//! multiply-adds, with no tensor-core instruction, at the compute side of its roofline, runs a
//! product on the CUDA cores whose peak the tensor cores multiply (TF32 for float data, FP16
//! and BF16 `mma`/wgmma for half). A cause of the `slow-kernel` rule, drafted beside its
//! measured causes and ranked after them: it carries no estimate of its own.
//!
//! It stays silent where the evidence does not show a product: under half of the executed
//! instructions multiply-adds, transcendental work beside them (`MUFU`: an n-body or softmax
//! loop), a kernel below its ridge point (the DRAM's roof binds, not the FP32 peak), or a
//! kernel the half-precision rule already names.

use serde_json::json;

use super::profile::{Scope, duration_us, source_lines};
use super::{Ctx, RuleId};
use crate::diagnosis::{Confidence, Draft, Level, SourceLocation};
use crate::kernel_id::KernelId;
use crate::message::{Message, code, figure, msg};
use crate::roofline::{Limit, Position};
use crate::text::relative_path;

/// The share of executed instructions that must be scalar multiply-adds: the inner loop of a
/// register-tiled product is nearly all FFMA (SGEMM_CUDA's kernels 6 and 10 on an H100).
const MIN_FMA_SHARE: f64 = 0.5;

/// Transcendental instructions per multiply-add above which the loop is not a product.
const MAX_MUFU_PER_FMA: f64 = 1.0 / 16.0;

/// A profiled launch shorter than this says too little of a kernel's speed.
const MIN_DURATION_US: f64 = 50.0;

/// Drafts a tensor-core-path cause for each own kernel of scalar multiply-adds at its
/// FP32 (or FP16) ceiling that no half-precision cause names already.
pub(super) fn run(ctx: &Ctx, out: &mut Vec<Draft>) {
    let j = ctx.joined;
    for (index, source) in j.sources.iter().enumerate() {
        for mix in &source.log.instruction_mix {
            let config = source.config;
            let kernel = KernelId::of(&mix.function);
            if mix.mma > 0 || !j.is_own(config, &kernel) {
                continue;
            }
            let (limit, fmas) = if mix.ffma >= mix.hfma2 {
                (Limit::Fp32, mix.ffma)
            } else {
                (Limit::Fp16, mix.hfma2)
            };
            let share = fmas as f64 / mix.executed.max(1) as f64;
            if share < MIN_FMA_SHARE || mix.mufu as f64 > fmas as f64 * MAX_MUFU_PER_FMA {
                continue;
            }
            let Some(p) = crate::roofline::of_kernel(j, config, &kernel) else {
                continue;
            };
            if p.limit != limit || p.roof != limit {
                continue;
            }
            let named_already = out.iter().any(|d| {
                d.key == "no-tensor-cores"
                    && d.kernel.as_deref() == Some(kernel.as_str())
                    && d.config.as_deref() == config
            });
            if named_already {
                continue;
            }
            let page = Scope {
                config,
                log: Some(index),
            };
            out.push(draft(ctx, page, &kernel, &p, share, (fmas, mix.executed)));
        }
    }
}

/// The cause of one kernel: its hottest own line, figures and words.
fn draft(
    ctx: &Ctx,
    page: Scope,
    kernel: &KernelId,
    p: &Position,
    share: f64,
    (fmas, executed): (u64, u64),
) -> Draft {
    let j = ctx.joined;
    let config = page.config;
    let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, Message::new());
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    d.key = "tensor-core-path".to_string();
    // A product is read from the instruction mix, not seen: medium at most.
    d.confidence = Confidence::Medium;
    let hot = source_lines(ctx, page, Some(kernel))
        .into_iter()
        .filter(|l| {
            j.repo_files
                .contains(&relative_path(&l.file, &j.repo_files))
        })
        .max_by_key(|l| l.instructions);
    if let Some(line) = hot {
        d.location = Some(SourceLocation {
            file: relative_path(&line.file, &j.repo_files),
            line: Some(line.line),
        });
    }
    d.figures
        .insert("fma_share".into(), json!((share * 1000.0).round() / 1000.0));
    d.figures.insert(
        "of_peak".into(),
        json!((p.of_peak * 1000.0).round() / 1000.0),
    );
    // The tensor peak of the same device at the same clock as the kernel's own.
    let tensor_peak = match p.limit {
        Limit::Fp16 => p.tensor_peak_gflops,
        _ => p.tf32_peak_gflops,
    };
    if let (Some(t), Some(_)) = (tensor_peak, p.peak_gflops) {
        d.figures
            .insert("tensor_peak_gflops".into(), json!(t.round()));
    }
    let path = Path {
        kernel,
        p,
        share,
        fmas,
        executed,
        tensor_peak,
        beside: tensor_kernel_beside(ctx, config, kernel),
    };
    let summary = word_path(&mut d, &path);
    d.evidence
        .push(ctx.source_evidence(page.log, config, summary));
    let scope = Scope { config, log: None };
    if duration_us(ctx, scope, Some(kernel)).is_some_and(|us| us < MIN_DURATION_US) {
        d.level = Level::Note;
    }
    d
}

/// A kernel the program did not write that ran on the tensor cores in the same config (the
/// baseline's, or a library's launched beside the program's own), with its rate: "cuBLAS's
/// `sm90_xmma_gemm_...` ran on the tensor cores at 612000 GFLOP/s (FP16 tensor 61.9%)".
fn tensor_kernel_beside(ctx: &Ctx, config: Option<&str>, own: &KernelId) -> Option<Message> {
    let j = ctx.joined;
    let mut seen: Vec<&KernelId> = Vec::new();
    let mut best: Option<(f64, Message)> = None;
    let baseline = crate::resources::beside_baseline(j)
        .map(|(_, theirs)| theirs)
        .unwrap_or_default();
    for k in &baseline {
        if let Some(p) = &k.summary.limit
            && matches!(p.limit, Limit::Tensor | Limit::Tf32Tensor)
            && let Some(g) = p.gflops
            && best.as_ref().is_none_or(|(b, _)| g > *b)
        {
            best = Some((g, msg!("The baseline's {}", code(&k.summary.kernel))));
        }
    }
    for m in j.metrics.iter().filter(|m| m.config.as_deref() == config) {
        if m.kernel == *own || seen.contains(&&m.kernel) || j.is_own(config, &m.kernel) {
            continue;
        }
        seen.push(&m.kernel);
        let Some(p) = crate::roofline::of_kernel(j, config, &m.kernel) else {
            continue;
        };
        if matches!(p.limit, Limit::Tensor | Limit::Tf32Tensor)
            && let Some(g) = p.gflops
            && best.as_ref().is_none_or(|(b, _)| g > *b)
        {
            best = Some((g, msg!("{}, launched beside it,", code(m.kernel.as_str()))));
        }
    }
    let (gflops, who) = best?;
    Some(msg!(
        "{} ran on the tensor cores at {} GFLOP/s in this run.",
        who,
        figure(format!("{gflops:.0}"))
    ))
}

/// A kernel of scalar multiply-adds at its FP32 (or FP16) ceiling: what [`word_path`] words.
struct Path<'k> {
    kernel: &'k KernelId,
    p: &'k Position,
    /// The multiply-adds' share of the executed instructions.
    share: f64,
    /// Warp-level multiply-adds (FFMA or HFMA2), of the instructions executed.
    fmas: u64,
    executed: u64,
    /// The tensor peak (GFLOP/s) of the same device at the kernel's clock.
    tensor_peak: Option<f64>,
    /// A kernel beside it that ran on the tensor cores, in words.
    beside: Option<Message>,
}

/// The title, explanation and fix; returns the instruction mix's evidence summary.
fn word_path(d: &mut Draft, f: &Path) -> Message {
    let p = f.p;
    let named = code(f.kernel.as_str());
    let (op, tensor_limit) = match p.limit {
        Limit::Fp16 => ("HFMA2", Limit::Tensor),
        _ => ("FFMA", Limit::Tf32Tensor),
    };
    d.title = match p.limit {
        Limit::Fp16 => msg!("Half-precision FMAs where the tensor cores would lift the ceiling"),
        _ => msg!("FP32 FMAs where the tensor cores would lift the ceiling"),
    };
    let ceiling = match (f.tensor_peak, p.peak_gflops) {
        (Some(t), Some(peak)) => msg!(
            ": {} GFLOP/s on this GPU, {}x its {} peak of {}",
            figure(format!("{t:.0}")),
            figure(format!("{:.0}", t / peak)),
            p.limit.name(),
            figure(format!("{peak:.0}"))
        ),
        _ => Message::new(),
    };
    d.explanation = msg!(
        "{}% of the instructions {} executes are scalar multiply-adds ({} warp-level {}), with \
         no tensor-core instruction, and it runs {}: its ceiling is the {} peak of the CUDA \
         cores. If those multiply-adds are a matrix product (a GEMM, a convolution, attention), \
         the tensor cores raise the ceiling to the {} peak{}.",
        figure(format!("{}", (f.share * 100.0).round())),
        named.clone(),
        f.fmas.to_string(),
        code(op),
        p.phrase(),
        p.limit.name(),
        tensor_limit.name(),
        ceiling
    );
    if let Some(beside) = &f.beside {
        d.explanation.append(msg!(" {}", beside));
    }
    d.fix = match p.limit {
        Limit::Fp16 => msg!(
            "Issue the product as tensor-core instructions: `mma.sync` (or WMMA) on FP16/BF16 \
             fragments with FP32 accumulators, wgmma on sm_90; or call cuBLAS or CUTLASS for it. \
             The precision is the same as the FMAs'."
        ),
        _ => msg!(
            "Run the product on the tensor cores with TF32 inputs: `mma.sync` or WMMA \
             (`wmma::precision::tf32`), or cuBLAS with `CUBLAS_COMPUTE_32F_FAST_TF32`. TF32 keeps \
             FP32's range and accumulation but rounds each input to a 10-bit mantissa (a \
             relative error near 1e-3 per product); where that is too coarse, 3xTF32 (CUTLASS) \
             recovers FP32 accuracy at about a third of the TF32 rate, and FP16/BF16 inputs \
             double the TF32 rate again."
        ),
    };
    msg!(
        "instruction mix of {}: {} of {} executed instructions {} ({}%), 0 tensor-core \
         instructions; {}",
        named,
        f.fmas.to_string(),
        f.executed.to_string(),
        code(op),
        figure(format!("{:.0}", f.share * 100.0)),
        p.cell()
    )
}

#[cfg(test)]
mod tests {
    use parsers::Format;

    use crate::diagnosis::Draft;
    use crate::rules::Ctx;
    use crate::rules::testing::{Case, repo_file};
    use crate::run::StageKind;

    // No positive case: the one committed run where this cause fires (an SGEMM at the FP32
    // roof, `corpus/sgemm-k4-registers`) is stored only compressed (`run.tar.xz`), and no
    // uncompressed source page of the repository shows FFMA as half its instructions at the
    // FP32 roof (slow-matmul's kernels are at 26% and 37%, under L2's roof).

    /// What this cause drafts, as `slow-kernel` runs it.
    fn tensor_path(ctx: &Ctx) -> Vec<Draft> {
        let mut out = Vec::new();
        super::run(ctx, &mut out);
        out
    }

    /// The slow-reduction example's `fast` config on an H100, from its reference run
    /// (`examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/fast/sm_90/`):
    /// a sum whose instructions are loads and adds, no product.
    #[test]
    fn stays_silent_on_a_reduction_with_no_product() {
        let drafts = Case::new()
            .log_as(
                StageKind::Profile,
                "fast",
                "sm_90",
                Format::NcuCsv,
                repo_file!(
                    "examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/fast/sm_90/ncu.csv"
                ),
            )
            .also(
                Format::NcuSource,
                repo_file!(
                    "examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/fast/sm_90/source.csv"
                ),
            )
            .input("src/sum.cu")
            .gpu("NVIDIA H100 80GB HBM3", 132, "9.0")
            .drafts_of(tensor_path);
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
