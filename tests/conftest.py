"""Test-wide settings."""

import contextlib
import ctypes
import gc
import os
import sys

# Two test workers share two cores: torch's own threads would only contend with each other
# (the reference engine's tensors are tiny). Set before any test module imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import settings  # noqa: E402

# Timing is not what these properties test; a loaded 2-core CI machine must not turn a slow
# example into a failure.
settings.register_profile("kvledger", deadline=None)
settings.load_profile("kvledger")


# A worker that ran a large replay keeps its freed heap unless asked to return it; the suite's
# peak memory is the sum over workers, so give freed memory back after a test that grew it.
_GROWTH_BYTES = 128 << 20
_rss_after_trim = [0]


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def pytest_runtest_teardown(item, nextitem):
    if not sys.platform.startswith("linux"):
        return
    if _rss_bytes() - _rss_after_trim[0] < _GROWTH_BYTES:
        return
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    _rss_after_trim[0] = _rss_bytes()
