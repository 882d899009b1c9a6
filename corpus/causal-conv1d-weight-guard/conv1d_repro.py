# Exhibit's driver for the corpus (not upstream code): Dao-AILab/causal-conv1d's CUDA forward
# (csrc/, JIT-built with torch.utils.cpp_extension.load from the four sources setup.py's
# CUDAExtension builds, with setup.py's nvcc flags for sm_90 only), called through the
# repository's own causal_conv1d_fn and compared with its own pure-torch causal_conv1d_ref
# (causal_conv1d/causal_conv1d_interface.py), with the tolerances of tests/test_causal_conv1d.py.
# Two channel-last inputs (x of shape (batch, dim, seqlen) with stride(1) == 1, as the test builds
# them), width 4, with bias, no activation:
#   (a) float32, dim 72 (three 32-channel chunks, the last one partial);
#   (b) float16, dim 64 (one 64-channel chunk).
# Each case is checked on its own; exits 1 if either does not match the reference.
import os
import sys

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, 'build', 'causal_conv1d_cuda')
os.makedirs(BUILD, exist_ok=True)

ext = load(
    name='causal_conv1d_cuda',
    sources=[os.path.join(HERE, 'csrc', f) for f in (
        'causal_conv1d.cpp', 'causal_conv1d_fwd.cu', 'causal_conv1d_bwd.cu', 'causal_conv1d_update.cu')],
    extra_cflags=['-O3'],
    extra_cuda_cflags=[
        '-O3', '-lineinfo', '-gencode=arch=compute_90,code=sm_90',
        '-U__CUDA_NO_HALF_OPERATORS__', '-U__CUDA_NO_HALF_CONVERSIONS__',
        '-U__CUDA_NO_BFLOAT16_OPERATORS__', '-U__CUDA_NO_BFLOAT16_CONVERSIONS__',
        '-U__CUDA_NO_BFLOAT162_OPERATORS__', '-U__CUDA_NO_BFLOAT162_CONVERSIONS__',
        '--expt-relaxed-constexpr', '--expt-extended-lambda', '--use_fast_math',
    ],
    build_directory=BUILD,
)
# The repository's Python interface imports the extension by this name.
sys.modules['causal_conv1d_cuda'] = ext
from causal_conv1d.causal_conv1d_interface import causal_conv1d_fn, causal_conv1d_ref  # noqa: E402


def run_case(label, dtype, dim, batch=1, seqlen=64, width=4):
    torch.manual_seed(0)
    # Channel-last (batch, dim, seqlen): the test's rearrange of a (batch, seqlen, dim) tensor.
    x = torch.randn(batch, seqlen, dim, device='cuda', dtype=dtype).transpose(1, 2)
    weight = torch.randn(dim, width, device='cuda', dtype=torch.float32)
    bias = torch.randn(dim, device='cuda', dtype=torch.float32)
    rtol, atol = (3e-4, 1e-3) if dtype == torch.float32 else (3e-3, 5e-3)

    out = causal_conv1d_fn(x, weight, bias, activation=None)
    out_ref = causal_conv1d_ref(x, weight, bias, activation=None)
    torch.cuda.synchronize()
    diff = (out.float() - out_ref.float()).abs().max().item()
    print(f'case {label}: x {tuple(x.shape)} {str(dtype).replace("torch.", "")} channel-last '
          f'(strides {x.stride()}), weight ({dim}, {width}) float32, bias: max |out - ref| {diff:.6f}',
          flush=True)
    try:
        torch.testing.assert_close(out, out_ref, rtol=rtol, atol=atol)
    except AssertionError as e:
        print(f'case {label}: causal_conv1d_fn does not match causal_conv1d_ref:')
        print(e, flush=True)
        return False
    print(f'case {label}: ok', flush=True)
    return True


results = [
    run_case('(a)', torch.float32, 72),
    run_case('(b)', torch.float16, 64),
]
if not all(results):
    print(f'FAILED: {results.count(False)} of {len(results)} cases')
    sys.exit(1)
print('all cases match the reference')
