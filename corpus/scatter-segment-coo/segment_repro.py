# Exhibit's driver for the corpus (not upstream code): rusty1s/pytorch_scatter's segment_coo
# operator (csrc/segment_coo.cpp with csrc/cpu/segment_coo_cpu.cpp and
# csrc/cuda/segment_coo_cuda.cu, JIT-built with torch.utils.cpp_extension.load as setup.py's
# torch_scatter._segment_coo extension, and loaded as a library of torch ops, as
# torch_scatter/__init__.py loads it) before the fix 2693efc ("fix segment coo indexing"). It
# calls torch.ops.torch_scatter.segment_sum_coo(src, index, None, None) as the Python wrapper
# segment_coo(src, index, reduce="sum") does, on src (16, 8, 32) float32 and a sorted index
# (16, 8) whose every row is [0, 0, 1, 1, 2, 2, 3, 3], and compares the result with a sum per
# slice by torch's index_add_. Exits 1 on a mismatch.
import os
import sys

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, 'csrc')
BUILD = os.path.join(HERE, 'build', 'torch_scatter_segment_coo')
os.makedirs(BUILD, exist_ok=True)

# setup.py: the sources of the _segment_coo extension, include_dirs=[csrc], WITH_CUDA defined
# for both compilers, nvcc with --expt-relaxed-constexpr (torch adds it) and here sm_90 only.
load(
    name='torch_scatter_segment_coo',
    sources=[os.path.join(CSRC, 'segment_coo.cpp'),
             os.path.join(CSRC, 'cpu', 'segment_coo_cpu.cpp'),
             os.path.join(CSRC, 'cuda', 'segment_coo_cuda.cu')],
    extra_include_paths=[CSRC],
    extra_cflags=['-DWITH_CUDA'],
    extra_cuda_cflags=['-DWITH_CUDA', '-O3', '-lineinfo', '-gencode=arch=compute_90,code=sm_90'],
    build_directory=BUILD,
    is_python_module=False,  # registers the torch_scatter:: ops, like torch.ops.load_library
)

B, D, K = 16, 8, 32   # slices, entries per slice (the index's last dimension), features
N = 4                 # segments per slice: index.max() + 1

torch.manual_seed(0)
src = torch.randn(B, D, K, device='cuda')
index = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3], device='cuda').repeat(B, 1)  # (16, 8), sorted

# torch_scatter/segment_coo.py: segment_coo(src, index, reduce="sum") ->
# segment_sum_coo(src, index, out=None, dim_size=None) ->
out = torch.ops.torch_scatter.segment_sum_coo(src, index, None, None)
torch.cuda.synchronize()
print(f'src {tuple(src.shape)} float32, index {tuple(index.shape)} rows {index[0].tolist()}; '
      f'out {tuple(out.shape)}', flush=True)

# Reference: the sum of each slice's rows into its segments.
ref = torch.zeros(B, N, K, device='cuda')
for s in range(B):
    ref[s].index_add_(0, index[s], src[s])

try:
    torch.testing.assert_close(out, ref)
except AssertionError as e:
    print('segment_coo(reduce="sum") does not match index_add_ per slice:')
    print(e)
    if out.shape == ref.shape:
        bad = ~torch.isclose(out, ref)
        rows = bad.any(dim=2)
        wrong = [(s, [n for n in range(N) if rows[s, n]]) for s in range(B) if rows[s].any()]
        print('wrong (slice, segments):', wrong)
        print('all-zero slices:', [s for s in range(B) if not out[s].any()])
    sys.exit(1)
print('segment_coo(reduce="sum") matches index_add_ per slice')
