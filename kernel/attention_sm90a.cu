// FlashAttention forward pass for Hopper (sm_90a): wgmma for S = Q K^T and O += P V.
//
// Same math, numerics and kernel ABI as kernel/attention.cu (the mma.sync path, for every other
// arch): O = softmax(Q K^T * softmax_scale [+ causal mask]) V for [batch, heads, seq_len,
// HEAD_DIM] fp16 or bf16 tensors, fp32 accumulation, online softmax; grid (ceil(seq_len /
// BLOCK_M), batch * heads), ATTN_THREADS threads, ATTN_SMEM_BYTES of dynamic shared memory, and
// attention_launch_info reporting them; the entry points come from attention_abi.cuh.
//
// Build (wgmma and TMA need the sm_90a target):
//   nvcc -cubin -O3 -lineinfo -arch=sm_90a -Xptxas -v \
//        -DHEAD_DIM=128 -DBLOCK_M=128 -DBLOCK_N=128 -DSTAGES=2 -o k.cubin attention_sm90a.cu
//
// Work split (the default, FlashAttention-3's structure). A block owns BLOCK_M query rows of one
// (batch, head): BLOCK_M / 64 consumer warpgroups of four warps, each 64 rows (one wgmma M), and
// one producer warpgroup. The producer loads Q, then K and V tile after tile with TMA into a
// STAGES-deep ring; mbarriers hand each stage's K and V over (full when the copy landed, empty
// when every consumer is done with it). Each consumer computes S = Q K^T with wgmma (both
// operands in shared memory), masks and applies the online softmax on the accumulator registers,
// and accumulates O += P V with wgmma, P from registers and V from shared memory (transposed).
// S of the next tile and its softmax overlap the P V of this one, and the consumers take turns
// issuing their GEMMs. Key/value tiles are visited from the last down, so masked tiles come
// first. The options below switch each of these off; PRODUCER=0 is the plain path, every thread
// copying with cp.async and all meeting at a block-wide barrier every tile.
//
// Shared-memory layout. wgmma reads its shared operands in the 128-byte swizzle layout: a tile is
// HEAD_DIM / 64 column blocks, each rows x 64 elements (128 bytes a row), and chunk c (16 bytes) of
// row r sits at chunk c ^ (r & 7); every tile starts on a 1024-byte boundary, so that the
// hardware's address-based swizzle and this one agree. TMA writes this layout itself (its
// 128-byte swizzle mode). Writes by cp.async (the generic proxy) are made visible to wgmma (the
// async proxy) with fence.proxy.async.
//
// Fault hooks. kernel/faults/wgmma_*.cu define one FAULT_* macro and include this file to plant
// one defect each; a normal build defines none of them.

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
#define BLOCK_N 128
#endif
#ifndef STAGES
#define STAGES 2
#endif
// Options. The defaults are the fast path. Measured on an H100 (2026-11-23, B=4 H=16 S=4096
// bf16, kernel/dev/attn_check.cu): at HEAD_DIM 128 (BLOCK_M=128 BLOCK_N=128 STAGES=2) 926 us
// against 1265 us for the best config with PRODUCER alone; at HEAD_DIM 64 (BLOCK_M=192
// BLOCK_N=128 STAGES=4) 596 us against 677 us.
//
// PRODUCER 1: a producer warpgroup loads Q, K and V into a ring whose stages are handed over
// with mbarriers; the consumer warpgroups never wait for each other, and setmaxnreg moves
// registers from the producer to them. 0: every thread copies with cp.async, and all meet at a
// block-wide barrier every tile (the simple path, kept for reference and its planted faults).
#ifndef PRODUCER
#define PRODUCER 1
#endif
// TMA 1 (with PRODUCER): one thread loads K and V with the tensor memory accelerator
// (cp.async.bulk.tensor, completion counted on the stage's mbarrier). The kernel encodes the
// tensor maps itself (tensormap.replace), so the ABI stays raw pointers. 0: the producer's 128
// threads copy with cp.async; those loads were the bottleneck (with them left out, the kernel
// ran at cuDNN's speed).
#ifndef TMA
#define TMA PRODUCER
#endif
// OVERLAP 1 (with PRODUCER): S of the next tile is computed while P V of this one runs, and
// the softmax of the next tile while that P V still runs (FlashAttention-3's intra-warpgroup
// overlap). 0: each tile's GEMMs and softmax one after another.
#ifndef OVERLAP
#define OVERLAP PRODUCER
#endif
// TURNS 1 (with PRODUCER and two or three consumers): the consumer warpgroups take turns
// issuing their GEMMs (named barriers, round robin), so that one's softmax runs while the
// others' GEMMs do (FlashAttention-3's ping-pong).
#ifndef TURNS
#define TURNS (PRODUCER && BLOCK_M > 64)
#endif

