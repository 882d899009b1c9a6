// Fills the rows of a 36,864 x 65,536 byte image (2.25 GiB: more than 2^31 elements), one
// block per row. Fault: the row's offset `row * cols` is an `int` product, which passes 2^31 at
// row 32,768 and wraps negative, so the blocks from there on write up to 2 GiB before the
// image's start. NAME_clean computes the offset in 64 bits.
#include <cstdint>
#include "common.cuh"

__global__ void fill_rows(unsigned char* image, int cols, unsigned char value) {
  int row = blockIdx.x;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
#ifdef PLANT
    image[row * cols + c] = value;
#else
    image[static_cast<int64_t>(row) * cols + c] = value;
#endif
  }
}

int main() {
  const int rows = 36864, cols = 65536;
  const size_t bytes = static_cast<size_t>(rows) * cols;
  unsigned char* image;
  CHECK(cudaMalloc(&image, bytes));
  std::printf("filling %d rows of %d bytes (%zu bytes)\n", rows, cols, bytes);
  fill_rows<<<rows, 256>>>(image, cols, 7);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  unsigned char last = 0;
  CHECK(cudaMemcpy(&last, image + bytes - 1, 1, cudaMemcpyDeviceToHost));
  if (last != 7) { std::printf("FAIL last byte: %d\n", last); return 1; }
  std::printf("done\n");
  return 0;
}
