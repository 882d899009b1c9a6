# Exhibit's driver for the corpus (not upstream code): Unsloth's Triton LayerNorm forward
# (unsloth/kernels/layernorm.py, Fast_Layernorm) before #1867, against torch's layer_norm on the
# same float16 input, at a hidden size that is a power of two (1024, which the upstream tests
# use) and at one that is not (1536, the size the fix's thread names). The input has a non-zero
# mean (N(1, 1)), as hidden states often do: the bug scales with the mean squared. Exits 1 when
# the largest difference at any size passes 1e-2.
#
# unsloth/kernels/__init__.py and utils.py import bitsandbytes and unsloth_zoo, which this
# program does not need: the driver loads layernorm.py alone, with two stand-ins for its two
# imports: calculate_settings (the same arithmetic as unsloth/kernels/utils.py at this commit)
# and unsloth_zoo.patching_utils.patch_layernorm (never called by the forward).
import importlib.util
import os
import sys
import types

import torch
import triton

HERE = os.path.dirname(os.path.abspath(__file__))


def calculate_settings(n):
    # unsloth/kernels/utils.py:50-60 at this commit
    block_size = triton.next_power_of_2(n)
    if block_size > 65536:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds "
                           f"the maximum CUDA blocksize = 65536.")
    num_warps = 4
    if block_size >= 32768:
        num_warps = 32
    elif block_size >= 8192:
        num_warps = 16
    elif block_size >= 2048:
        num_warps = 8
    return block_size, num_warps


for name in ['unsloth', 'unsloth.kernels']:
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(HERE, *name.split('.'))]
    sys.modules[name] = pkg
utils = types.ModuleType('unsloth.kernels.utils')
utils.calculate_settings = calculate_settings
sys.modules['unsloth.kernels.utils'] = utils
zoo = types.ModuleType('unsloth_zoo')
zoo.__path__ = []
zoo_patching = types.ModuleType('unsloth_zoo.patching_utils')
zoo_patching.patch_layernorm = None
sys.modules['unsloth_zoo'] = zoo
sys.modules['unsloth_zoo.patching_utils'] = zoo_patching

path = os.path.join(HERE, 'unsloth', 'kernels', 'layernorm.py')
spec = importlib.util.spec_from_file_location('unsloth.kernels.layernorm', path)
layernorm = importlib.util.module_from_spec(spec)
sys.modules['unsloth.kernels.layernorm'] = layernorm
spec.loader.exec_module(layernorm)

torch.manual_seed(3407)
failed = False
for dim in [1024, 1536]:
    x = (torch.randn(256, dim, device='cuda') + 1.0).to(torch.float16)
    w = torch.rand(dim, device='cuda', dtype=torch.float16)
    b = torch.rand(dim, device='cuda', dtype=torch.float16)
    y = layernorm.Fast_Layernorm.apply(x, w, b, 1e-5)
    ref = torch.nn.functional.layer_norm(x.float(), (dim,), w.float(), b.float(), 1e-5)
    diff = (y.float() - ref).abs().max().item()
    ok = diff <= 1e-2
    failed |= not ok
    print(f'dim {dim} (BLOCK_SIZE {triton.next_power_of_2(dim)}): max abs diff {diff:.4f} '
          f'(atol 0.01) {"ok" if ok else "MISMATCH"}', flush=True)
sys.exit(1 if failed else 0)
