// C = A * B in fp32 (N = 4096), three ways, selected with -DVARIANT_<name>:
//   l1_reuse  one output per thread, threadIdx.x along a row of C: coalesced, but every
//             multiply-add loads both operands through L1, with no reuse from shared memory
//   mio       32x32 tiles of A and B staged in shared memory, one output per thread: two
//             shared-memory loads per FMA, so warps queue on the shared-memory pipe (MIO)
//   tiled     the same tiles, 8x8 outputs per thread from registers (the fast control)
// The program checks a sample of C against a CPU dot product and prints the kernel's time.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: CUDA error: %s\n", __FILE__, __LINE__,           \
                   cudaGetErrorString(e_));                                         \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

constexpr int N = 4096;

#if defined(VARIANT_l1_reuse)
__global__ void matmul(const float* a, const float* b, float* c) {
  int row = blockIdx.y * 32 + threadIdx.y;
  int col = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < N; ++k) acc += a[row * N + k] * b[k * N + col];
  c[row * N + col] = acc;
}
#elif defined(VARIANT_mio)
__global__ void matmul(const float* a, const float* b, float* c) {
  __shared__ float as[32][32];
  __shared__ float bs[32][32];
  int row = blockIdx.y * 32 + threadIdx.y;
  int col = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < N; t += 32) {
    as[threadIdx.y][threadIdx.x] = a[row * N + t + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * N + col];
    __syncthreads();
    for (int k = 0; k < 32; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  c[row * N + col] = acc;
}
#else
// 128x128 tile of C per block of 256 threads, 8x8 outputs per thread.
__global__ void matmul(const float* a, const float* b, float* c) {
  __shared__ float as[8][128];
  __shared__ float bs[8][128];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
  float acc[8][8] = {};
  for (int t = 0; t < N; t += 8) {
    for (int i = threadIdx.x; i < 8 * 128; i += 256) {
      int r = i / 8, k = i % 8;
      as[k][r] = a[(row0 + r) * N + t + k];
      int kk = i / 128, cc = i % 128;
      bs[kk][cc] = b[(t + kk) * N + col0 + cc];
    }
    __syncthreads();
    for (int k = 0; k < 8; ++k) {
      float ra[8], rb[8];
      for (int i = 0; i < 8; ++i) ra[i] = as[k][ty * 8 + i];
      for (int j = 0; j < 8; ++j) rb[j] = bs[k][tx * 8 + j];
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) c[(row0 + ty * 8 + i) * N + col0 + tx * 8 + j] = acc[i][j];
}
#endif

int main() {
  std::vector<float> ha((size_t)N * N), hb((size_t)N * N);
  srand(1);
  for (auto& x : ha) x = (rand() % 17 - 8) / 8.f;
  for (auto& x : hb) x = (rand() % 13 - 6) / 8.f;
  float *a, *b, *c;
  size_t bytes = (size_t)N * N * sizeof(float);
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&c, bytes));
  CHECK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
#if defined(VARIANT_l1_reuse) || defined(VARIANT_mio)
  dim3 grid(N / 32, N / 32), block(32, 32);
#else
  dim3 grid(N / 128, N / 128), block(256);
#endif
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  matmul<<<grid, block>>>(a, b, c);  // warm-up
  CHECK(cudaEventRecord(start));
  matmul<<<grid, block>>>(a, b, c);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::vector<float> hc((size_t)N * N);
  CHECK(cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDeviceToHost));
  for (int s = 0; s < 64; ++s) {
    int i = (s * 977) % N, j = (s * 433) % N;
    double ref = 0;
    for (int k = 0; k < N; ++k) ref += (double)ha[(size_t)i * N + k] * hb[(size_t)k * N + j];
    if (std::abs(ref - hc[(size_t)i * N + j]) > 1e-3 * (1 + std::abs(ref))) {
      std::printf("FAIL c[%d][%d] = %g, expected %g\n", i, j, hc[(size_t)i * N + j], ref);
      return 1;
    }
  }
  std::printf("PASS matmul %d: %.3f ms, %.1f GFLOP/s\n", N, ms, 2.0 * N * N * N / ms / 1e6);
  return 0;
}
