"""The unified radix prefix tree with FULL and MAMBA components.

Keys are token ids matched page by page; values are slot indices. The tree never allocates or
frees memory: ``insert`` returns the caller's duplicates, ``evict`` returns what it dropped,
and the caller hands those back to the allocators.

A request's life, with page 1 and a 64-token checkpoint grid::

    >>> tree = RadixTree(page_size=1)
    >>> prompt = np.arange(100)
    >>> tree.match_prefix(prompt).full_kv_hit_length
    0
    >>> done = tree.insert(prompt, full_indices=np.arange(1000, 1100), mamba_slot=7)
    >>> done.prefix_length, done.mamba_existed
    (0, False)
    >>> hit = tree.match_prefix(np.arange(130))
    >>> hit.device_hit_length, hit.mamba_src_slot, hit.mamba_branching_seqlen
    (100, 7, None)
    >>> other = tree.match_prefix(np.r_[np.arange(90), [5, 5]])  # diverges at token 90
    >>> other.full_kv_hit_length, other.device_hit_length, other.mamba_branching_seqlen
    (90, 0, 64)
    >>> receipt = tree.lock(hit.last_device_node)
    >>> tree.evict(full_tokens=100).num_full_tokens   # locked: nothing can go
    0
    >>> tree.unlock(receipt)
    >>> tree.evict(full_tokens=100).num_full_tokens
    100
    >>> tree.check_integrity()

The second match split the 100-token node at 90; the new parent (tokens 0..89) took the
FULL slice but no state, so the request can reuse nothing and is told to save a state at
token 64, the deepest grid point within its 90-token FULL hit.
"""

from __future__ import annotations

import numpy as np

from kvledger.tree.core import EMPTY_INDICES, TreeCore
from kvledger.tree.eviction import drop, evict, next_victim
from kvledger.tree.integrity import check_tree
from kvledger.tree.node import TOKEN_BYTES, Component, Node, Tier
from kvledger.tree.results import EvictResult, InsertResult, LockReceipt, MatchResult, TierSizes
from kvledger.tree.tiers import record_copy
from kvledger.tree.tokens import as_index_array, as_slot, as_token_array, readonly
from kvledger.tree.walk import stamp_held_path

# Match and insert act on device values only; a plain int indexes per-tier lists fastest.
DEVICE = int(Tier.DEVICE)


