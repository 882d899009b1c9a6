// y = a * x + y over n elements, one element per thread. Fault: the bound check uses <=, so the
// thread with i == n writes one element past the end of y.
#include <vector>
#include "common.cuh"

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef PLANT
  if (i <= n) y[i] = a * x[i] + y[i];
#else
  if (i < n) y[i] = a * x[i] + y[i];
#endif
}

int main() {
  const int n = 1000;
  std::vector<float> hx(n, 1.f), hy(n, 2.f);
  float *x, *y;
  CHECK(cudaMalloc(&x, (n + 64) * sizeof(float)));  // x has room; y does not
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 3.f, x, y);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (hy[i] != 5.f) { std::printf("FAIL y[%d] = %g\n", i, hy[i]); return 1; }
  std::printf("PASS saxpy n=%d\n", n);
  return 0;
}
