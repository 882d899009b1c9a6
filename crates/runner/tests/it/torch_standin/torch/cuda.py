"""Stand-in for torch.cuda in tests (hand-written; see torch/__init__.py)."""

import contextlib
import os

# What every pair of events reads; a test may set it.
ELAPSED_MS = float(os.environ.get("TORCH_STANDIN_ELAPSED_MS", "0.05"))


class _Props:
    name = "stand-in GPU (hand-written)"
    multi_processor_count = 1
    major = 9
    minor = 0
    L2_cache_size = 0
    total_memory = 0


def is_available():
    return True


def get_device_properties(index):
    return _Props()


def clock_rate():
    return 1000


def synchronize():
    pass


class Event:
    def __init__(self, enable_timing=False):
        self.enable_timing = enable_timing

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return ELAPSED_MS


class Stream:
    def wait_stream(self, other):
        pass


def current_stream():
    return Stream()


@contextlib.contextmanager
def stream(s):
    yield s


class CUDAGraph:
    def replay(self):
        pass


@contextlib.contextmanager
def graph(g):
    yield g
