"""A row softmax in Triton, checked against torch: a program whose kernel is compiled just in
time (into $TRITON_CACHE_DIR), with no build step of its own.

Writes exhibit.results/1 to $EXHIBIT_OUT when set (the check stage reads it); exits 1 when the
result is wrong.
"""

import json
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](out, x, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out


def main():
    torch.manual_seed(0)
    x = torch.randn(4096, 1000, device="cuda")
    got = softmax(x)
    want = torch.softmax(x, dim=1)
    error = (got - want).abs().max().item()
    ok = error < 1e-5
    print(f"{'PASS' if ok else 'FAIL'}  softmax 4096x1000  max abs error {error:.2e}")
    out = os.environ.get("EXHIBIT_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"schema": "exhibit.results/1", "program": "softmax.py",
                       "results": [{"name": "softmax 4096x1000", "passed": ok,
                                    "max_abs_err": error}]}, f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
