// plants: the TMA tensor maps the kernel encodes give a box half a tile high (BLOCK_N / 2 rows), and each stage's mbarrier expects only those bytes, so the second half of every K and V tile is never loaded and wgmma reads whatever an earlier tile (or nothing) left there.
//
// Expected: wrong outputs on every shape longer than half a tile (check); the same stale rows on
// every launch (stress); no sanitizer sees it: TMA writes and wgmma reads both go through the
// asynchronous proxy, which memcheck, racecheck, initcheck and synccheck do not follow. Built for
// sm_90a with the default (TMA) path.
#define FAULT_TMA_BOX_ROWS 1
#include "../attention_sm90a.cu"
