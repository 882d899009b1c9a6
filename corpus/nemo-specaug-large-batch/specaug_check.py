"""NeMo's Numba CUDA SpecAugment kernel on a batch of 1,024, checked against a numpy masking.

Issue #2916: MatchboxNet trains at batch size 512 and fails at 1,024 with "CUDA error: an
illegal memory access was encountered". This runs spec_augment_kernel on 1,024 spectrograms
of 64 features x 32 frames, with 2 frequency masks (width <= 15) and 2 time masks
(width <= 5) per utterance, launched as launch_spec_augment_kernel launches it, and compares
the result with the same masks applied by numpy. Exit 1 on a CUDA error or a mismatch.
"""
import os
import sys
import types
import logging
import importlib.util

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 under numpy 2.5
    np.row_stack = np.vstack

import torch  # noqa: E402
from numba import cuda  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "nemo/collections/asr/parts/numba/spec_augment/spec_aug_numba.py")

# spec_aug_numba.py imports NeMo's typing layer (nemo.core.classes, nemo.core.neural_types)
# and logger for its nn.Module wrapper only; the kernel needs neither. Stand them in so the
# file loads without the rest of NeMo (hydra, omegaconf, lightning, ...).
def _stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


class _Typing:
    pass


def _typecheck(*args, **kwargs):
    return lambda fn: fn


class _Type:
    def __init__(self, *args, **kwargs):
        pass


_stub("nemo")
_stub("nemo.core")
_stub("nemo.core.classes", Typing=_Typing, typecheck=_typecheck)
_stub("nemo.core.neural_types", LengthsType=_Type, NeuralType=_Type, SpectrogramType=_Type)
_stub("nemo.utils", logging=logging.getLogger("nemo"))

spec = importlib.util.spec_from_file_location("spec_aug_numba", SRC)
spec_aug_numba = importlib.util.module_from_spec(spec)
spec.loader.exec_module(spec_aug_numba)


def main():
    B, F, T = 1024, 64, 32
    freq_masks, freq_width = 2, 15
    time_masks, time_width = 2, 5
    mask_value = 0.0
    g = torch.Generator().manual_seed(2916)

    # Spectrograms and lengths first (the large allocations), masks last.
    x_host = torch.randn(B, F, T, generator=g) + 10.0
    x_len_host = torch.randint(T // 2, T + 1, (B,), generator=g)
    x = x_host.cuda()
    x_len = x_len_host.cuda()

    # Masks drawn as SpecAugmentNumba.forward draws them (int64, one row per utterance).
    freq_starts = torch.randint(0, F - freq_width + 1, (B, freq_masks), generator=g)
    freq_lengths = torch.randint(0, freq_width + 1, (B, freq_masks), generator=g)
    time_starts = torch.stack([
        torch.randint(0, max(1, int(x_len_host[b]) - time_width), (time_masks,), generator=g)
        for b in range(B)])
    time_lengths = torch.randint(0, time_width + 1, (B, time_masks), generator=g)

    # Reference on the host: every frequency mask over the whole utterance, every time mask
    # up to the utterance's length.
    ref = x_host.numpy().copy()
    for b in range(B):
        for s, w in zip(freq_starts[b].tolist(), freq_lengths[b].tolist()):
            ref[b, s:s + w, :] = mask_value
        n = int(x_len_host[b])
        for s, w in zip(time_starts[b].tolist(), time_lengths[b].tolist()):
            ref[b, :, s:min(s + w, n)] = mask_value

    d_fs, d_fl = freq_starts.cuda(), freq_lengths.cuda()
    d_ts, d_tl = time_starts.cuda(), time_lengths.cuda()

    # launch_spec_augment_kernel at this commit passes the grid as a list, which Numba >= 0.56
    # rejects ("unhashable type: 'list'", fixed upstream by NeMo #5093): launch the kernel
    # with the same configuration, the grid as a tuple.
    blocks_per_grid = (F, T)
    threads_per_block = min(spec_aug_numba.MAX_THREAD_BUFFER, B)
    stream = cuda.external_stream(torch.cuda.current_stream(x.device).cuda_stream)
    print(f"spec_augment_kernel: B={B} F={F} T={T}, grid {blocks_per_grid}, "
          f"{threads_per_block} threads per block")
    try:
        spec_aug_numba.spec_augment_kernel[blocks_per_grid, threads_per_block, stream, 0](
            x, x_len, d_fs, d_fl, d_ts, d_tl, mask_value
        )
        torch.cuda.synchronize()
        got = x.cpu()
    except Exception as e:  # a fault in the kernel surfaces here
        print(f"FAIL: CUDA error from spec_augment_kernel at batch size {B}: "
              f"{type(e).__name__}: {e}")
        return 1

    try:
        torch.testing.assert_close(got, torch.from_numpy(ref), rtol=0, atol=0)
    except AssertionError as e:
        print(e)
        bad = (got != torch.from_numpy(ref)).flatten(1).any(1).nonzero().flatten().tolist()
        print(f"FAIL: {len(bad)} of {B} utterances masked wrongly (first {bad[0]}, last {bad[-1]})")
        return 1
    print("OK: every mask applied as the reference applies it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
