// Eight independent 16x16x16 tensor-core products (one warp each), then a scale-and-bias
// epilogue. The product kernel is a template over how the A tile is staged, and a host table
// holds every variant for a run-time choice: variant 0 stages A in shared memory; variants 1-4,
// an unfinished experiment with register staging, hand wmma::load_matrix_sync a thread-local
// array. nvcc warns "cannot perform wmma load or store on local memory" for those and plants a
// trap (BPT.TRAP) in their SASS. The program only ever selects variant 0 and the scale epilogue
// (the clamp epilogue is never launched either), so every launch is correct and the check
// passes: the traps are latent, in kernels that never run.
#include <mma.h>
#include <cuda_fp16.h>
#include <vector>
#include "common.cuh"
using namespace nvcuda;

constexpr int TILE = 16;
constexpr int TILES = 8;
constexpr int ELEMS = TILES * TILE * TILE;

// c[t] = a[t] (row-major) x b[t] (column-major) for tile t = blockIdx.x; one warp per block.
template <int V>
__global__ void tile_kernel(const half* a, const half* b, float* c) {
  const half* a_tile = a + blockIdx.x * TILE * TILE;
  const half* b_tile = b + blockIdx.x * TILE * TILE;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  if constexpr (V == 0) {
    __shared__ __align__(32) half a_shared[TILE * TILE];
    for (int i = threadIdx.x; i < TILE * TILE; i += 32) a_shared[i] = a_tile[i];
    __syncwarp();
    wmma::load_matrix_sync(fa, a_shared, TILE);
  } else {
    // Register staging: each lane keeps V rows of A, starting at its own row.
    half a_rows[V * TILE];
    int row0 = (threadIdx.x * V) % TILE;
    for (int i = 0; i < V * TILE; ++i) a_rows[i] = a_tile[((row0 + i / TILE) % TILE) * TILE + i % TILE];
    wmma::load_matrix_sync(fa, a_rows, TILE);
  }
  wmma::load_matrix_sync(fb, b_tile, TILE);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c + blockIdx.x * TILE * TILE, fc, TILE, wmma::mem_row_major);
}

// Epilogues over the n products' elements.
__global__ void scale_bias(float* c, int n, float scale, float bias) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = c[i] * scale + bias;
}

__global__ void clamp_negative(float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = fmaxf(c[i], 0.f);
}

using TileKernel = void (*)(const half*, const half*, float*);
// Staging variants by index: 0 = shared memory; 1-4 = register staging (not ready).
static const TileKernel kTileVariants[] = {tile_kernel<0>, tile_kernel<1>, tile_kernel<2>,
                                           tile_kernel<3>, tile_kernel<4>};

int main() {
  const int variant = 0;
  const float scale = 0.5f, bias = 1.f;
  // Small integers, so that every product and sum is exact in half and float.
  std::vector<half> ha(ELEMS), hb(ELEMS);
  std::vector<float> fa(ELEMS), fb(ELEMS), want(ELEMS), got(ELEMS);
  for (int i = 0; i < ELEMS; ++i) {
    fa[i] = float((i * 3 + i / 7) % 5 - 2);
    fb[i] = float((i * 5 + 1) % 7 - 3);
    ha[i] = __float2half(fa[i]);
    hb[i] = __float2half(fb[i]);
  }
  for (int t = 0; t < TILES; ++t)
    for (int r = 0; r < TILE; ++r)
      for (int col = 0; col < TILE; ++col) {
        float s = 0.f;
        for (int k = 0; k < TILE; ++k)
          s += fa[t * 256 + r * TILE + k] * fb[t * 256 + col * TILE + k];
        want[t * 256 + r * TILE + col] = s * scale + bias;
      }

  half *a, *b;
  float* c;
  CHECK(cudaMalloc(&a, ELEMS * sizeof(half)));
  CHECK(cudaMalloc(&b, ELEMS * sizeof(half)));
  CHECK(cudaMalloc(&c, ELEMS * sizeof(float)));
  CHECK(cudaMemcpy(a, ha.data(), ELEMS * sizeof(half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), ELEMS * sizeof(half), cudaMemcpyHostToDevice));
  kTileVariants[variant]<<<TILES, 32>>>(a, b, c);
  CHECK(cudaGetLastError());
  scale_bias<<<(ELEMS + 255) / 256, 256>>>(c, ELEMS, scale, bias);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), c, ELEMS * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = check_close("tile products (variant 0) + scale_bias", got.data(), want.data(), ELEMS, 1e-3);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return ok ? 0 : 1;
}
