// Error checks that print the CUDA error and exit 1.
#pragma once
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
