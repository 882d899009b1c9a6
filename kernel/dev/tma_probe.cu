// Compares a tensor map encoded on the device with tensormap.replace (as kernel/attention_sm90a.cu
// encodes its own) with the driver's cuTensorMapEncodeTiled for the same tensor, byte by byte, and
// copies one box with each. Build and run on a Hopper GPU:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/tma_probe kernel/dev/tma_probe.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#define HEAD_DIM 128
#define BLOCK_N 128
__device__ __align__(128) unsigned char g_map[128];
__global__ void encode(const void* base, int seq_len, int heads, unsigned char* out, const CUtensorMap* host_map, uint16_t* box_dev, uint16_t* box_host) {
  __shared__ __align__(128) unsigned char staging[128];
  __shared__ __align__(1024) uint16_t tile[BLOCK_N * 64];
  __shared__ __align__(8) uint64_t bar;
  const int lane = threadIdx.x;
  uint32_t st = (uint32_t)__cvta_generic_to_shared(staging);
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(st + (lane & 7) * 16), "r"(0) : "memory");
  __syncwarp();
  if (lane == 0) {
    const uint64_t row_bytes = HEAD_DIM * 2ull;
    const uint64_t head_bytes = row_bytes * (uint64_t)seq_len;
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
        "tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], 1;\n"
        "tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], 0;\n"
        "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], 3;\n"
        "tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], 0;\n"
        ::"r"(st), "l"(base), "r"(BLOCK_N), "r"(HEAD_DIM), "r"(seq_len), "r"(heads), "l"(row_bytes), "l"(head_bytes) : "memory");
  }
  __syncwarp();
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;\n" ::"l"(g_map), "r"(st) : "memory");
  if (lane == 0) asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\ncp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;\n" ::"l"(g_map) : "memory");
  __syncwarp();
  for (int i = lane; i < 128; i += 32) out[i] = staging[i];
  // Copy box (col 64, rows 64.., head 1) with each map.
  const void* maps[2] = {g_map, host_map};
  uint16_t* dsts[2] = {box_dev, box_host};
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
  uint32_t t = (uint32_t)__cvta_generic_to_shared(tile);
  for (int m = 0; m < 2; ++m) {
    if (lane == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nfence.mbarrier_init.release.cluster;\n" ::"r"(b) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(BLOCK_N * 128) : "memory");
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                   ::"r"(t), "l"(maps[m]), "r"(64), "r"(64), "r"(1), "r"(b) : "memory");
      asm volatile("{\n.reg .pred p;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}\n" ::"r"(b) : "memory");
    }
    __syncwarp();
    for (int i = lane; i < BLOCK_N * 64; i += 32) dsts[m][i] = tile[i];
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(b) : "memory");
    __syncwarp();
  }
}
int main() {
  const int S = 200, H = 2;
  std::vector<uint16_t> h((size_t)H * S * HEAD_DIM);
  for (size_t i = 0; i < h.size(); ++i) h[i] = (uint16_t)(i & 0x7fff);
  void* d; cudaMalloc(&d, h.size() * 2); cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  CUtensorMap hm; memset(&hm, 0, sizeof hm);
  cuuint64_t dims[3] = {HEAD_DIM, (cuuint64_t)S, (cuuint64_t)H};
  cuuint64_t strides[2] = {HEAD_DIM * 2, (cuuint64_t)S * HEAD_DIM * 2};
  cuuint32_t box[3] = {64, BLOCK_N, 1}, es[3] = {1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(&hm, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, d, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  printf("host encode rc=%d\n", (int)r);
  CUtensorMap* dhm; cudaMalloc(&dhm, sizeof hm); cudaMemcpy(dhm, &hm, sizeof hm, cudaMemcpyHostToDevice);
  unsigned char* out; cudaMalloc(&out, 128);
  uint16_t *bd, *bh; cudaMalloc(&bd, BLOCK_N * 128); cudaMalloc(&bh, BLOCK_N * 128);
  cudaMemset(bd, 0xff, BLOCK_N * 128); cudaMemset(bh, 0xff, BLOCK_N * 128);
  encode<<<1, 32>>>(d, S, H, out, dhm, bd, bh);
  cudaError_t e = cudaDeviceSynchronize();
  printf("kernel: %s\n", cudaGetErrorString(e));
  unsigned char dev[128]; cudaMemcpy(dev, out, 128, cudaMemcpyDeviceToHost);
  const unsigned char* host = (const unsigned char*)&hm;
  for (int i = 0; i < 128; i += 8) {
    printf("%3d dev ", i); for (int j = 0; j < 8; ++j) printf("%02x", dev[i + j]);
    printf("  host "); for (int j = 0; j < 8; ++j) printf("%02x", host[i + j]);
    printf("%s\n", memcmp(dev + i, host + i, 8) ? "  DIFF" : "");
  }
  std::vector<uint16_t> vd(BLOCK_N * 64), vh(BLOCK_N * 64);
  cudaMemcpy(vd.data(), bd, BLOCK_N * 128, cudaMemcpyDeviceToHost); cudaMemcpy(vh.data(), bh, BLOCK_N * 128, cudaMemcpyDeviceToHost);
  int diff = 0; for (int i = 0; i < BLOCK_N * 64; ++i) diff += vd[i] != vh[i];
  printf("box elements differing: %d of %d; dev[0..3]=%d %d %d %d host[0..3]=%d %d %d %d; host last row[0]=%d\n", diff, BLOCK_N * 64, vd[0], vd[1], vd[2], vd[3], vh[0], vh[1], vh[2], vh[3], vh[(BLOCK_N - 1) * 64]);
  return 0;
}
