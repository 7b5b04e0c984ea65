"""Coverage: which of a node's objects have host copies, under a host rule set.

A node's prefix has, on device, latent KV and (DSA) index keys for its tokens, and perhaps a
state; the running request also has a compress tail, which is never in the tree. Under our
rules a backed-up node has host copies of its KV, index keys and state; under the article's
release the same node's host KV is truncated (512 of 528 B) and its index keys have none.

>>> from kvledger.sglang.hicache import ARTICLE_HOST, OUR_HOST
>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.tree import Component, RadixTree
>>> lay = make_plan(kv_cache_dtype="fp8_e4m3").layout  # GLM-5.3-Flash, 528 B rows
>>> tree = RadixTree(page_size=64)
>>> node = tree.insert(list(range(64)), list(range(64, 128)), 1).node
>>> tree.set_host_value(node, Component.FULL, list(range(64)))
>>> [s.name for s in node_coverage(node, lay, OUR_HOST).values()]
['COPIED', 'COPIED', 'ABSENT', 'NOT_IN_TREE']
>>> [s.name for s in node_coverage(node, lay, ARTICLE_HOST).values()]
['TRUNCATED', 'MISSING', 'ABSENT', 'NOT_IN_TREE']
"""

from __future__ import annotations

from kvledger.sglang.hicache import CopyStatus, HostObject, HostRules
from kvledger.sglang.resolve import CacheLayout
from kvledger.tree import Node


def node_coverage(node: Node, lay: CacheLayout,
                  rules: HostRules) -> dict[HostObject, CopyStatus]:
    """Status of each object the node's prefix has; objects the model lacks are left out,
    and so is the state when the node holds none on either tier."""
    kv_on_host = node.full.host_value is not None
    has_state = node.mamba.value is not None or node.mamba.host_value is not None
    present = {
        HostObject.KV: kv_on_host,
        HostObject.INDEX_KEYS: kv_on_host,  # host index pages derive from the KV pages
        HostObject.STATE: node.mamba.host_value is not None,
        HostObject.COMPRESS_TAIL: True,  # its status never depends on the node
    }
    coverage: dict[HostObject, CopyStatus] = {}
    for obj, copied in present.items():
        status = rules.status(obj, lay)  # what a copy would be, under these rules
        if status is None or (obj is HostObject.STATE and not has_state):
            continue
        never = status in (CopyStatus.MISSING, CopyStatus.NOT_IN_TREE)
        coverage[obj] = status if copied or never else CopyStatus.ABSENT
    return coverage
