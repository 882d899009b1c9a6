// Each launch appends one record to a log table of 8 slots through a device-side counter.
// Fault: the counter is never reset between launches, so from the ninth launch on the kernel
// writes past the end of the table. The program itself checks only the output and exits 0.
#include <vector>
#include "common.cuh"

constexpr int SLOTS = 8;
__device__ int g_next_slot;

__global__ void scale_and_log(const float* in, float* out, int n, float s, int* log) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = s * in[i];
  if (i == 0) {
    int slot = atomicAdd(&g_next_slot, 1);
#ifndef PLANT
    slot %= SLOTS;
#endif
    log[slot] = n;
  }
}

int main(int argc, char** argv) {
  const int n = 4096, count = launches(argc, argv);
  std::vector<float> host(n, 2.f), got(n);
  float *in, *out;
  int* log;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&log, SLOTS * sizeof(int)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 1; k <= count; ++k) {
    scale_and_log<<<n / 256, 256>>>(in, out, n, 3.f, log);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (got[i] != 6.f) { std::printf("FAIL launch %d: out[%d] = %g\n", k, i, got[i]); return 1; }
  }
  std::printf("PASS scale_and_log, %d launches\n", count);
  return 0;
}
