# Exhibit's driver for the corpus (not upstream code): runs flash-attention-minimal's kernel the
# way its bench.py does (same extension build, bench.py's sizes: batch 16, 12 heads, seq_len 64,
# head dim 64) and checks it against PyTorch's scaled_dot_product_attention on the same inputs in
# half precision, the reference a user of today's PyTorch reaches for (on Hopper SDPA runs cuDNN's
# attention kernel in the same process). fp16 rounding bounds the difference well under 1e-2.
import sys

import torch
from torch.nn import functional as F
from torch.utils.cpp_extension import load

minimal_attn = load(name='minimal_attn', sources=['main.cpp', 'flash.cu'], extra_cuda_cflags=['-O2', '-lineinfo'])

batch_size, n_head, seq_len, head_embd = 16, 12, 64, 64
torch.manual_seed(0)
q = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()
k = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()
v = torch.randn(batch_size, n_head, seq_len, head_embd).cuda()

expected = F.scaled_dot_product_attention(q.half(), k.half(), v.half()).float()
got = minimal_attn.forward(q, k, v)
torch.cuda.synchronize()
diff = (got - expected).abs().max().item()
ok = diff <= 1e-02
print(f'seq_len {seq_len}: max abs diff {diff:.6f} against SDPA (atol 0.01)')
print('attn values sanity check:', ok)
sys.exit(0 if ok else 1)
