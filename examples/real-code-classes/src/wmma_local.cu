// One 16x16x16 tensor-core product per warp. Fault: each thread stages one 16-element row of
// the A operand in a thread-local array and hands it to wmma::load_matrix_sync as if it were
// the whole 16x16 tile (leading dimension 16), in shared or global memory. Built with -G (a
// debug build) the compiler does not warn, and memcheck reports an invalid __local__ read
// inside the WMMA header; a release build gets the compiler's warning and a trap.
#include <mma.h>
#include <cuda_fp16.h>
#include <vector>
#include "common.cuh"
using namespace nvcuda;

__global__ void tile_product(const half* a, const half* b, float* c) {
#ifdef PLANT
  half a_local[16];
  for (int i = 0; i < 16; ++i) a_local[i] = a[(threadIdx.x % 16) * 16 + i];
  const half* a_src = a_local;
#else
  __shared__ half a_shared[16 * 16];
  for (int i = threadIdx.x; i < 16 * 16; i += 32) a_shared[i] = a[i];
  __syncwarp();
  const half* a_src = a_shared;
#endif
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, a_src, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

int main() {
  std::vector<half> host(256, __float2half(1.f));
  half *a, *b;
  float* c;
  CHECK(cudaMalloc(&a, 256 * sizeof(half)));
  CHECK(cudaMalloc(&b, 256 * sizeof(half)));
  CHECK(cudaMalloc(&c, 256 * sizeof(float)));
  CHECK(cudaMemcpy(a, host.data(), 256 * sizeof(half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, host.data(), 256 * sizeof(half), cudaMemcpyHostToDevice));
  tile_product<<<1, 32>>>(a, b, c);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(256);
  CHECK(cudaMemcpy(got.data(), c, 256 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i)
    if (got[i] != 16.f) { std::printf("FAIL element %d: %g\n", i, got[i]); return 1; }
  std::printf("PASS tile_product\n");
  return 0;
}
