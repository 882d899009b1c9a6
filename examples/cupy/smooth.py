"""A three-point smoothing kernel written as a CuPy RawKernel, with the off-by-one its guard
lets through: the last thread reads x[n], one past the end. The kernel's source is a Python
string compiled by NVRTC with -lineinfo, so the tools name its lines; the report maps them to
this file. CuPy's own reduction (cupy.sum) runs after it."""
import cupy as cp
import numpy as np

# Each array its own cudaMalloc, so memcheck sees accesses past an array's end.
cp.cuda.set_allocator(None)

SMOOTH = cp.RawKernel(r"""
extern "C" __global__ void smooth(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float left = i > 0 ? x[i - 1] : x[i];
        float right = x[i + 1];  // i == n - 1 reads x[n]
        y[i] = (left + x[i] + right) / 3.0f;
    }
}
""", "smooth", options=("-lineinfo",))


def main():
    n = 1000
    x = cp.linspace(0.0, 1.0, n, dtype=cp.float32)
    y = cp.empty_like(x)
    SMOOTH(((n + 127) // 128,), (128,), (x, y, cp.int32(n)))
    host = cp.asnumpy(x)
    want = (np.concatenate(([host[0]], host[:-1])) + host + np.concatenate((host[1:], [host[-1]]))) / 3
    got = cp.asnumpy(y)
    total = float(cp.sum(y))
    print(f"sum {total:.4f}; interior max error {np.abs(got[:-1] - want[:-1]).max():.2e}")


if __name__ == "__main__":
    main()
