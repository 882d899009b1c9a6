"""A block sum written with Numba's CUDA target, with the barrier its tree is missing: after
the first step, threads read partial sums other warps have not finished writing. lineinfo=True
gives the tools its lines without -G; cache=True keeps its cubin where the SASS stage reads it."""
import numpy as np

# numba-cuda 0.x still calls np.row_stack, which numpy 2.5 removed.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda, float32  # noqa: E402

THREADS = 128


@cuda.jit(lineinfo=True, cache=True)
def block_sum(x, out):
    part = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * THREADS + t
    part[t] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            part[t] += part[t + s]
        s //= 2  # no cuda.syncthreads() between the steps
    if t == 0:
        out[cuda.blockIdx.x] = part[0]


def main():
    n = 1 << 16
    x = np.ones(n, dtype=np.float32)
    blocks = n // THREADS
    out = cuda.device_array(blocks, dtype=np.float32)
    block_sum[blocks, THREADS](cuda.to_device(x), out)
    got = out.copy_to_host().sum()
    print(f"sum {got:.0f} (expected {n})")
    if got != n:
        raise SystemExit(f"FAIL: sum {got:.0f}, expected {n}")


if __name__ == "__main__":
    main()
