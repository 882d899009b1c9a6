// A 3-point stencil through a shared tile. Fault: no __syncthreads() between staging the tile
// (stencil.cuh) and reading the neighbours, so a thread may read its neighbours' slots before
// they are written; the left and right reads are two read sites of the one missing barrier.
#include <vector>
#include "common.cuh"
#include "stencil.cuh"

constexpr int B = 256;

__global__ void stencil3(const float* in, float* out, int n) {
  __shared__ float tile[B + 2];
  stage_tile<B>(in, tile, n);
#ifndef PLANT
  __syncthreads();
#endif
  int i = blockIdx.x * B + threadIdx.x;
  float left = tile[threadIdx.x];
  float right = tile[threadIdx.x + 2];
  if (i < n) out[i] = 0.25f * left + 0.5f * tile[threadIdx.x + 1] + 0.25f * right;
}

int main() {
  const int n = 1 << 16;
  std::vector<float> host(n), got(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 7);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  stencil3<<<n / B, B>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    float l = i > 0 ? host[i - 1] : 0.f, r = i + 1 < n ? host[i + 1] : 0.f;
    if (got[i] != 0.25f * l + 0.5f * host[i] + 0.25f * r) ++bad;
  }
  if (bad) { std::printf("FAIL %d of %d outputs wrong\n", bad, n); return 1; }
  std::printf("PASS stencil3 n=%d\n", n);
  return 0;
}
