"""Naive attention written inline (torch's load_inline), checked against PyTorch's
scaled_dot_product_attention, which runs cuDNN's (or FlashAttention's) kernel in the same process.

One thread computes one query row: scores against every key, a softmax, the weighted sum of
values. Correct as written. With MISSING_SCALE=1 in the environment it forgets the 1/sqrt(d)
scale of the scores, so its output differs from SDPA's: a wrong output in the user's kernel,
while the library's kernel beside it is not the user's code.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

MISSING_SCALE = os.environ.get("MISSING_SCALE") == "1"

CUDA_SOURCE = r"""
#include <torch/extension.h>

// q, k, v, o: [rows = batch * heads, seq, dim], fp32, contiguous.
__global__ void naive_attention(const float* q, const float* k, const float* v, float* o,
                                int seq, int dim, float scale) {
  int row = blockIdx.y;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= seq) return;
  const float* qi = q + ((long)row * seq + i) * dim;
  const float* kr = k + (long)row * seq * dim;
  const float* vr = v + (long)row * seq * dim;
  float* oi = o + ((long)row * seq + i) * dim;
  float m = -INFINITY, l = 0.f;
  for (int d = 0; d < dim; ++d) oi[d] = 0.f;
  for (int j = 0; j < seq; ++j) {
    float s = 0.f;
    for (int d = 0; d < dim; ++d) s += qi[d] * kr[j * dim + d];
    s *= scale;
    float m_new = fmaxf(m, s);
    float correction = __expf(m - m_new);
    float p = __expf(s - m_new);
    l = l * correction + p;
    for (int d = 0; d < dim; ++d) oi[d] = oi[d] * correction + p * vr[j * dim + d];
    m = m_new;
  }
  for (int d = 0; d < dim; ++d) oi[d] /= l;
}

torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale) {
  auto o = torch::empty_like(q);
  int rows = q.size(0) * q.size(1), seq = q.size(2), dim = q.size(3);
  dim3 grid((seq + 127) / 128, rows);
  naive_attention<<<grid, 128>>>(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                                 o.data_ptr<float>(), seq, dim, (float)scale);
  return o;
}
"""

CPP_SOURCE = "torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale);"


def main():
    ext = load_inline(
        name="naive_attention",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["attention"],
        extra_cuda_cflags=["-lineinfo"],
        verbose=False,
    )
    torch.manual_seed(0)
    batch, heads, seq, dim = 2, 4, 256, 64
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda") for _ in range(3))
    scale = 1.0 if MISSING_SCALE else 1.0 / math.sqrt(dim)
    out = ext.attention(q, k, v, scale)
    # The reference: PyTorch's SDPA in half precision, which picks cuDNN's or FlashAttention's
    # kernel on Hopper.
    ref = F.scaled_dot_product_attention(q.half(), k.half(), v.half()).float()
    torch.cuda.synchronize()
    diff = (out - ref).abs().max().item()
    tolerance = 5e-3
    ok = diff <= tolerance
    print(f"{'PASS' if ok else 'FAIL'} attention vs SDPA: max_abs_diff {diff:.6f} (tolerance {tolerance})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
