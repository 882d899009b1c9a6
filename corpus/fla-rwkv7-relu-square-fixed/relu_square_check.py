# Exhibit's driver for the corpus (not upstream code): flash-linear-attention's RWKV-7 channel
# mixing ReLU-square forward (fla/ops/rwkv7/channel_mixing.py, rwkv_relu_and_square_fwd) at its fix
# #1103, on a (2, 3, 1000) bfloat16 input: 6,000 elements, not a multiple of the kernel's
# BLOCK_SIZE of 4096, so its second and last program covers elements 4096 to 8191.
#
# Two checks, as the fix's own tests do:
#   1. out of place (inplace=False) on a tensor of its own: the output against
#      torch.relu(x) ** 2 (the module's rwkv_relu_and_square_torch);
#   2. in place (the function's default) on a tensor that is the first 6,000 elements of a
#      larger buffer filled with a sentinel: any write past the 6,000th element changes the
#      sentinel (the fix's test_channel_mixing_no_out_of_bounds_writes poisons memory the same way).
# Exits 1 when either fails.
#
# fla/__init__.py imports fla.layers and fla.models (transformers, einops, ...) and
# fla/ops/__init__.py every op; this program needs neither: the driver registers the packages
# fla, fla.ops and fla.ops.rwkv7 as empty packages over their folders, so only fla/utils and
# channel_mixing.py run, unchanged.
import os
import re
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, 'fla', '__init__.py')) as f:
    version = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
for name in ['fla', 'fla.ops', 'fla.ops.rwkv7']:
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(HERE, *name.split('.'))]
    sys.modules[name] = pkg
sys.modules['fla'].__version__ = version

from fla.ops.rwkv7.channel_mixing import rwkv_relu_and_square_fwd, rwkv_relu_and_square_torch  # noqa: E402

torch.manual_seed(0)
shape = (2, 3, 1000)
n = 2 * 3 * 1000
failed = False

# 1. Out of place, on tensors of their own.
x = torch.randn(shape, device='cuda', dtype=torch.bfloat16)
y = rwkv_relu_and_square_fwd(x, inplace=False)
torch.cuda.synchronize()
diff = (y.float() - rwkv_relu_and_square_torch(x).float()).abs().max().item()
print(f'out of place, {n} elements: max abs diff {diff:.4f} (atol 0.01)', flush=True)
failed |= diff > 1e-2

# 2. In place, on the head of a buffer whose tail holds a sentinel.
SENTINEL = -3.0
buf = torch.full((n + 4096,), SENTINEL, device='cuda', dtype=torch.bfloat16)
xs = buf[:n].view(shape)
xs.copy_(x)
rwkv_relu_and_square_fwd(xs)
torch.cuda.synchronize()
ok_head = torch.equal(xs, rwkv_relu_and_square_torch(x))
changed = (buf[n:] != SENTINEL).sum().item()
print(f'in place, {n} elements: result {"ok" if ok_head else "MISMATCH"}; '
      f'{changed} of the 4096 sentinel elements past the end overwritten', flush=True)
failed |= (not ok_head) or changed > 0
sys.exit(1 if failed else 0)
