// Two steps, checked in order: scale a vector by 2 and check it, then clear a scratch buffer.
// Fault: the scale kernel multiplies by 3 (every element 1.5x its reference); the program prints
// its FAIL line (flushed, as a test harness does) before the second step. The clear kernel
// runs one thread too many and writes one float past the scratch buffer: a real out-of-bounds
// write, but after the failure, so it cannot explain it. NAME_clean has neither fault.
#include <vector>
#include "common.cuh"

constexpr int N = 1 << 16;

__global__ void scale(const float* in, float* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

__global__ void clear(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef PLANT
  if (i <= n) scratch[i] = 0.f;
#else
  if (i < n) scratch[i] = 0.f;
#endif
}

int main() {
  std::vector<float> in(N), want(N), got(N);
  for (int i = 0; i < N; ++i) in[i] = float(i % 13), want[i] = 2.f * in[i];
  float *d_in, *d_out, *d_scratch;
  CHECK(cudaMalloc(&d_in, N * sizeof(float)));
  CHECK(cudaMalloc(&d_out, N * sizeof(float)));
  CHECK(cudaMalloc(&d_scratch, 1000 * sizeof(float)));
  CHECK(cudaMemcpy(d_in, in.data(), N * sizeof(float), cudaMemcpyHostToDevice));
#ifdef PLANT
  const float factor = 3.f;
#else
  const float factor = 2.f;
#endif
  scale<<<N / 256, 256>>>(d_in, d_out, factor, N);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(got.data(), d_out, N * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = check_close("scale", got.data(), want.data(), N, 1e-3);
  std::fflush(stdout);
  clear<<<4, 256>>>(d_scratch, 1000);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_scratch));
  return ok ? 0 : 1;
}
