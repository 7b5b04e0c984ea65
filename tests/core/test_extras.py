"""The memory extra names every module it installs when one is missing."""

import sys
import types

import pytest

from kvledger.core.extras import MEMORY, MissingExtra


def test_memory_extra_covers_the_digest_library(monkeypatch):
    # A None entry in sys.modules makes `import xxhash` raise ImportError, as if absent; a
    # stand-in torch keeps the case the same in the base install, which has neither.
    monkeypatch.setitem(sys.modules, "xxhash", None)
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    assert MEMORY.missing() == ["xxhash"]
    assert not MEMORY.available()
    with pytest.raises(MissingExtra, match=r"needs xxhash, which is not installed: "
                                           r"pip install 'kvledger\[memory\]'"):
        MEMORY.require("kvledger verify (the reference engine)")


def test_both_missing_are_named_together(monkeypatch):
    monkeypatch.setitem(sys.modules, "xxhash", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtra, match="needs torch and xxhash, which are not installed"):
        MEMORY.require("kvledger pools (device pools)")
