# Exhibit's driver for the corpus (not upstream code): TransformerEngine's Triton cross entropy
# (transformer_engine/pytorch/triton/cross_entropy.py, cross_entropy_forward, and its kernels
# online_softmax_kernel and cross_entropy_kernel in transformer_engine/common/triton/
# cross_entropy.py) before the fix e6d97ff (PR #2746), on transposed logits (s, b, v) ->
# (b, s, v) as the fix's regression test does, against torch.nn.functional.cross_entropy per
# token. torch.testing.assert_close raises on a mismatch (exit 1).
#
# The logits are the first s rows of a larger buffer (s*b rows), so that every row the kernel
# addresses with its flat row stride stays inside an allocation: the strides are those of a
# plain torch.randn(s, b, v).
import os
import sys
import types

import torch

# Import the two upstream files without running transformer_engine/__init__.py and
# transformer_engine/{common,pytorch}/__init__.py, which load the compiled library: bare package
# modules that only point at the folders.
here = os.path.dirname(os.path.abspath(__file__))
for name in ('transformer_engine', 'transformer_engine.common', 'transformer_engine.pytorch'):
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(here, *name.split('.'))]
    sys.modules[name] = pkg

from transformer_engine.pytorch.triton.cross_entropy import cross_entropy_forward

torch.manual_seed(42)
s, b, v = 16, 4, 1000
big = torch.randn(s * b, b, v, device='cuda')
logits = big[:s]                          # (s, b, v), strides (b*v, v, 1)
target = torch.randint(0, v, (b, s), device='cuda')
x = logits.transpose(0, 1)                # (b, s, v), strides (v, b*v, 1): stride(-1) == 1
print(f'logits {tuple(x.shape)} strides {x.stride()}; target {tuple(target.shape)}', flush=True)

# Reference first: the kernel writes the gradient into its input in place.
ref = torch.nn.functional.cross_entropy(
    x.reshape(-1, v), target.reshape(-1), reduction='none').reshape(b, s)

loss, _ = cross_entropy_forward(x, target, 0.0, False, None, -100)
print(f'loss {tuple(loss.shape)}', flush=True)

torch.testing.assert_close(loss, ref, rtol=1e-4, atol=1e-4)
print('ok: per-token losses match torch.nn.functional.cross_entropy')
