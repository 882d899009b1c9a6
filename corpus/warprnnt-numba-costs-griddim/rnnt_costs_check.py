"""Per-utterance RNN-T loss from warprnnt_numba's CUDA path, checked against its numpy reference.

RNNTLossNumba(reduction='none') on a batch of 128 random activations (T = 10 frames,
U = 5 labels, 8 symbols including the blank), compared with warprnnt_numba's own numpy
implementation (rnnt_loss/rnnt_numpy.py: transduce_batch on log_softmax(acts)), as the
upstream tests do. Exit 1 when the losses differ.
"""
import os
import sys
import types

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 under numpy 2.5
    np.row_stack = np.vstack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# warprnnt_numba/numba_utils.py imports packaging.version (used only by its version checks).
try:
    import packaging.version  # noqa: F401
except ImportError:
    pkg_stub = types.ModuleType("packaging")
    ver_stub = types.ModuleType("packaging.version")
    ver_stub.parse = ver_stub.Version = lambda s: tuple(int(p) for p in str(s).split(".")[:3] if p.isdigit())
    pkg_stub.version = ver_stub
    sys.modules["packaging"] = pkg_stub
    sys.modules["packaging.version"] = ver_stub

import torch  # noqa: E402

import warprnnt_numba  # noqa: E402
from warprnnt_numba import RNNTLossNumba  # noqa: E402
from warprnnt_numba.rnnt_loss import rnnt_numpy  # noqa: E402

assert warprnnt_numba.__file__.startswith(os.path.join(HERE, "warprnnt_numba")), warprnnt_numba.__file__


def main():
    B, T, U, V = 128, 10, 5, 8  # acts: [B, T, U + 1, V]
    g = torch.Generator().manual_seed(0)
    acts = torch.randn(B, T, U + 1, V, generator=g, dtype=torch.float32)
    labels = torch.randint(1, V, (B, U), generator=g, dtype=torch.int32)
    act_lens = torch.full((B,), T, dtype=torch.int32)
    label_lens = torch.full((B,), U, dtype=torch.int32)

    # Reference on the host: warprnnt_numba's numpy transducer on log_softmax(acts).
    log_probs = torch.log_softmax(acts.double(), dim=-1).numpy()
    ref_costs, _ = rnnt_numpy.transduce_batch(
        log_probs, labels.numpy(), act_lens.numpy(), label_lens.numpy(), blank=0
    )
    ref = torch.tensor(np.array(ref_costs, dtype=np.float64), dtype=torch.float32)

    loss_fn = RNNTLossNumba(blank=0, reduction="none")
    got = loss_fn(acts.cuda(), labels.cuda(), act_lens.cuda(), label_lens.cuda())
    torch.cuda.synchronize()
    got = got.cpu()

    print(f"RNNTLossNumba: B={B} T={T} U={U} V={V}, reduction='none'")
    try:
        torch.testing.assert_close(got, ref, atol=1e-3, rtol=1e-4)
    except AssertionError as e:
        print(e)
        bad = (got - ref).abs() > 1e-3 + 1e-4 * ref.abs()
        idx = bad.nonzero().flatten().tolist()
        for b in idx[:6]:
            print(f"costs[{b}] = {got[b].item():.5f}, expected {ref[b].item():.5f}")
        print(f"FAIL: {len(idx)} of {B} per-utterance losses differ "
              f"(first {idx[0]}, last {idx[-1]})")
        return 1
    print("OK: per-utterance losses match the numpy reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
