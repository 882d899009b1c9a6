// Scales a vector of 1,228,737 floats (4.9 MB) in tiles of 256 elements, one tile per block.
// Fault: the last tile is not guarded, so its threads past the end write up to 255 elements
// beyond the buffer (a tail, not a stride error). The program prints its progress without a
// trailing newline, as many programs do, so the sanitizer's first record shares its line.
#include <vector>
#include "common.cuh"

constexpr int TILE = 256;

__global__ void scale_tiles(const float* in, float* out, int n, float factor) {
  int i = blockIdx.x * TILE + threadIdx.x;
#ifndef PLANT
  if (i >= n) return;
#endif
  out[i] = in[i % n] * factor;
}

int main() {
  const int n = 1228737;
  std::vector<float> host(n, 1.f);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  std::printf("scaling %d elements in tiles of %d... ", n, TILE);
  std::fflush(stdout);
  scale_tiles<<<(n + TILE - 1) / TILE, TILE>>>(in, out, n, 2.f);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (host[i] != 2.f) { std::printf("FAIL element %d: %g\n", i, host[i]); return 1; }
  std::printf("done");  // no newline at the end either
  return 0;
}
