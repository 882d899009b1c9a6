// plants: a -inf row maximum used as the exp2 offset: without the guard, a row whose keys in the first visited (diagonal) tile are all masked computes exp2(-inf - -inf) = NaN, and the NaN stays in its running sum and output.
//
// Expected: causal outputs hold NaN (non-causal ones are correct). Rows are fully masked in the
// first visited tile only when BLOCK_N < BLOCK_M, so BLOCK_N is halved below when it is not.
#define FAULT_NAN_ROWMAX 1
#if defined(BLOCK_M) && defined(BLOCK_N)
#if BLOCK_N >= BLOCK_M
#undef BLOCK_N
#define BLOCK_N (BLOCK_M / 2)
#endif
#endif
#include "../attention.cu"
