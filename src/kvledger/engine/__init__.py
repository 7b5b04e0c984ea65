"""The reference engine: a tiny GLM-5.3-shaped model served from the real memory system.

Public nouns: the model (``TinyConfig``, ``TinyModel``), the loop (``Engine``,
``Generation``), its two request caches (``PrefixCache`` via ``prefix_cache`` — pools, radix
tree, host tier — and the cache-free ``FreshCache``), memory sizes (``PoolSizes``,
``HostTier``), conversation scripts (``Script``, ``Turn``) and the named ``WORKLOADS`` that
``kvledger.engine.verify`` compares cached against cache-free.
"""

from kvledger.engine.cached import PrefixCache, prefix_cache
from kvledger.engine.config import TinyConfig
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine, Generation
from kvledger.engine.memory import HostTier, PoolSizes
from kvledger.engine.model import TinyModel
from kvledger.engine.script import Script, Turn, run_script
from kvledger.engine.workloads import WORKLOADS

__all__ = [
    "WORKLOADS",
    "Engine",
    "FreshCache",
    "Generation",
    "HostTier",
    "PoolSizes",
    "PrefixCache",
    "Script",
    "TinyConfig",
    "TinyModel",
    "Turn",
    "prefix_cache",
    "run_script",
]
