// A small attention forward pass on tensor cores (WMMA: f16 inputs, f32 accumulation).
//
//   o[b,h,i,:] = sum_j softmax_j(q[b,h,i,:] . k[b,h,j,:] / sqrt(64)) v[b,h,j,:]
//
// with j <= i when causal. Written for clarity rather than speed: one block of 4 warps per
// 64 query rows of one (batch, head); each warp owns 16 of those rows. The block walks the keys
// in tiles of 32 and keeps a running (online) softmax per row, so scores are never stored for
// the whole sequence:
//
//   1. S_w = Q_w K_tile^T             WMMA, 16x32 scores per warp, f32, into shared memory
//   2. online softmax                  lane r (< 16) owns row r: new running max m, rescale
//                                      factor alpha = exp(m_old - m), P = exp(S - m) as f16
//   3. O_w = alpha * O_w + P_w V_tile  O_w (16x64 f32) lives in shared memory; WMMA adds P V
//
// Rows past the end of the sequence (S not a multiple of 64) are zero-filled in shared memory
// and never stored; keys past the end are masked like causal ones.
//
// Besides o, each launch writes the log-sum-exp of every row's scaled scores (the statistic a
// backward pass needs) into one buffer of a ring of kAttnLseRingSlots, so that consecutive
// launches never overwrite the statistics a consumer of the previous launch may still read.
// The ring's table and its position live in device memory; the last block of a launch to finish
// advances the position for the next launch.
//
// Planted faults (compile-time, off by default), for exercising debugging tools:
//   -DPLANT_WMMA_LOCAL=1   the Q fragments are loaded from a per-thread (local memory) copy of
//                          the warp's Q rows. WMMA loads and stores need shared or global
//                          memory: ptxas warns "cannot perform wmma load or store on local
//                          memory" and emits a trap, so every launch fails.
//   -DPLANT_LAUNCH_RING=1  the ring position is advanced without wrapping around. Launches
//                          1..8 of a process are correct; launch 9 takes slot 8 of the table,
//                          which was never filled (a null pointer), and its log-sum-exp stores
//                          fault with an illegal address.
#include "attn_fwd.h"

#include <mma.h>

#include <cstdint>

#ifndef PLANT_WMMA_LOCAL
#define PLANT_WMMA_LOCAL 0
#endif
#ifndef PLANT_LAUNCH_RING
#define PLANT_LAUNCH_RING 0
#endif

namespace wmma = nvcuda::wmma;

namespace {

constexpr int kD = kAttnHeadDim;   // head dimension
constexpr int kBlockM = 64;        // query rows per block
constexpr int kBlockN = 32;        // keys per tile
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = kBlockM / kWarps;  // 16: one WMMA tile of rows
constexpr int kFrag = 16;                       // WMMA m = n = k
constexpr int kLseRingCapacity = 16;            // the table has room for 16 slots

static_assert(kRowsPerWarp == kFrag, "each warp owns one 16-row WMMA tile");
static_assert(kRowsPerWarp <= 32, "the softmax step maps one row to each lane");

// Row pitches of the per-warp buffers. In the softmax step lane r walks row r, so all lanes
// read the same column at once; the padding spreads those rows over the shared-memory banks
// (at most 2-way conflicts). WMMA needs ldm a multiple of 16 bytes.
constexpr int kSPitch = kBlockN + 4;  // floats
constexpr int kPPitch = kBlockN + 8;  // halves
constexpr int kOPitch = kD + 4;       // floats

// Everything a block keeps in shared memory (47 KiB, under the 48 KiB static limit). WMMA
// needs 32-byte aligned tile pointers: every array and every warp's slice below is a
// multiple of 32 bytes.
struct __align__(32) Smem {
  __half q[kBlockM][kD];                  // the block's query rows
  __half k[kBlockN][kD];                  // current key tile
  __half v[kBlockN][kD];                  // current value tile
  float s[kWarps][kRowsPerWarp][kSPitch];  // each warp's scores for the current tile
  __half p[kWarps][kRowsPerWarp][kPPitch]; // ... and its probabilities, as WMMA input
  float o[kWarps][kRowsPerWarp][kOPitch];  // each warp's unnormalised output rows
};
static_assert(sizeof(Smem) <= 48 * 1024, "static shared memory is limited to 48 KiB");

__device__ float* g_lse_ring[kLseRingCapacity];  // filled by attn_fwd_set_lse_ring()
__device__ unsigned int g_ring_pos;              // the slot the next launch writes
__device__ unsigned int g_blocks_done;           // blocks of the current launch that finished

// Copies rows [row0, row0 + ROWS) of a [seq_len, kD] f16 matrix into dst, 16 bytes per thread
// and step, zero-filling the rows at and past seq_len.
template <int ROWS>
__device__ void load_tile(__half (*dst)[kD], const __half* src, int row0, int seq_len) {
  constexpr int kVecsPerRow = kD / 8;  // 8 halves per uint4
  for (int i = threadIdx.x; i < ROWS * kVecsPerRow; i += kThreads) {
    const int r = i / kVecsPerRow;
    const int c = (i % kVecsPerRow) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row0 + r < seq_len) val = *reinterpret_cast<const uint4*>(src + size_t(row0 + r) * kD + c);
    *reinterpret_cast<uint4*>(&dst[r][c]) = val;
  }
}

}  // namespace

