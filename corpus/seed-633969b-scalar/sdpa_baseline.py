# Exhibit's driver for the corpus (not upstream code): PyTorch's scaled_dot_product_attention
# at quick_correctness.py's shape (B=2, H=8, S=512, D=64, float16, not causal), timed with CUDA
# events (median of 20 launches after 3 warm-up launches): the baseline the V3 kernel is
# checked against. Prints "sdpa: <ms> ms".
import statistics

import torch
from torch.nn import functional as F

torch.manual_seed(0)
q, k, v = (torch.randn(2, 8, 512, 64, device='cuda', dtype=torch.float16) for _ in range(3))
for _ in range(3):
    F.scaled_dot_product_attention(q, k, v)
times = []
for _ in range(20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    F.scaled_dot_product_attention(q, k, v)
    end.record()
    end.synchronize()
    times.append(start.elapsed_time(end))
print(f'sdpa: {statistics.median(times):.4f} ms', flush=True)
