"""Stand-in for torch in tests: just enough of its API for kernel/baselines/sdpa.py to run on a
machine with no GPU. Hand-written: its device and timings are made up and measure nothing.

Problems with a batch of 1000 or more fail like an allocation that does not fit; the cudnn
backend fails like one that is not available.
"""

from . import cuda, nn

__version__ = "0.0.0+stand-in"

float16 = "float16"
bfloat16 = "bfloat16"


class Generator:
    def __init__(self, device=None):
        self.device = device

    def manual_seed(self, seed):
        self.seed = seed
        return self


class Tensor:
    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype


def randn(*shape, device=None, dtype=None, generator=None):
    if shape[0] >= 1000:
        raise RuntimeError("stand-in: CUDA out of memory (hand-written)")
    return Tensor(shape, dtype)


__all__ = ["Generator", "Tensor", "bfloat16", "cuda", "float16", "nn", "randn"]
