//! A matrix product on scalar FMAs where tensor cores would serve: the instruction mix of a source page that shows it.

use super::*;
use crate::message::{Message, code, figure, msg, path};

/// The least a chain of multiply-adds must run to read as a dot product (a matrix product's
/// inner loop, unrolled), not an element-wise formula.
const MIN_FMA_CHAIN: u32 = 8;

/// Matrix products of half-precision values on the scalar FMA units: the kernel widens halves
/// to float (`HADD2.F32`), accumulates them in a long chain of multiply-adds and executes no
/// tensor-core instruction. ncu has no rule for this and estimates no speedup: it is said, with
/// the kernel's share of the GPU time, and ranked after the causes ncu measured.
pub(super) fn no_tensor_cores(ctx: &Ctx, out: &mut Vec<Draft>) {
    let j = ctx.joined;
    for (source_index, source) in j.sources.iter().enumerate() {
        for mix in &source.log.instruction_mix {
            let gemm_like = mix.mma == 0
                && mix.fma_chain >= MIN_FMA_CHAIN
                && mix.half_to_float.saturating_mul(2) >= mix.fma
                && mix.fma > 0;
            if !gemm_like {
                continue;
            }
            // The source page's function: a tool string the join does not index.
            let kernel = KernelId::of(&mix.function);
            let config = source.config;
            if !j.is_own(config, &kernel) {
                continue;
            }
            if out.iter().any(|d| {
                d.key == "no-tensor-cores"
                    && d.kernel.as_deref() == Some(kernel.as_str())
                    && d.config.as_deref() == config
            }) {
                continue;
            }
            let mut d = Draft::new(RuleId::SlowKernel, Level::Warning, Message::new());
            d.config = config.map(str::to_string);
            d.kernel = Some(kernel.to_string());
            d.key = "no-tensor-cores".to_string();
            d.stands_on = vec![crate::measure::Measure::TensorInstructions];
            d.confidence = Confidence::Medium;
            // This source page's lines.
            let page = Scope {
                config,
                log: Some(source_index),
            };
            let lines = source_lines(ctx, page, Some(&kernel));
            let hot = lines
                .iter()
                .copied()
                .filter(|l| l.instructions > 0)
                // The user's loop, not a header's inlined conversion: a run's input first, then
                // a CUDA or Python source, as `Ctx::user_location` prefers.
                .max_by_key(|l| {
                    let file = relative_path(&l.file, &j.repo_files);
                    let user = if j.repo_files.contains(&file) {
                        2
                    } else {
                        u8::from([".cu", ".cuh", ".py"].iter().any(|x| file.ends_with(x)))
                    };
                    (user, l.instructions)
                });
            if let Some(line) = hot {
                d.location = Some(SourceLocation {
                    file: relative_path(&line.file, &j.repo_files),
                    line: Some(line.line),
                });
            }
            d.evidence.push(ctx.source_evidence(
                Some(source_index),
                config,
                word_mix(&kernel, mix),
            ));
            // What tensor cores would take over: the conversions and multiply-adds, as a share
            // of the instructions the kernel executes (ncu has no estimate of its own here).
            let replaced =
                (mix.fma + mix.half_to_float) as f64 * 100.0 / mix.executed.max(1) as f64;
            // The ceiling the tensor cores would give the same products on this device:
            // (GFLOP/s done, of the FP32 peak, FP32 peak, FP16 tensor peak).
            let ceiling = crate::roofline::of_kernel(j, config, &kernel)
                .filter(|p| p.limit == crate::roofline::Limit::Fp32)
                .and_then(|p| Some((p.gflops?, p.of_peak, p.peak_gflops?, p.tensor_peak_gflops?)));
            if let Some((_, _, _, tensor)) = ceiling {
                d.figures
                    .insert("tensor_peak_gflops".into(), json!(tensor.round()));
            }
            let mut estimate = replaced;
            // The loop's own memory causes (uncoalesced loads, bank conflicts) are how an
            // untiled product reads its operands: the same fix removes them, so they support
            // this cause instead of standing beside it.
            let line = d.location.as_ref().and_then(|l| l.line);
            let (taken, kept): (Vec<Draft>, Vec<Draft>) =
                std::mem::take(out).into_iter().partition(|o| {
                    matches!(o.key.as_str(), "uncoalesced" | "bank-conflicts")
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
            Figure::EstimatedSpeedup.set(&mut d.figures, json!(estimate));
            // The figures of the profiling run this source page came from.
            let scope = Scope {
                config,
                log: details_beside(ctx, source_index),
            };
            let duration = duration_us(ctx, scope, Some(&kernel));
            if let Some(us) = duration {
                d.figures.insert("duration_us".into(), json!(us));
            }
            let mut told_share = None;
            if let Some(share) = time_share(ctx, scope, Some(&kernel)) {
                let gain = estimate * share;
                d.figures.insert("time_share".into(), json!(share));
                Figure::ProgramGain.set(&mut d.figures, json!(gain));
                if share < 0.999 {
                    told_share = Some(share);
                }
                if gain < MIN_PROGRAM_GAIN {
                    d.level = Level::Note;
                }
            }
            if duration.is_some_and(|us| us < MIN_DURATION_US) {
                d.level = Level::Note;
            }
            let product = ScalarProduct {
                kernel: &kernel,
                mix,
                hot: hot.map(|l| (relative_path(&l.file, &j.repo_files), l)),
                replaced,
                ceiling,
                absorbed,
                share: told_share,
            };
            word_scalar_product(&mut d, &product);
            out.push(d);
        }
    }
}

/// A matrix product of halves on the scalar FMA units: what [`word_scalar_product`] words.
struct ScalarProduct<'k> {
    kernel: &'k KernelId,
    mix: &'k parsers::InstructionMix,
    /// The loop's line: its file relative to the repository, and the line.
    hot: Option<(String, &'k SourceLine)>,
    /// The conversions' and multiply-adds' share of the executed instructions (percent).
    replaced: f64,
    /// GFLOP/s done, of the FP32 peak, the FP32 peak and the FP16 tensor peak (GFLOP/s).
    ceiling: Option<(f64, f64, f64, f64)>,
    /// The loop's memory causes it takes in: their titles and ncu's estimates.
    absorbed: Vec<(Message, f64)>,
    /// The kernel's share of the profiled GPU time, where it is not all of it.
    share: Option<f64>,
}

/// The title, explanation and fix.
fn word_scalar_product(d: &mut Draft, f: &ScalarProduct) {
    let named = || code(f.kernel.as_str());
    let mix = f.mix;
    d.title = msg!("No tensor cores: half-precision products on scalar FMA units");
    d.explanation = msg!(
        "{} multiplies half-precision values as floats: its SASS widens halves to float ({} \
         executed `HADD2.F32`) and accumulates products in chains of up to {} dependent \
         multiply-adds ({} executed FFMA), the inner loop of a matrix product, and executes no \
         tensor-core instruction (0 HMMA or HGMMA). On an sm_80 or sm_90 GPU the tensor cores \
         run half-precision products many times faster than the FMA units{}.",
        named(),
        mix.half_to_float.to_string(),
        mix.fma_chain.to_string(),
        mix.fma.to_string(),
        f.hot
            .as_ref()
            .map(|(file, l)| msg!(
                "; the loop is at {} ({})",
                path(format!("{file}:{}", l.line)),
                code(&l.text)
            ))
            .unwrap_or_default()
    );
    d.fix = msg!(
        "Compute the product on tensor cores: tile it through shared memory and use WMMA \
         (`nvcuda::wmma`), `mma.sync` or, on sm_90, wgmma; or call cuBLAS or CUTLASS for it."
    );
    d.explanation.append(msg!(
        " Those conversions and multiply-adds are {}% of the instructions {} executes; one \
         `mma.sync` (m16n8k16) does the multiply-adds of 64 warp-wide FFMAs.",
        figure(format!("{:.0}", f.replaced)),
        named()
    ));
    if let Some((done, of_peak, fp32, tensor)) = f.ceiling {
        d.explanation.append(msg!(
            " Its FMAs run at {} GFLOP/s, {}% of this GPU's FP32 peak ({} GFLOP/s); its FP16 \
             tensor peak is {} GFLOP/s, {}x higher, where the same rate would be {}%.",
            figure(format!("{done:.0}")),
            figure(format!("{:.1}", of_peak * 100.0)),
            figure(format!("{fp32:.0}")),
            figure(format!("{tensor:.0}")),
            figure(format!("{:.0}", tensor / fp32)),
            figure(format!("{:.1}", done * 100.0 / tensor))
        ));
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
}

/// The instruction mix's evidence summary.
fn word_mix(kernel: &KernelId, mix: &parsers::InstructionMix) -> Message {
    msg!(
        "instruction mix of {}: {} executed, {} FFMA, {} `HADD2.F32`, 0 MMA, a chain of {} \
         multiply-adds",
        code(kernel.as_str()),
        mix.executed.to_string(),
        mix.fma.to_string(),
        mix.half_to_float.to_string(),
        mix.fma_chain.to_string()
    )
}