class RadixTree(TreeCore):
    """Prefix tree over token pages; see the module docstring for a worked example.

    Args:
        page_size: tokens per page; keys are matched and split in whole pages.
        mamba_chunk_tokens: linear-attention chunk size (64 for GLM-5.3-Flash's KDA layers);
            states can be saved every ``lcm(mamba_chunk_tokens, page_size)`` tokens.
        components: ``FULL_MAMBA`` (hybrid models) or ``FULL_ONLY`` (dense models: every
            cached node is a match point, as in SGLang's ``RadixCache``).
        rules: the release's tree rules (``kvledger.tree.rules``).
    """

    # ---- match -----------------------------------------------------------------------------

    def match_prefix(self, tokens: object) -> MatchResult:
        """Longest cached prefix of ``tokens`` (floored to whole pages).

        Mutates the tree: a match ending inside a node splits it, FULL recency is refreshed
        root to best match (deeper nodes newer), and only the best match's state is
        refreshed in MAMBA's order (it is the only state the request consumes). SGLang does
        the same in every release read (UnifiedTreeCore._match_post_processor stamps the best
        match and its ancestors; MambaComponent.refresh_lru, MATCH_END, resets one state).
        """
        array = as_token_array(tokens, "tokens")
        data = array.tobytes()
        end = len(array) // self.page_size * self.page_bytes
        page_bytes = self.page_bytes
        path: list[Node] = []
        node = self.root
        pos = 0
        while pos < end:
            child = node.children.get(data[pos : pos + page_bytes])
            if child is None:
                break
            if not data.startswith(child.key, pos):
                cut = self._common_bytes(array, pos, child, end)
                path.append(self._split(child, cut // TOKEN_BYTES))
                pos += cut
                break
            path.append(child)
            pos += len(child.key)
            node = child
        return self._match_result(path, pos // TOKEN_BYTES)

    def _common_bytes(self, array: np.ndarray, pos: int, child: Node, end: int) -> int:
        """Bytes of ``child.key`` matching ``array`` from byte ``pos``, floored to whole pages."""
        start = pos // TOKEN_BYTES
        length = min(child.num_tokens, end // TOKEN_BYTES - start)
        differs = np.flatnonzero(array[start : start + length] != child.tokens[:length])
        same = int(differs[0]) if len(differs) else length
        return same // self.page_size * self.page_bytes

    def _match_result(self, path: list[Node], hit_tokens: int) -> MatchResult:
        best, best_len, best_at = self.root, 0, 0
        device, device_len, device_at = self.root, 0, 0
        depth = 0
        has_state = self.has_state
        for i, node in enumerate(path, 1):
            depth += node.num_tokens
            # A match point is a node holding every component: its state, or (FULL only) KV.
            on_device, on_host = node.mamba.values if has_state else node.full.values
            if on_device is not None:
                best, best_len, best_at = node, depth, i
                device, device_len, device_at = node, depth, i
            elif on_host is not None:
                best, best_len, best_at = node, depth, i
        for node in path[:best_at]:
            self._touch(node)
        for tier, slot in enumerate(best.mamba.values):
            if slot is not None:
                self.books[tier].states.refresh(best)
        if device_at == 0:
            indices = EMPTY_INDICES
        elif device_at == 1:
            indices = path[0].full.values[DEVICE]
        else:
            chunks = [node.full.values[DEVICE] for node in path[:device_at]]
            indices = readonly(np.concatenate(chunks))
        grid = self.mamba_checkpoint_tokens
        aligned = hit_tokens // grid * grid if has_state else 0
        return MatchResult(
            device_indices=indices,
            last_device_node=device,
            best_match_node=best,
            full_kv_hit_length=hit_tokens,
            host_hit_length=best_len - device_len,
            mamba_branching_seqlen=aligned if aligned > best_len else None,
            mamba_src_slot=best.mamba.values[DEVICE],
        )

    # ---- insert ----------------------------------------------------------------------------

    def insert(self, tokens: object, full_indices: object, mamba_slot: object = None, *,
               below: Node | None = None) -> InsertResult:
        """Cache ``tokens`` (whole pages) with their device KV slots and the state after them.

        Where the tree already holds device KV, the caller's slots that differ are returned
        as duplicates; where it holds KV only on host, the caller's slots are adopted
        (that is a loadback for free). ``mamba_existed`` means the tree kept its own state
        and the caller must free ``mamba_slot``. A FULL-only tree takes no ``mamba_slot``.

        ``below``: a node on the path of ``tokens`` whose prefix the caller already holds
        with the tree's own device KV (the node its request locked: SGLang's
        ``req.last_node``). The walk then compares slots only below it; the nodes above are
        stamped exactly as the walk from the root stamps them, so the tree ends the same.
        """
        array = as_token_array(tokens, "tokens")
        if len(array) % self.page_size:
            raise ValueError(
                f"tokens: {len(array)} tokens is not a whole number of pages "
                f"(page_size={self.page_size}); insert the page-aligned prefix only"
            )
        indices = as_index_array(full_indices, "full_indices", len(array))
        has_state = self.has_state
        if has_state:
            slot = as_slot(mamba_slot, "mamba_slot")
        elif mamba_slot is not None:
            raise ValueError(f"mamba_slot: this tree has no MAMBA component, got {mamba_slot!r}")
        data = array.tobytes()
        page_bytes, end = self.page_bytes, len(data)
        duplicates: list[np.ndarray] = []
        node, pos = self.root, 0
        if below is not None:
            node, pos = below, stamp_held_path(self, below, data)
        while pos < end:
            child = node.children.get(data[pos : pos + page_bytes])
            if child is None:
                break
            if not data.startswith(child.key, pos):
                child = self._split(
                    child, self._common_bytes(array, pos, child, end) // TOKEN_BYTES
                )
            first, last = pos // TOKEN_BYTES, (pos + len(child.key)) // TOKEN_BYTES
            ours = indices[first:last]
            cached = child.full.values[DEVICE]
            self._touch(child)
            if cached is None:
                self._full_on(DEVICE, child, readonly(ours.copy()))
            else:
                differs = ours != cached
                if differs.any():
                    duplicates.append(ours[differs])
            pos += len(child.key)
            node = child
        prefix = pos // TOKEN_BYTES
        if pos < end:
            node = self._new_node(node, data[pos:])
            self._touch(node)
            self._full_on(DEVICE, node, readonly(indices[prefix:].copy()))
            if has_state:
                self._mamba_on(DEVICE, node, slot)
            existed = False
        elif not has_state:
            existed = False
        elif node.parent is None or node.mamba.values[DEVICE] is not None:
            existed = True  # the root keeps no state; an existing state wins
            if node.parent is not None:
                self.books[DEVICE].states.refresh(node)
        else:
            self._mamba_on(DEVICE, node, slot)
            existed = False
        if not duplicates:
            dup = EMPTY_INDICES
        else:
            dup = duplicates[0] if len(duplicates) == 1 else np.concatenate(duplicates)
        return InsertResult(
            prefix_length=prefix, duplicate_indices=dup, mamba_existed=existed, node=node
        )

    def path_device_indices(self, node: Node) -> np.ndarray:
        """FULL device slots from the root to the end of ``node`` (all on device).

        After an insert that returned duplicates, these are the slots the request must use
        for its prefix from now on (its own copies were handed back to be freed).
        """
        self._require_live(node, "path_device_indices")
        chunks = []
        while node.parent is not None:
            if node.full.values[DEVICE] is None:
                raise ValueError(f"path_device_indices: {node!r} has no FULL KV on device")
            chunks.append(node.full.values[DEVICE])
            node = node.parent
        if len(chunks) <= 1:
            return chunks[0] if chunks else EMPTY_INDICES
        return readonly(np.concatenate(chunks[::-1]))

    # ---- locks -----------------------------------------------------------------------------

    def lock(self, node: Node) -> LockReceipt:
        """Pin ``node``'s device KV and all its ancestors', plus its device state if any."""
        return self._lock_on(Tier.DEVICE, node, "lock")

    def lock_host(self, node: Node) -> LockReceipt:
        """Pin ``node``'s host KV and all its ancestors', plus its host state if any."""
        return self._lock_on(Tier.HOST, node, "lock_host")

    def unlock(self, receipt: LockReceipt) -> None:
        """Undo exactly what ``receipt``'s lock did; each receipt unlocks once."""
        receipt_id = getattr(receipt, "receipt_id", None)
        if self.receipts.get(receipt_id) is not receipt:
            raise ValueError(f"unlock: {receipt!r} is not an outstanding receipt of this tree")
        del self.receipts[receipt_id]
        self._lock(receipt.tier, receipt.node, -1, receipt.mamba_locked)

    def _lock_on(self, tier: Tier, node: Node, action: str) -> LockReceipt:
        self._require_live(node, action)
        if node.full.values[tier] is None:
            raise ValueError(f"{action}: {node!r} has no FULL KV on {tier.name.lower()}")
        mamba = node.mamba.values[tier] is not None
        self._lock(tier, node, +1, mamba)
        receipt = LockReceipt(
            receipt_id=self._next_receipt_id, node=node, tier=tier, mamba_locked=mamba
        )
        self._next_receipt_id += 1
        self.receipts[receipt.receipt_id] = receipt
        return receipt

    def _require_component(self, component: Component, action: str) -> None:
        if component not in self.components:
            raise ValueError(f"{action}: this tree has no {component.name} component")

    def _require_live(self, node: object, action: str) -> None:
        if not isinstance(node, Node) or not node.alive:
            raise ValueError(f"{action}: expected a live node of this tree, got {node!r}")
        probe = node
        while probe.parent is not None:
            probe = probe.parent
        if probe is not self.root:
            raise ValueError(f"{action}: {node!r} belongs to another tree")

    # ---- eviction --------------------------------------------------------------------------

    def evict(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        """Drop at least ``full_tokens`` device KV slots and ``mamba_slots`` device states (or
        everything unlocked that can go) and return the freed device indices."""
        full, mamba = _count(full_tokens, "full_tokens"), self._states(mamba_slots, "evict")
        return evict(self, Tier.DEVICE, full, mamba)

    def evict_host(self, *, full_tokens: int = 0, mamba_slots: int = 0) -> EvictResult:
        """Host counterpart of ``evict``; returns freed host indices."""
        full, mamba = _count(full_tokens, "full_tokens"), self._states(mamba_slots, "evict_host")
        return evict(self, Tier.HOST, full, mamba)

    def drop_host(self, node: Node, component: Component) -> EvictResult | None:
        """Drop ``node``'s host copy of ``component`` (FULL: with every host copy below it);
        returns the freed host indices, or None when a host lock pins it (see
        ``eviction.drop``)."""
        self._require_live(node, "drop_host")
        self._require_component(component, "drop_host")
        if node.parent is None:
            raise ValueError("drop_host: the root holds nothing to drop")
        return drop(self, Tier.HOST, node, component)

    def _states(self, mamba_slots: object, action: str) -> int:
        count = _count(mamba_slots, "mamba_slots")
        if count and not self.has_state:
            raise ValueError(f"{action}: mamba_slots={count}, but this tree has no MAMBA component")
        return count

    def peek_eviction(self, tier: Tier, component: Component) -> Node | None:
        """Who the next eviction of ``component`` on ``tier`` takes; None: nothing can go."""
        if not isinstance(tier, Tier) or not isinstance(component, Component):
            raise ValueError(f"peek_eviction: expected (Tier, Component), got {tier!r}, {component!r}")
        return next_victim(self, tier, component)

    # ---- host tier hooks -------------------------------------------------------------------

    def set_host_value(self, node: Node, component: Component, host_indices: object) -> None:
        """Record a finished backup of ``node``'s ``component`` (see ``tiers.record_copy``)."""
        self._require_live(node, "set_host_value")
        self._require_component(component, "set_host_value")
        record_copy(self, Tier.HOST, node, component, host_indices)

    def restore_device_value(self, node: Node, component: Component, indices: object) -> None:
        """Record a finished loadback of ``node``'s ``component`` (see ``tiers.record_copy``)."""
        self._require_live(node, "restore_device_value")
        self._require_component(component, "restore_device_value")
        record_copy(self, Tier.DEVICE, node, component, indices)

    # ---- accounting ------------------------------------------------------------------------

    def sizes(self, tier: Tier = Tier.DEVICE) -> TierSizes:
        """Evictable and protected sizes per component on ``tier``."""
        return self.books[tier].sizes()

    def check_integrity(self) -> None:
        """Recompute every size, order and invariant from the nodes; RuntimeError on drift."""
        check_tree(self)


def _count(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{field}: expected a non-negative integer, got {value!r}")
    return int(value)
