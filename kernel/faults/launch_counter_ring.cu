// plants: state carried across launches: a __device__ launch sequence number, advanced by the last block of every launch and never reset or wrapped, picks the slot of a 4-slot row log-sum-exp ring, so launches 1-4 write inside the ring and launch 5 onward write past its end.
//
// Expected: launch 1 is clean. Seen on an H200: memcheck reports "Invalid __global__ write of
// size 4 bytes" from launch 5; outside the sanitizer launch 5 corrupts module memory silently and
// launch 6 fails with cudaErrorIllegalAddress (the outputs themselves stay bitwise identical).
#define FAULT_LAUNCH_STATE 1
#include "../attention.cu"
