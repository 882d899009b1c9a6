// Exhibit's driver for the corpus (not upstream code): Bonsai's direct-summation gravity kernel
// (runtime/CUDAkernels/dev_direct_gravity.cu, dev_direct_gravity) at the parent of faa46de
// ("Fix direct gravity kernel"), launched as octree::direct_gravity launches it
// (runtime/src/gpu_iterate.cpp:1161-1176: the same array for i- and j-bodies, n_i = n_j = n,
// 256 threads per block, 256 * ceil(n / 256) threads in all, 256 float4 of dynamic shared
// memory), on n = 1000 bodies (not a multiple of 256, as in issue #32). Each body's
// acceleration is compared with a direct O(n^2) sum on the CPU in double with the kernel's
// softening (bodyBodyInteraction: a_i += m_j r_ij / (|r_ij|^2 + eps2)^(3/2), the self term 0).
// Exits 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

// bonsai.h defines KERNEL_DECLARE and then includes my_cuda_rt.h, Bonsai's launch wrapper, which
// needs the rest of the code base (and cudaConfigureCall / cudaLaunch, gone from CUDA 12). Take
// bonsai.h's default KERNEL_DECLARE (its lines 14-15) and skip the rest of the header.
#define BONSAI_H
#define KERNEL_NAME(funcname) funcname
#define KERNEL_DECLARE(funcname) extern "C" __global__ void KERNEL_NAME(funcname)
#include "runtime/CUDAkernels/dev_direct_gravity.cu"

#define CHECK_CUDA(call)                                                            \
  do {                                                                              \
    cudaError_t err_ = (call);                                                      \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   cudaGetErrorString(err_));                                       \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

int main() {
  const int n = 1000;           // bodies
  const float eps2 = 0.01f;     // softening squared

  // Positions uniform in [-1, 1)^3, equal masses 1/n in .w (Bonsai's float4 body layout).
  std::vector<float4> pos(n);
  unsigned s = 12345u;
  auto uni = [&s]() {
    s = s * 1664525u + 1013904223u;
    return -1.0f + 2.0f * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  };
  for (int i = 0; i < n; ++i) pos[i] = make_float4(uni(), uni(), uni(), 1.0f / n);

  float4 *d_pos, *d_acc;
  CHECK_CUDA(cudaMalloc(&d_pos, n * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&d_acc, n * sizeof(float4)));
  CHECK_CUDA(cudaMemcpy(d_pos, pos.data(), n * sizeof(float4), cudaMemcpyHostToDevice));

  // octree::direct_gravity (gpu_iterate.cpp:1163-1176).
  const int threads = 256;
  const dim3 block(threads, 1, 1);
  const dim3 grid((256 * ((n + 255) / 256)) / threads, 1, 1);
  const size_t shmem = 256 * sizeof(float4);
  std::printf("dev_direct_gravity: n = %d bodies, grid (%u, %u, %u), block (%u, %u, %u), "
              "%zu bytes of shared memory\n", n, grid.x, grid.y, grid.z, block.x, block.y,
              block.z, shmem);
  dev_direct_gravity<<<grid, block, shmem>>>(d_acc, d_pos, d_pos, n, n, eps2);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float4> acc(n);
  CHECK_CUDA(cudaMemcpy(acc.data(), d_acc, n * sizeof(float4), cudaMemcpyDeviceToHost));

  // Reference: the direct sum over all n bodies.
  std::vector<double> ref(3 * n, 0.0);
  for (int i = 0; i < n; ++i) {
    double ax = 0, ay = 0, az = 0;
    for (int j = 0; j < n; ++j) {
      const double rx = pos[j].x - pos[i].x, ry = pos[j].y - pos[i].y, rz = pos[j].z - pos[i].z;
      const double d2 = rx * rx + ry * ry + rz * rz + eps2;
      const double inv = 1.0 / std::sqrt(d2);
      const double f = pos[j].w * inv * inv * inv;
      ax += rx * f;
      ay += ry * f;
      az += rz * f;
    }
    ref[3 * i] = ax;
    ref[3 * i + 1] = ay;
    ref[3 * i + 2] = az;
  }

  const double atol = 1e-4, rtol = 1e-3;
  const char comp[3] = {'x', 'y', 'z'};
  int bad = 0, bad_bodies = 0;
  for (int i = 0; i < n; ++i) {
    const float got[3] = {acc[i].x, acc[i].y, acc[i].z};
    bool body_bad = false;
    for (int c = 0; c < 3; ++c) {
      const double e = ref[3 * i + c];
      if (!(std::fabs(got[c] - e) <= atol + rtol * std::fabs(e))) {
        if (bad < 10)
          std::printf("accel[%d].%c = %g, expected %g\n", i, comp[c], got[c], e);
        ++bad;
        body_bad = true;
      }
    }
    bad_bodies += body_bad;
  }
  CHECK_CUDA(cudaFree(d_pos));
  CHECK_CUDA(cudaFree(d_acc));
  if (bad) {
    std::printf("%d of %d elements differ (%d of %d bodies)\n", bad, 3 * n, bad_bodies, n);
    std::printf("FAILED: dev_direct_gravity does not match the direct sum\n");
    return 1;
  }
  std::printf("OK: dev_direct_gravity matches the direct sum for all %d bodies\n", n);
  return 0;
}
