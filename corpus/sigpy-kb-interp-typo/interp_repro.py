# Exhibit's driver for the corpus (not upstream code): mikgroup/sigpy's
# sigpy.interp.interpolate with kernel="kaiser_bessel" on the GPU (the CuPy ElementwiseKernel
# interpolate1 with the device function of _kaiser_bessel_kernel_cuda, sigpy/interp.py) before
# the fix 4b4cf91 ("Fix kaiser bessel interpolation on gpu"). Like the test that commit adds
# (test_interpolate_cpu_gpu), it interpolates a 1D float32 array with two batches at random
# points with the default width 2 and beta 1, and compares the result with sigpy's CPU
# formula for the same interpolation, written here in numpy. Exits 1 on a mismatch.
import os
import sys
import types

import numpy as np

# sigpy at this commit names np.float in default arguments (util.py:236), which numpy 1.24
# removed; it is the builtin float. numba-cuda 0.30 calls np.row_stack, removed in numpy 2.5.
if not hasattr(np, "float"):
    np.float = float
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

import cupy as cp  # noqa: E402

cp.cuda.set_allocator(None)  # no memory pool: the sanitizers see every array's real bounds

HERE = os.path.dirname(os.path.abspath(__file__))
# Import sigpy.interp alone: sigpy/__init__ imports every module of the package (apps, linops,
# MRI tools ...). The package is left empty; interp imports backend, config and util itself.
pkg = types.ModuleType('sigpy')
pkg.__path__ = [os.path.join(HERE, 'sigpy')]
sys.modules['sigpy'] = pkg
try:
    import numba  # noqa: F401  (interp.py decorates its CPU kernels with numba.jit)
except Exception:  # no usable numba: the CPU kernels are not run here, only decorated
    nb = types.ModuleType('numba')
    nb.jit = lambda *a, **k: (lambda f: f)
    sys.modules['numba'] = nb
from sigpy import interp  # noqa: E402

batch, nx, npts = 2, 64, 1000
width, beta = 2.0, 1.0  # interpolate's defaults for kernel="kaiser_bessel"

rng = np.random.default_rng(0)
input_np = rng.random((batch, nx)).astype(np.float32)
coord_np = nx * rng.random((npts, 1))  # float64, as in the commit's test

output = interp.interpolate(cp.array(input_np), cp.array(coord_np), kernel='kaiser_bessel')
cp.cuda.runtime.deviceSynchronize()
out = cp.asnumpy(output)
print(f'input {input_np.shape} float32, coord {coord_np.shape} float64: output {out.shape} '
      f'{out.dtype}', flush=True)


def kaiser_bessel(u, beta):
    # sigpy's CPU kernel (_kaiser_bessel_kernel, interp.py:202-218), for |u| <= 1.
    x = beta * np.sqrt(1 - u ** 2)
    t = x / 3.75
    small = (1 + 3.5156229 * t**2 + 3.0899424 * t**4 + 1.2067492 * t**6 + 0.2659732 * t**8
             + 0.0360768 * t**10 + 0.0045813 * t**12)
    tl = np.maximum(t, 1.0)
    large = np.maximum(x, 3.75) ** -0.5 * np.exp(x) * (
        0.39894228 + 0.01328592 * tl**-1 + 0.00225319 * tl**-2 - 0.00157565 * tl**-3
        + 0.00916281 * tl**-4 - 0.02057706 * tl**-5 + 0.02635537 * tl**-6
        - 0.01647633 * tl**-7 + 0.00392377 * tl**-8)
    return np.where(x < 3.75, small, large)


# Reference: the CPU interpolation (_interpolate1, interp.py:228-245) in numpy.
kx = coord_np[:, 0]
x0 = np.ceil(kx - width / 2).astype(np.int64)
x1 = np.floor(kx + width / 2).astype(np.int64)
ref = np.zeros((batch, npts))
for d in range(int(width) + 2):
    x = x0 + d
    ok = x <= x1
    u = np.where(ok, (x - kx) / (width / 2), 0.0)
    w = np.where(ok, kaiser_bessel(u, beta), 0.0)
    ref += w[None, :] * input_np[:, x % nx]

try:
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
except AssertionError as e:
    print('interpolate(kernel="kaiser_bessel") on the GPU does not match the CPU formula:')
    print(e)
    u = np.linspace(-1, 1, 9)
    print('kernel weights (CPU formula) at u =', u.tolist(), ':', kaiser_bessel(u, beta).tolist())
    sys.exit(1)
print('interpolate(kernel="kaiser_bessel") on the GPU matches the CPU formula')
