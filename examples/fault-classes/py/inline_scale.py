"""A CUDA kernel written inline in Python and built with torch's load_inline: y = 2 * x.

Fault (PLANT=1 in the environment): the bound check uses <=, so one thread writes one element
past the end of y. load_inline writes the source string below to cuda.cu in its build
directory; a tool names that file, and the report should name this file and line.
"""

import os

import torch
from torch.utils.cpp_extension import load_inline

PLANT = os.environ.get("PLANT") == "1"

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void scale_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i BOUND n) y[i] = 2.0f * x[i];
}

torch::Tensor scale(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
""".replace("BOUND", "<=" if PLANT else "<")

CPP_SOURCE = "torch::Tensor scale(torch::Tensor x);"


def main():
    ext = load_inline(
        name="inline_scale_plant" if PLANT else "inline_scale",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["scale"],
        extra_cuda_cflags=["-lineinfo"],
        verbose=False,
    )
    x = torch.randn(1000, device="cuda")
    y = ext.scale(x)
    torch.cuda.synchronize()
    ok = torch.equal(y, 2 * x)
    print("PASS" if ok else "FAIL", "scale n=1000")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