#define ATTN_ABI_VERSION 1
#define ATTN_WARPGROUPS (BLOCK_M / 64)
// With PRODUCER, one more warpgroup that only loads.
#define ATTN_THREADS ((ATTN_WARPGROUPS + PRODUCER) * 128)
// The threads that copy K and V tiles.
#define ATTN_LOADERS (PRODUCER ? 128 : ATTN_THREADS)
// With PRODUCER, the registers per thread after setmaxnreg: the producer few, the consumers what
// the 64K register file leaves them (a multiple of 8, at most 240).
#ifndef ATTN_PRODUCER_REGS
#define ATTN_PRODUCER_REGS (TMA ? 24 : 40)
#endif
#define ATTN_CONSUMER_REGS_FIT (((65536 - 128 * ATTN_PRODUCER_REGS) / (ATTN_WARPGROUPS * 128)) & ~7)
#define ATTN_CONSUMER_REGS (ATTN_CONSUMER_REGS_FIT > 240 ? 240 : ATTN_CONSUMER_REGS_FIT)
#define ATTN_COL_BLOCKS (HEAD_DIM / 64)
#define ATTN_Q_BYTES (BLOCK_M * HEAD_DIM * 2)
#define ATTN_KV_STAGE_BYTES (BLOCK_N * HEAD_DIM * 2)
// 1024 bytes of slack: the tiles are aligned to 1024 inside the dynamic shared memory; then the
// mbarriers (full and empty for K and for V per stage, and Q's).
// With TMA, 128-byte aligned staging for the two tensor maps the kernel encodes.
#define ATTN_SMEM_BYTES \
  (1024 + ATTN_Q_BYTES + 2 * STAGES * ATTN_KV_STAGE_BYTES + (4 * STAGES + 1) * 8 + TMA * 384)

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM must be 64 or 128");
static_assert(BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 192, "BLOCK_M: 1 to 3 warpgroups");
static_assert(BLOCK_N == 64 || BLOCK_N == 96 || BLOCK_N == 128 || BLOCK_N == 176 || BLOCK_N == 192,
              "BLOCK_N: 64, 96, 128, 176 or 192");
static_assert(STAGES >= 2 && STAGES <= 6, "STAGES: 2 to 6");
static_assert(!OVERLAP || PRODUCER, "OVERLAP needs PRODUCER");
static_assert(!TMA || PRODUCER, "TMA needs PRODUCER");
static_assert(!TURNS || (PRODUCER && BLOCK_M > 64), "TURNS needs PRODUCER and two or three consumers");
static_assert(ATTN_SMEM_BYTES <= 227 * 1024, "shared memory above the sm_90 per-block limit");
// The encoded tensor maps live in a global slot per SM (below); that slot is this block's alone
// because no second block of this kernel fits on the SM.
static_assert(!TMA || 2 * ATTN_SMEM_BYTES > 228 * 1024,
              "TMA needs one block per SM: more than half the shared memory (raise STAGES or "
              "BLOCK_N, or build with TMA=0)");

