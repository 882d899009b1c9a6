# Exhibit field-corpus driver (not upstream): times the CuPy RawKernel `histogram` of the
# Carpentries lesson "GPU Programming" (episodes/shared_memory_and_synchronization.Rmd) in
# its two full versions, on the lesson's problem: 2**25 random ints in [0, 256), 256 bins,
# 256 threads a block, one element per thread.
#
#   python3 drive.py slow   # atomicAdd on the global histogram for every element
#   python3 drive.py fast   # block-private histogram in shared memory, merged once per block
#
# One warm-up launch, checked against numpy's bincount (exit 1 on a mismatch), then 20 launches
# timed one by one with CUDA events; prints the median as "slow: 123.4 us" / "fast: 12.3 us".
import math
import os
import sys

import numpy as np
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "episodes"))
import shared_memory_kernels as lesson  # noqa: E402  (the CUDA strings, extracted verbatim)

SIZE = 2**25            # the lesson's "input size"
THREADS_PER_BLOCK = 256  # the lesson's threads_per_block
NTIMED = 20


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("slow", "fast"):
        print(f"usage: {sys.argv[0]} slow|fast", file=sys.stderr)
        return 2
    mode = sys.argv[1]

    cupy.cuda.set_allocator(None)  # no memory pool: allocations are what the program asks for

    # allocate memory on CPU and GPU, as the lesson does (seeded, so both modes count the same data)
    cupy.random.seed(1234)
    input_gpu = cupy.random.randint(256, size=SIZE, dtype=cupy.int32)
    input_cpu = cupy.asnumpy(input_gpu)
    output_gpu = cupy.zeros(256, dtype=cupy.int32)
    expected = np.bincount(input_cpu, minlength=256).astype(np.int32)

    code = lesson.histogram_global_cuda_code if mode == "slow" else lesson.histogram_shared_cuda_code
    histogram_gpu = cupy.RawKernel(code, "histogram")
    grid_size = (int(math.ceil(SIZE / THREADS_PER_BLOCK)), 1, 1)
    block_size = (THREADS_PER_BLOCK, 1, 1)

    # warm-up launch, checked (the lesson's "check correctness")
    histogram_gpu(grid_size, block_size, (input_gpu, output_gpu))
    cupy.cuda.Device().synchronize()
    got = cupy.asnumpy(output_gpu)
    np.testing.assert_array_equal(got, expected,
                                  err_msg=f"{mode}: histogram differs from numpy's bincount")
    print(f"{mode}: check passed ({SIZE} elements, {grid_size[0]} blocks of {THREADS_PER_BLOCK})")

    # timed launches (the histogram keeps accumulating; the work per launch is the same)
    start = cupy.cuda.Event()
    end = cupy.cuda.Event()
    times_us = []
    for _ in range(NTIMED):
        start.record()
        histogram_gpu(grid_size, block_size, (input_gpu, output_gpu))
        end.record()
        end.synchronize()
        times_us.append(1000.0 * cupy.cuda.get_elapsed_time(start, end))
    med = float(np.median(times_us))
    print(f"{mode}: {med:.1f} us")
    print(f"{mode}: min {min(times_us):.1f} us, max {max(times_us):.1f} us over {NTIMED} launches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
