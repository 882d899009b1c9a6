# Exhibit's driver for the corpus (not upstream code): LightLLM's destindex_copy_kv (the Triton
# kernel _fwd_kernel_destindex_copy_kv that writes new K/V rows into the KV cache at the slots
# DestLoc names), before its int32 fix (#907). A KV cache of 2,200,000 slots x 8 heads x 128
# (fp16, 2.25e9 elements, 4.5 GB) and one new token written to slot 2,100,000, whose element
# offset 2,100,000 * 1024 = 2,150,400,000 is past 2**31 - 1. Checks the slot against the token.
import importlib.util
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, 'lightllm', 'common', 'basemodel', 'triton_kernel', 'destindex_copy_kv.py')
spec = importlib.util.spec_from_file_location('destindex_copy_kv', path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

slots, heads, head_dim, dest = 2_200_000, 8, 128, 2_100_000
# The cache first, so that nothing else large lies below it in the address space.
out = torch.empty((slots, heads, head_dim), dtype=torch.float16, device='cuda')
torch.manual_seed(0)
k = torch.randn((1, heads, head_dim), dtype=torch.float16, device='cuda')
dest_loc = torch.tensor([dest], dtype=torch.int32, device='cuda')
print(f'KV cache: {tuple(out.shape)} float16 = {out.numel()} elements, row stride {out.stride(0)}; '
      f'slot {dest} starts at element {dest * out.stride(0)} (2**31 = {2**31})', flush=True)

mod.destindex_copy_kv(k, dest_loc, out)
torch.cuda.synchronize()

torch.testing.assert_close(out[dest], k[0], atol=0, rtol=0)
print('slot', dest, 'holds the token: ok')