namespace attn {

#include "attention_common.cuh"

// Byte offset of 16-byte chunk `chunk` (0 .. HEAD_DIM/8 - 1) of row `row` in a tile of `rows`.
__device__ __forceinline__ uint32_t tile_offset(int rows, int row, int chunk) {
  return static_cast<uint32_t>(((chunk >> 3) * rows + row) * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

// Shared memory written by the generic proxy (cp.async, st.shared) becomes visible to wgmma.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses to `r` across an asynchronous wgmma.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// A wgmma shared-memory descriptor, 128-byte swizzle: start address, leading and stride byte
// offsets (each >> 4).
__device__ __forceinline__ uint64_t descriptor(uint32_t addr, uint32_t lead, uint32_t stride) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>(lead >> 4) << 16) | (static_cast<uint64_t>(stride >> 4) << 32) |
         (1ull << 62);
}

// A compile-time flag passed to generic lambdas.
template <bool B>
struct Flag {
  static constexpr bool value = B;
};

template <typename T>
struct Pack;
template <>
struct Pack<__half> {
  __device__ __forceinline__ static uint32_t of(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};
template <>
struct Pack<__nv_bfloat16> {
  __device__ __forceinline__ static uint32_t of(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

// GENERATED by kernel/dev/gen_wgmma.py: do not edit by hand.
template <typename T, int N> struct Wgmma;
template <> struct Wgmma<__half, 64> {
  __device__ __forceinline__ static void ss(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__half, 96> {
  __device__ __forceinline__ static void ss(float (&d)[48], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[48], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__half, 128> {
  __device__ __forceinline__ static void ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__half, 176> {
  __device__ __forceinline__ static void ss(float (&d)[88], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[88], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %93, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, {%88, %89, %90, %91}, %92, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__half, 192> {
  __device__ __forceinline__ static void ss(float (&d)[96], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[96], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__nv_bfloat16, 64> {
  __device__ __forceinline__ static void ss(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__nv_bfloat16, 96> {
  __device__ __forceinline__ static void ss(float (&d)[48], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[48], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__nv_bfloat16, 128> {
  __device__ __forceinline__ static void ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__nv_bfloat16, 176> {
  __device__ __forceinline__ static void ss(float (&d)[88], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[88], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %93, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, {%88, %89, %90, %91}, %92, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
template <> struct Wgmma<__nv_bfloat16, 192> {
  __device__ __forceinline__ static void ss(float (&d)[96], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(a), "l"(b), "r"(accumulate));
  }
  __device__ __forceinline__ static void rs(float (&d)[96], const uint32_t (&a)[4], uint64_t b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
};
// END GENERATED

// Copies a tile of ROWS rows (HEAD_DIM elements each) starting at global row `row0` into the
// swizzled tile at `dst`; rows at or past `limit` are zero-filled without being read (`safe` is
// an in-bounds address given to cp.async with a source size of 0).
template <int ROWS>
__device__ __forceinline__ void load_tile(uint32_t dst, const char* base, int row0, int limit,
                                          const char* safe, int loader) {
  constexpr int kChunks = ROWS * HEAD_DIM / 8;
  constexpr int kRowChunks = HEAD_DIM / 8;
#pragma unroll
  for (int i = loader; i < kChunks; i += ATTN_LOADERS) {
    const int row = i / kRowChunks;
    const int chunk = i % kRowChunks;
    const bool valid = row0 + row < limit;
    const char* src =
        valid ? base + (static_cast<size_t>(row0 + row) * HEAD_DIM + chunk * 8) * 2 : safe;
    cp_async_16(dst + tile_offset(ROWS, row, chunk), src, valid);
  }
}

__device__ __forceinline__ void mbarrier_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Arrives on `bar` once this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar)
               : "memory");
}
// Waits until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void mbarrier_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

#if TMA
// Tensor maps for K and V, one pair per SM: a block writes its SM's pair and only it uses it.
constexpr int kTensorMapSlots = 1024;
#if defined(FAULT_TMA_BOX_ROWS)
// Planted: the box is half a tile high, and each stage expects half the bytes.
constexpr int kBoxRows = BLOCK_N / 2;
#else
constexpr int kBoxRows = BLOCK_N;
#endif
// The bytes one K or V tile's copies bring (HEAD_DIM / 64 boxes of 64 elements by kBoxRows).
constexpr uint32_t kTileTxBytes = kBoxRows * HEAD_DIM * 2;
__device__ __align__(128) unsigned char g_tensor_maps[kTensorMapSlots][2][128];

// Encodes, in the 128 bytes at shared `staging` (zeroed), a 3-D tensor map of the whole
// [batch * heads, seq_len, HEAD_DIM] 16-bit tensor at `base` (its start, not this head's):
// boxes of 64 elements by BLOCK_N rows of one head, 128-byte swizzle (the layout tile_offset
// describes), zeros past seq_len. Then publishes it to global `map` and acquires it for this
// thread's copies. One lane encodes; the whole warp publishes.
__device__ __forceinline__ void encode_tensor_map(uint32_t staging, void* map, const void* base,
                                                  int seq_len, int heads, int lane) {
  if (lane == 0) {
    const uint64_t row_bytes = HEAD_DIM * 2ull;
    const uint64_t head_bytes = row_bytes * static_cast<uint64_t>(seq_len);
    asm volatile(
        "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n"
        "tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], 2;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 0, 64;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, %2;\n"
        "tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 2, 1;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %3;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %4;\n"
        "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 2, %5;\n"
        "tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %6;\n"
        "tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 1, %7;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 0, 1;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 1, 1;\n"
        "tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], 2, 1;\n"
        "tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 1;\n"           // u16
        "tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;\n"  // none
        "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 3;\n"       // 128 B
        "tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;\n"          // zeros
        ::"r"(staging), "l"(base), "r"(kBoxRows), "r"(HEAD_DIM), "r"(seq_len), "r"(heads),
        "l"(row_bytes), "l"(head_bytes)
        : "memory");
  }
  __syncwarp();
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
      "[%0], [%1], 128;\n" ::"l"(map),
      "r"(staging)
      : "memory");
  if (lane == 0) {
    asm volatile(
        "fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n"
        "cp.async.bulk.commit_group;\n"
        "cp.async.bulk.wait_group.read 0;\n" ::"l"(map)
        : "memory");
  }
}

// Copies the BLOCK_N x HEAD_DIM tile at rows row0.. of head `head` into the swizzled tile at
// `dst` (HEAD_DIM / 64 boxes), completing on `bar`.
__device__ __forceinline__ void tma_load_tile(uint32_t dst, const void* map, int row0, int head,
                                              uint32_t bar) {
#pragma unroll
  for (int col = 0; col < HEAD_DIM / 64; ++col) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst + col * BLOCK_N * 128),
        "l"(map), "r"(col * 64), "r"(row0), "r"(head), "r"(bar)
        : "memory");
  }
}
#endif

// One warpgroup's share of a block: its 64 query rows' softmax state and O accumulator, and the
// three steps of a key/value tile (S = Q K^T, the online softmax, O += P V).
template <typename T>
struct Warpgroup {
  float acc_o[HEAD_DIM / 2];
  float row_max[2];
  float row_sum[2];
  uint32_t q_tile;       // this warpgroup's rows of the Q tile
  int row0;              // absolute index of this thread's first accumulator row
  int tq;                // accumulator column pair
  float scale_log2;

  __device__ __forceinline__ void init(uint32_t s_q, int wg, int first_row, int lane, float scale) {
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) acc_o[i] = 0.0f;
    row_max[0] = row_max[1] = kNegInf;
    row_sum[0] = row_sum[1] = 0.0f;
    q_tile = s_q + wg * 64 * 128;
    row0 = first_row;
    tq = lane & 3;
    scale_log2 = scale * kLog2e;
  }

  // Issues S = Q K^T for the tile at `k_tile` (not waited for). The first k-step overwrites
  // the accumulators (scale-d 0): zeroing them first would be an ordinary instruction writing
  // wgmma accumulators while an earlier wgmma is in flight, which makes ptxas serialize every
  // wgmma (its warning C7515).
  __device__ __forceinline__ void issue_s(float (&acc_s)[BLOCK_N / 2], uint32_t k_tile) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
      const uint32_t col = (kk >> 2), within = (kk & 3) * 32;
      const uint64_t da = descriptor(q_tile + col * BLOCK_M * 128 + within, 16, 1024);
#if defined(FAULT_K_DESC_STRIDE)
      // Planted: the K descriptor's stride byte offset says 8-row groups are 512 bytes apart.
      const uint64_t db = descriptor(k_tile + col * BLOCK_N * 128 + within, 16, 512);
#else
      const uint64_t db = descriptor(k_tile + col * BLOCK_N * 128 + within, 16, 1024);
#endif
      Wgmma<T, BLOCK_N>::ss(acc_s, da, db, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
  }

  // Masks S of key tile `j` (when `masked`), updates the running max and sum and leaves the
  // exponentials in `sv`; returns in `alpha` the factors O must be rescaled by. Touches neither
  // O nor P, so it may run while a P V wgmma is in flight; the S wgmma must have been waited for.
  // MASKED is a template parameter so that the loops over unmasked tiles have no branch between
  // a wgmma's issue and its wait: ptxas waits for every wgmma in flight where branches join.
  template <bool MASKED>
  __device__ __forceinline__ void scores(const float (&acc_s)[BLOCK_N / 2], float (&sv)[BLOCK_N / 2],
                                         float (&alpha)[2], int j, int seq_len, int causal) {
    // The softmax works on a copy: writing the accumulators of a wgmma group in place while the
    // next group runs would make ptxas serialize every wgmma (C7515).
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i) sv[i] = acc_s[i];
    if (MASKED) {
#pragma unroll
      for (int i = 0; i < BLOCK_N / 2; ++i) {
        const int key = j * BLOCK_N + (i >> 2) * 8 + 2 * tq + (i & 1);
        const int row = row0 + ((i >> 1) & 1) * 8;
        if (key >= seq_len || (causal && key > row)) sv[i] = kNegInf;
      }
    }
    // Both rows at once, and each reduction in kChains independent chains: the softmax is a
    // latency-bound chain of dependent instructions otherwise, with few warps to hide it.
    constexpr int kChains = BLOCK_N / 8 >= 4 ? 4 : BLOCK_N / 8;
    float mx[2][kChains];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) mx[h][c] = row_max[h];
    }
#pragma unroll
    for (int nt = 0; nt < BLOCK_N / 8; ++nt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[h][nt % kChains] =
            fmaxf(mx[h][nt % kChains], fmaxf(sv[nt * 4 + 2 * h], sv[nt * 4 + 2 * h + 1]));
      }
    }
    float offset[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = mx[h][0];
#pragma unroll
      for (int c = 1; c < kChains; ++c) m = fmaxf(m, mx[h][c]);
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // A row with every key masked so far keeps -inf; use 0 so that exp2 sees -inf, not NaN.
      offset[h] = (m == kNegInf) ? 0.0f : m * scale_log2;
      alpha[h] = fast_exp2(row_max[h] * scale_log2 - offset[h]);
      row_max[h] = m;
    }
    float sum[2][kChains];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) sum[h][c] = 0.0f;
    }
#pragma unroll
    for (int nt = 0; nt < BLOCK_N / 8; ++nt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float p0 = fast_exp2(fmaf(sv[nt * 4 + 2 * h], scale_log2, -offset[h]));
        const float p1 = fast_exp2(fmaf(sv[nt * 4 + 2 * h + 1], scale_log2, -offset[h]));
        sum[h][nt % kChains] += p0 + p1;
        sv[nt * 4 + 2 * h] = p0;
        sv[nt * 4 + 2 * h + 1] = p1;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float total = sum[h][0];
#pragma unroll
      for (int c = 1; c < kChains; ++c) total += sum[h][c];
      row_sum[h] = row_sum[h] * alpha[h] + total;
    }
  }

  // O *= alpha, row by row. Every earlier P V wgmma must have been waited for.
  __device__ __forceinline__ void rescale(const float (&alpha)[2]) {
    fence_regs(acc_o);
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc_o[dt * 4 + 2 * h] *= alpha[h];
        acc_o[dt * 4 + 2 * h + 1] *= alpha[h];
      }
    }
  }

  // Packs the exponentials into wgmma A fragments. The accumulator layout is wgmma's A-fragment
  // layout: n-tiles 2ks and 2ks+1 give P's registers for keys 16ks .. 16ks+15.
  __device__ __forceinline__ static void pack(const float (&sv)[BLOCK_N / 2],
                                              uint32_t (&p_frag)[BLOCK_N / 16][4]) {
#pragma unroll
    for (int ks = 0; ks < BLOCK_N / 16; ++ks) {
      const int a = (2 * ks) * 4, b = (2 * ks + 1) * 4;
      p_frag[ks][0] = Pack<T>::of(sv[a], sv[a + 1]);
      p_frag[ks][1] = Pack<T>::of(sv[a + 2], sv[a + 3]);
      p_frag[ks][2] = Pack<T>::of(sv[b], sv[b + 1]);
      p_frag[ks][3] = Pack<T>::of(sv[b + 2], sv[b + 3]);
    }
  }

  // The whole softmax of one tile: scores, O rescaled, P packed. The S wgmma must have been
  // waited for, and every earlier P V wgmma too.
  __device__ __forceinline__ void softmax(const float (&acc_s)[BLOCK_N / 2],
                                          uint32_t (&p_frag)[BLOCK_N / 16][4], int j, bool masked,
                                          int seq_len, int causal) {
    float sv[BLOCK_N / 2];
    float alpha[2];
    if (masked) {
      scores<true>(acc_s, sv, alpha, j, seq_len, causal);
    } else {
      scores<false>(acc_s, sv, alpha, j, seq_len, causal);
    }
    rescale(alpha);
    pack(sv, p_frag);
  }

  // Issues O += P V for the tile at `v_tile` (V transposed: MN-major), not waited for.
  __device__ __forceinline__ void issue_pv(const uint32_t (&p_frag)[BLOCK_N / 16][4],
                                           uint32_t v_tile) {
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < BLOCK_N / 16; ++ks) {
      const uint64_t dv = descriptor(v_tile + ks * 16 * 128, BLOCK_N * 128, 1024);
      Wgmma<T, HEAD_DIM>::rs(acc_o, p_frag[ks], dv, 1);
    }
    wgmma_commit();
  }

  // Normalises and writes this thread's rows of O.
  __device__ __forceinline__ void store(T* ob, int seq_len) {
    fence_regs(acc_o);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? __frcp_rn(l) : 0.0f;
      const int grow = row0 + h * 8;
      if (grow < seq_len) {
#pragma unroll
        for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
          const uint32_t packed =
              Pack<T>::of(acc_o[dt * 4 + 2 * h] * inv, acc_o[dt * 4 + 2 * h + 1] * inv);
          *reinterpret_cast<uint32_t*>(ob + static_cast<size_t>(grow) * HEAD_DIM + dt * 8 +
                                       2 * tq) = packed;
        }
      }
    }
  }
};

template <typename T>
__device__ __forceinline__ void attention_fwd_impl(const T* __restrict__ q, const T* __restrict__ k,
                                                   const T* __restrict__ v, T* __restrict__ o,
                                                   int seq_len, float softmax_scale, int causal) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int wg = warp >> 2;  // this thread's warpgroup

