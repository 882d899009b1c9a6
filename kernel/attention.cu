// FlashAttention-2 style forward pass on tensor cores (mma.sync m16n8k16, ldmatrix, cp.async).
//
// O = softmax(Q K^T * softmax_scale [+ causal mask]) V for tensors [batch, heads, seq_len,
// HEAD_DIM] in fp16 or bf16, contiguous, with fp32 accumulation and an online (streaming) softmax.
//
// Build (one cubin per named config):
//   nvcc -cubin -O3 -lineinfo -arch=sm_90 -Xptxas -v \
//        -DBLOCK_M=128 -DBLOCK_N=48 -DSTAGES=2 -DWARPS=4 -DHEAD_DIM=128 -o k.cubin attention.cu
//
// Kernel ABI (the entry points are written once, in attention_abi.cuh, included at the end):
//   grid (ceil(seq_len / BLOCK_M), batch * heads), WARPS * 32 threads,
//   ATTN_SMEM_BYTES of dynamic shared memory (above 48 KB the launcher raises the limit).
//
// Work split. A block owns BLOCK_M query rows of one (batch, head). Each of its WARPS warps owns
// BLOCK_M / WARPS rows, that is M_TILES tiles of 16 rows, and walks every key/value tile of
// BLOCK_N keys: S = Q K^T (registers), online softmax on S, O += P V (registers). The Q tile is
// staged in shared memory and read into tensor-core fragments with ldmatrix; K and V tiles stream
// through a STAGES-deep ring of shared-memory buffers filled by cp.async. Key/value tiles are
// visited from the last one down to the first, so the tiles that need a mask (the causal diagonal
// and the ragged tail) come first and the rest run without mask arithmetic.
//
// Numerics. Scores are kept unscaled; the scale is folded into the exp2 argument
// (softmax_scale * log2(e)), so softmax_scale must be positive. A row whose keys are all masked so
// far has a running maximum of -inf; it is treated as 0 when used as the exp2 offset, so such a row
// contributes exp2(-inf) = 0 and a row with no visible key at all is written as zeros, never NaN.
//
// Configs (ptxas 13.0, sm_90: 0 spills, no local memory; timings in kernel/notes/):
//   HEAD_DIM 64:  BLOCK_M=128 BLOCK_N=64 STAGES=2 WARPS=4   long sequences, causal or not
//                 BLOCK_M=128 BLOCK_N=96 STAGES=2 WARPS=4   long sequences, non-causal
//                 BLOCK_M=64  BLOCK_N=128 STAGES=2 WARPS=4  short sequences (more blocks)
//                 BLOCK_M=64  BLOCK_N=64 STAGES=2 WARPS=4   short sequences
//   HEAD_DIM 128: BLOCK_M=128 BLOCK_N=48 STAGES=2 WARPS=4   long sequences, causal or not
//                 BLOCK_M=128 BLOCK_N=32 STAGES=2 WARPS=4   fewer registers (239)
//                 BLOCK_M=64  BLOCK_N=64 STAGES=2 WARPS=4   short sequences
// With WARPS=4 and BLOCK_M=128 each warp owns 32 rows (two 16-row tiles), so every K/V fragment
// read from shared memory feeds two mma instructions; BLOCK_N=64 at HEAD_DIM 128 needs more than
// 255 registers and spills.
//
// Fault hooks. kernel/faults/*.cu define one FAULT_* macro and include this file to plant one
// defect each; a normal build defines none of them and compiles none of that code.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef WARPS
#define WARPS 4
#endif
// Minimum resident blocks per SM promised to the register allocator (__launch_bounds__).
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// 1: the Q fragments are read from shared memory once and kept in registers for the whole loop;
// 0: they are re-read from shared memory with ldmatrix for every key/value tile (fewer registers).
#ifndef Q_IN_REGS
#if (BLOCK_M / WARPS) >= 32 && HEAD_DIM >= 128
#define Q_IN_REGS 0
#else
#define Q_IN_REGS 1
#endif
#endif

