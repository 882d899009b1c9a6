// plants: an off-by-one tail tile: the key limit is seq_len + 1 for both the K/V tile loads and the mask, so when seq_len is not a multiple of BLOCK_N the last tile loads one key row past the end of each head and gives it softmax weight.
//
// Expected: non-causal outputs differ from the reference whenever seq_len % BLOCK_N != 0 (causal
// masks the extra key anyway; exact when seq_len % BLOCK_N == 0). The extra row is the next
// head's first row, and past the end of the tensor for the last head. Seen on an H200
// (compute-sanitizer 2025.3): memcheck reported 0 errors for that cp.async read past the
// allocation, and the last head's output came out NaN because the bytes it read were the
// NaN-poisoned output buffer next to it; the evidence is the comparison with the reference.
#define FAULT_TAIL_OFF_BY_ONE 1
#include "../attention.cu"
