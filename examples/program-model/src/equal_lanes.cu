// Row sums of a 4096 x 256 matrix, one warp per row and 8 rows per block: each lane adds every
// 32nd element of its row, the warp combines the 32 lane partials, and the block stores its 8
// row totals from shared memory in one coalesced write. The test matrix has constant rows
// (row r holds r % 7 + 1), so every row sum is 256 * (r % 7 + 1) and every lane's partial is 8 *
// (r % 7 + 1).
// Fault: the warp does not combine its partials; every lane stores its own partial into the
// warp's shared slot, so one lane's partial survives. With these rows all 32 lanes store the same
// value (write-write hazards that change nothing, which racecheck reports as warnings), and every
// row sum comes out 1/32 of the reference: out[0] = 8, expected 256.
// NAME_clean sums the partials with a warp-shuffle reduction and lets lane 0 store the total.
#include <vector>
#include "common.cuh"

constexpr int ROWS = 4096, COLS = 256, WARPS = 8;

__global__ void row_sums(const float* m, float* sums) {
  __shared__ float row_total[WARPS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row = blockIdx.x * WARPS + warp;
  float partial = 0.f;
  for (int c = lane; c < COLS; c += 32) partial += m[row * COLS + c];
#ifdef PLANT
  row_total[warp] = partial;
#else
  for (int off = 16; off > 0; off /= 2) partial += __shfl_xor_sync(0xffffffffu, partial, off);
  if (lane == 0) row_total[warp] = partial;
#endif
  __syncthreads();
  if (threadIdx.x < WARPS) sums[blockIdx.x * WARPS + threadIdx.x] = row_total[threadIdx.x];
}

int main() {
  std::vector<float> m(ROWS * COLS), want(ROWS, 0.f), got(ROWS);
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) m[r * COLS + c] = float(r % 7 + 1);
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) want[r] += m[r * COLS + c];
  float *d_m, *d_sums;
  CHECK(cudaMalloc(&d_m, ROWS * COLS * sizeof(float)));
  CHECK(cudaMalloc(&d_sums, ROWS * sizeof(float)));
  CHECK(cudaMemcpy(d_m, m.data(), ROWS * COLS * sizeof(float), cudaMemcpyHostToDevice));
  row_sums<<<ROWS / WARPS, WARPS * 32>>>(d_m, d_sums);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), d_sums, ROWS * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = check_close("row_sums", got.data(), want.data(), ROWS, 1e-3);
  CHECK(cudaFree(d_m));
  CHECK(cudaFree(d_sums));
  return ok ? 0 : 1;
}
