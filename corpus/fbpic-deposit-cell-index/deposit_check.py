"""Charge deposition with FBPIC's Numba CUDA kernel deposit_rho_gpu_linear, checked against numpy.

FBPIC deposits per cell: the particles are sorted by the index of the cell they deposit to,
cell_idx = ir_upper + iz_upper * (Nr + 1) (get_cell_idx_per_particle in
fbpic/particles/utilities/cuda_sorting.py at this commit), an inclusive prefix sum over
those Nz * (Nr + 1) cells gives each cell's particles, and one thread per cell adds their
linear-shape contributions to rho for azimuthal modes 0 and 1. This driver does the sorting
and the prefix sum on the host the same way, launches the kernel on a 2D grid over
(Nz, Nr + 1) cells, and compares rho with a per-particle numpy deposition using the same
shape factors. Exit 1 when they differ.
"""
import os
import sys
import math
import types
import importlib.util

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 under numpy 2.5
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "fbpic/particles/deposition/cuda_methods.py")

# cuda_methods.py imports the speed of light from scipy.constants (used by the J kernels
# only). Where scipy is missing, stand in that one constant.
try:
    import scipy.constants  # noqa: F401
except ImportError:
    scipy_stub = types.ModuleType("scipy")
    const_stub = types.ModuleType("scipy.constants")
    const_stub.c = 299792458.0
    scipy_stub.constants = const_stub
    sys.modules["scipy"] = scipy_stub
    sys.modules["scipy.constants"] = const_stub

spec = importlib.util.spec_from_file_location("fbpic_deposition_cuda_methods", SRC)
cuda_methods = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cuda_methods)


def make_particles(Np, Nz, Nr, dz, dr, seed):
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.0, Nz * dz, Np)
    r = rng.uniform(0.0, 0.95 * Nr * dr, Np)
    theta = rng.uniform(0.0, 2 * np.pi, Np)
    x = r * np.cos(theta)
    y = r * np.sin(theta)
    w = rng.uniform(0.5, 1.5, Np)
    return x, y, z, w


def cell_index(x, y, z, invdz, zmin, Nz, invdr, rmin, Nr):
    # As get_cell_idx_per_particle (cuda_sorting.py) computes it at this commit.
    r = np.sqrt(x**2 + y**2)
    r_cell = invdr * (r - rmin) - 0.5
    z_cell = invdz * (z - zmin) - 0.5
    ir_upper = np.minimum(np.ceil(r_cell).astype(np.int64), Nr)
    iz_upper = np.ceil(z_cell).astype(np.int64)
    iz_upper = np.where(iz_upper < 0, iz_upper + Nz, iz_upper)
    iz_upper = np.where(iz_upper > Nz - 1, iz_upper - Nz, iz_upper)
    return (ir_upper + iz_upper * (Nr + 1)).astype(np.int32)


def reference_rho(x, y, z, w, q, invdz, zmin, Nz, invdr, rmin, Nr):
    # Per-particle linear deposition with the kernel's shape factors and index folding.
    r = np.sqrt(x**2 + y**2)
    safe_r = np.where(r != 0.0, r, 1.0)
    cos = np.where(r != 0.0, x / safe_r, 1.0)
    sin = np.where(r != 0.0, y / safe_r, 0.0)
    r_cell = invdr * (r - rmin) - 0.5
    z_cell = invdz * (z - zmin) - 0.5
    ir_up = np.minimum(np.ceil(r_cell).astype(np.int64), Nr)
    iz_up = np.ceil(z_cell).astype(np.int64)
    iz_up = np.where(iz_up < 0, iz_up + Nz, iz_up)
    iz_up = np.where(iz_up > Nz - 1, iz_up - Nz, iz_up)
    # shape factors (z_shape_linear, r_shape_linear)
    iz = np.ceil(z_cell).astype(np.int64) - 1
    Sz = [iz + 1.0 - z_cell, z_cell - iz]
    ir = np.ceil(r_cell).astype(np.int64) - 1
    flip = np.where(ir < 0, -1.0, 1.0)
    Sr = [flip * (ir + 1.0 - r_cell), r_cell - ir]
    # deposition indices
    iz0 = np.where(iz_up - 1 < 0, iz_up - 1 + Nz, iz_up - 1)
    iz1 = iz_up
    ir0 = ir_up - 1
    ir0 = np.where(ir0 < 0, -(1 + ir0), ir0)
    ir1 = np.minimum(ir_up, Nr - 1)
    wq = q * w
    e1 = cos + 1j * sin
    rho0 = np.zeros((Nz, Nr))
    rho1 = np.zeros((Nz, Nr), dtype=np.complex128)
    for a, izs in ((0, iz0), (1, iz1)):
        for b, irs in ((0, ir0), (1, ir1)):
            s = Sr[b] * Sz[a] * wq
            np.add.at(rho0, (izs, irs), s)
            np.add.at(rho1, (izs, irs), s * e1)
    return rho0, rho1


