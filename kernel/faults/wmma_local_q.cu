// plants: a WMMA matrix_a fragment loaded from a thread-local array (Q staged per thread instead of in shared memory), the seed reports' root cause.
//
// Expected: ptxas warns "cannot perform wmma load or store on local memory" and the f16 entry's
// SASS ends in BPT.TRAP; every f16 launch fails (cudaErrorLaunchFailure; memcheck:
// "Trace/breakpoint trap"). The bf16 entry's WMMA loads compile to ordinary loads, which accept
// local memory, so it computes correct results slowly through a 2-4 KB stack frame (seen on an
// H200).
//
// A small WMMA variant of attention.cu with the same ABI: one warp per 16 query rows
// (threads = BLOCK_M / 16 * 32, WARPS is ignored), one shared K/V tile of BLOCK_N keys (STAGES is
// ignored and reported as 1), scores, probabilities and the output accumulator in shared scratch.
// It is the seed reports' structure: the Q rows are copied into a per-thread array and that array
// is handed to wmma::load_matrix_sync, which only accepts shared or global memory.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif

#define FW_WARPS (BLOCK_M / 16)
#define FW_THREADS (FW_WARPS * 32)
#define FW_KV_BYTES (BLOCK_N * HEAD_DIM * 2)
#define FW_WARP_BYTES (16 * BLOCK_N * 4 + 16 * BLOCK_N * 2 + 16 * HEAD_DIM * 4)
#define FW_SMEM_BYTES (2 * FW_KV_BYTES + FW_WARPS * FW_WARP_BYTES)

static_assert(BLOCK_M % 16 == 0 && BLOCK_N % 16 == 0 && HEAD_DIM % 16 == 0, "16-multiples");
static_assert(FW_SMEM_BYTES <= 227 * 1024, "shared memory above the sm_90 per-block limit");

