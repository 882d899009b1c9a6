// Stand-alone checker and timer for kernel/attention.cu cubins (and kernel/faults/*.cu).
//
// Loads a cubin through the CUDA runtime's library API, reads attention_launch_info, and then
//   check:  compares against an fp64 CPU reference (all rows of small problems, sampled rows of
//           large ones), counts NaN / unwritten (NaN-poisoned) outputs and output guard damage;
//   bench:  times back-to-back launches with CUDA events (warm-up, rounds until the median is
//           stable or a time cap), printing TFLOP/s with 4*B*H*S*S*D flops (halved when causal);
//   stress: launches N times on the same inputs, synchronising after each, comparing each output
//           bitwise with the first and checking the guards; reports the first failing launch;
//   once:   a single checked launch (for compute-sanitizer).
// Every result is one line starting with the mode name, key=value fields.
//
// Build: nvcc -O2 -std=c++17 -o attn_check attn_check.cu   (host code only; cudart is static)
// Usage: attn_check <cubin> <check|bench|stress|once> [--dtype f16,bf16] [--shape B,H,S,D[:...]]
//                   [--causal 0,1] [--launches N] [--seed N] [--max-rows N] [--guard-bytes N]
//                   [--time-cap SECONDS]

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

// Guard bytes around each buffer (--guard-bytes; 0 lets out-of-bounds accesses leave it).
size_t kGuardBytes = 4096;

struct Shape {
  int b, h, s, d;
};

struct Options {
  std::string cubin;
  std::string mode;
  std::vector<std::string> dtypes{"f16"};
  std::vector<Shape> shapes{{2, 8, 512, 64}};
  std::vector<int> causal{0};
  int launches = 20;
  uint64_t seed = 1;
  int max_rows = 256;  // rows checked per problem when the problem is large
  double time_cap_s = 3.0;
};

struct LaunchInfo {
  int abi, block_m, block_n, stages, threads, smem, head_dim;
};

[[noreturn]] void die(const char* what, cudaError_t e) {
  std::printf("error stage=%s cuda=%s msg=\"%s\"\n", what, cudaGetErrorName(e),
              cudaGetErrorString(e));
  std::exit(e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? 4 : 1);
}

