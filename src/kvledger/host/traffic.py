"""Traffic: what the host-tier controller moved between the tiers and evicted, cumulative.

Counted where it happens: a transfer once its copy completed (a transfer that failed midway
moved nothing that stays), an eviction when the tree handed its indices back. Units are the
tree's — KV in tokens, states in slots — and bytes follow from the host group's geometry
(`HostPoolGroup.transfer_bytes`): host rows equal device rows, so a transfer moves the same
bytes out of one tier as into the other.

>>> import numpy as np
>>> t = Traffic()
>>> t.moved(Direction.BACKUP, num_tokens=128, num_state_slots=1)
>>> t.evicted(Tier.HOST, EvictResult(full_indices=np.arange(64), mamba_slots=np.array([3])))
>>> t.backup_tokens, t.backup_state_slots, t.host_evicted_tokens, t.host_evicted_state_slots
(128, 1, 64, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.host.transfer import Direction
from kvledger.tree import EvictResult, Tier


@dataclass(slots=True)
class Traffic:
    backup_tokens: int = 0  # KV tokens copied device → host
    backup_state_slots: int = 0
    loadback_tokens: int = 0  # KV tokens copied host → device
    loadback_state_slots: int = 0
    device_evicted_tokens: int = 0  # KV tokens the tree dropped from device
    device_evicted_state_slots: int = 0
    host_evicted_tokens: int = 0  # KV tokens the tree dropped from host
    host_evicted_state_slots: int = 0
    # backups that would have copied a node's device state and did not, by the state backup
    # rule (`kvledger.host.state_backup`; 0 under SGLang's `all`): the node went to host
    # KV-only, or kept only the KV it had there. A node declined again on a later hit counts
    # again.
    declined_state_backups: int = 0

    def moved(self, direction: Direction, *, num_tokens: int, num_state_slots: int) -> None:
        match direction:
            case Direction.BACKUP:
                self.backup_tokens += num_tokens
                self.backup_state_slots += num_state_slots
            case Direction.LOADBACK:
                self.loadback_tokens += num_tokens
                self.loadback_state_slots += num_state_slots

    def evicted(self, tier: Tier, result: EvictResult) -> None:
        match tier:
            case Tier.DEVICE:
                self.device_evicted_tokens += result.num_full_tokens
                self.device_evicted_state_slots += result.num_mamba_slots
            case Tier.HOST:
                self.host_evicted_tokens += result.num_full_tokens
                self.host_evicted_state_slots += result.num_mamba_slots
