// Exhibit's driver for the corpus (not upstream code): mni-ml/framework's CUDA flash-attention
// forward kernel (src/native/kernels/flash_attention.cu, flash_attention_forward_f32) at the
// parent of d456463 ("fix: flash attention CUDA kernel truncating head dimensions > 32"),
// launched exactly as the CUDA backend's `flash_attention` launches it
// (src/native/src/ops/attention.rs:101-104, through cudarc: grid (B*H, ceil(S/32), 1),
// block (min(D, 32), 32, 1)), on a causal problem with B*H = 2 heads, S = 40 and head dimension
// D = 64. Output and log-sum-exp are allocated zeroed, as the backend's `store.zeros` does
// (a fresh CachingAllocator buffer is `alloc_zeros`). The result is compared with the backend's
// own CPU path (attention.rs:32-61, the same online-softmax loop, in double here). Exits 1 on a
// mismatch.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "src/native/kernels/flash_attention.cu"

#define CHECK_CUDA(call)                                                            \
  do {                                                                              \
    cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   cudaGetErrorString(err_));                                       \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

// Deterministic inputs in [lo, hi).
static void fill(std::vector<float>& v, unsigned seed, float lo, float hi) {
  unsigned s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  }
}

int main() {
  const int BH = 2;       // batch * heads
  const int S = 40;       // sequence length
  const int D = 64;       // head dimension (nEmbd 384 / nHead 6 in the fix's message)
  const int causal = 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const size_t n = static_cast<size_t>(BH) * S * D;

  std::vector<float> q(n), k(n), v(n);
  fill(q, 1u, -1.0f, 1.0f);
  fill(k, 2u, -1.0f, 1.0f);
  fill(v, 3u, 0.5f, 1.5f);  // every output is a convex mix of V rows: never near 0

  float *dq, *dk, *dv, *dout, *dlse;
  CHECK_CUDA(cudaMalloc(&dq, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dk, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dv, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dout, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dlse, static_cast<size_t>(BH) * S * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dq, q.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dk, k.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dv, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  // store.zeros(&[bh, s, d]) and store.zeros(&[bh, s]): alloc_zeros.
  CHECK_CUDA(cudaMemset(dout, 0, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(dlse, 0, static_cast<size_t>(BH) * S * sizeof(float)));

  // attention.rs:102-104, as upstream computes it.
  const unsigned block_size = 32u;
  const dim3 grid(BH, (S + block_size - 1) / block_size, 1);
  const dim3 block(static_cast<unsigned>(D < 32 ? D : 32), block_size, 1);
  std::printf("flash_attention_forward_f32: B*H=%d S=%d D=%d causal=%d; grid (%u, %u, %u), "
              "block (%u, %u, %u)\n", BH, S, D, causal, grid.x, grid.y, grid.z, block.x, block.y,
              block.z);
  flash_attention_forward_f32<<<grid, block>>>(dout, dlse, dq, dk, dv, scale, S, D, causal);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float> out(n);
  CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));

  // Reference: the CPU backend's loop (attention.rs:32-61).
  std::vector<double> ref(n);
  for (int b = 0; b < BH; ++b) {
    for (int row = 0; row < S; ++row) {
      const int col_end = causal ? row + 1 : S;
      double running_max = -INFINITY, running_sum = 0.0;
      std::vector<double> acc(D, 0.0);
      for (int col = 0; col < col_end; ++col) {
        double dot = 0.0;
        for (int dd = 0; dd < D; ++dd)
          dot += static_cast<double>(q[(b * S + row) * D + dd]) * k[(b * S + col) * D + dd];
        dot *= scale;
        const double old_max = running_max;
        running_max = std::fmax(running_max, dot);
        const double exp_diff = std::exp(old_max - running_max);
        running_sum = running_sum * exp_diff + std::exp(dot - running_max);
        for (int dd = 0; dd < D; ++dd)
          acc[dd] = acc[dd] * exp_diff + std::exp(dot - running_max) * v[(b * S + col) * D + dd];
      }
      for (int dd = 0; dd < D; ++dd) ref[(b * S + row) * D + dd] = acc[dd] / running_sum;
    }
  }

  const double atol = 1e-4, rtol = 1e-4;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double diff = std::fabs(out[i] - ref[i]);
    if (!(diff <= atol + rtol * std::fabs(ref[i]))) {
      if (bad < 10)
        std::printf("out[%zu] = %g, expected %g  (head %zu, row %zu, column %zu)\n", i, out[i],
                    ref[i], i / (static_cast<size_t>(S) * D), (i / D) % S, i % D);
      ++bad;
    }
  }
  CHECK_CUDA(cudaFree(dq));
  CHECK_CUDA(cudaFree(dk));
  CHECK_CUDA(cudaFree(dv));
  CHECK_CUDA(cudaFree(dout));
  CHECK_CUDA(cudaFree(dlse));
  if (bad) {
    std::printf("%zu of %zu elements differ\n", bad, n);
    std::printf("FAILED: flash_attention_forward_f32 does not match the CPU attention\n");
    return 1;
  }
  std::printf("OK: flash_attention_forward_f32 matches the CPU attention (%zu elements)\n", n);
  return 0;
}
