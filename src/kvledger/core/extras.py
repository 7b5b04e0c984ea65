"""Optional dependencies: which extra installs what, and one clear error when it is missing.

The base install is the planner, the accounting-mode simulator, figures and the report. The
memory system (device pools, the host tier, the reference engine, `kvledger verify`) holds
real bytes in torch tensors and needs the `memory` extra.

>>> MEMORY.install
"pip install 'kvledger[memory]'"
>>> MEMORY.require("nothing at all", module="kvledger_no_such_module")
Traceback (most recent call last):
...
kvledger.core.extras.MissingExtra: nothing at all needs kvledger_no_such_module, which is not installed: pip install 'kvledger[memory]'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


class MissingExtra(ImportError):
    """A feature was asked for whose optional dependency is not installed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Extra:
    name: str  # the name in pyproject's [project.optional-dependencies]
    modules: tuple[str, ...]  # what it installs, as imported

    @property
    def install(self) -> str:
        return f"pip install 'kvledger[{self.name}]'"

    def missing(self, modules: tuple[str, ...] | None = None) -> list[str]:
        """The modules of this extra (or of `modules`) that do not import here."""
        absent = []
        for module in modules or self.modules:
            try:
                importlib.import_module(module)
            except ImportError:
                absent.append(module)
        return absent

    def available(self) -> bool:
        return not self.missing()

    def require(self, feature: str, *, module: str | None = None) -> None:
        """Raise MissingExtra naming the extra when `feature` cannot run here."""
        absent = self.missing(None if module is None else (module,))
        if absent:
            raise MissingExtra(f"{feature} needs {' and '.join(absent)}, which "
                               f"{'is' if len(absent) == 1 else 'are'} not installed: "
                               f"{self.install}")


# torch holds the real bytes; xxhash digests every host copy (host/digests.py).
MEMORY = Extra(name="memory", modules=("torch", "xxhash"))
# Ray runs a command's independent simulations on a cluster (`--ray`, kvledger.core.runner).
RAY = Extra(name="ray", modules=("ray",))
