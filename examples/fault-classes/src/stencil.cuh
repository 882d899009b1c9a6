// The staging step of the 1-D stencil: each thread copies its element (and the halo) into the
// shared tile.
#pragma once

template <int B>
__device__ void stage_tile(const float* in, float* tile, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  tile[threadIdx.x + 1] = i < n ? in[i] : 0.f;
  if (threadIdx.x == 0) tile[0] = i > 0 ? in[i - 1] : 0.f;
  if (threadIdx.x == B - 1) tile[B + 1] = i + 1 < n ? in[i + 1] : 0.f;
}
