# Exhibit's driver for the corpus (not upstream code): kernl's Triton LayerNorm
# (src/kernl/implementations/layer_norm.py, layer_norm() with its default kernel
# _layer_norm_fwd_fused_single_pass) before the fix d488f34 ("fix: layernorm stride (#190)"),
# on a transposed float32 250 x 250 input, as the fix's added test_stride does, against
# torch.nn.functional.layer_norm. torch.testing.assert_close raises on a mismatch (exit 1).
import os

import torch

# layer_norm.py does `from torch.cuda.amp import custom_fwd` (deprecated since torch 2.4). Only
# if this torch no longer has it, put back the alias torch documents for it, before the import.
if not hasattr(torch.cuda.amp, 'custom_fwd'):
    import functools
    torch.cuda.amp.custom_fwd = functools.partial(torch.amp.custom_fwd, device_type='cuda')
    print('note: torch.cuda.amp.custom_fwd missing; aliased to torch.amp.custom_fwd(device_type="cuda")')

import kernl.implementations.layer_norm as ln

here = os.path.dirname(os.path.abspath(__file__))
assert os.path.abspath(ln.__file__).startswith(os.path.join(here, 'src')), ln.__file__

torch.manual_seed(0)
M = N = 250
eps = 1e-5
kw = dict(device='cuda', dtype=torch.float32)
weight = torch.rand((N,), **kw)
bias = torch.randn_like(weight)
# -20 + 0.5 * randn, built in place (no freed temporaries for the output to reuse)
x = torch.randn((M, N), **kw).mul_(0.5).add_(-20.0)
x = x.transpose(-1, -2)  # shape (250, 250), strides (1, 250)
print(f'input {tuple(x.shape)} strides {x.stride()} contiguous={x.is_contiguous()}', flush=True)

out = ln.layer_norm(x, weight, bias, eps)  # default implementation: _layer_norm_fwd_fused_single_pass
print(f'output {tuple(out.shape)} strides {out.stride()}', flush=True)

expected = torch.nn.functional.layer_norm(x, weight.shape, weight, bias, eps)
torch.testing.assert_close(out, expected, rtol=0, atol=1e-1)
print('ok: matches torch.nn.functional.layer_norm (atol 0.1)')
