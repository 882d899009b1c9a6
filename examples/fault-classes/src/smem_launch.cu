// A tiled matrix transpose staging a 128 x 128 float tile (64 KiB) in dynamic shared memory.
// Fault: the kernel is launched with 64 KiB of dynamic shared memory without first raising
// cudaFuncAttributeMaxDynamicSharedMemorySize past the 48 KiB default, so the launch is rejected.
#include <vector>
#include "common.cuh"

constexpr int T = 128;

__global__ void transpose_tile(const float* in, float* out, int n) {
  extern __shared__ float tile[];
  int bx = blockIdx.x * T, by = blockIdx.y * T;
  for (int r = threadIdx.y; r < T; r += blockDim.y)
    for (int c = threadIdx.x; c < T; c += blockDim.x)
      tile[r * T + c] = in[(size_t)(by + r) * n + bx + c];
  __syncthreads();
  for (int r = threadIdx.y; r < T; r += blockDim.y)
    for (int c = threadIdx.x; c < T; c += blockDim.x)
      out[(size_t)(bx + r) * n + by + c] = tile[c * T + r];
}

int main() {
  const int n = 1024;
  const size_t smem = T * T * sizeof(float);
  std::vector<float> host((size_t)n * n);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 977);
  float *in, *out;
  CHECK(cudaMalloc(&in, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&out, host.size() * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
#ifndef PLANT
  CHECK(cudaFuncSetAttribute(transpose_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
#endif
  transpose_tile<<<dim3(n / T, n / T), dim3(32, 8), smem>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(host.size());
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      if (got[(size_t)r * n + c] != host[(size_t)c * n + r]) {
        std::printf("FAIL out[%d][%d]\n", r, c);
        return 1;
      }
  std::printf("PASS transpose %d x %d\n", n, n);
  return 0;
}
