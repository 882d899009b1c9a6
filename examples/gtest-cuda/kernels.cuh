// Two small CUDA kernels with the faults a kernel engineer meets first: a load that forgets the
// tail guard (an out-of-bounds read whenever n is not a multiple of the block), and a row sum
// that leaves the last partial block out (a wrong answer on the same shapes).
#pragma once

// Launched with 256 threads per block.
__global__ void scale(float* out, const float* in, int n, float factor) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // The fault: the tile load is not guarded, so the last block reads past the end of `in`.
  tile[threadIdx.x] = in[i];
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x] * factor;
}

__global__ void rowsum(float* out, const float* in, int cols, int block) {
  int row = blockIdx.x;
  float acc = 0.0f;
  // The fault: only the full blocks of the row are summed; the partial one is left out.
  for (int start = 0; start + block <= cols; start += block)
    for (int c = start + threadIdx.x; c < start + block; c += blockDim.x)
      acc += in[row * cols + c];
  atomicAdd(&out[row], acc);
}
