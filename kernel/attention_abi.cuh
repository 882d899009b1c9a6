// The kernel ABI every attention source exports (kernel/attention.cu, kernel/attention_sm90a.cu
// and the fault variants that include them), written once. Include it at the end of a source that
// defines attn::attention_fwd_impl<T>(q, k, v, o, seq_len, softmax_scale, causal) and the macros
// ATTN_ABI_VERSION, ATTN_THREADS, ATTN_MIN_BLOCKS, ATTN_SMEM_BYTES, BLOCK_M, BLOCK_N, STAGES and
// HEAD_DIM.
//
//   attention_fwd_f16 / attention_fwd_bf16(q, k, v, o, batch, heads, seq_len, softmax_scale,
//       causal): contiguous [batch, heads, seq_len, HEAD_DIM] tensors, each 16-byte aligned (the
//       copies, cp.async and TMA, move 16-byte chunks); grid (ceil(seq_len / BLOCK_M),
//       batch * heads), ATTN_THREADS threads, ATTN_SMEM_BYTES of dynamic shared memory.
//   attention_launch_info(out): writes {abi_version, BLOCK_M, BLOCK_N, STAGES, threads_per_block,
//       dynamic_smem_bytes, HEAD_DIM, 0}, the launch geometry the harness reads.

#pragma once

extern "C" __global__ void __launch_bounds__(ATTN_THREADS, ATTN_MIN_BLOCKS)
    attention_fwd_f16(const void* q, const void* k, const void* v, void* o, int batch, int heads,
                      int seq_len, float softmax_scale, int causal) {
  (void)batch;
  (void)heads;
  attn::attention_fwd_impl<__half>(static_cast<const __half*>(q), static_cast<const __half*>(k),
                                   static_cast<const __half*>(v), static_cast<__half*>(o), seq_len,
                                   softmax_scale, causal);
}

extern "C" __global__ void __launch_bounds__(ATTN_THREADS, ATTN_MIN_BLOCKS)
    attention_fwd_bf16(const void* q, const void* k, const void* v, void* o, int batch, int heads,
                       int seq_len, float softmax_scale, int causal) {
  (void)batch;
  (void)heads;
  attn::attention_fwd_impl<__nv_bfloat16>(
      static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
      static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), seq_len, softmax_scale,
      causal);
}

extern "C" __global__ void attention_launch_info(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = ATTN_ABI_VERSION;
    out[1] = BLOCK_M;
    out[2] = BLOCK_N;
    out[3] = STAGES;
    out[4] = ATTN_THREADS;
    out[5] = ATTN_SMEM_BYTES;
    out[6] = HEAD_DIM;
    out[7] = 0;
  }
}
