// Two small CUDA kernels with the faults a kernel engineer meets first: a load that forgets the
// tail guard (an out-of-bounds read whenever n is not a multiple of the block), and a row sum
// that leaves the last partial block out (a wrong answer on the same shapes).
#pragma once

__global__ void scale(float* out, const float* in, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  // The fault: the load is not guarded, so the last block reads past the end of `in`.
  float x = in[i];
  if (i < n) out[i] = x * factor;
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
