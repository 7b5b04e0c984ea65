"""What a tree does where SGLang releases differ: a small declarative rule object.

Read from SGLang's own trees (files under ``python/sglang/srt/mem_cache/``):

* **Stateless KV after a state-holding leaf goes.** 0.5.21 and 0.5.23 (``unified_cache/
  unified_tree_core.py``, ``UnifiedTreeCore._iteratively_delete_tombstone_ancestors``) stop
  at the first ancestor that still holds FULL KV on device: the parent stays as a KV-only
  leaf (``_is_device_leaf`` needs no state), its KV lengthens later KV-only matches, and only
  FULL's LRU walk evicts it. 0.5.20, and 0.5.8 and 0.5.9 (``mamba_radix_cache.py``,
  ``MambaRadixCache._iteratively_delete_tombstone_leaf``; their rule sets pick it) deleted
  every childless, stateless, unlocked ancestor with its KV.

Where every release read agrees, the tree has no rule, only behaviour (cited where it
happens): a match refreshes FULL recency from the best match to the root and MAMBA recency
of the used state alone (``MambaComponent.refresh_lru``, ``LRURefreshPhase.MATCH_END``);
a split gives the new parent a fresh stamp and stamps the existing child as just accessed
(``UnifiedTreeCore._split_node``; ``MambaRadixCache._split_node`` and
``RadixCache._match_prefix_helper`` likewise); an internal node whose state is evicted keeps
its KV (a tombstone). A decoding request locks its last node's KV and state together; the
opt-in ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK`` (off by default in 0.5.21 and 0.5.23:
``UnifiedRadixCache.cache_unfinished_req``, ``checkpoint_into_tree`` in 0.5.23, passes
``skip_lock_components=(MAMBA,)`` only when it is set) would leave that state evictable;
kvledger follows the default.

>>> from kvledger.sglang.rules import RULES
>>> TreeRules.from_rules(RULES["sglang-0.5.23"]) is UNIFIED_TREE
True
>>> PRUNING_TREE.keeps_stateless_kv
False
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.sglang.rules import RuleSet


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeRules:
    name: str
    # True: a stateless ancestor left childless by an eviction keeps its KV (a KV-only leaf);
    # False: it is deleted with its KV, and so on up to the first stateful or shared node.
    keeps_stateless_kv: bool

    @classmethod
    def from_rules(cls, rules: RuleSet) -> TreeRules:
        return UNIFIED_TREE if rules.tree_keeps_stateless_kv else PRUNING_TREE


UNIFIED_TREE = TreeRules(name="UnifiedRadixCache (SGLang 0.5.21+)", keeps_stateless_kv=True)
PRUNING_TREE = TreeRules(name="MambaRadixCache (SGLang 0.5.8, 0.5.9, 0.5.20)",
                         keeps_stateless_kv=False)

