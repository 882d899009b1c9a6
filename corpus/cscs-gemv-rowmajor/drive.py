# Exhibit field-corpus driver (not upstream): times eth-cscs/PythonHPC's Numba CUDA
# matrix-vector kernel `_gemv_cuda` on a row-major (C-order) matrix, as the course
# notebook numba-cuda/3.memory-optimization.ipynb first writes it (`slow`), or the same
# kernel compiled for a column-major (Fortran-order) matrix, as numba-cuda/src/matvec.py
# has it (`fast`), on the same problem: y = alpha*A@x + beta*y.
#
#   python3 drive.py slow|fast
#
# One warm-up launch, checked against numpy, then 20 launches timed one by one with CUDA
# events; prints the median as "slow: 123.4 us" or "fast: 12.3 us". Exit 1 on a mismatch.
import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 on numpy 2.5
    np.row_stack = np.vstack

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The problem: a tall matrix, one thread per row, 128 threads a block as upstream.
# (The notebook's square N = 16384 would launch only 128 blocks, fewer than the H200's
# 132 SMs; 262144 rows fill the GPU with the same kernel and the same launch rule.)
NROWS = 262144
NCOLS = 1024
BLOCK_SIZE = 128  # upstream's block_size (notebook) / BLOCK_SIZE (matvec.py)
ALPHA = 0.2
BETA = 1.0
NTIMED = 20


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("slow", "fast"):
        print(f"usage: {sys.argv[0]} slow|fast", file=sys.stderr)
        return 2
    mode = sys.argv[1]

    import numba.cuda as cuda

    rng = np.random.default_rng(1234)
    A = rng.random((NROWS, NCOLS))          # C order (row-major), as the notebook's cell 1
    x = rng.random(NCOLS)
    y_orig = np.ones(NROWS)
    y_ref = ALPHA * (A @ x) + BETA * y_orig

    if mode == "slow":
        # The notebook's first code cell (imports, timing classes, the kernel), extracted
        # verbatim into numba-cuda/memory_optimization_cell1.py: signature 'Array(float64, 2, "C")'.
        sys.path.insert(0, os.path.join(HERE, "numba-cuda"))
        import memory_optimization_cell1 as upstream
        A_dev_host = A
    else:
        # numba-cuda/src/matvec.py: the same kernel body, signature 'Array(float64, 2, "F")'.
        sys.path.insert(0, os.path.join(HERE, "numba-cuda", "src"))
        import matvec as upstream
        A_dev_host = np.asfortranarray(A)   # column-major, as matvec.py's main builds A
    del A
    kernel = upstream._gemv_cuda

    d_A = cuda.to_device(A_dev_host)
    d_x = cuda.to_device(x)
    d_y = cuda.to_device(y_orig)

    # upstream's launch: one thread per row, ceil(N / block) blocks
    num_blocks = NROWS // BLOCK_SIZE
    if NROWS % BLOCK_SIZE:
        num_blocks += 1

    # warm-up launch (compiles nothing: the signature compiled the kernel at import), checked
    kernel[num_blocks, BLOCK_SIZE](ALPHA, d_A, d_x, BETA, d_y)
    cuda.synchronize()
    y = d_y.copy_to_host()
    np.testing.assert_allclose(y, y_ref, rtol=1e-10, atol=0,
                               err_msg=f"{mode}: _gemv_cuda result differs from numpy")
    print(f"{mode}: check passed ({NROWS}x{NCOLS} float64, {num_blocks} blocks of {BLOCK_SIZE})")

    # timed launches (y keeps accumulating beta*y: the work per launch is the same)
    start = cuda.event(timing=True)
    end = cuda.event(timing=True)
    times_us = []
    for _ in range(NTIMED):
        start.record()
        kernel[num_blocks, BLOCK_SIZE](ALPHA, d_A, d_x, BETA, d_y)
        end.record()
        end.synchronize()
        times_us.append(1000.0 * cuda.event_elapsed_time(start, end))
    med = float(np.median(times_us))
    gbs = 8.0 * (NROWS * NCOLS + NCOLS + 2 * NROWS) / (med * 1e-6) / 1e9
    print(f"{mode}: {med:.1f} us")
    print(f"{mode}: min {min(times_us):.1f} us, max {max(times_us):.1f} us, "
          f"{gbs:.0f} GB/s effective (the notebook's 8*N*(N+2) bytes measure)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
