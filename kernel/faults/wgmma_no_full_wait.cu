// plants: with the producer warpgroup (PRODUCER=1), the consumers no longer wait on a stage's full mbarrier before their wgmma reads it, so they read K and V tiles the producer's cp.async copies have not landed yet (or an older tile still in the stage).
//
// Expected: wrong and launch-to-launch varying outputs; racecheck does not follow wgmma's reads
// (the asynchronous proxy), so the sanitizers stay clean. Built for sm_90a with PRODUCER=1.
#define FAULT_NO_FULL_WAIT 1
#include "../attention_sm90a.cu"
