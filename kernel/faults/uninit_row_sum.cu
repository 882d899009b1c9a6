// plants: an uninitialised accumulator read: the softmax row sums are combined in a global scratch buffer from device-side malloc that is added to (scratch[r] += l) without ever being cleared.
//
// Expected: initcheck reports "Uninitialized __global__ memory read of size 4 bytes". Seen on an
// H200: the first launch passed the reference check (fresh heap memory read as zeros) and every
// later launch differed, normalised with the previous launch's leftover sums.
#define FAULT_UNINIT_ACC 1
#include "../attention.cu"
