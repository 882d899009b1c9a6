# Exhibit's driver for the corpus (not upstream code): Liger-Kernel's Triton LayerNorm forward
# (src/liger_kernel/ops/layer_norm.py, layer_norm_forward) before #582, against torch's
# layer_norm on the same float32 input, at a hidden size that is a power of two (1024) and at
# one that is not (1536, the size the fix's thread names). The input has a non-zero mean
# (N(1, 1)): the bug scales with the mean squared. Exits 1 when the largest difference at any
# size passes 1e-2.
import sys

import torch
import triton

from liger_kernel.ops.layer_norm import layer_norm_forward

torch.manual_seed(0)
failed = False
for dim in [1024, 1536]:
    x = torch.randn(256, dim, device='cuda') + 1.0
    w = torch.rand(dim, device='cuda')
    b = torch.rand(dim, device='cuda')
    y = layer_norm_forward(x, w, b, 1e-6)[0]
    ref = torch.nn.functional.layer_norm(x, (dim,), w, b, 1e-6)
    diff = (y - ref).abs().max().item()
    ok = diff <= 1e-2
    failed |= not ok
    print(f'dim {dim} (BLOCK_SIZE {triton.next_power_of_2(dim)}): max abs diff {diff:.4f} '
          f'(atol 0.01) {"ok" if ok else "MISMATCH"}', flush=True)
sys.exit(1 if failed else 0)
