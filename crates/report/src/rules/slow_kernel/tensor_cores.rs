//! A product on the scalar FMA units where the tensor cores would serve, read from a source
//! page's instruction mix: no tensor-core instruction, and either half-precision values widened
//! to float and summed in a long chain of multiply-adds (a matrix product's inner loop), or
//! mostly scalar multiply-adds at the FP32 (or FP16) ceiling of the kernel's roofline. On
//! half-precision data its cost is the share of the executed instructions the tensor cores
//! would take over, and the loop's own memory causes (an untiled product's uncoalesced reads,
//! bank conflicts) join it: they are how it reads its operands, and the same fix removes them.
//! On FP32 data the tensor cores take TF32 inputs, a choice of precision: no estimate, ranked
//! after the measured causes.
//!
//! It stays silent where the evidence shows no product: under half of the instructions
//! multiply-adds with no widened halves, transcendental work beside them (`MUFU`: an n-body or
//! softmax loop), or a kernel below its ridge point (a memory roof binds, not the FMA peak).

use super::*;
use crate::diagnosis::SourceLocation;
use crate::rules::profile::place;
use crate::message::{Message, code, figure, msg, path};
use crate::roofline::{Limit, Position};

/// The least a chain of multiply-adds must run to read as a dot product (a matrix product's
/// inner loop, unrolled), not an element-wise formula.
const MIN_FMA_CHAIN: u32 = 8;

/// The share of executed instructions that must be scalar multiply-adds for a kernel at its FMA
/// ceiling: the inner loop of a register-tiled product is nearly all FFMA (SGEMM_CUDA's kernels
/// 6 and 10 on an H100).
const MIN_FMA_SHARE: f64 = 0.5;

/// Transcendental instructions per multiply-add above which the loop is not a product.
const MAX_MUFU_PER_FMA: f64 = 1.0 / 16.0;

/// How the instruction mix shows a product on the scalar units.
#[derive(Clone, Copy, PartialEq)]
enum Product {
    /// Halves widened to float (`HADD2.F32`) and accumulated in FFMA chains.
    WidenedHalves,
    /// Mostly FFMA (or HFMA2) at the kernel's FP32 (or FP16) ceiling.
    AtCeiling(Limit),
}

/// What the instruction mix of `kernel` shows, if a product on the scalar units.
fn product_of(ctx: &Ctx, config: Option<&str>, kernel: &KernelId, mix: &parsers::InstructionMix) -> Option<Product> {
    if mix.mma > 0 || !ctx.joined.is_own(config, kernel) {
        return None;
    }
    if mix.fma > 0 && mix.fma_chain >= MIN_FMA_CHAIN && mix.half_to_float.saturating_mul(2) >= mix.fma
    {
        return Some(Product::WidenedHalves);
    }
    let (limit, fmas) = if mix.ffma >= mix.hfma2 {
        (Limit::Fp32, mix.ffma)
    } else {
        (Limit::Fp16, mix.hfma2)
    };
    let share = fmas as f64 / mix.executed.max(1) as f64;
    if share < MIN_FMA_SHARE || mix.mufu as f64 > fmas as f64 * MAX_MUFU_PER_FMA {
        return None;
    }
    let p = crate::roofline::of_kernel(ctx.joined, config, kernel)?;
    (p.limit == limit && p.roof == limit).then_some(Product::AtCeiling(limit))
}

/// One cause per own kernel and config whose instruction mix shows a product on the scalar
/// units.
pub(super) fn no_tensor_cores(ctx: &Ctx, out: &mut Vec<Draft>) {
    let j = ctx.joined;
    for (source_index, source) in j.sources.iter().enumerate() {
        for mix in &source.log.instruction_mix {
            // The source page's function: a tool string the join does not index.
            let kernel = KernelId::of(&mix.function);
            let config = source.config;
            let Some(product) = product_of(ctx, config, &kernel, mix) else {
                continue;
            };
            if out.iter().any(|d| {
                d.key == "no-tensor-cores"
                    && d.kernel.as_deref() == Some(kernel.as_str())
                    && d.config.as_deref() == config
            }) {
                continue;
            }
            let page = Scope {
                config,
                log: Some(source_index),
            };
            let d = draft(ctx, page, &kernel, mix, product, out);
            out.push(d);
        }
    }
}

