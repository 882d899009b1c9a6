// Test program for src/kernels.cu: runs each kernel on a few sizes (including sizes that are
// not a multiple of the block or tile size) and compares with a CPU reference.
//
//   test_kernels [--launches N] [--out PATH]
//
//   --launches N  launch each test's kernel(s) N times (default 1, or $EXHIBIT_LAUNCHES),
//                 synchronizing and checking the output after every launch.
//   --out PATH    write the results as JSON (exhibit.results/1; default $EXHIBIT_OUT):
//                 {"schema": "exhibit.results/1", "program": "test_kernels",
//                  "results": [{"name": ..., "passed": ..., "message": ..., "max_abs_err": ...,
//                               "file": ..., "line": ...}]}  (file and line: the failing check)
//                 The file is rewritten after every test, so a run that dies still leaves one.
//
// Prints one line per test. Exit status: 0 when every test passed, 1 when one failed or a
// CUDA call returned an error (the run stops at the first CUDA error: the context may be
// unusable after it), 2 on a usage error.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels.cuh"

namespace {

struct Result {
  std::string name;
  bool passed = false;
  std::string message;
  double max_abs_err = NAN;  // NaN: not measured
  const char* file = nullptr;  // where the check that failed is
  int line = 0;
};

std::vector<Result> g_results;
std::string g_out_path;
long g_launches = 1;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += char(ch);
        }
    }
  }
  return out + "\"";
}

// Rewrites the results file with every result so far (a no-op without --out / EXHIBIT_OUT).
void write_results() {
  if (g_out_path.empty()) return;
  const std::string tmp = g_out_path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "test_kernels: cannot write %s\n", tmp.c_str());
    return;
  }
  std::fprintf(f, "{\"schema\": \"exhibit.results/1\", \"program\": \"test_kernels\", \"results\": [");
  for (size_t i = 0; i < g_results.size(); ++i) {
    const Result& r = g_results[i];
    std::fprintf(f, "%s\n  {\"name\": %s, \"passed\": %s", i ? "," : "", json_string(r.name).c_str(),
                 r.passed ? "true" : "false");
    if (!r.message.empty()) std::fprintf(f, ", \"message\": %s", json_string(r.message).c_str());
    if (std::isfinite(r.max_abs_err)) std::fprintf(f, ", \"max_abs_err\": %.9g", r.max_abs_err);
    if (!r.passed && r.file != nullptr)
      std::fprintf(f, ", \"file\": %s, \"line\": %d", json_string(r.file).c_str(), r.line);
    std::fprintf(f, "}");
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
  std::rename(tmp.c_str(), g_out_path.c_str());
}

void record(const Result& r) {
  g_results.push_back(r);
  if (r.passed) {
    std::printf("PASS  %s  (max_abs_err %.3g)\n", r.name.c_str(), r.max_abs_err);
  } else {
    std::printf("FAIL  %s: %s\n", r.name.c_str(), r.message.c_str());
  }
  std::fflush(stdout);
  write_results();
}

std::string cuda_error(cudaError_t err) {
  return std::string("CUDA error: ") + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
}

// A CUDA call failed: record it, and stop (later calls could only report the same error).
[[noreturn]] void fatal(const std::string& name, const std::string& what, cudaError_t err) {
  Result r;
  r.name = name;
  r.message = what + " failed: " + cuda_error(err);
  record(r);
  std::exit(1);
}

