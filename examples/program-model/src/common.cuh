// Error checks that print the CUDA error and exit 1, and the comparison with the CPU reference
// that every program ends with.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: CUDA error: %s (%s) in %s\n", __FILE__, __LINE__,   \
                   cudaGetErrorString(err_), cudaGetErrorName(err_), #call);           \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// Compares got[0..n) with the reference want[0..n). On a mismatch prints one line with the first
// element off, its expected value, the largest difference and how many elements are off, e.g.
//   FAIL row_sums: out[0] = 8.000000, expected 256.000000 (max abs diff 1736.000000 at out[6],
//   4096 of 4096 elements off, tolerance 0.001)
// and returns false; else prints a PASS line and returns true.
inline bool check_close(const char* what, const float* got, const float* want, int n, double tol) {
  int first = -1, worst = 0, off = 0;
  double max_diff = 0;
  for (int i = 0; i < n; ++i) {
    double d = std::fabs(double(got[i]) - double(want[i]));
    if (std::isnan(d)) d = INFINITY;
    if (d > tol) {
      ++off;
      if (first < 0) first = i;
    }
    if (d > max_diff) max_diff = d, worst = i;
  }
  if (off > 0) {
    std::printf("FAIL %s: out[%d] = %f, expected %f (max abs diff %f at out[%d], %d of %d elements "
                "off, tolerance %g)\n",
                what, first, got[first], want[first], max_diff, worst, off, n, tol);
    return false;
  }
  std::printf("PASS %s (%d elements, max abs diff %g)\n", what, n, max_diff);
  return true;
}
