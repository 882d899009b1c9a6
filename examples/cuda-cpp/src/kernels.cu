// Kernels declared in kernels.cuh. See there for what each computes and for the planted faults.
#include "kernels.cuh"

#include <cstddef>

// ---------------------------------------------------------------------------------------------
// reduce_sum
// ---------------------------------------------------------------------------------------------

// out[blockIdx.x] = the sum of this block's grid-stride share of in[0..n).
__global__ void __launch_bounds__(kReduceThreads)
    block_sum_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float partial[kReduceThreads];
  const int tid = threadIdx.x;

  // Each thread first sums its own elements, so any n fits a grid of at most kReduceMaxBlocks.
  float acc = 0.0f;
  const size_t stride = size_t(gridDim.x) * kReduceThreads;
  for (size_t i = size_t(blockIdx.x) * kReduceThreads + tid; i < size_t(n); i += stride) {
    acc += in[i];
  }
  partial[tid] = acc;
  __syncthreads();

  // Tree reduction in shared memory: each step halves the number of live partial sums.
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (tid < half) partial[tid] += partial[tid + half];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}

cudaError_t reduce_sum(const float* in, float* partials, float* out, int n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  int blocks = (n + kReduceThreads - 1) / kReduceThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > kReduceMaxBlocks) blocks = kReduceMaxBlocks;
  // Pass 1: one partial sum per block. Pass 2: one block sums the partials.
  block_sum_kernel<<<blocks, kReduceThreads, 0, stream>>>(in, partials, n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  block_sum_kernel<<<1, kReduceThreads, 0, stream>>>(partials, out, blocks);
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------
// transpose
// ---------------------------------------------------------------------------------------------

// One block moves one kTransposeTile x kTransposeTile tile; each thread handles
// kTransposeTile / kTransposeRows elements of a column of the tile.
__global__ void __launch_bounds__(kTransposeTile* kTransposeRows)
    transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  // +1 column of padding: the transposed read below walks a column of the tile, and without
  // the padding all 32 lanes of a warp would hit the same shared-memory bank.
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];

  const int in_row0 = blockIdx.y * kTransposeTile;  // the tile's first row of `in`
  const int in_col0 = blockIdx.x * kTransposeTile;  // the tile's first column of `in`

  // Coalesced read: a warp reads 32 consecutive floats of one row of `in`.
  const int c = in_col0 + threadIdx.x;
  for (int j = threadIdx.y; j < kTransposeTile; j += kTransposeRows) {
    const int r = in_row0 + j;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[size_t(r) * cols + c];
  }

#if !PLANT_RACE
  // Every element read below was written by a thread of another warp.
  __syncthreads();
#endif

  // Coalesced write: a warp writes 32 consecutive floats of one row of `out`, i.e. one column
  // of the tile. out[oc][r] = in[r][oc].
  const int r = in_row0 + threadIdx.x;
  for (int j = threadIdx.y; j < kTransposeTile; j += kTransposeRows) {
    const int oc = in_col0 + j;
    if (oc < cols && r < rows) out[size_t(oc) * rows + r] = tile[threadIdx.x][j];
  }
}

cudaError_t transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaErrorInvalidValue;
  const dim3 block(kTransposeTile, kTransposeRows);
  const dim3 grid((cols + kTransposeTile - 1) / kTransposeTile,
                  (rows + kTransposeTile - 1) / kTransposeTile);
  transpose_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------
// stencil_1d
// ---------------------------------------------------------------------------------------------

__constant__ float c_weights[2 * kStencilRadius + 1];

cudaError_t stencil_set_weights(const float* weights) {
  return cudaMemcpyToSymbol(c_weights, weights, sizeof(c_weights));
}

__global__ void __launch_bounds__(kStencilThreads)
    stencil_1d_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  // s[0, R): the left halo; s[R, R + T): the block's elements; s[R + T, 2R + T): right halo.
  __shared__ float s[kStencilThreads + 2 * kStencilRadius];

  const int i = blockIdx.x * kStencilThreads + threadIdx.x;  // this thread's element
  const int l = threadIdx.x + kStencilRadius;                 // ... and its slot in s

  s[l] = i < n ? in[i] : 0.0f;
  if (threadIdx.x < kStencilRadius) {
    // The first R threads also load the halos: R elements either side of the block.
    const int left = i - kStencilRadius;
#if PLANT_HALO
    const int right = i + kStencilThreads + 1;  // planted: the right halo shifted by one
#else
    const int right = i + kStencilThreads;
#endif
    s[threadIdx.x] = left >= 0 && left < n ? in[left] : 0.0f;
    s[l + kStencilThreads] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();

#if PLANT_OOB
  if (i <= n) {  // planted: one thread too many at the tail
#else
  if (i < n) {
#endif
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j <= 2 * kStencilRadius; ++j) acc += c_weights[j] * s[threadIdx.x + j];
    out[i] = acc;
  }
}

cudaError_t stencil_1d(const float* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return cudaErrorInvalidValue;
  const int blocks = (n + kStencilThreads - 1) / kStencilThreads;
  stencil_1d_kernel<<<blocks, kStencilThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}
