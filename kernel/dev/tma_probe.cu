// Checks the tensor maps kernel/attention_sm90a.cu encodes on the device (its own
// encode_tensor_map, with tensormap.replace) against the driver's cuTensorMapEncodeTiled for the
// same tensor: prints both 128-byte maps side by side, then copies one box with each (the
// kernel's tma_load_tile) and counts the elements that differ. Build and run on a Hopper GPU:
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/tma_probe kernel/dev/tma_probe.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define HEAD_DIM 128
#define BLOCK_M 128
#define BLOCK_N 128
#define STAGES 2
#include "../attention_sm90a.cu"

// Encodes K's map for a [heads, seq_len, HEAD_DIM] tensor at `base` into `out` (the map's bytes),
// then copies the box at column 64, row 64 of head 1 with the device map and with `host_map`.
__global__ void probe(const void* base, int seq_len, int heads, unsigned char* out,
                      const CUtensorMap* host_map, uint16_t* box_device, uint16_t* box_host) {
  __shared__ __align__(128) unsigned char staging[128];
  __shared__ __align__(1024) uint16_t tile[BLOCK_N * 64];
  __shared__ __align__(8) uint64_t bar;
  const int lane = threadIdx.x;
  const uint32_t st = attn::smem_address(staging);
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(st + (lane & 7) * 16), "r"(0)
               : "memory");
  __syncwarp();
  void* map = attn::g_tensor_maps[0][0];
  attn::encode_tensor_map(st, map, base, seq_len, heads, lane);
  __syncwarp();
  for (int i = lane; i < 128; i += 32) out[i] = staging[i];

  const void* maps[2] = {map, host_map};
  uint16_t* boxes[2] = {box_device, box_host};
  const uint32_t b = attn::smem_address(&bar);
  const uint32_t t = attn::smem_address(tile);
  for (int m = 0; m < 2; ++m) {
    if (lane == 0) {
      attn::mbarrier_init(b, 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      // One box of the tile: the second column block's 64 columns are what the copy fetches.
      attn::mbarrier_expect_tx(b, BLOCK_N * 128);
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
          "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(t),
          "l"(maps[m]), "r"(64), "r"(64), "r"(1), "r"(b)
          : "memory");
      attn::mbarrier_wait(b, 0);
    }
    __syncwarp();
    for (int i = lane; i < BLOCK_N * 64; i += 32) boxes[m][i] = tile[i];
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(b) : "memory");
    __syncwarp();
  }
}

int main() {
  const int S = 200, H = 2;
  std::vector<uint16_t> h(static_cast<size_t>(H) * S * HEAD_DIM);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i & 0x7fff);
  void* d;
  cudaMalloc(&d, h.size() * 2);
  cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice);

  CUtensorMap hm;
  memset(&hm, 0, sizeof hm);
  cuuint64_t dims[3] = {HEAD_DIM, static_cast<cuuint64_t>(S), static_cast<cuuint64_t>(H)};
  cuuint64_t strides[2] = {HEAD_DIM * 2, static_cast<cuuint64_t>(S) * HEAD_DIM * 2};
  cuuint32_t box[3] = {64, BLOCK_N, 1}, elem[3] = {1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(&hm, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, d, dims, strides, box,
                                      elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  printf("host encode rc=%d\n", static_cast<int>(r));
  CUtensorMap* dhm;
  cudaMalloc(&dhm, sizeof hm);
  cudaMemcpy(dhm, &hm, sizeof hm, cudaMemcpyHostToDevice);
  unsigned char* out;
  cudaMalloc(&out, 128);
  uint16_t *bd, *bh;
  cudaMalloc(&bd, BLOCK_N * 128);
  cudaMalloc(&bh, BLOCK_N * 128);
  cudaMemset(bd, 0xff, BLOCK_N * 128);
  cudaMemset(bh, 0xff, BLOCK_N * 128);
  probe<<<1, 32>>>(d, S, H, out, dhm, bd, bh);
  cudaError_t e = cudaDeviceSynchronize();
  printf("kernel: %s\n", cudaGetErrorString(e));

  unsigned char dev[128];
  cudaMemcpy(dev, out, 128, cudaMemcpyDeviceToHost);
  const unsigned char* host = reinterpret_cast<const unsigned char*>(&hm);
  for (int i = 0; i < 128; i += 8) {
    printf("%3d dev ", i);
    for (int j = 0; j < 8; ++j) printf("%02x", dev[i + j]);
    printf("  host ");
    for (int j = 0; j < 8; ++j) printf("%02x", host[i + j]);
    printf("%s\n", memcmp(dev + i, host + i, 8) ? "  DIFF" : "");
  }
  std::vector<uint16_t> vd(BLOCK_N * 64), vh(BLOCK_N * 64);
  cudaMemcpy(vd.data(), bd, BLOCK_N * 128, cudaMemcpyDeviceToHost);
  cudaMemcpy(vh.data(), bh, BLOCK_N * 128, cudaMemcpyDeviceToHost);
  int diff = 0;
  for (int i = 0; i < BLOCK_N * 64; ++i) diff += vd[i] != vh[i];
  printf("box elements differing: %d of %d; dev[0..3]=%d %d %d %d host[0..3]=%d %d %d %d\n", diff,
         BLOCK_N * 64, vd[0], vd[1], vd[2], vd[3], vh[0], vh[1], vh[2], vh[3]);
  return diff != 0 || e != cudaSuccess;
}