/// The cause of one kernel: its loop's line, its cost, the memory causes it takes in from
/// `out`, and its words.
fn draft(
    ctx: &Ctx,
    page: Scope,
    kernel: &KernelId,
    mix: &parsers::InstructionMix,
    product: Product,
    out: &mut Vec<Draft>,
) -> Draft {
    let j = ctx.joined;
    let config = page.config;
    let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, Message::new());
    d.config = config.map(str::to_string);
    d.kernel = Some(kernel.to_string());
    d.key = "no-tensor-cores".to_string();
    // A product is read from the instruction mix, not seen: medium at most.
    d.confidence = Confidence::Medium;
    let hot = source_lines(ctx, page, Some(kernel))
        .into_iter()
        .filter(|l| l.instructions > 0)
        // The user's loop, not a header's inlined conversion: a run's input first, then a CUDA
        // or Python source, as `Ctx::user_location` prefers.
        .max_by_key(|l| {
            let file = relative_path(&l.file, &j.repo_files);
            let user = if j.repo_files.contains(&file) {
                2
            } else {
                u8::from([".cu", ".cuh", ".py"].iter().any(|x| file.ends_with(x)))
            };
            (user, l.instructions)
        });
    d.location = hot.map(|l| place(ctx, l));
    // What tensor cores would take over: the conversions and multiply-adds, as a share of the
    // instructions the kernel executes (ncu has no estimate of its own here).
    let replaced = (mix.fma + mix.half_to_float) as f64 * 100.0 / mix.executed.max(1) as f64;
    let position = crate::roofline::of_kernel(j, config, kernel);
    // The tensor peak of the same device at the kernel's clock, beside its own FMA peak.
    let ceiling = position.as_ref().and_then(|p| {
        let tensor = match product {
            Product::AtCeiling(Limit::Fp32) => p.tf32_peak_gflops,
            Product::AtCeiling(_) => p.tensor_peak_gflops,
            Product::WidenedHalves => p.tensor_peak_gflops.filter(|_| p.limit == Limit::Fp32),
        }?;
        Some((p.gflops?, p.peak_gflops?, tensor))
    });
    if let Some((_, _, tensor)) = ceiling {
        d.figures
            .insert("tensor_peak_gflops".into(), json!(tensor.round()));
    }
    // TF32 rounds FP32 inputs: the way past the FP32 ceiling is a choice of precision, not a
    // cost the kernel pays, so it carries no estimate and ranks after the measured causes.
    // Half-precision data loses nothing on the tensor cores: the share they would take over is
    // its cost, and the loop's memory causes join it.
    let costed = product != Product::AtCeiling(Limit::Fp32);
    if costed {
        d.stands_on = vec![crate::measure::Measure::TensorInstructions];
    }
    let mut estimate = replaced;
    let line = d.location.as_ref().and_then(|l| l.line);
    let (taken, kept): (Vec<Draft>, Vec<Draft>) = std::mem::take(out).into_iter().partition(|o| {
        costed
            && matches!(o.key.as_str(), "uncoalesced" | "bank-conflicts")
            && o.kernel == d.kernel
            && o.config == d.config
            && o.location.as_ref().is_none_or(|l| l.line == line)
    });
    *out = kept;
    // The absorbed causes: (title, ncu's estimate).
    let mut absorbed = Vec::new();
    for t in taken {
        let speedup = Figure::EstimatedSpeedup
            .of(&t.figures)
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        estimate = estimate.max(speedup);
        absorbed.push((t.title.clone(), speedup));
        d.evidence.extend(t.evidence);
        d.explains.extend(t.explains);
    }
    // The figures of the profiling run this source page came from.
    let scope = Scope {
        config,
        log: details_beside(ctx, page.log.unwrap_or_default()),
    };
    let (_, share) = weigh(ctx, &mut d, scope, Some(kernel), costed.then_some(estimate));
    let words = Words {
        kernel,
        mix,
        product,
        position: position.as_ref(),
        hot: d.location.clone().zip(hot),
        replaced,
        ceiling,
        absorbed,
        share: share.map(|(share, _)| share),
        beside: tensor_kernel_beside(ctx, config, kernel),
    };
    let summary = word_product(&mut d, &words);
    d.evidence
        .insert(0, ctx.source_evidence(page.log, config, summary));
    d
}

