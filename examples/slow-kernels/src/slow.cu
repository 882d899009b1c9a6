// Small kernels that are slow for one reason each, selected with -DSLOW_<name>; the default
// (no SLOW) is the fast version of every kernel. Each runs on a problem large enough to fill an
// H100 and checks its result.
//
//   bank       transpose through a 32x32 shared tile read down its columns (32-way conflicts)
//   uncoalesced transpose that writes a column per warp (one 4-byte store per 32-byte sector)
//   local      a per-thread array indexed at run time (local memory)
//   few_blocks a reduction launched with 4 blocks on a 132-SM GPU
//   smem_occ   a kernel holding 100 KiB of shared memory per block (2 blocks per SM)
//   regs       a chain of dependent loads with 160 accumulators live per thread: registers
//              allow one block per SM, too few warps to hide the loads' latency
//   no_tensor  a half-precision matrix product with scalar FMAs, no tensor-core instructions
//   small_blocks a kernel launched with blocks of 32 threads (32 blocks per SM: half the warps)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_fp16.h>
#include <mma.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: CUDA error: %s\n", __FILE__, __LINE__,              \
                   cudaGetErrorString(err_));                                          \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int N = 4096;  // matrices are N x N floats

// Transpose through a shared tile. Fast: padded tile, coalesced reads and writes.
__global__ void transpose(const float* in, float* out) {
#if defined(SLOW_bank)
  __shared__ float tile[32][32];
#else
  __shared__ float tile[32][33];
#endif
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
#if defined(SLOW_uncoalesced)
  // Straight from global memory: each warp writes down a column of the output, N floats apart.
  for (int j = 0; j < 32; j += 8) out[(size_t)x * N + y + j] = in[(size_t)(y + j) * N + x];
  return;
#endif
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * N + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(size_t)(y + j) * N + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Sum of 16 values per thread from a table it indexes at run time.
__global__ void lookup_sum(const int* idx, const float* table, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // idx is laid out index-major: idx[k * n + i], so a warp's reads of it are coalesced.
#if defined(SLOW_local)
  float local[64];
  for (int k = 0; k < 64; ++k) local[k] = table[k] * (i & 7);
  float s = 0.f;
  for (int k = 0; k < 16; ++k) s += local[idx[(size_t)k * n + i] & 63];
#else
  float s = 0.f;
  for (int k = 0; k < 16; ++k) s += table[idx[(size_t)k * n + i] & 63] * (i & 7);
#endif
  out[i] = s;
}

// Grid-stride sum into one value.
__global__ void reduce(const float* in, float* out, int n) {
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, v);
}