// grid: (ceil(seq_len / 64), heads, batch); block: 128 threads.
__global__ void __launch_bounds__(kThreads)
    attn_fwd_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                    const __half* __restrict__ v, __half* __restrict__ o, int seq_len, float scale,
                    bool causal) {
  __shared__ Smem sm;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * kBlockM;             // the block's first query row
  const int w0 = m0 + warp * kRowsPerWarp;         // the warp's first query row
  const size_t head = size_t(blockIdx.z) * gridDim.y + blockIdx.y;
  const size_t head_offset = head * seq_len * kD;  // start of this (batch, head) in q, k, v, o
  const __half* qh = q + head_offset;
  const __half* kh = k + head_offset;
  const __half* vh = v + head_offset;
  __half* oh = o + head_offset;

  // This launch's statistics buffer. Read by every block before any block can advance the
  // position (the advance happens after all blocks have finished, below).
  const unsigned int slot = *static_cast<volatile unsigned int*>(&g_ring_pos);
  float* lse = g_lse_ring[slot] + head * seq_len;

  load_tile<kBlockM>(sm.q, qh, m0, seq_len);
  __syncthreads();

  // The warp's 16 query rows as four 16x16 A fragments, kept in registers for every key tile.
  wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> q_frag[kD / kFrag];
#if PLANT_WMMA_LOCAL
  // Planted: a per-thread copy of the warp's Q rows. Its address is a local-memory address.
  __half q_local[kRowsPerWarp * kD];
  for (int i = 0; i < kRowsPerWarp * kD; ++i) q_local[i] = sm.q[warp * kRowsPerWarp + i / kD][i % kD];
  #pragma unroll
  for (int kk = 0; kk < kD / kFrag; ++kk) wmma::load_matrix_sync(q_frag[kk], q_local + kk * kFrag, kD);
#else
  #pragma unroll
  for (int kk = 0; kk < kD / kFrag; ++kk) {
    wmma::load_matrix_sync(q_frag[kk], &sm.q[warp * kRowsPerWarp][kk * kFrag], kD);
  }
#endif

  // Running softmax state of row w0 + lane, in lanes 0..15.
  float row_max = -INFINITY;
  float row_sum = 0.0f;
  for (int i = lane; i < kRowsPerWarp * kD; i += 32) sm.o[warp][i / kD][i % kD] = 0.0f;

  // With a causal mask no row of this block looks past its last valid row.
  const int last_row = min(m0 + kBlockM, seq_len) - 1;
  const int n_end = causal ? last_row + 1 : seq_len;

  for (int n0 = 0; n0 < n_end; n0 += kBlockN) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    load_tile<kBlockN>(sm.k, kh, n0, seq_len);
    load_tile<kBlockN>(sm.v, vh, n0, seq_len);
    __syncthreads();

    // 1. Scores: S_w (16 x 32) = Q_w (16 x 64) K_tile^T (64 x 32). K is row-major [key][d],
    //    which is K^T in column-major order: a col_major B fragment with leading dimension kD.
    #pragma unroll
    for (int j = 0; j < kBlockN / kFrag; ++j) {
      wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> s_frag;
      wmma::fill_fragment(s_frag, 0.0f);
      #pragma unroll
      for (int kk = 0; kk < kD / kFrag; ++kk) {
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::col_major> k_frag;
        wmma::load_matrix_sync(k_frag, &sm.k[j * kFrag][kk * kFrag], kD);
        wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
      }
      wmma::store_matrix_sync(&sm.s[warp][0][j * kFrag], s_frag, kSPitch, wmma::mem_row_major);
    }
    __syncwarp();

    // 2. Online softmax: lane r updates row w0 + r. The loops are unrolled so that the
    //    row's scores live in registers and the shared-memory accesses overlap.
    if (lane < kRowsPerWarp) {
      const int row = w0 + lane;
      float x[kBlockN];  // the row's scaled scores, -inf where masked
      float tile_max = -INFINITY;
      #pragma unroll
      for (int c = 0; c < kBlockN; ++c) {
        const int key = n0 + c;
        const bool masked = key >= seq_len || (causal && key > row);
        x[c] = masked ? -INFINITY : sm.s[warp][lane][c] * scale;
        tile_max = fmaxf(tile_max, x[c]);
      }
      const float new_max = fmaxf(row_max, tile_max);
      // new_max stays -inf only while every key so far is masked for this row: nothing to add.
      const float alpha = new_max == -INFINITY ? 1.0f : expf(row_max - new_max);
      float tile_sum = 0.0f;
      #pragma unroll
      for (int c = 0; c < kBlockN; ++c) {
        const float p = x[c] == -INFINITY ? 0.0f : expf(x[c] - new_max);
        sm.p[warp][lane][c] = __float2half(p);
        tile_sum += p;
      }
      row_sum = row_sum * alpha + tile_sum;
      row_max = new_max;
      #pragma unroll 16
      for (int d = 0; d < kD; ++d) sm.o[warp][lane][d] *= alpha;
    }
    __syncwarp();

    // 3. O_w (16 x 64) += P_w (16 x 32) V_tile (32 x 64), accumulated in f32.
    #pragma unroll
    for (int j = 0; j < kD / kFrag; ++j) {
      wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> o_frag;
      wmma::load_matrix_sync(o_frag, &sm.o[warp][0][j * kFrag], kOPitch, wmma::mem_row_major);
      #pragma unroll
      for (int kk = 0; kk < kBlockN / kFrag; ++kk) {
        wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> p_frag;
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major> v_frag;
        wmma::load_matrix_sync(p_frag, &sm.p[warp][0][kk * kFrag], kPPitch);
        wmma::load_matrix_sync(v_frag, &sm.v[kk * kFrag][j * kFrag], kD);
        wmma::mma_sync(o_frag, p_frag, v_frag, o_frag);
      }
      wmma::store_matrix_sync(&sm.o[warp][0][j * kFrag], o_frag, kOPitch, wmma::mem_row_major);
    }
    __syncwarp();
  }

  // Normalise (lane r: row w0 + r; row_sum > 0 since key 0 is never masked) ...
  if (lane < kRowsPerWarp) {
    const float inv_sum = 1.0f / row_sum;
    #pragma unroll 16
    for (int d = 0; d < kD; ++d) sm.o[warp][lane][d] *= inv_sum;
    if (w0 + lane < seq_len) lse[w0 + lane] = row_max + logf(row_sum);
  }
  __syncwarp();
  // ... and store the valid rows, a row at a time: lane c writes columns c and c + 32.
  for (int r = 0; r < kRowsPerWarp && w0 + r < seq_len; ++r) {
    __half* o_row = oh + size_t(w0 + r) * kD;
    o_row[lane] = __float2half(sm.o[warp][r][lane]);
    o_row[lane + 32] = __float2half(sm.o[warp][r][lane + 32]);
  }

  // The last block of the launch to finish advances the ring for the next launch. The fence
  // orders this block's reads of g_ring_pos before its increment of g_blocks_done.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
    if (atomicAdd(&g_blocks_done, 1u) == blocks - 1) {
      g_blocks_done = 0;
#if PLANT_LAUNCH_RING
      g_ring_pos = slot + 1;  // planted: no wrap-around
#else
      g_ring_pos = (slot + 1) % kAttnLseRingSlots;
#endif
    }
  }
}

cudaError_t attn_fwd_launch(const __half* q, const __half* k, const __half* v, __half* o, int batch,
                            int heads, int seq_len, bool causal, cudaStream_t stream) {
  if (batch <= 0 || heads <= 0 || seq_len <= 0 || heads > 65535 || batch > 65535) {
    return cudaErrorInvalidValue;
  }
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k),
                        static_cast<const void*>(v), static_cast<const void*>(o)}) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return cudaErrorMisalignedAddress;
  }
  const dim3 grid((seq_len + kBlockM - 1) / kBlockM, heads, batch);
  const float scale = 0.125f;  // 1 / sqrt(kD)
  attn_fwd_kernel<<<grid, kThreads, 0, stream>>>(q, k, v, o, seq_len, scale, causal);
  return cudaGetLastError();
}

cudaError_t attn_fwd_set_lse_ring(float* const* buffers) {
  return cudaMemcpyToSymbol(g_lse_ring, buffers, kAttnLseRingSlots * sizeof(float*));
}
