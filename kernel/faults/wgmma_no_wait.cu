// plants: the S = Q K^T wgmma is committed but never waited for (no wgmma.wait_group before the softmax reads its accumulators), so the softmax reads registers the tensor cores are still writing.
//
// Expected: wrong and launch-to-launch varying outputs (check, stress); the sanitizers do not
// track wgmma's asynchronous accumulators. Built for sm_90a.
#define FAULT_WGMMA_NO_WAIT 1
#include "../attention_sm90a.cu"