#define CHECK_CUDA(name, call)                                 \
  do {                                                         \
    cudaError_t err_ = (call);                                 \
    if (err_ != cudaSuccess) fatal((name), #call, err_);       \
  } while (0)

// A device buffer of floats, freed at scope exit.
struct DeviceBuffer {
  float* ptr = nullptr;
  size_t count = 0;
  DeviceBuffer(const std::string& name, size_t n) : count(n) {
    CHECK_CUDA(name, cudaMalloc(&ptr, n * sizeof(float)));
  }
  DeviceBuffer(const std::string& name, const std::vector<float>& host) : DeviceBuffer(name, host.size()) {
    CHECK_CUDA(name, cudaMemcpy(ptr, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Runs `launch` g_launches times. Before each launch the output is poisoned with NaN (all bits
// set), so an element the kernel fails to write is caught; after each launch the program
// synchronizes, copies the output back and compares every element with `expected`.
// RUN_TEST(...): run_test, with the caller's place as the failing check's.
#define RUN_TEST(...) run_test(__FILE__, __LINE__, __VA_ARGS__)

template <class Launch>
void run_test(const char* file, int line, const std::string& name, Launch launch,
              const DeviceBuffer& out, const std::vector<float>& expected, double tolerance) {
  std::vector<float> got(out.count);
  double max_err = 0.0;
  for (long k = 1; k <= g_launches; ++k) {
    const std::string at = "launch " + std::to_string(k) + " of " + std::to_string(g_launches);
    CHECK_CUDA(name, cudaMemset(out.ptr, 0xff, out.count * sizeof(float)));
    cudaError_t err = launch();
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess) fatal(name, at, err);
    CHECK_CUDA(name, cudaMemcpy(got.data(), out.ptr, out.count * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(double(got[i]) - double(expected[i]));
      if (!(diff <= tolerance)) {  // also true for NaN
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s: out[%zu] = %.9g, expected %.9g (tolerance %.3g)", at.c_str(), i,
                      got[i], expected[i], tolerance);
        Result r;
        r.name = name;
        r.message = buf;
        r.max_abs_err = diff;
        r.file = file;
        r.line = line;
        record(r);
        return;
      }
      if (diff > max_err) max_err = diff;
    }
  }
  Result r;
  r.name = name;
  r.passed = true;
  r.max_abs_err = max_err;
  record(r);
}

std::mt19937 g_rng(12345);

// n floats with integer values in [-8, 8]: every partial sum of up to 2^21 of them is exact in
// float, so the reduction must match the CPU sum exactly, whatever its summation order.
std::vector<float> small_integers(size_t n) {
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = float(dist(g_rng));
  return v;
}

std::vector<float> uniform(size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(g_rng);
  return v;
}

void test_reduce_sum(int n) {
  const std::string name = "reduce_sum n=" + std::to_string(n);
  const std::vector<float> host = small_integers(n);
  double sum = 0.0;
  for (float x : host) sum += x;
  DeviceBuffer in(name, host), partials(name, kReduceMaxBlocks), out(name, 1);
  RUN_TEST(name, [&] { return reduce_sum(in.ptr, partials.ptr, out.ptr, n, 0); }, out,
           {float(sum)}, 0.0);
}

void test_transpose(int rows, int cols) {
  const std::string name = "transpose " + std::to_string(rows) + "x" + std::to_string(cols);
  const std::vector<float> host = uniform(size_t(rows) * cols);
  std::vector<float> expected(host.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) expected[size_t(c) * rows + r] = host[size_t(r) * cols + c];
  DeviceBuffer in(name, host), out(name, host.size());
  RUN_TEST(name, [&] { return transpose(in.ptr, out.ptr, rows, cols, 0); }, out, expected, 0.0);
}

const float kWeights[2 * kStencilRadius + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

void test_stencil(int n) {
  const std::string name = "stencil_1d n=" + std::to_string(n);
  const std::vector<float> host = uniform(n);
  std::vector<float> expected(n);
  for (int i = 0; i < n; ++i) {
    double acc = 0.0;
    for (int j = -kStencilRadius; j <= kStencilRadius; ++j) {
      const int x = i + j;
      if (x >= 0 && x < n) acc += double(kWeights[j + kStencilRadius]) * host[x];
    }
    expected[i] = float(acc);
  }
  DeviceBuffer in(name, host), out(name, n);
  RUN_TEST(name, [&] { return stencil_1d(in.ptr, out.ptr, n, 0); }, out, expected, 1e-5);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "test_kernels: %s\nusage: test_kernels [--launches N] [--out PATH]\n", why);
  std::exit(2);
}

// Parses a launch count; an empty string keeps the current value.
void parse_launches(const char* text) {
  if (text == nullptr || *text == '\0') return;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1) usage("--launches / EXHIBIT_LAUNCHES needs a positive integer");
  g_launches = n;
}

}  // namespace

int main(int argc, char** argv) {
  parse_launches(std::getenv("EXHIBIT_LAUNCHES"));
  if (const char* out = std::getenv("EXHIBIT_OUT")) g_out_path = out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--launches" || arg == "--out") {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      const char* value = argv[++i];
      // An empty value (an unset placeholder) keeps the default.
      if (arg == "--launches") parse_launches(value);
      else if (*value != '\0') g_out_path = value;
    } else if (arg.rfind("--launches=", 0) == 0) {
      parse_launches(arg.c_str() + std::strlen("--launches="));
    } else if (arg.rfind("--out=", 0) == 0) {
      if (arg.size() > std::strlen("--out=")) g_out_path = arg.substr(std::strlen("--out="));
    } else if (arg == "-h" || arg == "--help") {
      std::printf("usage: test_kernels [--launches N] [--out PATH]\n");
      return 0;
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }

  int devices = 0;
  CHECK_CUDA("setup", cudaGetDeviceCount(&devices));
  cudaDeviceProp prop{};
  CHECK_CUDA("setup", cudaGetDeviceProperties(&prop, 0));
  std::printf("test_kernels: %s (sm_%d%d), %ld launch%s per test%s%s\n", prop.name, prop.major, prop.minor,
              g_launches, g_launches == 1 ? "" : "es", g_out_path.empty() ? "" : ", results to ",
              g_out_path.c_str());
  CHECK_CUDA("setup", stencil_set_weights(kWeights));

  for (int n : {1, 1000, 4096, 100003, 1 << 20}) test_reduce_sum(n);
  for (auto [rows, cols] : std::initializer_list<std::pair<int, int>>{{32, 32}, {100, 37}, {1, 1000}, {1024, 768}})
    test_transpose(rows, cols);
  for (int n : {1, 1000, 4096, 100003}) test_stencil(n);

  int failed = 0;
  for (const Result& r : g_results) failed += r.passed ? 0 : 1;
  std::printf("%zu tests, %d failed\n", g_results.size(), failed);
  return failed == 0 ? 0 : 1;
}
