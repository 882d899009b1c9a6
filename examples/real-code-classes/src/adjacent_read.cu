// Sums each 64-element row of a 3840 x 64 float matrix (983,040 bytes, a size the driver
// packs right against the next allocation) into a row sum, one warp per row. Fault: the grid
// is sized for 32 rows more than the matrix has "to be safe", and no warp checks its row before
// loading it, so the last 32 warps read up to 8 KiB past the matrix, into the buffer that lies
// after it (`scale`). The sums are guarded, so the output is right and the check passes; only
// a sanitizer that pads allocations sees the reads.
#include <vector>
#include "common.cuh"

constexpr int COLS = 64;

__global__ void row_sums(const float* m, float* sums, int rows) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
#ifndef PLANT
  if (row >= rows) return;
#endif
  float v = m[row * COLS + lane] + m[row * COLS + lane + 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (lane == 0 && row < rows) sums[row] = v;
}

int main() {
  const int rows = 3840;
  std::vector<float> host(rows * COLS, 0.5f);
  float *m, *scale, *sums;
  CHECK(cudaMalloc(&m, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&scale, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&sums, rows * sizeof(float)));
  CHECK(cudaMemcpy(m, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(scale, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  const int warps_per_block = 8;
  const int blocks = (rows + 32) / warps_per_block;
  row_sums<<<blocks, warps_per_block * 32>>>(m, sums, rows);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(rows);
  CHECK(cudaMemcpy(got.data(), sums, rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < rows; ++r)
    if (got[r] != 32.f) { std::printf("FAIL row %d: %g\n", r, got[r]); return 1; }
  std::printf("PASS: %d row sums\n", rows);
  return 0;
}
