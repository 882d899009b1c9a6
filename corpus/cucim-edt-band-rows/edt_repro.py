# Exhibit's driver for the corpus (not upstream code): rapidsai/cucim's 2D Euclidean distance
# transform, cucim.core.operations.morphology.distance_transform_edt (_pba_2d.py with the CUDA
# kernels of cuda/pba_kernels_2d.h, compiled by CuPy's RawModule), before the fix 0b4f0618
# ("Euclidean distance transform: fix bad choice of block parameters", #393, closes #392).
# It runs issue #392's example, a 1200 x 1200 image with 0.05% of its pixels set (seed 123),
# distance_transform_edt(image == 0), and compares the distances with a brute-force numpy
# reference (the distance from each pixel to the nearest zero of image == 0, i.e. to the nearest
# set pixel of image). Exits 1 on a mismatch.
import math
import os
import sys
import types

import numpy as np
import cupy as cp

cp.cuda.set_allocator(None)  # no memory pool: the sanitizers see every array's real bounds

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, 'python', 'cucim', 'src')
# Import the morphology package alone: cucim/__init__ loads cuCIM's compiled image library,
# which this program does not use. These three packages are left empty.
for name in ('cucim', 'cucim.core', 'cucim.core.operations'):
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(SRC, *name.split('.'))]
    sys.modules[name] = pkg
from cucim.core.operations.morphology import distance_transform_edt  # noqa: E402

# Issue #392's example.
shape = (1200, 1200)
size = math.prod(shape)
ntrue = .0005 * size
p_true = ntrue / size
p_false = 1 - p_true

cp.random.seed(123)
image = cp.random.choice([0, 1], size=shape, p=(p_false, p_true))

distances = distance_transform_edt(image == 0)
cp.cuda.runtime.deviceSynchronize()
out = cp.asnumpy(distances)

# Reference: squared distance from every pixel to the nearest site (a zero of image == 0), by
# brute force over the sites, a few rows at a time.
img = cp.asnumpy(image)
sy, sx = np.nonzero(img == 1)
print(f'image {shape}, {len(sy)} sites; distances {out.shape} {out.dtype}', flush=True)
cols = np.arange(shape[1], dtype=np.int64)
dx2 = ((cols[:, None] - sx[None, :]) ** 2).astype(np.int32)        # (cols, sites)
ref2 = np.empty(shape, dtype=np.int32)
for r0 in range(0, shape[0], 8):
    rows = np.arange(r0, min(r0 + 8, shape[0]), dtype=np.int64)
    dy2 = ((rows[:, None] - sy[None, :]) ** 2).astype(np.int32)    # (rows, sites)
    ref2[r0:r0 + len(rows)] = (dy2[:, None, :] + dx2[None, :, :]).min(axis=2)
ref = np.sqrt(ref2).astype(np.float32)

try:
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)
except AssertionError as e:
    print('distance_transform_edt does not match the brute-force distances:')
    print(e)
    bad = ~np.isclose(out, ref, rtol=1e-5, atol=1e-4)
    bad_rows = np.nonzero(bad.any(axis=1))[0]
    bad_cols = np.nonzero(bad.any(axis=0))[0]
    print(f'{int(bad.sum())} of {bad.size} pixels differ, in {len(bad_rows)} rows and '
          f'{len(bad_cols)} columns')
    print('rows with wrong pixels:', bad_rows.tolist())
    r, c = np.unravel_index(np.argmax(np.abs(out - ref)), out.shape)
    print(f'distances[{r}, {c}] = {out[r, c]}, expected {ref[r, c]}')
    sys.exit(1)
print('distance_transform_edt matches the brute-force distances')
