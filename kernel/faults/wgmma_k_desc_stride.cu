// plants: the shared-memory descriptor of the K tile gives a stride byte offset of 512 instead of 1024 (8 rows of 128 bytes), so wgmma reads half the key rows twice and the others never.
//
// Expected: wrong outputs on every shape (check), identical from launch to launch (stress); no
// sanitizer sees a descriptor that stays inside the tile. Built for sm_90a.
#define FAULT_K_DESC_STRIDE 1
#include "../attention_sm90a.cu"
