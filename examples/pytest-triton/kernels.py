"""Two small Triton kernels with the faults a kernel engineer meets first: a load that forgets
the tail mask (an out-of-bounds read whenever n is not a multiple of the block), and a row sum
that leaves the last partial block out (a wrong answer on the same shapes)."""
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(out_ptr, in_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # The fault: the load has no mask, so the last block reads past the end of `in`.
    x = tl.load(in_ptr + offs)
    tl.store(out_ptr + offs, x * factor, mask=offs < n)


@triton.jit
def rowsum_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # The fault: only the full blocks of the row are summed; the partial one is left out.
    for start in range(0, n_cols - BLOCK + 1, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(in_ptr + row * stride + cols)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def scale(x, factor, block=256):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, block),)](out, x, n, factor, BLOCK=block)
    return out


def rowsum(x, block=64):
    rows, cols = x.shape
    out = torch.empty(rows, device=x.device, dtype=torch.float32)
    rowsum_kernel[(rows,)](out, x, cols, x.stride(0), BLOCK=block)
    return out
