"""Unified radix prefix tree with FULL and MAMBA components: indices only, never memory.

Files: node (nodes, components, tiers), core (sizes, recency, primitive transitions),
radix (match/insert/lock/evict API), eviction, lru (recency orders), tiers (host hooks),
rules (what differs per SGLang release), integrity, printer, results, tokens, walk (path
spans, index concatenation, page prefix keys).
"""

from kvledger.tree.core import FULL_MAMBA, FULL_ONLY
from kvledger.tree.node import Component, Node, Tier
from kvledger.tree.printer import format_tree
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import EvictResult, InsertResult, LockReceipt, MatchResult, TierSizes
from kvledger.tree.rules import PRUNING_TREE, UNIFIED_TREE, TreeRules

__all__ = [
    "FULL_MAMBA",
    "FULL_ONLY",
    "PRUNING_TREE",
    "UNIFIED_TREE",
    "Component",
    "EvictResult",
    "InsertResult",
    "LockReceipt",
    "MatchResult",
    "Node",
    "RadixTree",
    "Tier",
    "TierSizes",
    "TreeRules",
    "format_tree",
]
