"""Stand-in for torch.nn in tests (hand-written; see torch/__init__.py)."""

from . import attention, functional

__all__ = ["attention", "functional"]