// Scales through a per-block staging buffer in dynamic shared memory: 1 KiB, or, slow, 100 KiB
// (2 blocks of 256 threads per SM: 16 of 64 warps).
#if defined(SLOW_smem_occ)
constexpr size_t STAGE_BYTES = 100 * 1024;
#else
constexpr size_t STAGE_BYTES = 1024;
#endif
__global__ void staged_scale(const float* in, float* out, int n) {
  extern __shared__ float stage[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = 2.f * stage[threadIdx.x];
}

// Follows a chain of dependent loads per thread (each address waits for the value before it),
// folding the values into P accumulators that stay live across the chain. Fast: 4 of them.
// Slow: 160 (over 160 registers per thread), so the register file holds one block of 256
// threads per SM: 8 warps to hide the latency of loads that wait on each other.
__global__ void poly(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if defined(SLOW_regs)
  constexpr int P = 160;
#else
  constexpr int P = 4;
#endif
  float acc[P];
  float x = in[i];
#pragma unroll
  for (int p = 0; p < P; ++p) acc[p] = x * (1.f + p);
  const int stride = gridDim.x * blockDim.x;
  int j = i;
  for (int k = 0; k < 640 / P; ++k) {
#pragma unroll
    for (int p = 0; p < P; ++p) {
      float y = in[j];
      j += stride + (y < 0.f);  // in[] holds no negative value: the next address waits on y
      if (j >= n) j -= n;
      acc[p] = acc[p] * 0.5f + y;
    }
  }
  float s = 0.f;
#pragma unroll
  for (int p = 0; p < P; ++p) s += acc[p];
  out[i] = s;
}

// C = A * B, half inputs, float accumulate. Slow: one output per thread on the FMA units.
// Fast: one 16x16 tile of C per warp on tensor cores (WMMA).
__global__ void matmul(const __half* a, const __half* b, float* c, int n) {
#if defined(SLOW_no_tensor)
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += __half2float(a[(size_t)row * n + k]) * __half2float(b[(size_t)k * n + col]);
  c[(size_t)row * n + col] = acc;
#else
  using namespace nvcuda;
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, tiles = n / 16;
  int tr = warp / tiles, tc = warp % tiles;
  if (tr >= tiles) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  for (int k = 0; k < n; k += 16) {
    wmma::load_matrix_sync(fa, a + (size_t)tr * 16 * n + k, n);
    wmma::load_matrix_sync(fb, b + (size_t)k * n + tc * 16, n);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + (size_t)tr * 16 * n + tc * 16, fc, n, wmma::mem_row_major);
#endif
}

// y = 2 x + 1, one element per thread, launched with blocks of BLOCK threads.
__global__ void axpb(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.f * in[i] + 1.f;
}

int main() {
  const size_t nn = (size_t)N * N;
  std::vector<float> host(nn);
  for (size_t i = 0; i < nn; ++i) host[i] = float(i % 1000);
  float *in, *out;
  CHECK(cudaMalloc(&in, nn * sizeof(float)));
  CHECK(cudaMalloc(&out, nn * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
  int bad = 0;

  transpose<<<dim3(N / 32, N / 32), dim3(32, 8)>>>(in, out);
  CHECK(cudaGetLastError());
  std::vector<float> got(nn);
  CHECK(cudaMemcpy(got.data(), out, nn * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < N; r += 97)
    for (int c = 0; c < N; c += 89)
      if (got[(size_t)r * N + c] != host[(size_t)c * N + r]) ++bad;

  const int m = 1 << 22;
  std::vector<int> idx((size_t)m * 16);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int((i * 2654435761u) >> 7);
  int* d_idx;
  CHECK(cudaMalloc(&d_idx, idx.size() * sizeof(int)));
  CHECK(cudaMemcpy(d_idx, idx.data(), idx.size() * sizeof(int), cudaMemcpyHostToDevice));
  lookup_sum<<<m / 256, 256>>>(d_idx, in, out, m);
  CHECK(cudaGetLastError());

  CHECK(cudaMemset(out, 0, sizeof(float)));
#if defined(SLOW_few_blocks)
  reduce<<<4, 256>>>(in, out, (int)nn);
#else
  reduce<<<132 * 8, 256>>>(in, out, (int)nn);
#endif
  CHECK(cudaGetLastError());

  poly<<<132 * 4, 256>>>(in, out, (int)nn);
  CHECK(cudaGetLastError());

  const int mm = 1024;
  std::vector<__half> ha((size_t)mm * mm, __float2half(1.f));
  __half *a, *b;
  CHECK(cudaMalloc(&a, ha.size() * sizeof(__half)));
  CHECK(cudaMalloc(&b, ha.size() * sizeof(__half)));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * sizeof(__half), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, ha.data(), ha.size() * sizeof(__half), cudaMemcpyHostToDevice));
#if defined(SLOW_no_tensor)
  matmul<<<dim3(mm / 16, mm / 16), dim3(16, 16)>>>(a, b, out, mm);
#else
  matmul<<<(mm / 16) * (mm / 16) / 8, 256>>>(a, b, out, mm);
#endif
  CHECK(cudaGetLastError());
  float c0 = 0.f;
  CHECK(cudaMemcpy(&c0, out, sizeof(float), cudaMemcpyDeviceToHost));
  if (c0 != float(mm)) ++bad;
#if defined(SLOW_small_blocks)
  constexpr int BLOCK = 32;
#else
  constexpr int BLOCK = 256;
#endif
  axpb<<<(int)(nn / BLOCK), BLOCK>>>(in, out, (int)nn);
  CHECK(cudaGetLastError());
  CHECK(cudaFuncSetAttribute(staged_scale, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)STAGE_BYTES));
  staged_scale<<<(int)(nn / 256), 256, STAGE_BYTES>>>(in, out, (int)nn);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("%s: %d mismatches\n", bad ? "FAIL" : "PASS", bad);
  return bad ? 1 : 0;
}