/// A kernel the program did not write that ran on the tensor cores in the same config (the
/// baseline's, or a library's launched beside the program's own), with its rate.
fn tensor_kernel_beside(ctx: &Ctx, config: Option<&str>, own: &KernelId) -> Option<Message> {
    let j = ctx.joined;
    let on_tensor = |p: &Position| matches!(p.limit, Limit::Tensor | Limit::Tf32Tensor);
    let baseline = crate::resources::beside_baseline(j)
        .map(|(_, theirs)| theirs)
        .unwrap_or_default();
    let theirs = baseline.iter().filter_map(|k| {
        let p = k.summary.limit.as_ref().filter(|p| on_tensor(p))?;
        Some((p.gflops?, msg!("The baseline's {}", code(&k.summary.kernel))))
    });
    let mut seen = std::collections::BTreeSet::new();
    let beside = j
        .metrics
        .iter()
        .filter(|m| m.config.as_deref() == config && m.kernel != *own)
        .filter(|m| !j.is_own(config, &m.kernel))
        .filter(|m| seen.insert(&m.kernel))
        .filter_map(|m| {
            let p = crate::roofline::of_kernel(j, config, &m.kernel).filter(|p| on_tensor(p))?;
            Some((p.gflops?, msg!("{}, launched beside it,", code(m.kernel.as_str()))))
        });
    let (gflops, who) = theirs
        .chain(beside)
        .fold(None, |best: Option<(f64, Message)>, (g, who)| match best {
            Some((b, _)) if b >= g => best,
            _ => Some((g, who)),
        })?;
    Some(msg!(
        "{} ran on the tensor cores at {} GFLOP/s in this run.",
        who,
        figure(format!("{gflops:.0}"))
    ))
}

/// A product on the scalar units: what [`word_product`] words.
struct Words<'k> {
    kernel: &'k KernelId,
    mix: &'k parsers::InstructionMix,
    product: Product,
    position: Option<&'k Position>,
    /// The loop's line: its place, and the line.
    hot: Option<(SourceLocation, &'k SourceLine)>,
    /// The conversions' and multiply-adds' share of the executed instructions (percent).
    replaced: f64,
    /// GFLOP/s done, the FMA peak and the tensor peak (GFLOP/s).
    ceiling: Option<(f64, f64, f64)>,
    /// The loop's memory causes it takes in: their titles and ncu's estimates.
    absorbed: Vec<(Message, f64)>,
    /// The kernel's share of the profiled GPU time, where it is not all of it.
    share: Option<f64>,
    /// A kernel beside it that ran on the tensor cores, in words.
    beside: Option<Message>,
}

