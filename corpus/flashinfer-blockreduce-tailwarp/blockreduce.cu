// Exhibit's driver for the corpus (not upstream code): runs flashinfer's TRT-LLM block
// reductions blockReduceSumV2 / blockReduceMaxV2 (include/flashinfer/comm/
// trtllm_allreduce_fusion.cuh) the way the fix's own test tests/comm/
// test_trtllm_allreduce_reduction.py does: one block of N threads, each thread contributes 1 to
// the sum and threadIdx.x + 1 to the max, so both results must be N. Block sizes as the test:
// 129 (a one-lane tail warp), 159 (a 31-lane tail), 180 (the reported failure), 192 (aligned).
// Exits 1 when any result differs.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include <flashinfer/comm/trtllm_allreduce_fusion.cuh>

#define CHECK_CUDA(call)                                                            \
  do {                                                                              \
    cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   cudaGetErrorString(err_));                                       \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

// The fix's test kernel, verbatim.
__global__ void block_reduction_kernel(float* output) {
  float sum = 1.0f;
  float max = static_cast<float>(threadIdx.x + 1);

  flashinfer::trtllm_allreduce_fusion::utils::blockReduceSumV2<float, 1>(&sum);
  flashinfer::trtllm_allreduce_fusion::utils::blockReduceMaxV2<float, 1>(&max);

  if (threadIdx.x == 0) {
    output[0] = sum;
    output[1] = max;
  }
}

int main() {
  const int sizes[] = {129, 159, 180, 192};
  float* d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_out, 2 * sizeof(float)));
  int failures = 0;
  for (int n : sizes) {
    CHECK_CUDA(cudaMemset(d_out, 0, 2 * sizeof(float)));
    block_reduction_kernel<<<1, n>>>(d_out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    float out[2];
    CHECK_CUDA(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost));
    const float expected = static_cast<float>(n);  // sum of n ones; max of 1..n
    const bool ok = out[0] == expected && out[1] == expected;
    std::printf("N=%d: sum %g, expected %g; max %g, expected %g%s\n", n, out[0], expected,
                out[1], expected, ok ? "" : "  MISMATCH");
    if (!ok) ++failures;
  }
  CHECK_CUDA(cudaFree(d_out));
  if (failures) {
    std::printf("FAILED: %d of %zu block sizes give a wrong reduction\n", failures,
                sizeof(sizes) / sizeof(sizes[0]));
    return 1;
  }
  std::printf("OK: all block sizes reduce correctly\n");
  return 0;
}