#define ATTN_ABI_VERSION 1
#define ATTN_THREADS (WARPS * 32)
#define ATTN_ROWS_PER_WARP (BLOCK_M / WARPS)
#define ATTN_M_TILES (ATTN_ROWS_PER_WARP / 16)
#define ATTN_N_TILES (BLOCK_N / 8)
#define ATTN_D_TILES (HEAD_DIM / 8)
#define ATTN_CHUNKS (HEAD_DIM / 8)
#define ATTN_ROW_BYTES (HEAD_DIM * 2)
#define ATTN_Q_BYTES (BLOCK_M * HEAD_DIM * 2)
#define ATTN_KV_STAGE_BYTES (BLOCK_N * HEAD_DIM * 2)
#define ATTN_SMEM_BYTES (ATTN_Q_BYTES + 2 * STAGES * ATTN_KV_STAGE_BYTES)

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM must be 64 or 128");
static_assert(BLOCK_M % (16 * WARPS) == 0, "each warp owns a whole number of 16-row tiles");
static_assert(ATTN_M_TILES >= 1 && ATTN_M_TILES <= 4, "1 to 4 row tiles per warp");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 256, "BLOCK_N: a multiple of 16");
static_assert(STAGES >= 2 && STAGES <= 4, "STAGES: 2 to 4");
static_assert(ATTN_SMEM_BYTES <= 227 * 1024, "shared memory above the sm_90 per-block limit");