#define CK(call)                           \
  do {                                     \
    cudaError_t e_ = (call);               \
    if (e_ != cudaSuccess) die(#call, e_); \
  } while (0)

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: attn_check <cubin> <check|bench|stress|once> [options]\n");
    std::exit(2);
  }
  Options o;
  o.cubin = argv[1];
  o.mode = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dtype") {
      o.dtypes = split(v, ',');
    } else if (k == "--shape") {
      o.shapes.clear();
      for (auto& sh : split(v, ':')) {
        Shape s{};
        if (std::sscanf(sh.c_str(), "%d,%d,%d,%d", &s.b, &s.h, &s.s, &s.d) != 4) {
          std::fprintf(stderr, "bad shape %s\n", sh.c_str());
          std::exit(2);
        }
        o.shapes.push_back(s);
      }
    } else if (k == "--causal") {
      o.causal.clear();
      for (auto& c : split(v, ',')) o.causal.push_back(std::atoi(c.c_str()));
    } else if (k == "--launches") {
      o.launches = std::atoi(v.c_str());
    } else if (k == "--seed") {
      o.seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--max-rows") {
      o.max_rows = std::atoi(v.c_str());
    } else if (k == "--guard-bytes") {
      kGuardBytes = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--time-cap") {
      o.time_cap_s = std::atof(v.c_str());
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

uint16_t to_bits(float x, bool bf16) {
  if (bf16) {
    __nv_bfloat16 h = __float2bfloat16_rn(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  __half h = __float2half_rn(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

float from_bits(uint16_t b, bool bf16) {
  if (bf16) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  __half h;
  std::memcpy(&h, &b, 2);
  return __half2float(h);
}

constexpr uint8_t kGuardByte = 0xA5;

// A device buffer with guard regions before and after the payload.
struct Guarded {
  char* base = nullptr;
  size_t bytes = 0;
  char* data() const { return base + kGuardBytes; }
  void alloc(size_t n) {
    bytes = n;
    CK(cudaMalloc(&base, n + 2 * kGuardBytes));
    CK(cudaMemset(base, kGuardByte, n + 2 * kGuardBytes));
  }
  // Number of guard bytes that no longer hold the pattern.
  size_t damaged() const {
    if (kGuardBytes == 0) return 0;
    std::vector<uint8_t> g(kGuardBytes);
    size_t bad = 0;
    CK(cudaMemcpy(g.data(), base, kGuardBytes, cudaMemcpyDeviceToHost));
    for (uint8_t x : g) bad += x != kGuardByte;
    CK(cudaMemcpy(g.data(), base + kGuardBytes + bytes, kGuardBytes, cudaMemcpyDeviceToHost));
    for (uint8_t x : g) bad += x != kGuardByte;
    return bad;
  }
  void release() {
    if (base) cudaFree(base);
    base = nullptr;
  }
};

struct Kernel {
  cudaLibrary_t lib{};
  cudaKernel_t f16{}, bf16{}, info_fn{};
  LaunchInfo info{};
};

Kernel load(const std::string& path) {
  Kernel k;
  CK(cudaLibraryLoadFromFile(&k.lib, path.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CK(cudaLibraryGetKernel(&k.f16, k.lib, "attention_fwd_f16"));
  CK(cudaLibraryGetKernel(&k.bf16, k.lib, "attention_fwd_bf16"));
  CK(cudaLibraryGetKernel(&k.info_fn, k.lib, "attention_launch_info"));
  int* d_info = nullptr;
  CK(cudaMalloc(&d_info, 8 * sizeof(int)));
  CK(cudaMemset(d_info, 0, 8 * sizeof(int)));
  void* args[] = {&d_info};
  CK(cudaLaunchKernel(reinterpret_cast<const void*>(k.info_fn), dim3(1), dim3(1), args, 0, 0));
  CK(cudaDeviceSynchronize());
  int h[8];
  CK(cudaMemcpy(h, d_info, sizeof(h), cudaMemcpyDeviceToHost));
  CK(cudaFree(d_info));
  k.info = {h[0], h[1], h[2], h[3], h[4], h[5], h[6]};
  for (cudaKernel_t f : {k.f16, k.bf16}) {
    CK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                            cudaFuncAttributeMaxDynamicSharedMemorySize, k.info.smem));
  }
  return k;
}

struct Problem {
  Shape sh;
  bool bf16;
  int causal;
  float scale;
  size_t elems;
  std::vector<uint16_t> q, k, v;
  Guarded dq, dk, dv, dout;
};

void make_problem(Problem& p, Shape sh, bool bf16, int causal, uint64_t seed) {
  p.sh = sh;
  p.bf16 = bf16;
  p.causal = causal;
  p.scale = 1.0f / std::sqrt(static_cast<float>(sh.d));
  p.elems = static_cast<size_t>(sh.b) * sh.h * sh.s * sh.d;
  // Uniform on [-sqrt(3), sqrt(3)] (unit variance) from splitmix64: fast enough for 10^8 values.
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto* t : {&p.q, &p.k, &p.v}) {
    t->resize(p.elems);
    for (auto& x : *t) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      x = to_bits((2.0f * u - 1.0f) * 1.7320508f, bf16);
    }
  }
  const size_t bytes = p.elems * 2;
  p.dq.alloc(bytes);
  p.dk.alloc(bytes);
  p.dv.alloc(bytes);
  p.dout.alloc(bytes);
  CK(cudaMemcpy(p.dq.data(), p.q.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p.dk.data(), p.k.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p.dv.data(), p.v.data(), bytes, cudaMemcpyHostToDevice));
}

void free_problem(Problem& p) {
  p.dq.release();
  p.dk.release();
  p.dv.release();
  p.dout.release();
}

cudaError_t launch(const Kernel& k, Problem& p, cudaStream_t st) {
  const void* q = p.dq.data();
  const void* kk = p.dk.data();
  const void* v = p.dv.data();
  void* o = p.dout.data();
  int b = p.sh.b, h = p.sh.h, s = p.sh.s, causal = p.causal;
  float scale = p.scale;
  void* args[] = {&q, &kk, &v, &o, &b, &h, &s, &scale, &causal};
  dim3 grid((s + k.info.block_m - 1) / k.info.block_m, b * h);
  return cudaLaunchKernel(reinterpret_cast<const void*>(p.bf16 ? k.bf16 : k.f16), grid,
                          dim3(k.info.threads), args, k.info.smem, st);
}

void poison(Problem& p) { CK(cudaMemset(p.dout.data(), 0xFF, p.elems * 2)); }

struct CheckResult {
  double max_abs = 0, rel_l2 = 0;
  size_t nan_count = 0, rows_checked = 0, guard = 0;
};

// fp64 reference for one output row.
void reference_row(const Problem& p, int bh, int row, std::vector<double>& out) {
  const int S = p.sh.s, D = p.sh.d;
  const size_t base = static_cast<size_t>(bh) * S * D;
  const int kend = p.causal ? row + 1 : S;
  std::vector<double> qrow(D), sc(kend);
  for (int d = 0; d < D; ++d)
    qrow[d] = from_bits(p.q[base + static_cast<size_t>(row) * D + d], p.bf16);
  double mx = -INFINITY;
  for (int j = 0; j < kend; ++j) {
    double acc = 0;
    const uint16_t* kr = &p.k[base + static_cast<size_t>(j) * D];
    for (int d = 0; d < D; ++d) acc += qrow[d] * from_bits(kr[d], p.bf16);
    sc[j] = acc * p.scale;
    mx = std::max(mx, sc[j]);
  }
  double sum = 0;
  for (int j = 0; j < kend; ++j) {
    sc[j] = std::exp(sc[j] - mx);
    sum += sc[j];
  }
  out.assign(D, 0.0);
  for (int j = 0; j < kend; ++j) {
    const uint16_t* vr = &p.v[base + static_cast<size_t>(j) * D];
    const double w = sc[j] / sum;
    for (int d = 0; d < D; ++d) out[d] += w * from_bits(vr[d], p.bf16);
  }
}

CheckResult check_output(const Problem& p, int max_rows, uint64_t seed) {
  CheckResult r;
  std::vector<uint16_t> out(p.elems);
  CK(cudaMemcpy(out.data(), p.dout.data(), p.elems * 2, cudaMemcpyDeviceToHost));
  r.guard = p.dout.damaged();
  for (uint16_t b : out) r.nan_count += std::isnan(from_bits(b, p.bf16)) ? 1 : 0;
  const int S = p.sh.s, D = p.sh.d, BH = p.sh.b * p.sh.h;
  // Rows to check: everything when small, else the first/last rows of a few heads plus random.
  std::vector<std::pair<int, int>> rows;
  if (static_cast<long long>(BH) * S <= max_rows) {
    for (int bh = 0; bh < BH; ++bh)
      for (int i = 0; i < S; ++i) rows.push_back({bh, i});
  } else {
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    const int heads[] = {0, BH - 1, BH / 2};
    for (int bh : heads) {
      for (int i = 0; i < std::min(S, 8); ++i) rows.push_back({bh, i});
      for (int i = std::max(0, S - 8); i < S; ++i) rows.push_back({bh, i});
    }
    while (static_cast<int>(rows.size()) < max_rows) {
      rows.push_back({static_cast<int>(rng() % BH), static_cast<int>(rng() % S)});
    }
  }
  double num = 0, den = 0;
  std::vector<double> ref;
  for (auto [bh, i] : rows) {
    reference_row(p, bh, i, ref);
    const size_t off = (static_cast<size_t>(bh) * S + i) * D;
    for (int d = 0; d < D; ++d) {
      const double got = from_bits(out[off + d], p.bf16);
      const double diff = std::isnan(got) ? INFINITY : std::fabs(got - ref[d]);
      r.max_abs = std::max(r.max_abs, diff);
      num += diff * diff;
      den += ref[d] * ref[d];
    }
  }
  r.rows_checked = rows.size();
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return r;
}

double flops(const Problem& p) {
  double f = 4.0 * p.sh.b * p.sh.h * static_cast<double>(p.sh.s) * p.sh.s * p.sh.d;
  return p.causal ? f / 2 : f;
}

void print_head(const char* mode, const Options& o, const Kernel& k, const Problem& p) {
  std::printf(
      "%s cubin=%s dtype=%s shape=%d,%d,%d,%d causal=%d bm=%d bn=%d stages=%d threads=%d smem=%d",
      mode, o.cubin.c_str(), p.bf16 ? "bf16" : "f16", p.sh.b, p.sh.h, p.sh.s, p.sh.d, p.causal,
      k.info.block_m, k.info.block_n, k.info.stages, k.info.threads, k.info.smem);
}

int run_check(const Options& o, const Kernel& k, Problem& p, bool once) {
  poison(p);
  cudaError_t e = launch(k, p, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  print_head(once ? "once" : "check", o, k, p);
  if (e != cudaSuccess) {
    std::printf(" launched=%d error=%s passed=0\n", e == cudaSuccess, cudaGetErrorName(e));
    std::fflush(stdout);
    return 1;
  }
  CheckResult r = check_output(p, once ? 64 : o.max_rows, o.seed);
  const double tol = p.bf16 ? 1.6e-2 : 2e-3;
  const bool ok = r.nan_count == 0 && r.guard == 0 && r.rel_l2 <= tol;
  std::printf(" rows=%zu max_abs=%.3e rel_l2=%.3e tol=%.1e nan=%zu guard=%zu passed=%d\n",
              r.rows_checked, r.max_abs, r.rel_l2, tol, r.nan_count, r.guard, ok ? 1 : 0);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

int run_bench(const Options& o, const Kernel& k, Problem& p) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  poison(p);
  for (int i = 0; i < 10; ++i) CK(launch(k, p, 0));
  CK(cudaDeviceSynchronize());
  // Size a round to about 20 ms.
  CK(cudaEventRecord(a));
  for (int i = 0; i < 5; ++i) CK(launch(k, p, 0));
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  const int per_round = std::max(1, std::min(2000, static_cast<int>(20.0 / (ms / 5 + 1e-6))));
  std::vector<double> us;
  double spent = 0;
  for (int round = 0; round < 200; ++round) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < per_round; ++i) CK(launch(k, p, 0));
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1000.0 * ms / per_round);
    spent += ms / 1000.0;
    if (us.size() >= 10) {
      std::vector<double> s = us;
      std::sort(s.begin(), s.end());
      const double med = s[s.size() / 2];
      const double mad = s[s.size() * 3 / 4] - s[s.size() / 4];
      if (mad / med < 0.005 || spent > o.time_cap_s) break;
    }
  }
  std::sort(us.begin(), us.end());
  const double med = us[us.size() / 2];
  print_head("bench", o, k, p);
  std::printf(" rounds=%zu per_round=%d min_us=%.2f p50_us=%.2f max_us=%.2f tflops=%.1f\n",
              us.size(), per_round, us.front(), med, us.back(), flops(p) / (med * 1e-6) / 1e12);
  std::fflush(stdout);
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return 0;
}

int run_stress(const Options& o, const Kernel& k, Problem& p) {
  std::vector<uint16_t> first(p.elems), cur(p.elems);
  long first_failure = -1;
  std::string kind = "none", err;
  size_t mismatched = 0;
  for (int i = 1; i <= o.launches; ++i) {
    poison(p);
    cudaError_t e = launch(k, p, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      first_failure = first_failure < 0 ? i : first_failure;
      kind = kind == "none" ? "error" : kind;
      err = cudaGetErrorName(e);
      break;  // the context is gone after a sticky error
    }
    CK(cudaMemcpy(cur.data(), p.dout.data(), p.elems * 2, cudaMemcpyDeviceToHost));
    const size_t guard = p.dout.damaged();
    if (i == 1) {
      first = cur;
    } else if (std::memcmp(first.data(), cur.data(), p.elems * 2) != 0) {
      ++mismatched;
      if (first_failure < 0) {
        first_failure = i;
        kind = "mismatch";
      }
    }
    if (guard && first_failure < 0) {
      first_failure = i;
      kind = "guard";
    }
  }
  print_head("stress", o, k, p);
  std::printf(" launches=%d mismatched=%zu first_failure=%ld kind=%s error=%s\n", o.launches,
              mismatched, first_failure, kind.c_str(), err.empty() ? "none" : err.c_str());
  std::fflush(stdout);
  return first_failure < 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("error stage=device cuda=%s\n", cudaGetErrorName(e));
    return 4;
  }
  Kernel k = load(o.cubin);
  int status = 0;
  uint64_t seed = o.seed;
  for (const Shape& sh : o.shapes) {
    if (sh.d != k.info.head_dim) continue;
    for (const std::string& dt : o.dtypes) {
      for (int causal : o.causal) {
        Problem p;
        make_problem(p, sh, dt == "bf16", causal, seed++);
        int rc = 0;
        if (o.mode == "check" || o.mode == "once") {
          rc = run_check(o, k, p, o.mode == "once");
        } else if (o.mode == "bench") {
          rc = run_bench(o, k, p);
        } else if (o.mode == "stress") {
          rc = run_stress(o, k, p);
        } else {
          std::fprintf(stderr, "unknown mode %s\n", o.mode.c_str());
          return 2;
        }
        status |= rc;
        free_problem(p);
        if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
          std::printf("error stage=after-run context unusable\n");
          return 1;
        }
      }
    }
  }
  return status;
}
