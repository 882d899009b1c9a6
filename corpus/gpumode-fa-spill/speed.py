# Exhibit's driver for the corpus (not upstream code). Builds one of lecture 12's two CUDA flash
# attention kernels the way flash_attention.ipynb builds it (get_loaded_cuda_module: the kernel
# file, then torch_extension_template.cu with `your_function_name` replaced by the kernel's name,
# compiled by torch.utils.cpp_extension.load_inline), or takes PyTorch's
# scaled_dot_product_attention, and times it on the notebook's inputs (get_test_tensors: float32
# Q of N_out x 128, K and V of N_inp x 128, torch.randn).
#
#   --impl spill  flash_attention_spilling_from_registers (flash_attention_spilling_from_registers.cu)
#   --impl regs   flash_attention                         (flash_attention.cu)
#   --impl sdpa   torch.nn.functional.scaled_dot_product_attention
#   --dims 512x512,1024x512   N_out x N_inp, in that order (the notebook's TEST_DIMS list
#                             (N_inp, N_out) pairs; its timed table prints N_out first)
#
# Prints, per shape, the largest difference from SDPA's output (information only) and
# "<impl> N_out=<a> N_inp=<b>: <ms> ms": the median of 20 launches after 3 warm-up launches,
# CUDA events around each launch.
#
# Two differences from the notebook's build, neither touching the kernels: the template's name is
# substituted by two #defines in front of #include's of the upstream files (instead of a string
# replace on their concatenated text), so that -lineinfo's line table names the upstream files
# and their own line numbers; and the flags are utils.py's load_cuda flags (-O3, -Xptxas -O3,
# -Xcompiler -O3) plus -lineinfo and -Xptxas -v. utils.py is not imported: it imports matplotlib.
import argparse
import os
import re
import statistics

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
D = 128  # the kernels are built for d = 128 (constexpr int d in both files)

parser = argparse.ArgumentParser()
parser.add_argument('--impl', choices=['spill', 'regs', 'sdpa'], default='spill')
parser.add_argument('--dims', default='512x512')
args, _ = parser.parse_known_args()

NAMES = {'spill': 'flash_attention_spilling_from_registers', 'regs': 'flash_attention'}


def get_sig(fname, src):
    # utils.get_sig, unchanged.
    res = re.findall(rf'^(.+\s+{fname}\(.*?\))\s*{{?\s*$', src, re.MULTILINE)
    return res[0] + ';' if res else None


def build(fname):
    from torch.utils.cpp_extension import load_inline
    kernel = os.path.join(HERE, f'{fname}.cu')
    template = os.path.join(HERE, 'torch_extension_template.cu')
    with open(template) as f:
        cpp_src = get_sig(fname, f.read().replace('your_function_name', fname))
    cuda_src = (f'#define your_function_name {fname}\n'
                f'#define your_function_name_k {fname}_k\n'
                f'#include "{kernel}"\n'
                f'#include "{template}"\n')
    module = load_inline(name=fname, cuda_sources=[cuda_src], cpp_sources=[cpp_src],
                         functions=[fname], verbose=True,
                         extra_cuda_cflags=['-O3', '-Xptxas', '-O3', '-Xcompiler', '-O3',
                                            '-lineinfo', '-Xptxas', '-v'])
    return getattr(module, fname)


if args.impl == 'sdpa':
    def run(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)
else:
    kernel_fn = build(NAMES[args.impl])

    def run(q, k, v):
        return kernel_fn(q, k, v)[0]

torch.manual_seed(0)
for dims in args.dims.split(','):
    n_out, n_inp = (int(x) for x in dims.split('x'))
    # get_test_tensors(N_inp, N_out, d)
    q = torch.randn(n_out, D).contiguous().to('cuda')
    k = torch.randn(n_inp, D).contiguous().to('cuda')
    v = torch.randn(n_inp, D).contiguous().to('cuda')
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    out = None
    for _ in range(3):
        out = run(q, k, v)
    torch.cuda.synchronize()
    print(f'{args.impl} N_out={n_out} N_inp={n_inp}: max abs diff from sdpa '
          f'{(out - expected).abs().max().item():.3e}', flush=True)
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(q, k, v)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    print(f'{args.impl} N_out={n_out} N_inp={n_inp}: {statistics.median(times):.4f} ms', flush=True)
