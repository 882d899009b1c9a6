// Centres each block of a vector on its mean: out[i] = in[i] - mean(in over i's block). The block
// sum is a warp-shuffle reduction per warp, the warps' sums in shared memory, and thread 0 adding
// those and leaving the block's total in slot 0 for every thread to read.
// Fault: no barrier between thread 0 writing the total into warp_sums[0] and the other threads
// reading it. With one warp per block (blockDim 32) the reads come after the write in the warp's
// own order (racecheck: a warning, within a warp); with two warps (blockDim 64) the second warp
// can read slot 0 before thread 0 has replaced warp 0's partial sum with the total (racecheck: an
// error, across warps), and its elements are centred on the wrong mean.
// NAME_clean puts __syncthreads() between the write and the reads.
#include <vector>
#include "common.cuh"

__global__ void center_blocks(const float* in, float* out) {
  __shared__ float warp_sums[32];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const float v = in[i];
  float s = v;
  for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  // Through a volatile pointer, as block reductions written for older compilers do: the reads
  // stay where the source puts them, after thread 0's write in program order.
  volatile float* sums = warp_sums;
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < warps; ++w) total += sums[w];
    sums[0] = total;
  }
#ifndef PLANT
  __syncthreads();
#endif
  const float mean = sums[0] / blockDim.x;
  out[i] = v - mean;
}

// Runs center_blocks over n = blocks * threads elements and checks it against the CPU.
static bool run(int blocks, int threads) {
  const int n = blocks * threads;
  std::vector<float> in(n), want(n), got(n);
  // Small integers: every block sum and mean (a power-of-two divisor) is exact.
  for (int i = 0; i < n; ++i) in[i] = float((i * 7 + i / 13) % 11);
  for (int b = 0; b < blocks; ++b) {
    float sum = 0.f;
    for (int t = 0; t < threads; ++t) sum += in[b * threads + t];
    for (int t = 0; t < threads; ++t) want[b * threads + t] = in[b * threads + t] - sum / threads;
  }
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  center_blocks<<<blocks, threads>>>(d_in, d_out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  char what[64];
  std::snprintf(what, sizeof what, "center_blocks blockDim %d", threads);
  return check_close(what, got.data(), want.data(), n, 1e-4);
}

int main() {
  bool ok = run(512, 32);
  ok = run(256, 64) && ok;
  return ok ? 0 : 1;
}
