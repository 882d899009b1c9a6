# Exhibit's driver for the corpus (not upstream code): LightLLM's silu_and_mul_fwd (the Triton
# kernel _silu_and_mul_kernel, which computes silu(gate) * up in place into the first half of
# each row of the fused gate/up projection), before its int32 fix (#354). The input is what
# LlamaTransformerLayerInfer._ffn passes it for a 100,000-token batch of a model with a
# 11,008-wide MLP (Llama-2-7B): up_gate_out of 100,000 x 22,016 float16 (2.2e9 elements,
# 4.4 GB, row stride 22,016). Rows from 2**31 // 22,016 = 97,541 on have element offsets past
# 2**31 - 1. Checks rows on both sides of that row against the file's own torch reference.
import importlib.util
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, 'lightllm', 'models', 'llama', 'triton_kernel', 'silu_and_mul.py')
spec = importlib.util.spec_from_file_location('silu_and_mul', path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

tokens, gate_up = 100_000, 22_016
half = gate_up // 2
torch.manual_seed(0)
# The input first, so that nothing else large lies below it in the address space.
x = torch.randn((tokens, gate_up), dtype=torch.float16, device='cuda')
wrap_row = 2**31 // x.stride(0)
rows = [0, wrap_row - 2, wrap_row - 1, wrap_row, wrap_row + 1, wrap_row + 2, tokens - 1]
print(f'input: {tuple(x.shape)} float16 = {x.numel()} elements, row stride {x.stride(0)}; '
      f'row {wrap_row} ends at element {(wrap_row + 1) * x.stride(0) - 1} (2**31 = {2**31}); '
      f'checking rows {rows}', flush=True)

# The kernel writes into its input, so the reference is taken first (the file's own
# torch_silu_and_mul: silu(x[:, :N/2]) * x[:, N/2:]).
ref = mod.torch_silu_and_mul(x[rows])

out = mod.silu_and_mul_fwd(x)
torch.cuda.synchronize()

got = out[rows]
try:
    torch.testing.assert_close(got, ref, atol=1e-2, rtol=1e-2)
except AssertionError as e:
    print('silu_and_mul_fwd does not match torch_silu_and_mul:')
    print(e)
    close = torch.isclose(got, ref, atol=1e-2, rtol=1e-2)
    for r, ok in zip(rows, close):
        bad = (~ok).nonzero().flatten()
        where = f', columns {bad[0].item()} to {bad[-1].item()}' if bad.numel() else ''
        print(f'row {r}: {bad.numel()} of {half} wrong{where}')
    sys.exit(1)
print('rows', rows, 'match torch_silu_and_mul: ok')
