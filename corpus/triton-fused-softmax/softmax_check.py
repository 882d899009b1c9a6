# Exhibit's driver for the corpus (not upstream code): runs Triton's tutorial
# python/tutorials/02-fused-softmax.py up to its "Benchmark" section: the kernel, its launcher
# softmax() and the tutorial's own unit test (a 1823 x 781 float32 input against torch.softmax,
# torch.allclose at its default tolerances), without the benchmark sweep (98 sizes x 2 providers
# under do_bench) that the tutorial runs at module level. The source is compiled under its own
# path, so line numbers are the file's. Prints the largest difference; exits 1 on a mismatch.
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(HERE, 'python', 'tutorials', '02-fused-softmax.py')
with open(path) as f:
    source = f.read()
cut = source.index('# %%\n# Benchmark\n')
namespace = {'__name__': 'fused_softmax_tutorial', '__file__': path}
try:
    exec(compile(source[:cut], path, 'exec'), namespace)
except AssertionError:
    print('tutorial unit test: torch.allclose(y_triton, y_torch) failed', flush=True)
    sys.exit(1)
diff = (namespace['y_triton'] - namespace['y_torch']).abs().max().item()
print(f'tutorial unit test passed: 1823 x 781, max abs diff {diff:.3g}', flush=True)
