# Exhibit's driver for the corpus (not upstream code): pytorch-labs/applied-ai's fast Hadamard
# transform (kernels/cuda/inference/hadamard_transform/: hadamard_transform.cpp and
# hadamard_transform_cuda.cu, JIT-built with torch.utils.cpp_extension.load, as setup.py's
# CUDAExtension builds it) before the fix c7e08fd ("tensor shape bug fixes; chunk masking fix"),
# on a float16 48 x 16 input (768 elements: three 256-element chunks, an odd count), called as
# the repository's binding is, hadamard_transform(x, inplace=False), and compared with a
# Hadamard transform computed in torch (the repository's test.py: x @ H * sqrt(1/16), H from
# the Sylvester construction that scipy.linalg.hadamard uses), at test.py's tolerance
# (atol 1e-2, rtol 0). Exits 1 on a mismatch.
import math
import os
import sys

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, 'kernels', 'cuda', 'inference', 'hadamard_transform')
BUILD = os.path.join(HERE, 'build', 'faster_hadamard_transform')
os.makedirs(BUILD, exist_ok=True)

# setup.py's flags, for sm_90 only.
ext = load(
    name='faster_hadamard_transform',
    sources=[os.path.join(SRC, 'hadamard_transform.cpp'),
             os.path.join(SRC, 'hadamard_transform_cuda.cu')],
    extra_cflags=['-O3'],
    extra_cuda_cflags=['-O3', '-lineinfo', '-gencode=arch=compute_90,code=sm_90',
                       '--ptxas-options=--warn-on-local-memory-usage',
                       '--ptxas-options=--warn-on-spills'],
    build_directory=BUILD,
)


def hadamard(n):
    """Sylvester's construction, the order of scipy.linalg.hadamard (used by test.py)."""
    h = torch.ones(1, 1)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], dim=1), torch.cat([h, -h], dim=1)], dim=0)
    return h


HAD = 16      # Hadamard size: the last dimension
ROWS = 48     # 48 x 16 = 768 elements = 3 chunks of 256

torch.manual_seed(0)
# Made directly on the GPU (no temporaries), so the output's empty_like block is fresh memory.
x = torch.randn((ROWS, HAD), device='cuda', dtype=torch.float16)
out = ext.hadamard_transform(x, inplace=False)
torch.cuda.synchronize()
print(f'input {tuple(x.shape)} float16, {x.numel()} elements = {x.numel() // 256} chunks of 256; '
      f'output {tuple(out.shape)}', flush=True)

# Reference after the kernel, on the CPU in float32 from the same fp16 values, as test.py's
# `a @ hadamard(m) * sqrt(1/m)`.
h = hadamard(HAD) * math.sqrt(1 / HAD)
ref = (x.cpu().float() @ h).to(torch.float16).cuda()

try:
    torch.testing.assert_close(out, ref, atol=1e-2, rtol=0)
except AssertionError as e:
    print('hadamard_transform does not match x @ H * sqrt(1/16):')
    print(e)
    bad = ~torch.isclose(out.float(), ref.float(), atol=1e-2, rtol=0)
    per_chunk = bad.reshape(-1, 256).sum(dim=1).tolist()
    print('mismatched elements per 256-element chunk:', per_chunk)
    sys.exit(1)
print('hadamard_transform matches x @ H * sqrt(1/16)')
