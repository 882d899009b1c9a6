# Exhibit's driver for the corpus (not upstream code): scikit-hep/awkward's CUDA kernel
# awkward_reduce_sum_complex (src/awkward/_connect/cuda/cuda_kernels/awkward_reduce_sum_complex.cu,
# compiled by CuPy's RawModule in awkward._connect.cuda.initialize_cuda_kernels) at the parent of
# 931fcb8 ("fix: Fix multiple CUDA out-of-bounds accesses and kernel memory management issues",
# PR #3858). It makes the call ak.sum(array, axis=-1) makes on a ListOffsetArray of complex128
# with the cuda backend (awkward/_reducers.py Sum.apply -> CupyKernel.__call__), on the data of
# the upstream test tests-cuda/test_3149_complex_reducers.py::test_block_boundary_sum_complex
# (3000 complex numbers, offsets [0, 1, 2998, 3000]), and compares the three sums with numpy.
# Exits 1 on a mismatch.
import os
import sys
import types

import numpy as np
import cupy

cupy.cuda.set_allocator(None)  # no memory pool: the sanitizers see every array's real bounds

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
# awkward/__init__.py imports the compiled extension awkward_cpp (not installed here); the CUDA
# connector (awkward._connect.cuda) needs none of it. An empty `awkward` package stands in.
ak_pkg = types.ModuleType("awkward")
ak_pkg.__path__ = [os.path.join(SRC, "awkward")]
sys.modules["awkward"] = ak_pkg
import awkward._connect.cuda as ak_cuda  # noqa: E402

assert ak_cuda.__file__.startswith(SRC), ak_cuda.__file__


def cupy_kernel_call(key, *args):
    # awkward._kernels.CupyKernel.__call__ at the parent: the launch shape comes from the
    # largest CuPy array among the arguments; the invocation index and error code follow.
    impl = ak_cuda.initialize_cuda_kernels(cupy)[key]
    maxlength = max(a.size for a in args if isinstance(a, cupy.ndarray))
    grid = ((maxlength // 1024) + 1, 1, 1)
    blocks = (min(maxlength, 1024), 1, 1)
    ptr = cupy.cuda.get_current_stream().ptr
    if ptr not in ak_cuda.cuda_streamptr_to_contexts:
        ak_cuda.cuda_streamptr_to_contexts[ptr] = (cupy.array(ak_cuda.NO_ERROR), [])
    args = (
        *args,
        len(ak_cuda.cuda_streamptr_to_contexts[ptr][1]),
        ak_cuda.cuda_streamptr_to_contexts[ptr][0],
    )
    ak_cuda.cuda_streamptr_to_contexts[ptr][1].append(
        ak_cuda.Invocation(name=key[0], error_context=None)
    )
    impl(grid, blocks, args)
    return grid, blocks


# The upstream test's data: 3000 complex numbers with integer parts, in three lists.
rng = np.random.default_rng(seed=42)
array = rng.integers(6000, size=6000)
complex_array = np.vectorize(complex)(array[0 : len(array) : 2], array[1 : len(array) : 2])
offsets = np.array([0, 1, 2998, 3000], dtype=np.int64)
outlength = len(offsets) - 1
parents = np.repeat(np.arange(outlength, dtype=np.int64), np.diff(offsets))

# Sum.apply for complex data: the content viewed as float64 pairs, a float64 result of
# 2 * outlength, parents (the list of each element) as int64.
data = cupy.asarray(complex_array)
kernel_array_data = data.view(cupy.float64)
parents_d = cupy.asarray(parents)
result = cupy.empty(2 * outlength, dtype=cupy.float64)
grid, blocks = cupy_kernel_call(
    ("awkward_reduce_sum_complex", np.float64, np.float64, np.int64),
    result,
    kernel_array_data,
    parents_d,
    len(parents),
    outlength,
)
ak_cuda.synchronize_cuda()  # raises if a kernel reported an error through err_code
got = result.get().view(np.complex128)

ref = np.array([complex_array[s:e].sum() for s, e in zip(offsets[:-1], offsets[1:])])
print(
    f"awkward_reduce_sum_complex: lenparents={len(parents)} outlength={outlength}, "
    f"block={blocks[0]} (the kernel's launcher makes its own grid of "
    f"ceil(lenparents / block) = {-(-len(parents) // blocks[0])} blocks)"
)
try:
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
except AssertionError as e:
    print(e)
    for i in np.nonzero(~np.isclose(got, ref, rtol=1e-12, atol=0))[0]:
        print(f"sum[{i}] = {got[i]}, expected {ref[i]}")
    sys.exit(1)
print("OK: the three per-list sums match numpy:", got.tolist())
