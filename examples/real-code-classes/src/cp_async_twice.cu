// Sums 64 tiles of 128 floats through a two-stage cp.async pipeline (one block of 128 threads).
// Fault: the prologue prefetches tiles 0 and 1, and the loop then loads tile n + 1, which the
// prologue or the previous iteration already has in flight, instead of n + 2: each tile is
// copied twice into the same stage with the first copy not yet waited for, and the wait count
// no longer says which stage is complete.
#include <cuda_pipeline.h>
#include <vector>
#include "common.cuh"

constexpr int TILE = 128, STAGES = 2, TILES = 64;

// Every copy goes through this one line, as it does in real code's wrappers.
__device__ void load_tile(float* stage, const float* in, int tile) {
  __pipeline_memcpy_async(&stage[threadIdx.x], &in[tile * TILE + threadIdx.x], sizeof(float));
}

__global__ void tile_sums(const float* in, float* out) {
  __shared__ float stages[STAGES][TILE];
  for (int s = 0; s < STAGES; ++s) {
    load_tile(stages[s], in, s);
    __pipeline_commit();
  }
  float acc = 0.f;
  for (int n = 0; n < TILES; ++n) {
    __pipeline_wait_prior(STAGES - 1);
    __syncthreads();
    // Each thread reads its neighbour's element: the stage must be complete for every thread.
    acc += stages[n % STAGES][(threadIdx.x + 1) % TILE];
    __syncthreads();
#ifdef PLANT
    int next = n + 1;
#else
    int next = n + STAGES;
#endif
    if (next < TILES) load_tile(stages[next % STAGES], in, next);
    __pipeline_commit();
  }
  out[threadIdx.x] = acc;
}

int main() {
  std::vector<float> host(TILE * TILES);
  for (int i = 0; i < TILE * TILES; ++i) host[i] = static_cast<float>(i % 7);
  float *in, *out;
  CHECK(cudaMalloc(&in, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&out, TILE * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  tile_sums<<<1, TILE>>>(in, out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> sums(TILE);
  CHECK(cudaMemcpy(sums.data(), out, TILE * sizeof(float), cudaMemcpyDeviceToHost));
  for (int t = 0; t < TILE; ++t) {
    float want = 0.f;
    for (int n = 0; n < TILES; ++n) want += host[n * TILE + (t + 1) % TILE];
    if (sums[t] != want) { std::printf("FAIL thread %d: %g, want %g\n", t, sums[t], want); return 1; }
  }
  std::printf("done\n");
  return 0;
}
