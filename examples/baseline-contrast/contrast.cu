// Two pairs of kernels that do the same work two ways, each timed by itself, so that a
// pipeline can run the slow one as its program and the fast one as its baseline:
//
//   walk  strided|coalesced  one warp reads 32 columns of a row-major matrix: lane = column
//                            (strided: 32 sectors per request) or lane = row (coalesced)
//   sum   atomic|tree        a sum of 2^24 floats: one atomicAdd per element onto one address,
//                            or a shared-memory tree per block and one atomicAdd per block
//
// Usage: contrast PAIR WAY. Prints `PAIR WAY: <median> us` over 20 timed launches, after
// checking the result against the host's.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

constexpr int ROWS = 1 << 14;  // rows of the walked matrix
constexpr int COLS = 32;       // one column per lane

// Each lane sums one column: consecutive lanes read addresses ROWS * 4 bytes apart.
__global__ void walk_strided(const float* m, float* out) {
  int col = threadIdx.x;
  float acc = 0.f;
  for (int r = 0; r < ROWS; ++r) acc += m[col * ROWS + r];
  out[col] = acc;
}

// The same sums with the matrix transposed: consecutive lanes read consecutive floats.
__global__ void walk_coalesced(const float* m, float* out) {
  int col = threadIdx.x;
  float acc = 0.f;
  for (int r = 0; r < ROWS; ++r) acc += m[r * COLS + col];
  out[col] = acc;
}

constexpr int N = 1 << 24;

__global__ void sum_atomic(const float* x, float* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x)
    atomicAdd(out, x[i]);
}

__global__ void sum_tree(const float* x, float* out) {
  __shared__ float part[256];
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x)
    acc += x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: contrast walk|sum strided|coalesced|atomic|tree\n");
    return 2;
  }
  const char* pair = argv[1];
  const char* way = argv[2];
  bool walk = std::strcmp(pair, "walk") == 0;
  size_t n = walk ? size_t(ROWS) * COLS : size_t(N);
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float((i * 2654435761u) % 1000) / 1000.f;
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, COLS * sizeof(float)));
  CHECK(cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  auto launch = [&]() {
    if (walk && std::strcmp(way, "strided") == 0) walk_strided<<<1, COLS>>>(in, out);
    else if (walk) walk_coalesced<<<1, COLS>>>(in, out);
    else {
      CHECK(cudaMemset(out, 0, sizeof(float)));
      if (std::strcmp(way, "atomic") == 0) sum_atomic<<<1056, 256>>>(in, out);
      else sum_tree<<<1056, 256>>>(in, out);
    }
    CHECK(cudaGetLastError());
  };
  // Check once against the host (the strided walk reads the same values column-major).
  launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(COLS);
  CHECK(cudaMemcpy(got.data(), out, COLS * sizeof(float), cudaMemcpyDeviceToHost));
  double want = 0, worst = 0;
  if (walk) {
    for (int c = 0; c < COLS; ++c) {
      double s = 0;
      for (int r = 0; r < ROWS; ++r)
        s += std::strcmp(way, "strided") == 0 ? host[size_t(c) * ROWS + r] : host[size_t(r) * COLS + c];
      worst = std::max(worst, std::abs(s - got[c]) / std::max(1.0, std::abs(s)));
    }
  } else {
    for (size_t i = 0; i < n; ++i) want += host[i];
    worst = std::abs(want - got[0]) / want;
  }
  if (worst > 1e-3) {
    std::printf("%s %s: FAILED, relative error %g\n", pair, way, worst);
    return 1;
  }
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> us;
  for (int i = 0; i < 20; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(ms * 1000.f);
  }
  std::sort(us.begin(), us.end());
  std::printf("%s %s: %.2f us\n", pair, way, us[us.size() / 2]);
  return 0;
}
