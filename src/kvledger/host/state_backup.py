"""State backup policies: whether a node's state gets host room when its KV is backed up.

A host state slot is the size of a whole device state slot (147,619,840 B for GLM-5.3-Flash,
the KV of about 20,000 tokens), and host KV is usable only below a node whose state is
cached somewhere: a match ends at a state. Which states get host room therefore decides
how much of the host KV can ever be loaded back.

    policy      leaf / junction state          pass-through state (exactly one child)
    all         host room, evicting host LRU   host room, evicting host LRU
    junctions   host room, evicting host LRU   only a free host slot; else KV only

* `all` is SGLang's behaviour and the default: a node is backed up with its state whenever
  it holds a device state without a host copy (`MambaComponent.needs_incremental_backup`,
  mem_cache/unified_cache/components/mamba_component.py: `value is not None and
  host_value is None`), on every write-policy trigger.
* `junctions` is kvledger's design, not SGLang's. A leaf ends a cached sequence (what a
  follow-up turn extends); a junction is a prefix two or more cached sequences share. A
  pass-through node's prefix is continued by one cached sequence only, so its state never
  pushes another state off the host: it is copied into a free host slot or not at all, and
  the node is backed up KV-only. A KV-only host node stays a valid ancestor: a deeper match
  loads its KV back with the deeper node's state, and a match that stops inside it ends at
  the deepest node above with a state (`RadixTree.match_prefix`).

Both are lossless: they choose what is copied, never what a copy holds.

>>> from kvledger.tree import RadixTree
>>> tree = RadixTree(page_size=1)
>>> _ = tree.insert([1, 2, 3], [0, 1, 2], mamba_slot=0)
>>> _ = tree.insert([1, 2, 3, 4], [0, 1, 2, 3], mamba_slot=1)
>>> node = tree.match_prefix([1, 2, 3]).best_match_node  # one child: pass-through
>>> rule = STATE_BACKUPS[HostStateBackup.JUNCTIONS]
>>> rule.wants_state(node, free_state_slots=0), rule.wants_state(node, free_state_slots=1)
(False, True)
>>> STATE_BACKUPS[HostStateBackup.ALL].wants_state(node, free_state_slots=0)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvledger.tree import Node


class HostStateBackup(Enum):
    ALL = "all"
    JUNCTIONS = "junctions"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateBackupRule:
    policy: HostStateBackup
    pass_through_evicts: bool  # may a pass-through state make room by evicting host states

    def wants_state(self, node: Node, *, free_state_slots: int) -> bool:
        """Whether `node`'s device state is copied with this backup (it has none on host)."""
        if self.pass_through_evicts or len(node.children) != 1:
            return True
        return free_state_slots > 0


STATE_BACKUPS: dict[HostStateBackup, StateBackupRule] = {
    HostStateBackup.ALL: StateBackupRule(policy=HostStateBackup.ALL, pass_through_evicts=True),
    HostStateBackup.JUNCTIONS: StateBackupRule(policy=HostStateBackup.JUNCTIONS,
                                               pass_through_evicts=False),
}
