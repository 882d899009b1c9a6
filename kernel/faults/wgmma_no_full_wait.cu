// plants: with the producer warpgroup (the default path), the consumers no longer wait on a stage's full mbarrier before their wgmma reads it, so they read K and V tiles the producer's TMA copies have not landed yet (or an older tile still in the stage).
//
// Expected: wrong and launch-to-launch varying outputs, and the stage's mbarrier phases fall out
// of step, which can deadlock the kernel on long sequences; memcheck, racecheck and initcheck do
// not follow TMA and wgmma (the asynchronous proxy). Built for sm_90a.
#define FAULT_NO_FULL_WAIT 1
#include "../attention_sm90a.cu"
