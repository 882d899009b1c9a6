// Three small shared-memory kernels and their host launchers.
//
//   reduce_sum   sum of n floats: a block-wise tree reduction in shared memory, run twice
//                (per-block partial sums, then one block over the partials).
//   transpose    out[c][r] = in[r][c] through a padded 32x32 shared-memory tile, so that both
//                the global read and the global write are coalesced.
//   stencil_1d   out[i] = sum_{j=-R..R} w[j] * in[i + j], zero outside [0, n), with the block's
//                input and its halo staged in shared memory.
//
// Every launcher enqueues its kernel(s) on `stream` and returns cudaGetLastError(), so a bad
// launch configuration is reported where it happens. Pointers are device pointers.
//
// Planted faults (compile-time, off by default), for exercising debugging tools:
//   -DPLANT_RACE=1  transpose reads the tile without the __syncthreads() that separates the
//                   writes of other warps from the reads (a shared-memory race: racecheck).
//   -DPLANT_OOB=1   stencil_1d's store guard is `i <= n`, so the thread just past the end
//                   writes one float beyond the output allocation when n is not a multiple of
//                   the block size (an out-of-bounds global write: memcheck).
#pragma once

#include <cuda_runtime.h>

#ifndef PLANT_RACE
#define PLANT_RACE 0
#endif
#ifndef PLANT_OOB
#define PLANT_OOB 0
#endif

constexpr int kReduceThreads = 256;  // threads per block of reduce_sum (a power of two)
constexpr int kReduceMaxBlocks = 1024;  // partial sums of the first pass, at most
constexpr int kTransposeTile = 32;   // tile edge of transpose
constexpr int kTransposeRows = 8;    // block is kTransposeTile x kTransposeRows threads
constexpr int kStencilRadius = 3;    // R: the stencil has 2R+1 taps
constexpr int kStencilThreads = 256;

// Sums in[0..n) into *out (one float). `partials` is scratch of kReduceMaxBlocks floats.
cudaError_t reduce_sum(const float* in, float* partials, float* out, int n, cudaStream_t stream);

// in is rows x cols, row-major; out is cols x rows, row-major.
cudaError_t transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream);

// Sets the 2R+1 stencil weights (host array), kept in constant memory.
cudaError_t stencil_set_weights(const float* weights);

// out[i] = sum_j w[j] * in[i + j - R] for i in [0, n), with in[x] = 0 outside [0, n).
cudaError_t stencil_1d(const float* in, float* out, int n, cudaStream_t stream);
