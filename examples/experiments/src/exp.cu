// Five small programs, one per experiment Exhibit runs, picked by a define:
//   -DPROG_tail  sums rows of N floats (N from argv[1]) in tiles of 64 with no guard on the last
//                tile: it reads past the end exactly when N is not a multiple of 64;
//   -DPROG_race  copies each block's 256 values through shared memory and reads another warp's
//                slot with no barrier between the write and the read: the output depends on
//                which warp gets there first;
//   -DPROG_regs  a register-heavy kernel (32 accumulators per thread, 256 threads per block),
//                its register budget set by -DMAXREG through __launch_bounds__ when given;
//   -DPROG_smem  a latency-bound pointer chase whose blocks each reserve TILE KiB of shared
//                memory (-DTILE, 96 by default): shared memory holds 2 blocks per SM;
//   -DPROG_block the same chase in blocks of BLOCK threads (-DBLOCK, 32 by default): an SM holds
//                at most 32 blocks, so small blocks leave half its warp slots empty.
// Each checks what it can and prints one result line; regs, smem and block print their time
// per launch.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      return 2;                                                                        \
    }                                                                                  \
  } while (0)

#if defined(PROG_tail)
constexpr int TILE = 64;
// One block per tile of 64 elements; every thread loads its element unguarded.
__global__ void tile_sum(const float* in, float* out, int n) {
  __shared__ float s[TILE];
  int i = blockIdx.x * TILE + threadIdx.x;
  s[threadIdx.x] = in[i];
  __syncthreads();
  for (int h = TILE / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int tiles = (n + TILE - 1) / TILE;
  std::vector<float> host(n, 1.f);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, tiles * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  tile_sum<<<tiles, TILE>>>(in, out, n);
  CHECK(cudaGetLastError());
  std::vector<float> got(tiles);
  CHECK(cudaMemcpy(got.data(), out, tiles * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : got) sum += v;
  std::printf("n %d: %d tiles, sum %.0f\n", n, tiles, sum);
  return 0;
}

#elif defined(PROG_race)
constexpr int BLOCK = 256;
__global__ void shift(const float* in, float* out) {
  __shared__ float s[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  s[threadIdx.x] = in[i] * 2.f;
  // Missing __syncthreads(): the slot read below belongs to the next warp.
  out[i] = s[(threadIdx.x + 32) % BLOCK];
}

int main() {
  const int blocks = 4096, n = blocks * BLOCK;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 1000);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemset(out, 0, n * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  shift<<<blocks, BLOCK>>>(in, out);
  CHECK(cudaGetLastError());
  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < BLOCK; ++t) {
      int src = b * BLOCK + (t + 32) % BLOCK;
      if (got[b * BLOCK + t] != host[src] * 2.f) ++wrong;
    }
  std::printf("shift: %d of %d values not yet written when read\n", wrong, n);
  return 0;
}

#elif defined(PROG_regs)
constexpr int BLOCK = 256;
constexpr int ACC = 32;
#if defined(MAXREG)
#define BOUNDS __launch_bounds__(BLOCK, 65536 / (BLOCK * MAXREG))
#else
#define BOUNDS
#endif
// Each thread keeps ACC running sums, each fed by its own chain of loads and multiply-adds.
__global__ void BOUNDS many_sums(const float* in, float* out, int n, int steps) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  float acc[ACC];
#pragma unroll
  for (int k = 0; k < ACC; ++k) acc[k] = 0.f;
  for (int s = 0; s < steps; ++s) {
    float x = in[(i + s * 4099) % n];
#pragma unroll
    for (int k = 0; k < ACC; ++k) acc[k] = fmaf(acc[k], x, float(k + s));
  }
  float total = 0.f;
#pragma unroll
  for (int k = 0; k < ACC; ++k) total += acc[k] * float(k);
  out[i] = total;
}

int main() {
  const int blocks = 132 * 16, n = blocks * BLOCK, steps = 256;
  std::vector<float> host(n, 0.5f);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int launches = 20;
  for (int r = 0; r <= launches; ++r) {
    if (r == 1) CHECK(cudaEventRecord(start));
    many_sums<<<blocks, BLOCK>>>(in, out, n, steps);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  float first = 0.f;
  CHECK(cudaMemcpy(&first, out, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("many_sums: %.1f us per launch (out[0] = %g)\n", 1e3 * ms / launches, first);
  return 0;
}
#elif defined(PROG_smem) || defined(PROG_block)
#if defined(PROG_smem)
#ifndef TILE
#define TILE 96
#endif
constexpr int BLOCK = 128;
constexpr size_t STAGE_BYTES = size_t(TILE) * 1024;
#else
#ifndef BLOCK
#define BLOCK 32
#endif
constexpr size_t STAGE_BYTES = sizeof(int) * BLOCK;
#endif
// Each thread follows a chain of loads, each address the value loaded before it: nothing to
// overlap within a thread, so the kernel's speed follows the warps resident on an SM. The
// block's staging buffer (STAGE_BYTES of dynamic shared memory) passes each thread's last
// value to its neighbour.
__global__ void chase(const int* next, int* out, int n, int steps) {
  extern __shared__ int stage[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = i % n;
  for (int s = 0; s < steps; ++s) j = next[j];
  stage[threadIdx.x] = j;
  __syncthreads();
  out[i] = stage[(threadIdx.x + 1) % blockDim.x];
}

int main() {
  const int n = 1 << 24, threads = 132 * 2048, blocks = threads / BLOCK, steps = 64;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = int((i * 2654435761u + 12345u) % unsigned(n));
  int *next, *out;
  CHECK(cudaMalloc(&next, n * sizeof(int)));
  CHECK(cudaMalloc(&out, threads * sizeof(int)));
  CHECK(cudaMemcpy(next, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaFuncSetAttribute(chase, cudaFuncAttributeMaxDynamicSharedMemorySize, int(STAGE_BYTES)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int launches = 20;
  for (int r = 0; r <= launches; ++r) {
    if (r == 1) CHECK(cudaEventRecord(start));
    chase<<<blocks, BLOCK, STAGE_BYTES>>>(next, out, n, steps);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  // Thread 0 holds what its neighbour's chain, from index 1, ends on: walked again here.
  std::vector<int> got(threads);
  CHECK(cudaMemcpy(got.data(), out, threads * sizeof(int), cudaMemcpyDeviceToHost));
  int j = 1;
  for (int s = 0; s < steps; ++s) j = host[j];
  std::printf("chase: %.1f us per launch (%s)\n", 1e3 * ms / launches,
              got[0] == j ? "ok" : "wrong");
  return got[0] == j ? 0 : 1;
}
#endif