namespace attn {

#include "attention_common.cuh"

// Shared-memory tiles are rows of HEAD_DIM elements split in 16-byte chunks; chunk c of row r is
// stored at chunk slot c ^ (r & 7). Eight consecutive rows at one logical chunk then fall in eight
// different bank groups, so ldmatrix, cp.async and the epilogue stores are free of bank conflicts.
__device__ __forceinline__ uint32_t swizzled_offset(int row, int chunk) {
  return static_cast<uint32_t>((row * ATTN_CHUNKS + (chunk ^ (row & 7))) * 16);
}

// Offset of (row, chunk ^ x) given off = swizzled_offset(row, chunk), for any x < ATTN_CHUNKS:
// the chunk field of an offset is bits 4 and up below ATTN_ROW_BYTES, and the swizzle is an xor on
// it, so xors compose. Used as (row, c + 2k) = (row, c ^ 2k) for c in {0, 1}.
__device__ __forceinline__ uint32_t xor_chunk(uint32_t off, int x) {
  return off ^ static_cast<uint32_t>(x * 16);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Element-type traits: the mma instruction and the fp32 -> packed pair conversion.
template <typename T>
struct Elem;

template <>
struct Elem<__half> {
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

template <>
struct Elem<__nv_bfloat16> {
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

// Thread `tid` copies chunk (tid % ATTN_CHUNKS) of rows (tid / ATTN_CHUNKS) + i * kLoadRowStep.
// kLoadRowStep is a multiple of 8, so a thread's swizzle term (row & 7) is the same on every pass
// and its shared and global addresses advance by constants.
constexpr int kLoadRowStep = ATTN_THREADS / ATTN_CHUNKS;
static_assert(ATTN_THREADS % ATTN_CHUNKS == 0 && kLoadRowStep % 8 == 0, "load layout");

// Copies ROWS rows into a swizzled shared tile. `dst` is the tile's address plus this thread's
// offset, `src` this thread's first global chunk, `rows_left` how many rows from this thread's
// first row are valid; invalid rows are zero-filled without reading global memory (`safe` is an
// in-bounds address handed to cp.async with a source size of 0).
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t dst, const char* src, int rows_left,
                                          const char* safe, int first_row) {
  constexpr int kPasses = (ROWS + kLoadRowStep - 1) / kLoadRowStep;
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    if (ROWS % kLoadRowStep == 0 || first_row + i * kLoadRowStep < ROWS) {
      const bool valid = i * kLoadRowStep < rows_left;
      cp_async_16(dst + i * kLoadRowStep * ATTN_ROW_BYTES,
                  valid ? src + static_cast<size_t>(i) * kLoadRowStep * ATTN_ROW_BYTES : safe,
                  valid);
    }
  }
}

#if defined(FAULT_LAUNCH_STATE)
// Row log-sum-exp trace kept across launches in a ring of FAULT_LSE_SLOTS slots. The slot index
// is a launch sequence number that is advanced by the last block of each launch and never wrapped.
#define FAULT_LSE_SLOTS 4
#define FAULT_LSE_SLOT_ROWS 65536
__device__ float fault_lse_ring[FAULT_LSE_SLOTS * FAULT_LSE_SLOT_ROWS];
__device__ unsigned int fault_launch_seq;
__device__ unsigned int fault_blocks_done;
#endif

template <typename T>
__device__ __forceinline__ void attention_fwd_impl(const T* __restrict__ q, const T* __restrict__ k,
                                                   const T* __restrict__ v, T* __restrict__ o,
                                                   int seq_len, float softmax_scale, int causal) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  // Causal blocks with more rows have more work: start those first.
  const int m_block =
      causal ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
  const int m0 = m_block * BLOCK_M;
  const size_t head_offset = static_cast<size_t>(blockIdx.y) * seq_len * HEAD_DIM;
  q += head_offset;
  k += head_offset;
  v += head_offset;
  o += head_offset;

#if defined(FAULT_LAUNCH_STATE)
  const unsigned int launch_seq = *static_cast<volatile unsigned int*>(&fault_launch_seq);
#endif

  const uint32_t s_q = smem_address(smem);
  const uint32_t s_k = s_q + ATTN_Q_BYTES;
  const uint32_t s_v = s_k + STAGES * ATTN_KV_STAGE_BYTES;

#if defined(FAULT_TAIL_OFF_BY_ONE)
  const int kv_limit = seq_len + 1;
#else
  const int kv_limit = seq_len;
#endif

  const int kv_end = causal ? min(seq_len, m0 + BLOCK_M) : seq_len;
  const int n_tiles = (kv_end + BLOCK_N - 1) / BLOCK_N;
  // Tiles at or after first_masked need the mask: the causal diagonal, and the ragged last tile.
  int first_masked = n_tiles;
  if (causal) first_masked = min(first_masked, m0 / BLOCK_N);
  if (seq_len % BLOCK_N != 0) first_masked = min(first_masked, seq_len / BLOCK_N);

  // Prologue: Q plus the first STAGES-1 key/value tiles (in visiting order: last tile first).
  // Per-thread copy coordinates (see load_tile).
  const int ld_row = tid / ATTN_CHUNKS;
  const uint32_t ld_smem = swizzled_offset(ld_row, tid % ATTN_CHUNKS);
  const size_t ld_gmem = static_cast<size_t>(ld_row) * ATTN_ROW_BYTES + (tid % ATTN_CHUNKS) * 16;
  const char* k_thread = reinterpret_cast<const char*>(k) + ld_gmem;
  const char* v_thread = reinterpret_cast<const char*>(v) + ld_gmem;
  const char* safe = reinterpret_cast<const char*>(q);
  load_tile<BLOCK_M>(
      s_q + ld_smem,
      reinterpret_cast<const char*>(q) + ld_gmem + static_cast<size_t>(m0) * ATTN_ROW_BYTES,
      seq_len - m0 - ld_row, safe, ld_row);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) {
      const int j = n_tiles - 1 - s;
      const size_t tile = static_cast<size_t>(j) * BLOCK_N * ATTN_ROW_BYTES;
      const int rows_left = kv_limit - j * BLOCK_N - ld_row;
      load_tile<BLOCK_N>(s_k + s * ATTN_KV_STAGE_BYTES + ld_smem, k_thread + tile, rows_left, safe,
                         ld_row);
      load_tile<BLOCK_N>(s_v + s * ATTN_KV_STAGE_BYTES + ld_smem, v_thread + tile, rows_left, safe,
                         ld_row);
    }
    cp_async_commit();
  }

  const float scale_log2 = softmax_scale * kLog2e;
  const int warp_row0 = warp * ATTN_ROWS_PER_WARP;  // first row of this warp inside the block
  const int g = lane >> 2;                          // accumulator row within a 16-row tile
  const int tq = lane & 3;                          // accumulator column pair

  float acc_o[ATTN_M_TILES][ATTN_D_TILES][4];
  float row_max[ATTN_M_TILES][2];
  float row_sum[ATTN_M_TILES][2];