template <typename T>
__device__ __forceinline__ T fw_from_float(float x);
template <>
__device__ __forceinline__ __half fw_from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fw_from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__device__ __forceinline__ void fw_attention(const T* q, const T* k, const T* v, T* o, int seq_len,
                                             float softmax_scale, int causal) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  T* s_k = reinterpret_cast<T*>(smem);
  T* s_v = reinterpret_cast<T*>(smem + FW_KV_BYTES);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  unsigned char* mine = smem + 2 * FW_KV_BYTES + warp * FW_WARP_BYTES;
  float* s_s = reinterpret_cast<float*>(mine);
  T* s_p = reinterpret_cast<T*>(mine + 16 * BLOCK_N * 4);
  float* s_o = reinterpret_cast<float*>(mine + 16 * BLOCK_N * 6);

  const size_t head = static_cast<size_t>(blockIdx.y) * seq_len * HEAD_DIM;
  q += head;
  k += head;
  v += head;
  o += head;
  const int m0 = blockIdx.x * BLOCK_M;
  const int row0 = m0 + warp * 16;

  // The defect: the warp's 16 query rows copied into a per-thread (local memory) array.
  T q_local[16 * HEAD_DIM];
  for (int i = 0; i < 16 * HEAD_DIM; ++i) {
    const int r = row0 + i / HEAD_DIM;
    q_local[i] =
        r < seq_len ? q[static_cast<size_t>(r) * HEAD_DIM + i % HEAD_DIM] : fw_from_float<T>(0.0f);
  }
  for (int i = lane; i < 16 * HEAD_DIM; i += 32) s_o[i] = 0.0f;
  float row_max = -__builtin_inff();
  float row_sum = 0.0f;
  const float scale_log2 = softmax_scale * 1.4426950408889634f;

  const int kv_end = causal ? min(seq_len, m0 + BLOCK_M) : seq_len;
  for (int n0 = 0; n0 < kv_end; n0 += BLOCK_N) {
    __syncthreads();
    for (int i = threadIdx.x; i < BLOCK_N * HEAD_DIM; i += FW_THREADS) {
      const int r = n0 + i / HEAD_DIM;
      const bool ok = r < seq_len;
      const size_t off = static_cast<size_t>(r) * HEAD_DIM + i % HEAD_DIM;
      s_k[i] = ok ? k[off] : fw_from_float<T>(0.0f);
      s_v[i] = ok ? v[off] : fw_from_float<T>(0.0f);
    }
    __syncthreads();

    for (int nt = 0; nt < BLOCK_N / 16; ++nt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.0f);
      for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
        wmma::load_matrix_sync(a, q_local + kk * 16, HEAD_DIM);
        wmma::load_matrix_sync(b, s_k + nt * 16 * HEAD_DIM + kk * 16, HEAD_DIM);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(s_s + nt * 16, c, BLOCK_N, wmma::mem_row_major);
    }
    __syncwarp();

    if (lane < 16) {
      const int row = row0 + lane;
      float mx = row_max;
      for (int j = 0; j < BLOCK_N; ++j) {
        const int key = n0 + j;
        const bool masked = key >= seq_len || (causal && key > row);
        const float s = masked ? -__builtin_inff() : s_s[lane * BLOCK_N + j];
        s_s[lane * BLOCK_N + j] = s;
        mx = fmaxf(mx, s);
      }
      const float offset = mx == -__builtin_inff() ? 0.0f : mx * scale_log2;
      const float alpha = exp2f(row_max * scale_log2 - offset);
      row_max = mx;
      float sum = 0.0f;
      for (int j = 0; j < BLOCK_N; ++j) {
        const float p = exp2f(s_s[lane * BLOCK_N + j] * scale_log2 - offset);
        sum += p;
        s_p[lane * BLOCK_N + j] = fw_from_float<T>(p);
      }
      row_sum = row_sum * alpha + sum;
      for (int d = 0; d < HEAD_DIM; ++d) s_o[lane * HEAD_DIM + d] *= alpha;
    }
    __syncwarp();

    for (int dt = 0; dt < HEAD_DIM / 16; ++dt) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::load_matrix_sync(c, s_o + dt * 16, HEAD_DIM, wmma::mem_row_major);
      for (int ks = 0; ks < BLOCK_N / 16; ++ks) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, s_p + ks * 16, BLOCK_N);
        wmma::load_matrix_sync(b, s_v + ks * 16 * HEAD_DIM + dt * 16, HEAD_DIM);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(s_o + dt * 16, c, HEAD_DIM, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (lane < 16 && row0 + lane < seq_len) {
    const float inv = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
    for (int d = 0; d < HEAD_DIM; ++d) {
      o[static_cast<size_t>(row0 + lane) * HEAD_DIM + d] =
          fw_from_float<T>(s_o[lane * HEAD_DIM + d] * inv);
    }
  }
}

extern "C" __global__ void __launch_bounds__(FW_THREADS)
    attention_fwd_f16(const void* q, const void* k, const void* v, void* o, int batch, int heads,
                      int seq_len, float softmax_scale, int causal) {
  (void)batch;
  (void)heads;
  fw_attention<__half>(static_cast<const __half*>(q), static_cast<const __half*>(k),
                       static_cast<const __half*>(v), static_cast<__half*>(o), seq_len,
                       softmax_scale, causal);
}

extern "C" __global__ void __launch_bounds__(FW_THREADS)
    attention_fwd_bf16(const void* q, const void* k, const void* v, void* o, int batch, int heads,
                       int seq_len, float softmax_scale, int causal) {
  (void)batch;
  (void)heads;
  fw_attention<__nv_bfloat16>(static_cast<const __nv_bfloat16*>(q),
                              static_cast<const __nv_bfloat16*>(k),
                              static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o),
                              seq_len, softmax_scale, causal);
}

// {abi_version, BLOCK_M, BLOCK_N, STAGES, threads_per_block, dynamic_smem_bytes, HEAD_DIM, 0}.
extern "C" __global__ void attention_launch_info(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = 1;
    out[1] = BLOCK_M;
    out[2] = BLOCK_N;
    out[3] = 1;
    out[4] = FW_THREADS;
    out[5] = FW_SMEM_BYTES;
    out[6] = HEAD_DIM;
    out[7] = 0;
  }
}