  const int m_block =
      causal ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
  const int m0 = m_block * BLOCK_M;
  const size_t head_offset = static_cast<size_t>(blockIdx.y) * seq_len * HEAD_DIM;
  const char* qb = reinterpret_cast<const char*>(q + head_offset);
  const char* kb = reinterpret_cast<const char*>(k + head_offset);
  const char* vb = reinterpret_cast<const char*>(v + head_offset);
  T* ob = o + head_offset;

  const uint32_t s_base = (smem_address(smem_raw) + 1023u) & ~1023u;
  const uint32_t s_q = s_base;
  const uint32_t s_k = s_q + ATTN_Q_BYTES;
  const uint32_t s_v = s_k + STAGES * ATTN_KV_STAGE_BYTES;

  const int kv_end = causal ? min(seq_len, m0 + BLOCK_M) : seq_len;
  const int n_tiles = (kv_end + BLOCK_N - 1) / BLOCK_N;
  // Tiles at or after first_masked need the mask: the causal diagonal, and the ragged last tile.
  int first_masked = n_tiles;
  if (causal) first_masked = min(first_masked, m0 / BLOCK_N);
  if (seq_len % BLOCK_N != 0) first_masked = min(first_masked, seq_len / BLOCK_N);

  // Tile `it` of the visiting order (key tile n_tiles-1-it) goes to stage it % STAGES.
  auto load_kv = [&](int it) {
    if (it < n_tiles) {
      const int j = n_tiles - 1 - it;
      const int stage = it % STAGES;
      load_tile<BLOCK_N>(s_k + stage * ATTN_KV_STAGE_BYTES, kb, j * BLOCK_N, seq_len, qb, tid);
      load_tile<BLOCK_N>(s_v + stage * ATTN_KV_STAGE_BYTES, vb, j * BLOCK_N, seq_len, qb, tid);
    }
    cp_async_commit();
  };

