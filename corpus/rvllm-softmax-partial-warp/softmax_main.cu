// Exhibit's driver for the corpus (not upstream code): runs m0at/rvllm's softmax_kernel
// (kernels/softmax.cu, compiled unchanged as its own translation unit) the way the Rust host
// crates/rvllm-model-runner/src/layers/softmax_cuda.rs launches it: grid (num_rows), block
// (min(vocab_size, 1024)), no dynamic shared memory. A narrow, decode-style row: 4 rows of a
// 17-entry vocabulary, so the block is one warp of 17 threads. Rows 0, 1 and 3 are all negative
// (-200 plus noise in [-1, 1]); row 2 is noise in [-1, 1] with a positive maximum (3.0 at entry
// 5). Compares every probability with a CPU softmax in double precision and prints, per row,
// "row R: max |diff| X (nan: K)". Exits 1 on any mismatch or NaN.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

// kernels/softmax.cu
extern "C" __global__ void softmax_kernel(float* __restrict__ output,
                                          const float* __restrict__ input, int vocab_size);

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
  const int num_rows = 4, vocab_size = 17;
  const int n = num_rows * vocab_size;

  // Deterministic noise in [-1, 1].
  unsigned state = 12345u;
  auto noise = [&state]() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  };
  std::vector<float> h_in(n), h_out(n, 0.0f);
  for (int r = 0; r < num_rows; ++r) {
    for (int i = 0; i < vocab_size; ++i) {
      h_in[r * vocab_size + i] = (r == 2 ? 0.0f : -200.0f) + noise();
    }
  }
  h_in[2 * vocab_size + 5] = 3.0f;

  float *d_in = nullptr, *d_out = nullptr;
  CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_out, 0, n * sizeof(float)));

  // The launch of softmax_cuda.rs: block_x = min(vocab_size, MAX_BLOCK_SIZE = 1024).
  const unsigned block_x = vocab_size < 1024 ? vocab_size : 1024;
  std::printf("softmax_kernel<<<%d, %u>>>: %d rows x vocab %d (float32)\n", num_rows, block_x,
              num_rows, vocab_size);
  softmax_kernel<<<num_rows, block_x>>>(d_out, d_in, vocab_size);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  int bad_rows = 0;
  for (int r = 0; r < num_rows; ++r) {
    const float* x = &h_in[r * vocab_size];
    const float* y = &h_out[r * vocab_size];
    double m = -INFINITY;
    for (int i = 0; i < vocab_size; ++i) m = std::fmax(m, static_cast<double>(x[i]));
    double s = 0.0;
    for (int i = 0; i < vocab_size; ++i) s += std::exp(static_cast<double>(x[i]) - m);
    double max_diff = 0.0;
    int nans = 0, mismatches = 0, first = -1;
    double first_ref = 0.0;
    for (int i = 0; i < vocab_size; ++i) {
      const double ref = std::exp(static_cast<double>(x[i]) - m) / s;
      if (std::isnan(y[i])) {
        ++nans;
      } else {
        max_diff = std::fmax(max_diff, std::fabs(y[i] - ref));
      }
      if (std::isnan(y[i]) || std::fabs(y[i] - ref) > 1e-6 + 1e-4 * std::fabs(ref)) {
        if (first < 0) { first = i; first_ref = ref; }
        ++mismatches;
      }
    }
    std::printf("row %d: max |diff| %.3g (nan: %d); input max %.4f", r, max_diff, nans, m);
    if (mismatches) {
      std::printf("  MISMATCH: %d of %d, first out[%d][%d] = %g, expected %g\n", mismatches,
                  vocab_size, r, first, y[first], first_ref);
      ++bad_rows;
    } else {
      std::printf("\n");
    }
  }
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  if (bad_rows) {
    std::printf("FAILED: %d of %d rows differ from the CPU softmax\n", bad_rows, num_rows);
    return 1;
  }
  std::printf("OK: every row matches the CPU softmax\n");
  return 0;
}