#pragma unroll
  for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
    for (int dt = 0; dt < ATTN_D_TILES; ++dt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] = 0.0f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_max[mt][h] = kNegInf;
      row_sum[mt][h] = 0.0f;
    }
  }

  // ldmatrix lane addressing (see the PTX ISA fragment layouts for m16n8k16), as the offset of
  // the row and chunk this lane points at for the first 16x16 block; later blocks add whole rows
  // (16 * ATTN_ROW_BYTES) and flip chunk bits with xor_chunk. All row groups start at a multiple of
  // 8, so the swizzle term (row & 7) is the same for every block. A (Q, row major): lanes 0-15 give
  // rows 0-15 at chunk 0, lanes 16-31 the same rows at chunk 1.
  const uint32_t q_lane = swizzled_offset(warp_row0 + (lane & 15), lane >> 4);
  // B for S = Q K^T (K row major = B column major): lanes 0-7 keys 0-7 chunk 0, 8-15 keys 0-7
  // chunk 1, 16-23 keys 8-15 chunk 0, 24-31 keys 8-15 chunk 1.
  const uint32_t k_lane = swizzled_offset((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  // B for O += P V (V row major, read transposed): lanes 0-15 keys 0-15 at chunk 0, 16-31 at 1.
  const uint32_t v_lane = swizzled_offset(lane & 15, lane >> 4);

#if Q_IN_REGS
  uint32_t q_frag[ATTN_M_TILES][HEAD_DIM / 16][4];
#endif

  for (int it = 0; it < n_tiles; ++it) {
    const int j = n_tiles - 1 - it;
    const int stage = it % STAGES;
    cp_async_wait<STAGES - 2>();
#if !defined(FAULT_NO_KV_BARRIER)
    // Tile `it` is now visible to every thread, and every warp is done with tile it-1, whose
    // stage the prefetch below overwrites.
    __syncthreads();
#endif
    {
      const int pf = it + STAGES - 1;
      if (pf < n_tiles) {
        const int pj = n_tiles - 1 - pf;
        const int ps = pf % STAGES;
        const size_t tile = static_cast<size_t>(pj) * BLOCK_N * ATTN_ROW_BYTES;
        const int rows_left = kv_limit - pj * BLOCK_N - ld_row;
        load_tile<BLOCK_N>(s_k + ps * ATTN_KV_STAGE_BYTES + ld_smem, k_thread + tile, rows_left,
                           safe, ld_row);
        load_tile<BLOCK_N>(s_v + ps * ATTN_KV_STAGE_BYTES + ld_smem, v_thread + tile, rows_left,
                           safe, ld_row);
      }
      cp_async_commit();
    }

#if Q_IN_REGS
    if (it == 0) {
#pragma unroll
      for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
        for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
          ldmatrix_x4(q_frag[mt][kk], s_q + xor_chunk(q_lane, 2 * kk) + mt * 16 * ATTN_ROW_BYTES);
        }
      }
    }
#endif

    // S = Q K^T for this warp's rows and the BLOCK_N keys of tile j.
    const uint32_t k_tile = s_k + stage * ATTN_KV_STAGE_BYTES;
    const uint32_t v_tile = s_v + stage * ATTN_KV_STAGE_BYTES;
    float acc_s[ATTN_M_TILES][ATTN_N_TILES][4];
#pragma unroll
    for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
      for (int nt = 0; nt < ATTN_N_TILES; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.0f;
      }
    }
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
      uint32_t qa[ATTN_M_TILES][4];