  Warpgroup<T> w;
  w.init(s_q, wg, m0 + wg * 64 + (warp & 3) * 16 + (lane >> 2), lane, softmax_scale);
  float acc_s[BLOCK_N / 2];
  uint32_t p_frag[BLOCK_N / 16][4];

#if PRODUCER
  // K and V have a barrier pair each per stage: full when the producer's copies landed (TMA's
  // byte count, or the 128 threads' cp.async), empty when every consumer warpgroup is done with
  // it (K after its S wgmma, V after its P V wgmma), so the producer refills K while V is still
  // read. Q has its own barrier.
  const uint32_t s_bar = s_v + STAGES * ATTN_KV_STAGE_BYTES;
  auto full_k = [&](int stage) { return s_bar + stage * 8; };
  auto full_v = [&](int stage) { return s_bar + (STAGES + stage) * 8; };
  auto empty_k = [&](int stage) { return s_bar + (2 * STAGES + stage) * 8; };
  auto empty_v = [&](int stage) { return s_bar + (3 * STAGES + stage) * 8; };
  const uint32_t q_full = s_bar + 4 * STAGES * 8;
  if (tid == 0) {
    for (int st = 0; st < STAGES; ++st) {
      mbarrier_init(full_k(st), TMA ? 1 : 128);
      mbarrier_init(full_v(st), TMA ? 1 : 128);
      mbarrier_init(empty_k(st), ATTN_WARPGROUPS);
      mbarrier_init(empty_v(st), ATTN_WARPGROUPS);
    }
    mbarrier_init(q_full, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (wg == ATTN_WARPGROUPS) {
    // The producer: Q, then tile after tile as stages come free. It needs few registers and
    // hands the rest to the consumers (setmaxnreg; the kernel's cap at entry is 64K / threads).
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(ATTN_PRODUCER_REGS));
    const int loader = tid - ATTN_WARPGROUPS * 128;
    load_tile<BLOCK_M>(s_q, qb, m0, seq_len, qb, loader);
    cp_async_arrive(q_full);
#if TMA
    if (loader < 32) {
      // The first producer warp encodes the tensor maps; its first lane issues every copy.
      uint32_t smid;
      asm("mov.u32 %0, %%smid;\n" : "=r"(smid));
      if (smid >= kTensorMapSlots) __trap();
      void* map_k = g_tensor_maps[smid][0];
      void* map_v = g_tensor_maps[smid][1];
      const uint32_t staging = (q_full + 8 + 127) & ~127u;
      asm volatile("st.shared.v2.u32 [%0], {%1, %1};\n" ::"r"(staging + loader * 8), "r"(0)
                   : "memory");
      __syncwarp();
      encode_tensor_map(staging, map_k, k, seq_len, gridDim.y, loader);
      encode_tensor_map(staging + 128, map_v, v, seq_len, gridDim.y, loader);
      if (loader == 0) {
        const int head = blockIdx.y;
        for (int it = 0; it < n_tiles; ++it) {
          const int stage = it % STAGES;
          const uint32_t parity = ((it / STAGES) - 1) & 1;
          const int j = n_tiles - 1 - it;
          if (it >= STAGES) mbarrier_wait(empty_k(stage), parity);
          mbarrier_expect_tx(full_k(stage), kTileTxBytes);
          tma_load_tile(s_k + stage * ATTN_KV_STAGE_BYTES, map_k, j * BLOCK_N, head, full_k(stage));
          if (it >= STAGES) mbarrier_wait(empty_v(stage), parity);
          mbarrier_expect_tx(full_v(stage), kTileTxBytes);
          tma_load_tile(s_v + stage * ATTN_KV_STAGE_BYTES, map_v, j * BLOCK_N, head, full_v(stage));
        }
      }
    }
#else
    for (int it = 0; it < n_tiles; ++it) {
      const int stage = it % STAGES;
      const uint32_t parity = ((it / STAGES) - 1) & 1;
      const int j = n_tiles - 1 - it;
      if (it >= STAGES) mbarrier_wait(empty_k(stage), parity);
      load_tile<BLOCK_N>(s_k + stage * ATTN_KV_STAGE_BYTES, kb, j * BLOCK_N, seq_len, qb, loader);
      cp_async_arrive(full_k(stage));
      if (it >= STAGES) mbarrier_wait(empty_v(stage), parity);
      load_tile<BLOCK_N>(s_v + stage * ATTN_KV_STAGE_BYTES, vb, j * BLOCK_N, seq_len, qb, loader);
      cp_async_arrive(full_v(stage));
    }
#endif
    cp_async_wait<0>();
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(ATTN_CONSUMER_REGS));
    mbarrier_wait(q_full, 0);
    // Q landed through cp.async (the generic proxy); wgmma reads through the async one.
    fence_proxy_async();
    // Waits until the K (or V) tile of visit `it` has landed: `full` is full_k or full_v.
    // cp.async copies land through the generic proxy and wgmma reads through the async one,
    // hence the fence; TMA writes through the async proxy itself.
    auto wait_full = [&](auto full, int it) {
#if !defined(FAULT_NO_FULL_WAIT)
      mbarrier_wait(full(it % STAGES), (it / STAGES) & 1);
#endif
      if (!TMA) fence_proxy_async();
    };
    auto wait_k = [&](int it) { wait_full(full_k, it); };
    auto wait_v = [&](int it) { wait_full(full_v, it); };
    // This warpgroup is done with the K (or V) tile of visit `it`.
    auto release_k = [&](int it) {
      if ((tid & 127) == 0) mbarrier_arrive(empty_k(it % STAGES));
    };
    auto release_v = [&](int it) {
      if ((tid & 127) == 0) mbarrier_arrive(empty_v(it % STAGES));
    };
    auto k_tile = [&](int it) { return s_k + (it % STAGES) * ATTN_KV_STAGE_BYTES; };
    auto v_tile = [&](int it) { return s_v + (it % STAGES) * ATTN_KV_STAGE_BYTES; };
    // With TURNS the consumer warpgroups take turns issuing their GEMMs, round robin: warpgroup
    // g waits at named barrier 1 + g until warpgroup g - 1 has issued, so that their softmaxes
    // do not coincide and one's runs while the others' GEMMs do. The last warpgroup lets the
    // first go first and skips its last hand-over, so every barrier's arrivals match its waits.
    auto my_turn = [&]() {
      if (TURNS) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + wg) : "memory");
    };
    auto next_turn = [&](int it) {
      if (TURNS && (wg + 1 < ATTN_WARPGROUPS || it + 1 < n_tiles)) {
        asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + (wg + 1) % ATTN_WARPGROUPS) : "memory");
      }
    };
    if (TURNS && wg + 1 == ATTN_WARPGROUPS) asm volatile("bar.arrive 1, 256;\n" ::: "memory");
