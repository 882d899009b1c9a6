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

// Two more pairs, each a block that waits at its barrier on a part of its threads:
//   rows  one|spread         a block of 256 threads adds 16,384 terms per row for 32 rows, then
//                            every thread writes the block's rows: one row per thread (threads
//                            0-31 work, the other seven warps wait at the barrier) or each row
//                            to eight lanes of a warp, every warp working
//   serial thread|warp       a block of 256 threads adds 2,048 floats into one total, then every
//                            thread writes its element plus that total: thread 0 adds them
//                            alone while the block waits at the barrier, or warp 0 adds them
//                            32 at a time
#include <cmath>

constexpr int RROWS = 32 * 132;   // rows, 32 per block: one block per SM of an H100 or H200
constexpr int RTERMS = 16384;      // terms added into each row's value
constexpr int RCOLS = 64;          // elements written per row
constexpr float RSTEP = 1e-3f;

__device__ __host__ inline float term(float x, int c) { return x * (1.0f + c * RSTEP) * 0.5f; }

__global__ void rows_one(const float* x, float* out) {
  __shared__ float value[32];
  int row0 = blockIdx.x * 32;
  if (threadIdx.x < 32) {  // one row per thread: warp 0 works, the rest wait below
    float xr = x[row0 + threadIdx.x], acc = 0.f;
    for (int c = 0; c < RTERMS; ++c) acc += __sinf(term(xr, c));
    value[threadIdx.x] = acc;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 32 * RCOLS; i += blockDim.x)
    out[size_t(row0) * RCOLS + i] = value[i / RCOLS] * float(i % RCOLS + 1) / RCOLS;
}

__global__ void rows_spread(const float* x, float* out) {
  __shared__ float value[32];
  int row0 = blockIdx.x * 32;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Each warp takes four rows; eight lanes share a row, each a strided eighth of its terms.
  int r = warp * 4 + lane / 8, part = lane % 8;
  float xr = x[row0 + r], acc = 0.f;
  for (int c = part; c < RTERMS; c += 8) acc += __sinf(term(xr, c));
  for (int o = 4; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o, 8);
  if (part == 0) value[r] = acc;
  __syncthreads();
  for (int i = threadIdx.x; i < 32 * RCOLS; i += blockDim.x)
    out[size_t(row0) * RCOLS + i] = value[i / RCOLS] * float(i % RCOLS + 1) / RCOLS;
}

constexpr int SBLOCKS = 1056;
constexpr int SPAN = 2048;  // floats added into each block's total

__global__ void serial_thread(const float* x, const float* y, float* out) {
  __shared__ float total;
  if (threadIdx.x == 0) {  // one thread adds the span while the block waits below
    float acc = 0.f;
    for (int i = 0; i < SPAN; ++i) acc += y[size_t(blockIdx.x) * SPAN + i];
    total = acc;
  }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i] + total;
}

__global__ void serial_warp(const float* x, const float* y, float* out) {
  __shared__ float total;
  if (threadIdx.x < 32) {  // warp 0 adds the span, 32 floats a step
    float acc = 0.f;
    for (int i = threadIdx.x; i < SPAN; i += 32) acc += y[size_t(blockIdx.x) * SPAN + i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) total = acc;
  }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i] + total;
}

// The median of 20 timed launches, in microseconds.
template <class Launch>
float median_us(Launch launch) {
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
  return us[us.size() / 2];
}

// The rows and serial pairs: run, check against the host, time. Returns the exit code.
int run_rows_serial(bool rows, const char* way) {
  size_t nx = rows ? RROWS : size_t(SBLOCKS) * 256;
  size_t ny = rows ? 0 : size_t(SBLOCKS) * SPAN;
  size_t nout = rows ? size_t(RROWS) * RCOLS : nx;
  std::vector<float> hx(nx), hy(ny);
  for (size_t i = 0; i < nx; ++i) hx[i] = float((i * 2654435761u) % 1000) / 1000.f;
  for (size_t i = 0; i < ny; ++i) hy[i] = float((i * 40503u) % 1000) / 1000.f;
  float *x, *y = nullptr, *out;
  CHECK(cudaMalloc(&x, nx * sizeof(float)));
  if (ny) CHECK(cudaMalloc(&y, ny * sizeof(float)));
  CHECK(cudaMalloc(&out, nout * sizeof(float)));
  CHECK(cudaMemcpy(x, hx.data(), nx * sizeof(float), cudaMemcpyHostToDevice));
  if (ny) CHECK(cudaMemcpy(y, hy.data(), ny * sizeof(float), cudaMemcpyHostToDevice));
  bool first = std::strcmp(way, rows ? "one" : "thread") == 0;
  auto launch = [&]() {
    if (rows && first) rows_one<<<RROWS / 32, 256>>>(x, out);
    else if (rows) rows_spread<<<RROWS / 32, 256>>>(x, out);
    else if (first) serial_thread<<<SBLOCKS, 256>>>(x, y, out);
    else serial_warp<<<SBLOCKS, 256>>>(x, y, out);
    CHECK(cudaGetLastError());
  };
  launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(nout);
  CHECK(cudaMemcpy(got.data(), out, nout * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  if (rows) {
    for (int r = 0; r < RROWS; ++r) {
      double s = 0;
      for (int c = 0; c < RTERMS; ++c) s += std::sin(double(term(hx[r], c)));
      double g = got[size_t(r) * RCOLS + RCOLS - 1];
      worst = std::max(worst, std::abs(s - g) / std::max(1.0, std::abs(s)));
    }
  } else {
    for (int b = 0; b < SBLOCKS; ++b) {
      double t = 0;
      for (int i = 0; i < SPAN; ++i) t += hy[size_t(b) * SPAN + i];
      for (int k = 0; k < 256; ++k) {
        size_t i = size_t(b) * 256 + k;
        worst = std::max(worst, std::abs(hx[i] + t - got[i]) / std::max(1.0, std::abs(t)));
      }
    }
  }
  const char* pair = rows ? "rows" : "serial";
  // A row's value adds 16,384 single-precision terms in an order of the kernel's own.
  if (worst > (rows ? 5e-2 : 1e-3)) {
    std::printf("%s %s: FAILED, relative error %g\n", pair, way, worst);
    return 1;
  }
  std::printf("%s %s: %.2f us\n", pair, way, median_us(launch));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: contrast walk|sum|rows|serial "
                 "strided|coalesced|atomic|tree|one|spread|thread|warp\n");
    return 2;
  }
  const char* pair = argv[1];
  const char* way = argv[2];
  if (std::strcmp(pair, "rows") == 0 || std::strcmp(pair, "serial") == 0)
    return run_rows_serial(std::strcmp(pair, "rows") == 0, way);
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
  std::printf("%s %s: %.2f us\n", pair, way, median_us(launch));
  return 0;
}
