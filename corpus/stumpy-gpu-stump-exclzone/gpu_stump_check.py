"""Self-join matrix profile with stumpy.gpu_stump (Numba CUDA), checked against numpy.

Near the case of stumpy issue #80 (a 64-point series, window m = 13, exclusion zone
ceil(13 / 4) = 4), but a random walk rather than white noise, so that neighbouring windows
look alike, as in most real series. The reference is the brute-force z-normalised
Euclidean distance profile of every window, with the trivial-match zone [i - 4, i + 4)
set to inf, as the upstream test's naive_mass does. Exit 1 when the profiles differ.
"""
import os
import sys
import types
import importlib

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 under numpy 2.5
    np.row_stack = np.vstack

HERE = os.path.dirname(os.path.abspath(__file__))

# stumpy/core.py imports scipy.signal for fftconvolve only (sliding dot products on the
# host). Where scipy is missing, stand in a direct full convolution with numpy.
try:
    import scipy.signal  # noqa: F401
except ImportError:
    scipy_stub = types.ModuleType("scipy")
    signal_stub = types.ModuleType("scipy.signal")
    signal_stub.fftconvolve = lambda a, b: np.convolve(a, b, mode="full")
    scipy_stub.signal = signal_stub
    sys.modules["scipy"] = scipy_stub
    sys.modules["scipy.signal"] = signal_stub

# stumpy/__init__.py pulls in dask (stumped) and pkg_resources: import the package's
# modules from ./stumpy without it, and give it the two names gpu_stump.py imports.
pkg = types.ModuleType("stumpy")
pkg.__path__ = [os.path.join(HERE, "stumpy")]
sys.modules["stumpy"] = pkg
core = importlib.import_module("stumpy.core")
stump_mod = importlib.import_module("stumpy.stump")
pkg.core = core
pkg._get_QT = stump_mod._get_QT
gpu_stump_mod = importlib.import_module("stumpy.gpu_stump")
assert gpu_stump_mod.__file__.startswith(os.path.join(HERE, "stumpy")), gpu_stump_mod.__file__


def naive_profile(T, m):
    zone = int(np.ceil(m / 4))
    windows = core.rolling_window(T, m)
    z = (windows - windows.mean(axis=1, keepdims=True)) / windows.std(axis=1, keepdims=True)
    l = windows.shape[0]
    P = np.empty(l)
    I = np.empty(l, dtype=np.int64)
    for i in range(l):
        D = np.linalg.norm(z - z[i], axis=1)
        D[max(0, i - zone):min(l, i + zone)] = np.inf
        I[i] = np.argmin(D)
        P[i] = D[I[i]]
    return P, I


def main():
    rng = np.random.default_rng(80)
    T = np.cumsum(rng.standard_normal(64)).astype(np.float64)
    m = 13

    out = gpu_stump_mod.gpu_stump(T, m, ignore_trivial=True)
    got = out[:, 0].astype(np.float64)
    got_idx = out[:, 1].astype(np.int64)
    ref, ref_idx = naive_profile(T, m)

    print(f"gpu_stump: n={T.shape[0]} m={m} windows={got.shape[0]}")
    try:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    except AssertionError as e:
        print(e)
        bad = np.flatnonzero(~np.isclose(got, ref, rtol=1e-5, atol=1e-5))
        for j in bad[:8]:
            print(f"profile[{j}] = {got[j]:.6f} (nearest window {got_idx[j]}), "
                  f"expected {ref[j]:.6f} (nearest window {ref_idx[j]})")
        print(f"FAIL: {bad.size} of {got.shape[0]} matrix profile values differ")
        return 1
    print("OK: matrix profile matches the brute-force reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
