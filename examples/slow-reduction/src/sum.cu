// Sums 2^26 floats (256 MiB) three ways, one per build, each a step a kernel engineer knows:
//   -DSTEP_tree1  one element per thread, then a shared-memory tree with a barrier per level,
//                 each block's sum written to its own slot (the host adds the slots);
//   -DSTEP_tree2  two elements per thread added on load, then the same tree;
//   -DSTEP_shuffle2  two elements per thread added on load, warp shuffles, one barrier to
//                 combine the block's warps;
//   -DSTEP_many16 sixteen elements per thread, then the same shuffles and barrier;
//   (no define)   a grid-stride loop of float4 loads summed in registers, warp shuffles, and
//                 one atomic per warp: the fast version.
// Every element is 0.25, so every partial sum is exact and the total is exactly 2^24.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      return 2;                                                                      \
    }                                                                                \
  } while (0)

constexpr int BLOCK = 256;

#if defined(STEP_tree1) || defined(STEP_tree2)
#if defined(STEP_tree2)
constexpr int PER_THREAD = 2;
#else
constexpr int PER_THREAD = 1;
#endif
__global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float partial[BLOCK];
  int first = blockIdx.x * BLOCK * PER_THREAD + threadIdx.x;
  float v = 0.f;
  for (int k = 0; k < PER_THREAD; ++k) {
    int i = first + k * BLOCK;
    if (i < n) v += in[i];
  }
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int half = BLOCK / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
#elif defined(STEP_shuffle2) || defined(STEP_many16)
#if defined(STEP_many16)
constexpr int PER_THREAD = 16;
#else
constexpr int PER_THREAD = 2;
#endif
__global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float warp_sums[BLOCK / 32];
  int first = blockIdx.x * BLOCK * PER_THREAD + threadIdx.x;
  float v = 0.f;
#pragma unroll
  for (int k = 0; k < PER_THREAD; ++k) {
    int i = first + k * BLOCK;
    if (i < n) v += in[i];
  }
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}
#endif
#if defined(STEP_tree1) || defined(STEP_tree2) || defined(STEP_shuffle2) || defined(STEP_many16)
static int grid_for(int n) { return (n + BLOCK * PER_THREAD - 1) / (BLOCK * PER_THREAD); }
constexpr bool SLOTS = true;
#else
__global__ void block_sum(const float* in, float* out, int n) {
  float v = 0.f;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const int stride = gridDim.x * BLOCK;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n / 4; i += stride) {
    float4 q = in4[i];
    v += (q.x + q.y) + (q.z + q.w);
  }
  for (int i = (n / 4) * 4 + blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) v += in[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}
static int grid_for(int) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  return sms * 8;
}
constexpr bool SLOTS = false;
#endif

int main() {
  const int n = 1 << 26;
  std::vector<float> host(n, 0.25f);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  const int grid = grid_for(n);
  const int slots = SLOTS ? grid : 1;
  CHECK(cudaMalloc(&out, slots * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int launches = 20;
  std::vector<float> got(slots);
  float ms = 0.f;
  for (int r = 0; r <= launches; ++r) {
    if (!SLOTS || r == 0) CHECK(cudaMemset(out, 0, slots * sizeof(float)));
    if (r == 1) CHECK(cudaEventRecord(start));
    block_sum<<<grid, BLOCK>>>(in, out, n);
    CHECK(cudaGetLastError());
    if (r == 0) CHECK(cudaMemcpy(got.data(), out, slots * sizeof(float), cudaMemcpyDeviceToHost));
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  const double us = 1e3 * ms / launches;
  std::printf("block_sum: %.1f us per launch, %.1f GB/s\n", us, n * sizeof(float) / us / 1e3);
  double sum = 0.0;
  for (float v : got) sum += v;
  const double want = 0.25 * n;
  if (sum != want) {
    std::printf("FAIL: sum %.1f, expected %.1f\n", sum, want);
    return 1;
  }
  std::printf("PASS: sum %.1f\n", sum);
  return 0;
}
