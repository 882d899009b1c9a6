"""Stand-in for torch.nn.attention in tests (hand-written; see torch/__init__.py)."""

import contextlib
import enum


class SDPBackend(enum.Enum):
    FLASH_ATTENTION = "flash"
    CUDNN_ATTENTION = "cudnn"
    EFFICIENT_ATTENTION = "efficient"


FORCED = []


@contextlib.contextmanager
def sdpa_kernel(backends):
    FORCED.append(backends)
    try:
        yield
    finally:
        FORCED.pop()
