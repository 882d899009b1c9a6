"""Stand-in for torch.nn.functional in tests (hand-written; see torch/__init__.py)."""

from . import attention


def scaled_dot_product_attention(q, k, v, is_causal=False):
    if attention.FORCED and attention.SDPBackend.CUDNN_ATTENTION in attention.FORCED[-1]:
        raise RuntimeError("stand-in: no cuDNN attention on this machine (hand-written)")
    return q