#if OVERLAP
    // S of tile it is computed while P V of tile it-1 runs, and the softmax of tile it while
    // that P V is still on the tensor cores. O is rescaled for tile it-1 just before its P V is
    // issued (FlashAttention-3's order), so that nothing after the issue touches O.
    float sv[BLOCK_N / 2];
    float alpha[2];
    wait_k(0);
    my_turn();
    w.issue_s(acc_s, k_tile(0));
    next_turn(0);
    wgmma_wait<0>();
    release_k(0);
    if (n_tiles - 1 >= first_masked) {
      w.template scores<true>(acc_s, sv, alpha, n_tiles - 1, seq_len, causal);
    } else {
      w.template scores<false>(acc_s, sv, alpha, n_tiles - 1, seq_len, causal);
    }
    w.pack(sv, p_frag);
    auto step = [&](int it, auto masked) {
      wait_k(it);
      wait_v(it - 1);
      my_turn();
      w.issue_s(acc_s, k_tile(it));
      w.rescale(alpha);
      w.issue_pv(p_frag, v_tile(it - 1));
      next_turn(it);
      wgmma_wait<1>();  // S of tile it retired; P V of tile it-1 may still run
      release_k(it);
      w.template scores<decltype(masked)::value>(acc_s, sv, alpha, n_tiles - 1 - it, seq_len,
                                                 causal);
      // Keeps the compiler from sinking the exponentials below the wait, to their use in pack().
      fence_regs(sv);
      fence_regs(w.row_sum);
      wgmma_wait<0>();
      release_v(it - 1);
      w.pack(sv, p_frag);
    };
    // Visits 0 .. n_tiles - first_masked - 1 are the masked tiles (the last key tiles); the rest
    // need no mask.
    int it = 1;
    for (; it < n_tiles - first_masked; ++it) step(it, Flag<true>{});
    for (; it < n_tiles; ++it) step(it, Flag<false>{});
    wait_v(n_tiles - 1);
    w.rescale(alpha);
    w.issue_pv(p_frag, v_tile(n_tiles - 1));
    wgmma_wait<0>();
    release_v(n_tiles - 1);