def main(Nz=64, Nr=32, Np=200_000, seed=0):
    dz = dr = 1.0e-6
    zmin, rmin = 0.0, 0.0
    invdz, invdr = 1.0 / dz, 1.0 / dr
    q = 1.0

    x, y, z, w = make_particles(Np, Nz, Nr, dz, dr, seed)
    # Sort by cell index and build the inclusive prefix sum over the Nz * (Nr + 1) cells,
    # as FBPIC's sort_particles_per_cell / incl_prefix_sum / prefill_prefix_sum do.
    cell_idx = cell_index(x, y, z, invdz, zmin, Nz, invdr, rmin, Nr)
    order = np.argsort(cell_idx, kind="stable")
    x, y, z, w, cell_idx = x[order], y[order], z[order], w[order], cell_idx[order]
    prefix_sum = np.cumsum(np.bincount(cell_idx, minlength=Nz * (Nr + 1))).astype(np.int32)

    d_x, d_y, d_z, d_w = (cuda.to_device(np.ascontiguousarray(a)) for a in (x, y, z, w))
    d_cell_idx = cuda.to_device(cell_idx)
    d_prefix_sum = cuda.to_device(prefix_sum)
    d_rho0 = cuda.to_device(np.zeros((Nz, Nr), dtype=np.complex128))
    d_rho1 = cuda.to_device(np.zeros((Nz, Nr), dtype=np.complex128))

    tpb = (8, 8)
    bpg = (math.ceil(Nz / tpb[0]), math.ceil((Nr + 1) / tpb[1]))
    print(f"deposit_rho_gpu_linear: Nz={Nz} Nr={Nr} particles={Np}, grid {bpg} x {tpb}")
    cuda_methods.deposit_rho_gpu_linear[bpg, tpb](
        d_x, d_y, d_z, d_w, q,
        invdz, zmin, Nz,
        invdr, rmin, Nr,
        d_rho0, d_rho1,
        d_cell_idx, d_prefix_sum)
    cuda.synchronize()
    rho0 = d_rho0.copy_to_host()
    rho1 = d_rho1.copy_to_host()

    ref0, ref1 = reference_rho(x, y, z, w, q, invdz, zmin, Nz, invdr, rmin, Nr)
    scale = np.abs(ref0).max()
    failed = False
    for name, got, ref in (("rho_m0", rho0.real, ref0), ("rho_m1", rho1, ref1)):
        try:
            np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * scale, err_msg=name)
        except AssertionError as e:
            failed = True
            print(e)
            bad = np.argwhere(~np.isclose(got, ref, rtol=1e-9, atol=1e-9 * scale))
            for iz, ir in bad[:5]:
                print(f"{name}[{iz}, {ir}] = {got[iz, ir]:.6g}, expected {ref[iz, ir]:.6g}")
            print(f"{name}: {len(bad)} of {got.size} cells differ")
    if failed:
        print("FAIL: deposited charge density differs from the per-particle reference")
        return 1
    print("OK: rho (modes 0 and 1) matches the per-particle reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
