// A block-wide reduction sized by a template parameter. Fault: the block is launched with 2048
// threads, past the 1024 threads a block may have, so the launch is rejected.
#include <vector>
#include "common.cuh"

#ifdef PLANT
constexpr int THREADS = 2048;
#else
constexpr int THREADS = 1024;
#endif

__global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float partial[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}

int main() {
  const int n = 1 << 20;
  std::vector<float> host(n, 1.f);
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(out, 0, sizeof(float)));
  block_sum<<<132, THREADS>>>(in, out, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  float got = 0.f;
  CHECK(cudaMemcpy(&got, out, sizeof(float), cudaMemcpyDeviceToHost));
  if (got != float(n)) { std::printf("FAIL sum %g, expected %d\n", got, n); return 1; }
  std::printf("PASS block_sum n=%d\n", n);
  return 0;
}
