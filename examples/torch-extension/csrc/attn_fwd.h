// Host interface of the attention forward kernel in attn_fwd.cu. Plain CUDA runtime types only,
// so the kernel compiles and links without PyTorch; attn_api.cpp adapts it to torch tensors.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

// Head dimension the kernel is written for.
constexpr int kAttnHeadDim = 64;

// Slots of the softmax-statistics ring (see attn_fwd.cu).
constexpr int kAttnLseRingSlots = 8;

// o = softmax(q k^T / sqrt(64) [+ causal mask]) v for q, k, v, o of shape [B, H, S, 64],
// contiguous f16, 16-byte aligned. Also writes each row's log-sum-exp of the scaled scores
// into the current slot of the statistics ring. Returns cudaGetLastError() after the launch.
cudaError_t attn_fwd_launch(const __half* q, const __half* k, const __half* v, __half* o, int batch,
                            int heads, int seq_len, bool causal, cudaStream_t stream);

// Installs the kAttnLseRingSlots buffers of the statistics ring, each holding at least
// batch * heads * seq_len floats of every later launch, on the current device. Synchronous.
cudaError_t attn_fwd_set_lse_ring(float* const* buffers);
