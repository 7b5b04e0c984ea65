"""Suite-wide collection rule: without torch (the `memory` extra), torch tests skip.

The base install has no torch. Any test module, doctest module or test that imports torch,
directly or through the memory system, is then reported as skipped instead of erroring, so
the planner tests run on every supported Python. With torch installed nothing changes.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

import pytest

# The reference model runs hundreds of tiny ops per token: one torch thread is faster than two,
# and two test workers (or a CLI subprocess beside its test) share the machine's two cores.
# Set before torch is imported here or in a subprocess; an explicit setting wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

TORCH_MISSING = importlib.util.find_spec("torch") is None


class _SkipTorch(importlib.abc.MetaPathFinder):
    """Turns `import torch` into a pytest skip (pytest.importorskip, for every importer)."""

    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            pytest.skip("needs torch: pip install 'kvledger[memory]'", allow_module_level=True)
        return None


if TORCH_MISSING:
    sys.meta_path.insert(0, _SkipTorch())
