// PyTorch binding of the attention forward kernel (attn_fwd.cu):
//
//   attn_ext.attn_fwd(q, k, v, causal=False) -> o
//
// q, k, v: [B, H, S, 64] contiguous float16 CUDA tensors of the same shape and device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <array>
#include <cstdint>

#include "attn_fwd.h"

namespace {

// The statistics ring's buffers (see attn_fwd.cu), owned here and installed in the kernel's
// table on first use, and again whenever a launch needs larger buffers or another device.
struct LseRing {
  std::array<torch::Tensor, kAttnLseRingSlots> buffers;
  int64_t capacity = 0;  // floats per buffer
  int device = -1;
};

LseRing& lse_ring() {
  static LseRing ring;
  return ring;
}

void ensure_lse_ring(const torch::Tensor& like, int64_t rows) {
  LseRing& ring = lse_ring();
  const int device = like.get_device();
  if (ring.device == device && ring.capacity >= rows) return;
  std::array<float*, kAttnLseRingSlots> pointers{};
  for (int i = 0; i < kAttnLseRingSlots; ++i) {
    ring.buffers[i] = torch::empty({rows}, like.options().dtype(torch::kFloat32));
    pointers[i] = ring.buffers[i].data_ptr<float>();
  }
  const cudaError_t err = attn_fwd_set_lse_ring(pointers.data());
  TORCH_CHECK(err == cudaSuccess, "attn_fwd: installing the statistics ring failed: ",
              cudaGetErrorString(err));
  ring.capacity = rows;
  ring.device = device;
}

void check_input(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), "attn_fwd: ", name, " must be a CUDA tensor");
  TORCH_CHECK(t.scalar_type() == torch::kHalf, "attn_fwd: ", name, " must be float16, got ",
              t.scalar_type());
  TORCH_CHECK(t.dim() == 4, "attn_fwd: ", name, " must be [B, H, S, D], got ", t.sizes());
  TORCH_CHECK(t.size(3) == kAttnHeadDim, "attn_fwd: head dim must be ", kAttnHeadDim, ", got ",
              t.size(3));
  TORCH_CHECK(t.is_contiguous(), "attn_fwd: ", name, " must be contiguous");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "attn_fwd: ", name,
              " must be 16-byte aligned");
}

}  // namespace

torch::Tensor attn_fwd(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       bool causal) {
  check_input(q, "q");
  check_input(k, "k");
  check_input(v, "v");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              "attn_fwd: q, k and v must have the same shape, got ", q.sizes(), ", ", k.sizes(),
              ", ", v.sizes());
  TORCH_CHECK(k.device() == q.device() && v.device() == q.device(),
              "attn_fwd: q, k and v must be on the same device");

  const c10::cuda::CUDAGuard guard(q.device());
  auto o = torch::empty_like(q);
  const int64_t batch = q.size(0), heads = q.size(1), seq_len = q.size(2);
  if (q.numel() == 0) return o;
  TORCH_CHECK(batch <= 65535 && heads <= 65535 && seq_len <= INT32_MAX,
              "attn_fwd: shape too large: ", q.sizes());
  ensure_lse_ring(q, batch * heads * seq_len);

  const cudaError_t err = attn_fwd_launch(
      reinterpret_cast<const __half*>(q.data_ptr<at::Half>()),
      reinterpret_cast<const __half*>(k.data_ptr<at::Half>()),
      reinterpret_cast<const __half*>(v.data_ptr<at::Half>()),
      reinterpret_cast<__half*>(o.data_ptr<at::Half>()), static_cast<int>(batch),
      static_cast<int>(heads), static_cast<int>(seq_len), causal,
      at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "attn_fwd: launch failed: ", cudaGetErrorString(err));
  return o;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "A small WMMA attention forward pass (f16, head dim 64).";
  m.def("attn_fwd", &attn_fwd, "o = softmax(q k^T / sqrt(d)) v; q, k, v: [B, H, S, 64] float16",
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal") = false);
}
