// Helpers the fault-class programs share: error checks that print the CUDA error and exit 1,
// and the launch count (--launches N or EXHIBIT_LAUNCHES, default 25).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: CUDA error: %s (%s) in %s\n", __FILE__, __LINE__,   \
                   cudaGetErrorString(err_), cudaGetErrorName(err_), #call);           \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

inline int launches(int argc, char** argv, int fallback = 25) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--launches") == 0) return std::atoi(argv[i + 1]);
  if (const char* env = std::getenv("EXHIBIT_LAUNCHES")) return std::atoi(env);
  return fallback;
}
