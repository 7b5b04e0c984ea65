"""Device eviction under write_back: back each victim up, then let the tree evict it.

SGLang's write_back evicts leaf-first as usual but copies a victim that has no host copy
before dropping it, and waits for that copy (HiRadixCache.evict: `write_backup(x,
write_back=True)`, then `writing_check(write_back=True)`). Here the tree owns the eviction
order, so the next victim is the one the tree names (`RadixTree.peek_eviction`: the least
recently used unlocked device leaf, or the oldest unlocked device state) — backed up, looked
up again (acknowledgements may change the order), and evicted one at a time; the tree keeps
it as a host-only node (or, for a state, a node with its state on host). Each victim gets one backup attempt: one that cannot be backed up (host
full, transfer failed) is evicted anyway, eviction never waits on the host tier.
"""

from __future__ import annotations

from collections.abc import Callable

from kvledger.host.transfers import Transfers
from kvledger.tree import Component, EvictResult, Node, Tier
from kvledger.tree.walk import concat

BackUp = Callable[[Node], object]  # back a node up now (the controller's `backup`)


def _needs_backup(node: Node) -> bool:
    return node.full.host_value is None or (
        node.mamba.value is not None and node.mamba.host_value is None)


def _write_back(transfers: Transfers, back_up: BackUp, node: Node) -> None:
    back_up(node)
    if transfers.queue.num_pending:
        transfers.queue.poll()  # the copy must land before the device slots are freed


def evict_writing_back(transfers: Transfers, back_up: BackUp, full_tokens: int,
                       mamba_slots: int) -> EvictResult:
    """Evict like `tree.evict`, backing up each victim first (one attempt per victim).

    If a backup raises (a programming error or KeyboardInterrupt: failed copies are
    swallowed by the queue), the victims already evicted are counted and freed into the
    device allocators before the error propagates: the tree no longer holds them."""
    tree = transfers.tree
    full, states = [], []
    num_full = num_states = 0
    tried: set[Node] = set()
    try:
        while True:
            leaf = num_full < full_tokens
            if not leaf and num_states >= mamba_slots:
                break
            victim = tree.peek_eviction(Tier.DEVICE, Component.FULL if leaf else Component.MAMBA)
            if victim is None:
                break
            if _needs_backup(victim) and victim not in tried:
                tried.add(victim)
                _write_back(transfers, back_up, victim)
                continue  # acknowledgements may have changed the order: look again
            result = tree.evict(full_tokens=int(leaf), mamba_slots=int(not leaf))
            gone = victim.full.value if leaf else victim.mamba.value
            assert gone is None, f"the tree evicted another victim than {victim!r}"
            full.append(result.full_indices)
            states.append(result.mamba_slots)
            num_full += result.num_full_tokens
            num_states += result.num_mamba_slots
    except BaseException:
        done = EvictResult(full_indices=concat(full), mamba_slots=concat(states))
        transfers.traffic.evicted(Tier.DEVICE, done)
        transfers.device.free_tokens(done.full_indices)
        transfers.device.free_states(done.mamba_slots)
        raise
    return EvictResult(full_indices=concat(full), mamba_slots=concat(states))
