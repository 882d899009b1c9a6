"""A shift written as a CuPy ElementwiseKernel: its operation, `y = x[i + 1]`, reads one past
the end for the last element. CuPy wraps the operation in a kernel of its own making, so the
tools' line is in that generated source, not in this file; the launch line is this file's."""
import cupy as cp

# Each array its own cudaMalloc, so memcheck sees accesses past an array's end.
cp.cuda.set_allocator(None)

SHIFT = cp.ElementwiseKernel(
    "raw T x", "T y", "y = x[i + 1]", "shift_left", options=("-lineinfo",)
)


def main():
    n = 1000
    x = cp.arange(n, dtype=cp.float32)
    y = cp.empty_like(x)
    SHIFT(x, y)
    print(f"last {float(y[-1]):.1f}")


if __name__ == "__main__":
    main()
