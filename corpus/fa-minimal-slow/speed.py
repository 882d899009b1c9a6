# Exhibit's driver for the corpus (not upstream code): times flash-attention-minimal's forward
# kernel, built the way its bench.py builds it, or PyTorch's scaled_dot_product_attention on the
# same float32 inputs, at bench.py's shape (16 x 12 heads x 64 x 64) and at seq_len 1024.
# Prints one line per shape: "<impl> seq_len <N>: <ms> ms" (median of 20 timed launches after
# 3 warm-up launches, CUDA events). Unknown arguments are ignored.
import argparse
import statistics

import torch
from torch.nn import functional as F

parser = argparse.ArgumentParser()
parser.add_argument('--impl', choices=['minimal', 'sdpa'], default='minimal')
parser.add_argument('--seq-lens', default='64,1024')
args, _ = parser.parse_known_args()

if args.impl == 'minimal':
    from torch.utils.cpp_extension import load
    minimal_attn = load(name='minimal_attn', sources=['main.cpp', 'flash.cu'],
                        extra_cuda_cflags=['-O2', '-lineinfo'])
    run = minimal_attn.forward
else:
    run = F.scaled_dot_product_attention

torch.manual_seed(0)
for seq_len in [int(s) for s in args.seq_lens.split(',')]:
    q, k, v = (torch.randn(16, 12, seq_len, 64, device='cuda') for _ in range(3))
    for _ in range(3):
        run(q, k, v)
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(q, k, v)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    print(f'{args.impl} seq_len {seq_len}: {statistics.median(times):.4f} ms', flush=True)
