# Exhibit's driver for the corpus (not upstream code): runs the forward kernel of Triton's
# tutorial python/tutorials/05-layer-norm.py, `_layer_norm_fwd_fused` through the tutorial's own
# `layer_norm = LayerNorm.apply`, against torch.nn.functional.layer_norm, forward only.
#
# The tutorial is compiled under its own path (line numbers are the file's) up to its
# `def test_layer_norm`: the imports, the three kernels, `LayerNorm` and `layer_norm`. Its unit
# test (which runs the backward pass too) and its benchmark sweep (30 sizes x 2 providers of
# the backward pass under do_bench) are left out.
#
# 1. Check: the tutorial's test shape (1151 x 8192) and its benchmark's M (4096 x 8192), float16,
#    inputs built as the tutorial's test builds them, compared with the tutorial's own tolerance
#    (torch.allclose(y_tri, y_ref, atol=1e-2, rtol=0)). Exits 1 on a mismatch.
# 2. Timing at 4096 x 8192 float16 (the size of the tutorial's benchmark at N = 8192): 10 warm-up
#    calls of each provider, then 5 rounds in which each provider is timed by the tutorial's own
#    timer, triton.testing.do_bench (CUDA events around each call, the L2 flushed before each,
#    100 ms of calls; here its median), as the tutorial's bench_layer_norm times the forward
#    pass. Each round prints `triton: <us> us` and `torch: <us> us`, and the bandwidth that
#    time means (x read once, y written once, as the tutorial counts it).
#
# Launches of `_layer_norm_fwd_fused`, in order: 1 (check 1151), 1 (check 4096), 10 (warm-up),
# then do_bench's. A profile that skips 12 of them measures do_bench's first call, at
# 4096 x 8192.
import os
import sys

import torch
import triton
import triton.testing

HERE = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(HERE, 'python', 'tutorials', '05-layer-norm.py')
with open(path, encoding='utf-8') as f:
    source = f.read()
cut = source.index('\n\ndef test_layer_norm(')
tutorial = {'__name__': 'layer_norm_tutorial', '__file__': path}
exec(compile(source[:cut], path, 'exec'), tutorial)
layer_norm = tutorial['layer_norm']

N = 8192
DTYPE = torch.float16
EPS = 1e-5
WARMUP = 10
ROUNDS = 5


def inputs(M, N, dtype, device='cuda'):
    # As the tutorial's test_layer_norm builds them (without requires_grad: forward only).
    w_shape = (N, )
    weight = torch.rand(w_shape, dtype=dtype, device=device)
    bias = torch.rand(w_shape, dtype=dtype, device=device)
    x = -2.3 + 0.5 * torch.randn((M, N), dtype=dtype, device=device)
    return x, w_shape, weight, bias


torch.manual_seed(0)
failed = False
with torch.no_grad():
    for M in (1151, 4096):
        x, w_shape, weight, bias = inputs(M, N, DTYPE)
        y_tri = layer_norm(x, w_shape, weight, bias, EPS)
        y_ref = torch.nn.functional.layer_norm(x, w_shape, weight, bias, EPS).to(DTYPE)
        ok = torch.allclose(y_tri, y_ref, atol=1e-2, rtol=0)
        diff = (y_tri.float() - y_ref.float()).abs().max().item()
        print(f'check {M} x {N} float16: max abs diff {diff:.3g} '
              f'({"pass" if ok else "FAIL"}, atol 1e-2)', flush=True)
        failed |= not ok
if failed:
    sys.exit(1)

x, w_shape, weight, bias = inputs(4096, N, DTYPE)
providers = {
    'triton': lambda: layer_norm(x, w_shape, weight, bias, EPS),
    'torch': lambda: torch.nn.functional.layer_norm(x, w_shape, weight, bias, EPS),
}
with torch.no_grad():
    for name, fn in providers.items():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    gb = 2 * x.numel() * x.element_size() / 1e9  # x read once, y written once
    for _ in range(ROUNDS):
        for name, fn in providers.items():
            ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode='median')
            us = ms * 1e3
            print(f'{name}: {us:.1f} us', flush=True)
            print(f'  ({name} at 4096 x {N} float16: {gb / (us * 1e-6):.0f} GB/s of x read + y written)',
                  flush=True)
