"""Family adapters: one small module per model family, each `config.json` → ModelArch.

The registry maps a config's `model_type` to the adapter that reads it; the CLI and the
error for an unknown type derive their lists from it.
"""

from __future__ import annotations

from collections.abc import Callable

from kvledger.model.arch import ModelArch
from kvledger.model.families import glm5_next
from kvledger.model.reader import ConfigReader

Adapter = Callable[[ConfigReader, str], ModelArch]

ADAPTERS: dict[str, Adapter] = {
    "glm5_next": glm5_next.read,
}