#else
    for (int it = 0; it < n_tiles; ++it) {
      const int j = n_tiles - 1 - it;
      wait_k(it);
      my_turn();
      w.issue_s(acc_s, k_tile(it));
      next_turn(it);
      wgmma_wait<0>();
      release_k(it);
      w.softmax(acc_s, p_frag, j, j >= first_masked, seq_len, causal);
      wait_v(it);
      w.issue_pv(p_frag, v_tile(it));
      wgmma_wait<0>();
      release_v(it);
    }
#endif
    w.store(ob, seq_len);
  }
#else
  // Prologue: Q with the first key/value tile, then the next STAGES - 2 tiles.
  load_tile<BLOCK_M>(s_q, qb, m0, seq_len, qb, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) load_kv(s);
  for (int it = 0; it < n_tiles; ++it) {
    const int j = n_tiles - 1 - it;
    const int stage = it % STAGES;
    cp_async_wait<STAGES - 2>();
    fence_proxy_async();
    // Tile `it` is visible to every thread and to wgmma; every warpgroup is done with tile it-1,
    // whose stage the prefetch below overwrites.
#if !defined(FAULT_WG_NO_KV_BARRIER)
    __syncthreads();
#endif
    load_kv(it + STAGES - 1);
    w.issue_s(acc_s, s_k + stage * ATTN_KV_STAGE_BYTES);
    wgmma_wait<0>();
    w.softmax(acc_s, p_frag, j, j >= first_masked, seq_len, causal);
    w.issue_pv(p_frag, s_v + stage * ATTN_KV_STAGE_BYTES);
    wgmma_wait<0>();
  }
  cp_async_wait<0>();
  w.store(ob, seq_len);
#endif
}

}  // namespace attn

#define ATTN_MIN_BLOCKS 1
#include "attention_abi.cuh"
