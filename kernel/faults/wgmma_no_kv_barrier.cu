// plants: the barrier between landing a K/V stage (cp.async, then fence.proxy.async) and reading it with wgmma is gone, so a warpgroup's wgmma reads rows other threads have not copied yet, and its prefetch overwrites a stage the other warpgroup's wgmma may still read.
//
// The wgmma path's counterpart of missing_kv_barrier.cu. There racecheck sees the ldmatrix reads;
// here every read of K and V is wgmma's, through the asynchronous proxy, which racecheck does not
// follow. Built for sm_90a with PRODUCER=0 (the path with the block-wide barrier).
#define FAULT_WG_NO_KV_BARRIER 1
#include "../attention_sm90a.cu"
