"""The SGLang router's approximate prefix tree: one tree of routed prompts, each node
stamped with the workers ("tenants") whose requests passed through it.

Followed: sgl-project/sglang `sgl-router/src/policies/cache_aware.rs` (`CacheAwarePolicy::
select_worker`) and `sgl-router/src/tree.rs` (`Tree::insert`, `prefix_match`,
`get_smallest_tenant`). The router never asks a worker what it caches: the tree is built
from the requests it routed, so it stays "approximate" (a worker's evictions are invisible).

Differences, each a simplification that keeps the policy's decisions:
  * the source stores raw request text (characters); here a node is one page key, so the
    match rate is matched pages / prompt pages instead of matched / prompt characters;
  * `prefix_match` returns one tenant of the deepest matched node; here the tenant that
    touched it last (the tree keeps per-tenant last-access times);
  * LRU eviction by `max_tree_size` (default 67,108,864 nodes, `CacheAwareConfig`) is not
    run: no replay here reaches that many pages.

>>> t = ApproxTree(num_tenants=2)
>>> t.insert([1, 2, 3], tenant=0, at=1); t.insert([1, 5], tenant=1, at=2)
>>> t.prefix_match([1, 2, 9])
(2, 0)
>>> t.smallest_tenant()
1
>>> t.check_integrity()
"""

from __future__ import annotations

from collections.abc import Sequence


class _Node:
    __slots__ = ("children", "tenant_to_access")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.tenant_to_access: dict[int, int] = {}


class ApproxTree:
    """Page keys of routed prompts, each node knowing which tenants' requests reached it."""

    def __init__(self, num_tenants: int) -> None:
        self.root = _Node()
        self.tenant_to_pages = [0] * num_tenants  # nodes each tenant holds (its "tree size")

    def insert(self, keys: Sequence[int], *, tenant: int, at: int) -> None:
        node = self.root
        for key in keys:
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node()
            if tenant not in child.tenant_to_access:
                self.tenant_to_pages[tenant] += 1
            child.tenant_to_access[tenant] = at
            node = child

    def prefix_match(self, keys: Sequence[int]) -> tuple[int, int | None]:
        """(pages matched, the tenant that touched the deepest matched node last)."""
        node, depth = self.root, 0
        for key in keys:
            child = node.children.get(key)
            if child is None:
                break
            node, depth = child, depth + 1
        if not depth:
            return 0, None
        access = node.tenant_to_access
        return depth, max(access, key=lambda t: access[t])

    def check_integrity(self) -> None:
        """Each tenant's size is the number of nodes stamped with it."""
        counts = [0] * len(self.tenant_to_pages)
        stack = [self.root]
        while stack:
            node = stack.pop()
            for tenant in node.tenant_to_access:
                counts[tenant] += 1
            stack.extend(node.children.values())
        if counts != self.tenant_to_pages:
            raise RuntimeError(f"tenant sizes {self.tenant_to_pages}, nodes stamped {counts}")

    def smallest_tenant(self) -> int:
        """The tenant holding the fewest pages (first on ties): the most free cache."""
        sizes = self.tenant_to_pages
        return min(range(len(sizes)), key=lambda t: sizes[t])
