// Row sums of a [rows, cols] matrix, one tile of 64 rows per block, each of its 8 warps summing
// 8 rows of the tile. Fault: the last tile is not guarded, so with rows = 1000 (not a multiple of 64) the last
// block reads 24 rows past the end of the input.
#include <vector>
#include "common.cuh"

constexpr int TILE = 64;

__global__ void row_sums(const float* in, float* out, int rows, int cols) {
  for (int r = threadIdx.y; r < TILE; r += blockDim.y) {
    int row = blockIdx.x * TILE + r;
    float sum = 0.f;
#ifndef PLANT
    if (row < rows)
#endif
      for (int c = threadIdx.x; c < cols; c += 32) sum += in[(size_t)row * cols + c];
    for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffff, sum, o);
    if (threadIdx.x == 0 && row < rows) out[row] = sum;
  }
}

int main(int argc, char** argv) {
  const int rows = 1000, cols = 128;
  std::vector<float> host((size_t)rows * cols, 1.f);
  float *out, *in;
  CHECK(cudaMalloc(&out, rows * sizeof(float)));
  CHECK(cudaMalloc(&in, host.size() * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  dim3 block(32, 8);
  int grid = (rows + TILE - 1) / TILE;
  row_sums<<<grid, block>>>(in, out, rows, cols);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(rows);
  CHECK(cudaMemcpy(got.data(), out, rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < rows; ++r)
    if (got[r] != cols) { std::printf("FAIL row %d: %g\n", r, got[r]); return 1; }
  std::printf("PASS row_sums %d x %d\n", rows, cols);
  return 0;
}
