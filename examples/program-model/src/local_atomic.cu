// A 16-bin histogram of 2^20 keys, one partial histogram per block merged into the global one.
// Fault: the partial histogram is declared per thread (a local array, indexed by the key so it
// stays in local memory) but still filled with atomicAdd, as if it were shared by the block.
// nvcc warns "Cannot do atomic on local memory" and plants a trap (BPT.TRAP): the launch fails.
// NAME_clean keeps the block's partial histogram in shared memory, where the atomics belong.
#include <vector>
#include "common.cuh"

constexpr int BINS = 16;
constexpr int THREADS = 256;

__global__ void histogram(const unsigned* keys, int n, unsigned* counts) {
#ifdef PLANT
  unsigned bins[BINS] = {};
#else
  __shared__ unsigned bins[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) bins[b] = 0;
  __syncthreads();
#endif
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[keys[i] % BINS], 1u);
#ifdef PLANT
  for (int b = 0; b < BINS; ++b)
    if (bins[b] != 0) atomicAdd(&counts[b], bins[b]);
#else
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&counts[b], bins[b]);
#endif
}

int main() {
  const int n = 1 << 20, blocks = 128;
  std::vector<unsigned> keys(n);
  std::vector<float> want(BINS, 0.f), got(BINS);
  for (int i = 0; i < n; ++i) {
    keys[i] = (unsigned(i) * 2654435761u) >> 7;
    want[keys[i] % BINS] += 1.f;
  }
  unsigned *d_keys, *d_counts;
  CHECK(cudaMalloc(&d_keys, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_counts, BINS * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_counts, 0, BINS * sizeof(unsigned)));
  histogram<<<blocks, THREADS>>>(d_keys, n, d_counts);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> counts(BINS);
  CHECK(cudaMemcpy(counts.data(), d_counts, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int b = 0; b < BINS; ++b) got[b] = float(counts[b]);
  bool ok = check_close("histogram", got.data(), want.data(), BINS, 0.5);
  CHECK(cudaFree(d_keys));
  CHECK(cudaFree(d_counts));
  return ok ? 0 : 1;
}
