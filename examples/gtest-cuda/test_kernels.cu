// The kernels' tests: each against a host reference, on shapes with and without a partial last
// block.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kernels.cuh"

namespace {

std::vector<float> values(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(0.1f * i);
  return v;
}

class Scale : public ::testing::TestWithParam<int> {};

TEST_P(Scale, MatchesHost) {
  int n = GetParam();
  auto host = values(n);
  float *in, *out;
  // Exactly n floats: a read past the end leaves the allocation.
  ASSERT_EQ(cudaMalloc(&in, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
  cudaMemcpy(in, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(out, in, n, 2.0f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(n);
  cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], 2.0f * host[i]) << "at " << i;
  cudaFree(in);
  cudaFree(out);
}

INSTANTIATE_TEST_SUITE_P(Lengths, Scale, ::testing::Values(1024, 1000));

class RowSum : public ::testing::TestWithParam<int> {};

TEST_P(RowSum, MatchesHost) {
  const int rows = 64, cols = GetParam(), block = 64;
  auto host = values(rows * cols);
  float *in, *out;
  ASSERT_EQ(cudaMalloc(&in, host.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, rows * sizeof(float)), cudaSuccess);
  cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(out, 0, rows * sizeof(float));
  rowsum<<<rows, 32>>>(out, in, cols, block);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(rows);
  cudaMemcpy(got.data(), out, rows * sizeof(float), cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double want = 0;
    for (int c = 0; c < cols; ++c) want += host[r * cols + c];
    worst = std::max(worst, std::abs(got[r] - want));
  }
  EXPECT_LT(worst, 1e-3) << "max abs error with " << cols << " columns (" << cols % block
                         << " in the last block)";
  cudaFree(in);
  cudaFree(out);
}

INSTANTIATE_TEST_SUITE_P(Widths, RowSum, ::testing::Values(256, 200));

}  // namespace
