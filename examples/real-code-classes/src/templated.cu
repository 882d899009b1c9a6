// A row-blur kernel templated on its tile width; the program launches the instantiation
// -DTILE_WIDTH picks (128 unless set), the configs build two. Fault: the right neighbour of the
// last column is read without a guard, in the template's one body, so every instantiation reads
// one element past each row's end (past the buffer on the last row).
#include <vector>
#include "common.cuh"

template <int TILE>
__global__ void blur_rows(const float* in, float* out, int rows, int cols) {
  int row = blockIdx.y;
  for (int c = blockIdx.x * TILE + threadIdx.x; c < cols && c < (blockIdx.x + 1) * TILE;
       c += blockDim.x) {
    float left = c > 0 ? in[row * cols + c - 1] : 0.f;
#ifdef PLANT
    float right = in[row * cols + c + 1];
#else
    float right = c + 1 < cols ? in[row * cols + c + 1] : 0.f;
#endif
    out[row * cols + c] = (left + in[row * cols + c] + right) / 3.f;
  }
}

template <int TILE>
void launch(const float* in, float* out, int rows, int cols) {
  dim3 grid((cols + TILE - 1) / TILE, rows);
  blur_rows<TILE><<<grid, 128>>>(in, out, rows, cols);
  CHECK(cudaGetLastError());
}

int main() {
  const int rows = 64, cols = 1000;
  std::vector<float> host((size_t)rows * cols, 3.f);
  float *in, *out;
  // The input is allocated last: nothing lies past its end.
  CHECK(cudaMalloc(&out, host.size() * sizeof(float)));
  CHECK(cudaMalloc(&in, host.size() * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
#ifndef TILE_WIDTH
#define TILE_WIDTH 128
#endif
  launch<TILE_WIDTH>(in, out, rows, cols);
  CHECK(cudaDeviceSynchronize());
  std::printf("PASS blur_rows\n");
  return 0;
}
