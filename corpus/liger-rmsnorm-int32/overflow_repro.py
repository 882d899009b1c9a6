# Exhibit's driver for the corpus (not upstream code): Liger-Kernel's RMSNorm forward
# (rms_norm_forward, Llama casting mode) on the input size the issue names (#803, "very long
# seqlen"; the fix PR #804 cites seq_len=1e6, hidden_size=4096), here 600,000 rows x 4096 in
# bfloat16: more than 2**31 elements. Checks a few rows on both sides of row 524,288 (where
# row * 4096 reaches 2**31) against a float32 reference.
import sys

import torch

from liger_kernel.ops.rms_norm import rms_norm_forward

rows, hidden = 600_000, 4096
torch.manual_seed(0)
x = torch.randn(rows, hidden, dtype=torch.bfloat16, device='cuda')
w = torch.randn(hidden, dtype=torch.bfloat16, device='cuda')
print(f'x: {rows} x {hidden} bfloat16 = {x.numel()} elements (2**31 = {2**31})', flush=True)
y = rms_norm_forward(x, w, 1e-6, 0.0, 'llama', False)[0]
torch.cuda.synchronize()
worst = 0.0
for r in [0, 1, 524_287, 524_288, 524_289, rows - 1]:
    xr = x[r].float()
    ref = (xr * torch.rsqrt(xr.pow(2).mean() + 1e-6)).to(torch.bfloat16).float() * w.float()
    worst = max(worst, (y[r].float() - ref).abs().max().item())
print(f'max abs diff over checked rows: {worst:.4f} (atol 0.05)')
sys.exit(0 if worst <= 0.05 else 1)
