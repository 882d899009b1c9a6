// Row sums of a 1000 x 4096 matrix, one block of 256 threads per row, the row read in four
// chunks of 1024 columns: each chunk's partial is reduced in shared memory and added to the row's
// total. Row r holds r % 7 + 1 everywhere, so its sum is 4096 * (r % 7 + 1).
// Fault: thread 0 stores each chunk's partial through `out` and the pointer moves on one slot per
// chunk, as if each chunk had a slot of its own. Row r writes slots r..r+3: it overwrites the
// next three rows' slots, and the last three rows write 1, 2 and 3 floats past the end of the
// 1000-float output. NAME_clean adds the partials and stores the total once, after the loop.
#include <vector>
#include "common.cuh"

constexpr int ROWS = 1000, COLS = 4096, CHUNK = 1024, THREADS = 256;

__global__ void row_sums(const float* m, float* out) {
  __shared__ float part[THREADS];
  const float* row = m + static_cast<size_t>(blockIdx.x) * COLS;
  out += blockIdx.x;
  [[maybe_unused]] float total = 0.f;
  for (int c0 = 0; c0 < COLS; c0 += CHUNK) {
    float s = 0.f;
    for (int c = c0 + threadIdx.x; c < c0 + CHUNK; c += THREADS) s += row[c];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
#ifdef PLANT
    if (threadIdx.x == 0) *out = part[0];
    out += 1;
#else
    total += part[0];
#endif
    __syncthreads();
  }
#ifndef PLANT
  if (threadIdx.x == 0) *out = total;
#endif
}

int main() {
  std::vector<float> m(static_cast<size_t>(ROWS) * COLS), want(ROWS), got(ROWS);
  for (int r = 0; r < ROWS; ++r) {
    for (int c = 0; c < COLS; ++c) m[static_cast<size_t>(r) * COLS + c] = float(r % 7 + 1);
    want[r] = float(COLS) * float(r % 7 + 1);
  }
  float *d_m, *d_out;
  CHECK(cudaMalloc(&d_m, m.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_out, ROWS * sizeof(float)));
  CHECK(cudaMemcpy(d_m, m.data(), m.size() * sizeof(float), cudaMemcpyHostToDevice));
  row_sums<<<ROWS, THREADS>>>(d_m, d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), d_out, ROWS * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = check_close("row_sums", got.data(), want.data(), ROWS, 1e-3);
  CHECK(cudaFree(d_m));
  CHECK(cudaFree(d_out));
  return ok ? 0 : 1;
}