#pragma unroll
      for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#if Q_IN_REGS
#pragma unroll
        for (int e = 0; e < 4; ++e) qa[mt][e] = q_frag[mt][kk][e];
#else
        ldmatrix_x4(qa[mt], s_q + xor_chunk(q_lane, 2 * kk) + mt * 16 * ATTN_ROW_BYTES);
#endif
      }
#pragma unroll
      for (int np = 0; np < ATTN_N_TILES / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, k_tile + xor_chunk(k_lane, 2 * kk) + np * 16 * ATTN_ROW_BYTES);
#pragma unroll
        for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
          Elem<T>::mma(acc_s[mt][2 * np], qa[mt], kb[0], kb[1]);
          Elem<T>::mma(acc_s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    // Mask: keys past the end of the sequence, and keys after the query row when causal.
    if (j >= first_masked) {
#pragma unroll
      for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
        for (int nt = 0; nt < ATTN_N_TILES; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = j * BLOCK_N + nt * 8 + 2 * tq + (e & 1);
            const int row = m0 + warp_row0 + mt * 16 + g + ((e >> 1) << 3);
            if (key >= kv_limit || (causal && key > row)) acc_s[mt][nt][e] = kNegInf;
          }
        }
      }
    }

    // Online softmax: new running maximum, rescale of O and of the partial row sums, P = exp2.
#pragma unroll
    for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = row_max[mt][h];
#pragma unroll
        for (int nt = 0; nt < ATTN_N_TILES; ++nt) {
          mx = fmaxf(mx, fmaxf(acc_s[mt][nt][2 * h], acc_s[mt][nt][2 * h + 1]));
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
#if defined(FAULT_NAN_ROWMAX)
        const float offset = mx * scale_log2;
#else
        // A row with every key masked so far keeps -inf; use 0 so that exp2 sees -inf, not NaN.
        const float offset = (mx == kNegInf) ? 0.0f : mx * scale_log2;
#endif
        const float alpha = fast_exp2(row_max[mt][h] * scale_log2 - offset);
        row_max[mt][h] = mx;
        row_sum[mt][h] *= alpha;
#pragma unroll
        for (int dt = 0; dt < ATTN_D_TILES; ++dt) {
          acc_o[mt][dt][2 * h] *= alpha;
          acc_o[mt][dt][2 * h + 1] *= alpha;
        }
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < ATTN_N_TILES; ++nt) {
          const float p0 = fast_exp2(fmaf(acc_s[mt][nt][2 * h], scale_log2, -offset));
          const float p1 = fast_exp2(fmaf(acc_s[mt][nt][2 * h + 1], scale_log2, -offset));
          sum += p0 + p1;
          acc_s[mt][nt][2 * h] = p0;
          acc_s[mt][nt][2 * h + 1] = p1;
        }
        row_sum[mt][h] += sum;
      }
    }

    // O += P V.
#pragma unroll
    for (int ks = 0; ks < BLOCK_N / 16; ++ks) {
      // A fragment of P: n-tile 2ks gives registers 0 and 1, n-tile 2ks+1 gives 2 and 3.
      uint32_t p_frag[ATTN_M_TILES][4];
#pragma unroll
      for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          p_frag[mt][2 * half] =
              Elem<T>::pack(acc_s[mt][2 * ks + half][0], acc_s[mt][2 * ks + half][1]);
          p_frag[mt][2 * half + 1] =
              Elem<T>::pack(acc_s[mt][2 * ks + half][2], acc_s[mt][2 * ks + half][3]);
        }
      }
