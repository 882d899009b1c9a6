// Exhibit's harness for the corpus (not upstream code). Runs Maharshi-Pandya/cudacodes'
// softmax kernel 0 (softmax/kernels/naive_0.cu, "Kernel 1 - Naive softmax" in the worklog
// softmax/README.md) through the upstream launcher run_kernel_0(), on the worklog's matrix of
// 1024 x 32768 floats, and checks every output against a CPU reference.
//
// Upstream's own mains do not do this: softmax/test.cu runs run_kernel_4 at 4096 x 4096 and
// softmax/bench.cu runs run_kernel_4 over a sweep of sizes, neither checks the result. This file
// replaces them: the same kind of input (a standard normal clamped to [-10, 10]), one untimed
// warm-up launch of softmax_kernel_0 with run_kernel_0's grid and block (1 block of 1024), then
// run_kernel_0 five times; each call prints upstream's ">> Kernel execution time: X ms" (a
// cudaEvent pair around the one launch). Then the output of the last call is compared with a
// double-precision CPU softmax, row by row. Exit status 1 on a mismatch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda_utils.cuh"
#include "naive_0.cuh"

int main() {
    const int M = 1024;   // the worklog's matrix: "a matrix of shape (1024, 32768)"
    const int N = 32768;
    const size_t count = (size_t)M * N;
    const size_t bytes = count * sizeof(float);

    std::vector<float> in(count), out(count);
    std::mt19937 gen(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t i = 0; i < count; i++) {
        in[i] = fminf(fmaxf(normal(gen), -10.0f), 10.0f);
    }

    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));

    // Warm-up, not timed: the launch run_kernel_0 makes (naive_0.cu:47-48, 56).
    softmax_kernel_0<<<CEIL_DIV(M, 1024), 1024>>>(d_in, d_out, M, N);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    printf("softmax kernel 0 at M = %d, N = %d: grid %d x block 1024\n", M, N, CEIL_DIV(M, 1024));
    for (int r = 0; r < 5; r++) {
        run_kernel_0(d_in, d_out, M, N);  // prints ">> Kernel execution time: X ms"
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    // CPU reference in double, row by row; relative error per element.
    double worst = 0.0;
    long bad = 0;
    for (int r = 0; r < M; r++) {
        const float *x = &in[(size_t)r * N];
        const float *y = &out[(size_t)r * N];
        double mx = -INFINITY, sum = 0.0;
        for (int c = 0; c < N; c++) mx = fmax(mx, (double)x[c]);
        for (int c = 0; c < N; c++) sum += exp((double)x[c] - mx);
        for (int c = 0; c < N; c++) {
            double ref = exp((double)x[c] - mx) / sum;
            double rel = fabs((double)y[c] - ref) / ref;
            if (!(rel <= 1e-3)) bad++;  // also counts NaN
            if (rel > worst || rel != rel) worst = rel;
        }
    }
    printf("check against the CPU reference: max relative error %.3g over %zu outputs, %ld above 1e-3\n",
           worst, count, bad);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    if (bad > 0) {
        printf("FAIL\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
