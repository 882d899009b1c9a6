# Exhibit's driver for the corpus (not upstream code): rapidsai/cusignal's upfirdn
# (python/cusignal/filtering/_upfirdn_cuda.py: _UpFIRDn and the RawModule kernel
# _cupy_upfirdn_1d, compiled by CuPy through utils/compile_kernels.py) before the fix e237ed1
# ("Fix overflow issues in upfirdn"), the fix of issue #137 ("Bug/Error in resample_poly for
# large resample factors and large input sizes"). It resamples the issue's signal length,
# 25e6 samples (float64 here), by up = 400, down = 1333 with the anti-aliasing filter
# resample_poly designs for these rates, through cusignal's upfirdn, and compares the result
# with a polyphase upfirdn written in numpy. Exits 1 on a mismatch.
import os
import sys
import types

import numpy as np
import cupy as cp

cp.cuda.set_allocator(None)  # no memory pool: the sanitizers see every array's real bounds

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, 'python')
# Import the kernel modules alone: cusignal/__init__ (and filtering/__init__) import every
# submodule of the package, with their own dependencies. These packages are left empty.
for name in ('cusignal', 'cusignal.filtering', 'cusignal.utils', 'cusignal.convolution',
             'cusignal.spectral_analysis', 'cusignal.io'):
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(PKG, *name.split('.'))]
    sys.modules[name] = pkg
from cusignal.filtering._upfirdn_cuda import _UpFIRDn  # noqa: E402


def upfirdn(h, x, up=1, down=1, axis=-1):
    # cusignal.upfirdn, python/cusignal/filtering/resample.py:496-499 at the parent.
    x = cp.asarray(x)
    ufd = _UpFIRDn(h, x.dtype, up, down)
    return ufd.apply_filter(x, axis)


n = int(25e6)
up, down = 400, 1333

rng = np.random.default_rng(0)
x_np = rng.standard_normal(n) + 2 * np.cos(2 * np.pi * 0.1 * np.arange(n))

# The filter resample_poly designs for these rates: up * firwin(2 * half_len + 1, 1 / max_rate,
# window=('kaiser', 5.0)), half_len = 10 * max_rate (26,661 taps), computed here in numpy.
max_rate = max(up, down)
half_len = 10 * max_rate
taps = np.arange(2 * half_len + 1) - half_len
h_np = np.sinc(taps / max_rate) * np.kaiser(2 * half_len + 1, 5.0)
h_np = up * h_np / h_np.sum()

y = upfirdn(cp.asarray(h_np), cp.asarray(x_np), up, down)
cp.cuda.runtime.deviceSynchronize()
out = cp.asnumpy(y)
print(f'x {x_np.shape} float64, h {h_np.shape}, up {up}, down {down}: y {out.shape} {out.dtype}',
      flush=True)


def upfirdn_ref(h, x, up, down, n_out, chunk=1 << 20):
    # y[k] = sum_j h[j] * xu[k * down - j], xu the input upsampled by `up` with zeros.
    ref = np.zeros(n_out)
    n_phase = -(-len(h) // up)
    for k0 in range(0, n_out, chunk):
        m0 = np.arange(k0, min(k0 + chunk, n_out), dtype=np.int64) * down
        p, i0 = m0 % up, m0 // up
        acc = np.zeros(len(m0))
        for t in range(n_phase):
            j = p + t * up
            i = i0 - t
            ok = (j < len(h)) & (i >= 0) & (i < len(x))
            acc += np.where(ok, h[np.minimum(j, len(h) - 1)] * x[np.clip(i, 0, len(x) - 1)], 0.0)
        ref[k0:k0 + len(m0)] = acc
    return ref


ref = upfirdn_ref(h_np, x_np, up, down, out.shape[0])

try:
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-8)
except AssertionError as e:
    print('upfirdn does not match the numpy polyphase upfirdn:')
    print(e)
    bad = ~np.isclose(out, ref, rtol=1e-6, atol=1e-8)
    idx = np.nonzero(bad)[0]
    print(f'{len(idx)} of {out.size} outputs differ; first wrong output y[{idx[0]}] = '
          f'{out[idx[0]]}, expected {ref[idx[0]]}')
    # the wrong outputs as runs of consecutive indices, and whether each run is all zeros
    starts = np.r_[0, np.nonzero(np.diff(idx) != 1)[0] + 1]
    ends = np.r_[starts[1:], len(idx)]
    for s, e_ in zip(starts, ends):
        run = idx[s:e_]
        zeros = int((out[run] == 0).sum())
        print(f'  y[{run[0]}:{run[-1] + 1}]: {len(run)} wrong, {zeros} of them 0.0')
    sys.exit(1)
print('upfirdn matches the numpy polyphase upfirdn')
