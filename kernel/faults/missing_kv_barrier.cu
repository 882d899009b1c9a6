// plants: a missing barrier between writing a K/V shared-memory stage (cp.async) and reading it: the __syncthreads after cp.async.wait_group is gone, so warps read other threads' tile copies before they land and overwrite a stage that other warps still read.
//
// Expected: racecheck reports hazards between the cp.async writes and the ldmatrix reads. Seen on
// an H200: small problems happened to pass the reference check; at B=4, H=16, S=2048 outputs held
// NaN and repeated launches on the same inputs differed from the first.
#define FAULT_NO_KV_BARRIER 1
#include "../attention.cu"
