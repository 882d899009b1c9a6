# Exhibit's driver for the corpus (not upstream code): builds tiny-flash-attention's CUDA
# extension the way its build.py does (same sources, include dirs and nvcc flags, but through
# torch.utils.cpp_extension.load at run time, for the GPU present), checks
# flash_attention_v2_cuda against PyTorch's scaled_dot_product_attention on the same float16
# inputs, and times either one.
#
#   python3 bench_attn.py --impl tiny   # check once against SDPA, then time the extension's kernel
#   python3 bench_attn.py --impl sdpa   # time SDPA (the baseline)
#
# Shape: batch 8, 16 heads, head dim 64, seq_len 1024 (--seq-lens takes a comma list), float16,
# inputs drawn as upstream's self_attention.py draws them (normal, std 0.5). Prints one line per
# shape: "<impl> seq_len <N>: <ms> ms", the median of 20 timed calls after 3 warm-up calls (CUDA
# events). The check prints "check seq_len <N>: max abs err <e> (tolerance <t>, max |sdpa| <m>)"
# and exits 1 past the tolerance. Unknown arguments are ignored.
import argparse
import os
import statistics
import sys

import torch
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
# float16 inputs and float16 accumulators in the kernel. At these inputs SDPA's output stays
# below about 0.1 in magnitude, so upstream's atol of 1e-2 would pass an all-zero output.
TOLERANCE = 5e-3

parser = argparse.ArgumentParser()
parser.add_argument('--impl', choices=['tiny', 'sdpa'], default='tiny')
parser.add_argument('--seq-lens', default='1024')
parser.add_argument('--batch', type=int, default=8)
parser.add_argument('--heads', type=int, default=16)
parser.add_argument('--dim', type=int, default=64)
args, _ = parser.parse_known_args()


def build():
    from torch.utils.cpp_extension import load
    return load(
        name='attention_cuda',
        sources=[os.path.join(HERE, 'csrc', f) for f in
                 ('attention_api.cpp', 'flash_attention.cu', 'self_attention.cu')],
        extra_include_paths=[os.path.join(HERE, 'csrc'), os.path.join(HERE, 'include')],
        extra_cflags=['-O3', '-std=c++17'],
        extra_cuda_cflags=['-O3', '-std=c++17', '-U__CUDA_NO_HALF_OPERATORS__',
                           '--use_fast_math', '-lineinfo'],
    )


if args.impl == 'tiny':
    run = build().flash_attention_v2_cuda
else:
    run = F.scaled_dot_product_attention

torch.manual_seed(0)
for seq_len in [int(s) for s in args.seq_lens.split(',')]:
    q, k, v = (torch.empty(args.batch, args.heads, seq_len, args.dim, dtype=torch.float16,
                           device='cuda').normal_(mean=0.0, std=0.5) for _ in range(3))
    if args.impl == 'tiny':
        ref = F.scaled_dot_product_attention(q, k, v).float()
        err = (run(q, k, v).float() - ref).abs().max().item()
        print(f'check seq_len {seq_len}: max abs err {err:.5f} (tolerance {TOLERANCE}, '
              f'max |sdpa| {ref.abs().max().item():.4f})', flush=True)
        if not err <= TOLERANCE:
            sys.exit(1)
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
