"""Unified radix prefix tree with FULL and MAMBA components: indices only, never memory."""

from kvledger.tree.node import Component, Node, Tier
from kvledger.tree.printer import format_tree
from kvledger.tree.radix import RadixTree
from kvledger.tree.results import EvictResult, InsertResult, LockReceipt, MatchResult, TierSizes

__all__ = [
    "Component",
    "EvictResult",
    "InsertResult",
    "LockReceipt",
    "MatchResult",
    "Node",
    "RadixTree",
    "Tier",
    "TierSizes",
    "format_tree",
]
