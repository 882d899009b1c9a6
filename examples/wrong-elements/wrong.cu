// The project's own program for where a wrong output lies against the launch that wrote it.
// Two kernels, each with a bug that leaves part of its output unwritten, checked against a CPU
// reference with helpers/exhibit_compare.h (which records the pattern of the wrong elements):
//
//   wrong tail   scale: one thread per element, but a grid of n / 256 blocks, rounded down.
//   wrong warp   rowwise: one block of 64 threads per row, but each thread's column is taken
//                modulo a warp, so the second warp writes the first warp's columns again.
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "exhibit_compare.h"

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e = (call);                                                      \
    if (e != cudaSuccess) {                                                      \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e),     \
                   __FILE__, __LINE__);                                          \
      return 2;                                                                  \
    }                                                                            \
  } while (0)

__global__ void scale(const float* x, float* y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

__global__ void rowwise(const float* x, float* y, int cols) {
  int row = blockIdx.x;
  int col = threadIdx.x % 32;  // should be threadIdx.x: warp 1 rewrites warp 0's columns
  y[row * cols + col] = 2.0f * x[row * cols + col] + 1.0f;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "tail";
  const bool tail = std::strcmp(mode, "tail") == 0;
  const int rows = tail ? 1 : 16;
  const int cols = tail ? 1000 : 64;
  const int n = rows * cols;
  std::vector<float> x(n), want(n), got(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f + 0.001f * static_cast<float>(i % 97);
    want[i] = tail ? 3.0f * x[i] : 2.0f * x[i] + 1.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dy, 0, n * sizeof(float)));
  if (tail) {
    scale<<<n / 256, 256>>>(dx, dy, n, 3.0f);  // should be (n + 255) / 256 blocks
  } else {
    rowwise<<<rows, cols>>>(dx, dy, cols);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  bool ok = exhibit::compare(tail ? "scale" : "rowwise", got.data(), want.data(), rows, cols,
                             1e-5, 1e-5);
  std::printf("%s: %s\n", mode, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
