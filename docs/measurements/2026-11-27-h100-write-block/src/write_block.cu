// Three shared arrays rewritten by neighbouring statements in a loop, each read by other threads
// before and after with no barrier (-DPLANT): one block of writes, one missing pair of barriers.
// A fourth array, rewritten further down after other reads, races on its own.
#include <cstdio>
#include <cuda_runtime.h>

constexpr int T = 256;

__global__ void smooth(const float* in, float* out, int steps) {
  __shared__ float a[T], b[T], c[T], d[T];
  int t = threadIdx.x;
  float x = in[blockIdx.x * T + t];
  a[t] = x;
  b[t] = x;
  c[t] = x;
  d[t] = x;
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    float ua = a[(t + 1) % T];
    float ub = b[(t + 1) % T];
    float uc = c[(t + 1) % T];
#ifndef PLANT
    __syncthreads();
#endif
    a[t] = 0.5f * (ua + ub);
    b[t] = 0.5f * (ub + uc);
    c[t] = 0.5f * (uc + ua);
#ifndef PLANT
    __syncthreads();
#endif
    x += a[(t + 7) % T] + b[(t + 7) % T] + c[(t + 7) % T];
    float ud = d[(t + 3) % T];
#ifndef PLANT
    __syncthreads();
#endif
    d[t] = ud + 0.25f * x;
#ifndef PLANT
    __syncthreads();
#endif
  }
  out[blockIdx.x * T + t] = x + d[(t + 5) % T];
}

int main() {
  const int blocks = 8, n = blocks * T;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(in, 0, n * sizeof(float));
  smooth<<<blocks, T>>>(in, out, 4);
  cudaError_t e = cudaDeviceSynchronize();
  printf("smooth: %s\n", cudaGetErrorString(e));
  cudaFree(in);
  cudaFree(out);
  return e == cudaSuccess ? 0 : 1;
}
