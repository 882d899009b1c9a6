# Exhibit's driver for the corpus (not upstream code): runs flash-attention-minimal's kernel the
# way its bench.py does (same extension build, same manual-attention reference and tolerance),
# at the sequence length $SEQ_LEN gives (default 20; the kernel's block size is Bc = Br = 32).
import math
import os
import sys

import torch
from torch.nn import functional as F
from torch.utils.cpp_extension import load

minimal_attn = load(name='minimal_attn', sources=['main.cpp', 'flash.cu'], extra_cuda_cflags=['-O2', '-lineinfo'])

seq_len = int(os.environ.get("SEQ_LEN", "20"))
batch_size, n_head, head_embd = 16, 12, 64
torch.manual_seed(0)
q = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()
k = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()
v = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()


def manual_attn(q, k, v):
    att = (q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1))))
    att = F.softmax(att, dim=-1)
    return att @ v


expected = manual_attn(q, k, v)
got = minimal_attn.forward(q, k, v)
torch.cuda.synchronize()
diff = (got - expected).abs().max().item()
ok = torch.allclose(got, expected, rtol=0, atol=1e-02)
print(f'seq_len {seq_len}: max abs diff {diff:.6f} (atol 0.01)')
print('attn values sanity check:', ok)
sys.exit(0 if ok else 1)