#pragma unroll
      for (int dp = 0; dp < ATTN_D_TILES / 2; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, v_tile + xor_chunk(v_lane, 2 * dp) + ks * 16 * ATTN_ROW_BYTES);
#pragma unroll
        for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
          Elem<T>::mma(acc_o[mt][2 * dp], p_frag[mt], vb[0], vb[1]);
          Elem<T>::mma(acc_o[mt][2 * dp + 1], p_frag[mt], vb[2], vb[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

#if defined(FAULT_UNINIT_ACC)
  // Row sums are combined in a global scratch accumulator that is never cleared before use.
  __shared__ float* fault_scratch;
  if (tid == 0) fault_scratch = static_cast<float*>(malloc(BLOCK_M * sizeof(float)));
  __syncthreads();
#endif

  // Epilogue: normalise, convert, stage this warp's rows in its own part of the Q tile (only this
  // warp ever reads those rows), then write 16-byte chunks of whole rows to global memory.
  __syncwarp();
#pragma unroll
  for (int mt = 0; mt < ATTN_M_TILES; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[mt][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
#if defined(FAULT_UNINIT_ACC)
      {
        const int r = warp_row0 + mt * 16 + g + h * 8;
        if (tq == 0) fault_scratch[r] += l;
        __syncwarp();
        l = fault_scratch[r];
      }
#endif
#if defined(FAULT_LAUNCH_STATE)
      {
        const int row = m0 + warp_row0 + mt * 16 + g + h * 8;
        const size_t idx = static_cast<size_t>(launch_seq) * FAULT_LSE_SLOT_ROWS +
                           static_cast<size_t>(blockIdx.y) * seq_len + row;
        if (tq == 0 && row < seq_len &&
            static_cast<size_t>(blockIdx.y) * seq_len + row < FAULT_LSE_SLOT_ROWS) {
          fault_lse_ring[idx] = row_max[mt][h] * softmax_scale + __logf(l);
        }
      }
#endif
      const float inv = l > 0.0f ? __frcp_rn(l) : 0.0f;
      const int r = warp_row0 + mt * 16 + g + h * 8;
#pragma unroll
      for (int dt = 0; dt < ATTN_D_TILES; ++dt) {
        const uint32_t packed =
            Elem<T>::pack(acc_o[mt][dt][2 * h] * inv, acc_o[mt][dt][2 * h + 1] * inv);
        const uint32_t addr = s_q + swizzled_offset(r, dt) + tq * 4;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(packed) : "memory");
      }
    }
  }
  __syncwarp();
  {
    constexpr int kWarpChunks = ATTN_ROWS_PER_WARP * ATTN_CHUNKS;
    char* out = reinterpret_cast<char*>(o);
#pragma unroll
    for (int i = lane; i < kWarpChunks; i += 32) {
      const int r = warp_row0 + i / ATTN_CHUNKS;
      const int c = i % ATTN_CHUNKS;
      const int grow = m0 + r;
      if (grow < seq_len) {
        uint4 val;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(val.x), "=r"(val.y), "=r"(val.z), "=r"(val.w)
                     : "r"(s_q + swizzled_offset(r, c)));
        *reinterpret_cast<uint4*>(out + (static_cast<size_t>(grow) * HEAD_DIM + c * 8) * 2) = val;
      }
    }
  }

#if defined(FAULT_UNINIT_ACC)
  __syncthreads();
  if (tid == 0) free(fault_scratch);
#endif
#if defined(FAULT_LAUNCH_STATE)
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const unsigned int total = gridDim.x * gridDim.y;
    if (atomicAdd(&fault_blocks_done, 1u) == total - 1) {
      fault_blocks_done = 0;
      atomicAdd(&fault_launch_seq, 1u);
    }
  }
#endif
}

}  // namespace attn

#define ATTN_MIN_BLOCKS MIN_BLOCKS
#include "attention_abi.cuh"
