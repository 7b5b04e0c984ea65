"""Lazy package exports (PEP 562): a package names its public nouns without importing them.

Packages whose leaves need torch (`kvledger.pools`, `kvledger.host`) also hold torch-free
leaves (allocators, policy enums) that the planner, the simulator and the CLI use; resolving
names on first access keeps those imports light.

>>> getattr_ = lazy_getattr("kvledger.core", {"cdiv": "units"})
>>> getattr_("cdiv")(7, 2)
4
>>> getattr_("nothing")
Traceback (most recent call last):
...
AttributeError: module 'kvledger.core' has no attribute 'nothing'
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` resolving `name` from `package.<homes[name]>` on first use."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{home}"), name)

    return __getattr__
