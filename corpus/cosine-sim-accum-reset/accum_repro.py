# Exhibit's driver for the corpus (not upstream code): runs lucidrains/flash-cosine-sim-attention's
# CUDA forward (flash_cosine_sim_attention/flash_cosine_sim_attention_cuda.cu, JIT-built with
# torch.utils.cpp_extension.load, as setup.py's CUDAExtension builds it) the way the repository's
# Python wrapper calls it (flash_cosine_sim_attention.py: l2-normalised q and k, zero-initialised
# float32 o and l, scale 8, no causal mask, 16 x 16 blocks, then o / l), on the inputs of the
# repository's tests/test.py::test_output_equal (q, k, v = randn(2, 4, 63, 63)), and compares it
# with the repository's reference plain_cosine_sim_attention, mirrored below. Exits 1 on mismatch.
import os
import sys

import torch
import torch.nn.functional as F
from torch import einsum
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, 'build', 'flash_cosine_sim_attention_cuda')
os.makedirs(BUILD, exist_ok=True)

ext = load(
    name='flash_cosine_sim_attention_cuda',
    sources=[os.path.join(HERE, 'flash_cosine_sim_attention', 'flash_cosine_sim_attention_cuda.cu')],
    extra_cuda_cflags=['-O3', '-lineinfo', '-gencode=arch=compute_90,code=sm_90'],
    build_directory=BUILD,
)


def l2norm(t):
    return F.normalize(t, dim=-1)


# The repository's reference (flash_cosine_sim_attention.py, plain_cosine_sim_attention).
def plain_cosine_sim_attention(q, k, v, scale=8, causal=False):
    q, k = map(l2norm, (q, k))
    sim = einsum('... i d, ... j d -> ... i j', q, k)
    sim = sim * scale

    if causal:
        causal_mask = torch.ones(sim.shape[-2:], device=q.device).triu(1)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)

    attn = sim.softmax(dim=-1)
    return einsum('... i j, ... j d -> ... i d', attn, v)


# The repository's wrapper (flash_cosine_sim_attention and FlashCosineSimAttention.forward),
# forward only.
def flash_cosine_sim_attention(q, k, v, scale=8, causal=False, mask=None, q_block_size=16,
                               k_block_size=16):
    q, k = map(l2norm, (q, k))
    batch, heads, seq, _, dim, device = *q.shape, v.shape[-1], q.device
    if mask is None:
        mask = torch.ones(q.shape[0], q.shape[2], device=device, dtype=torch.bool)
    o = torch.zeros((batch, heads, seq, dim), device=device, dtype=torch.float32)
    l = torch.zeros((batch, heads, seq), device=device, dtype=torch.float32)
    ext.forward(q, k, v, o, l, mask, scale, causal, q_block_size, k_block_size)
    o.div_(l[..., None].clamp(min=1e-20))
    return o


torch.manual_seed(0)
q = torch.randn(2, 4, 63, 63).cuda()
k = torch.randn(2, 4, 63, 63).cuda()
v = torch.randn(2, 4, 63, 63).cuda()

plain_output = plain_cosine_sim_attention(q, k, v)
flash_output = flash_cosine_sim_attention(q, k, v)
torch.cuda.synchronize()

print(f'q, k, v {tuple(q.shape)} float32, k_block_size 16: '
      f'max abs diff {(flash_output - plain_output).abs().max().item():.6f}')
try:
    torch.testing.assert_close(flash_output, plain_output, atol=1e-4, rtol=1e-4)
except AssertionError as e:
    print('flash_cosine_sim_attention does not match plain_cosine_sim_attention:')
    print(e)
    sys.exit(1)
print('flash_cosine_sim_attention matches plain_cosine_sim_attention')