/// The title, explanation and fix; returns the instruction mix's evidence summary.
fn word_product(d: &mut Draft, f: &Words) -> Message {
    let named = || code(f.kernel.as_str());
    let mix = f.mix;
    let (op, fmas, fma_peak, tensor_peak) = match f.product {
        Product::AtCeiling(Limit::Fp16) => ("HFMA2", mix.hfma2, Limit::Fp16, Limit::Tensor),
        Product::AtCeiling(_) => ("FFMA", mix.ffma, Limit::Fp32, Limit::Tf32Tensor),
        Product::WidenedHalves => ("FFMA", mix.fma, Limit::Fp32, Limit::Tensor),
    };
    let loop_at = f
        .hot
        .as_ref()
        .map(|(at, l)| msg!("; the loop is at {} ({})", path(at), code(&l.text)))
        .unwrap_or_default();
    match (f.product, f.position) {
        (Product::AtCeiling(limit), Some(p)) => {
            let what = if limit == Limit::Fp16 { "Half-precision" } else { "FP32" };
            d.title = msg!("{} FMAs where the tensor cores would lift the ceiling", what);
            d.explanation = msg!(
                "{}% of the instructions {} executes are scalar multiply-adds ({} warp-level \
                 {}), with no tensor-core instruction, and it runs {}: its ceiling is the {} \
                 peak of the CUDA cores. If those multiply-adds are a matrix product (a GEMM, a \
                 convolution, attention), the tensor cores raise the ceiling to the {} peak{}.",
                figure(format!("{:.0}", fmas as f64 * 100.0 / mix.executed.max(1) as f64)),
                named(),
                fmas.to_string(),
                code(op),
                p.phrase(),
                fma_peak.name(),
                tensor_peak.name(),
                loop_at
            );
        }
        _ => {
            d.title = msg!("No tensor cores: half-precision products on scalar FMA units");
            d.explanation = msg!(
                "{} multiplies half-precision values as floats: its SASS widens halves to float \
                 ({} executed `HADD2.F32`) and accumulates products in chains of up to {} \
                 dependent multiply-adds ({} executed FFMA), the inner loop of a matrix \
                 product, and executes no tensor-core instruction (0 HMMA or HGMMA). On an sm_80 \
                 or sm_90 GPU the tensor cores run half-precision products many times faster \
                 than the FMA units{}.",
                named(),
                mix.half_to_float.to_string(),
                mix.fma_chain.to_string(),
                mix.fma.to_string(),
                loop_at
            );
            d.explanation.append(msg!(
                " Those conversions and multiply-adds are {}% of the instructions {} executes; \
                 one `mma.sync` (m16n8k16) does the multiply-adds of 64 warp-wide FFMAs.",
                figure(format!("{:.0}", f.replaced)),
                named()
            ));
        }
    }
    if let Some((done, peak, tensor)) = f.ceiling {
        d.explanation.append(msg!(
            " Its FMAs run at {} GFLOP/s, {}% of this GPU's {} peak ({} GFLOP/s); its {} peak \
             is {} GFLOP/s, {}x higher, where the same rate would be {}%.",
            figure(format!("{done:.0}")),
            figure(format!("{:.1}", done * 100.0 / peak)),
            fma_peak.name(),
            figure(format!("{peak:.0}")),
            tensor_peak.name(),
            figure(format!("{tensor:.0}")),
            figure(format!("{:.0}", tensor / peak)),
            figure(format!("{:.1}", done * 100.0 / tensor))
        ));
    }
    if let Some(beside) = &f.beside {
        d.explanation.append(msg!(" {}", beside));
    }
    for (title, speedup) in &f.absorbed {
        d.explanation.append(msg!(
            " The same loop reads its operands straight from global memory ({}; Nsight Compute \
             estimates {}%); tiling the product through shared memory for the tensor cores \
             removes that too.",
            title.uncapitalised(),
            figure(format!("{speedup:.0}"))
        ));
    }
    if let Some(share) = f.share {
        d.explanation.append(msg!(
            " {} takes {}% of the GPU time of the profiled launches.",
            named(),
            figure(format!("{:.0}", share * 100.0))
        ));
    }
    d.fix = match f.product {
        Product::AtCeiling(Limit::Fp32) => msg!(
            "Run the product on the tensor cores with TF32 inputs: `mma.sync` or WMMA \
             (`wmma::precision::tf32`), or cuBLAS with `CUBLAS_COMPUTE_32F_FAST_TF32`. TF32 keeps \
             FP32's range and accumulation but rounds each input to a 10-bit mantissa (a \
             relative error near 1e-3 per product); where that is too coarse, 3xTF32 (CUTLASS) \
             recovers FP32 accuracy at about a third of the TF32 rate, and FP16/BF16 inputs \
             double the TF32 rate again."
        ),
        _ => msg!(
            "Compute the product on tensor cores: tile it through shared memory and use WMMA \
             (`nvcuda::wmma`) or `mma.sync` on FP16/BF16 fragments with FP32 accumulators, \
             wgmma on sm_90; or call cuBLAS or CUTLASS for it."
        ),
    };
    let widened = if mix.half_to_float > 0 {
        msg!(
            ", {} `HADD2.F32`, a chain of {} multiply-adds",
            mix.half_to_float.to_string(),
            mix.fma_chain.to_string()
        )
    } else {
        Message::new()
    };
    msg!(
        "instruction mix of {}: {} executed, {} {}{}, 0 tensor-core instructions{}",
        named(),
        mix.executed.to_string(),
        fmas.to_string(),
        code(op),
        widened,
        f.position
            .map(|p| msg!("; {}", p.cell()))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use crate::rules::testing::slow_reduction;

    // The positive cases run through the CLI: `examples/slow-kernels`' `no_tensor` config
    // (halves widened to float, `tests/it/reference.rs`) and the corpus' SGEMM kernels at the
    // FP32 roof (`corpus/sgemm-k4-registers`, stored only compressed).

    /// The slow-reduction example's `fast` config on an H100, from its reference run
    /// (`examples/slow-reduction/reference/artifacts/20261125T231516Z-b7f3a330/profile/fast/sm_90/`):
    /// a sum whose instructions are loads and adds, no product.
    #[test]
    fn stays_silent_on_a_reduction_with_no_product() {
        // What this cause drafts, as `slow-kernel` runs it.
        let drafts = slow_reduction!("fast").drafts_of(|ctx| {
            let mut out = Vec::new();
            super::no_tensor_cores(ctx, &mut out);
            out
        });
        assert!(drafts.is_empty(), "{drafts:?}");
    }
}
