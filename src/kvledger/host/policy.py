"""Write policies: when a node's device copy is backed up to host.

SGLang's HiRadixCache counts hits per node (`inc_hit_count`, insert counting as the first)
and backs a node up once the count reaches `write_through_threshold` (1 for write_through,
2 for write_through_selective); write_back never backs up on a hit and instead copies a
node at device eviction (`evict` → `write_backup(x, write_back=True)`, then waits for the
copy before freeing). Here each policy is one row of a table:

    policy                    backup_at_hits   backup_on_evict
    write_through             1                no    (back up on first insert)
    write_through_selective   2                no    (back up on the second hit)
    write_back                —                yes   (back up what eviction takes)

>>> POLICIES[BackupPolicy.WRITE_THROUGH_SELECTIVE].backs_up_at(hits=1)
False
>>> POLICIES[BackupPolicy.WRITE_THROUGH_SELECTIVE].backs_up_at(hits=2)
True
>>> [p.value for p in BackupPolicy]
['write_through', 'write_through_selective', 'write_back']
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class BackupPolicy(Enum):
    WRITE_THROUGH = "write_through"
    WRITE_THROUGH_SELECTIVE = "write_through_selective"
    WRITE_BACK = "write_back"


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePolicy:
    policy: BackupPolicy
    backup_at_hits: int | None  # hit count (insert = 1) that triggers a backup; None: never
    backup_on_evict: bool  # back up a node about to leave the device

    def backs_up_at(self, *, hits: int) -> bool:
        return self.backup_at_hits is not None and hits >= self.backup_at_hits


POLICIES: dict[BackupPolicy, WritePolicy] = {
    BackupPolicy.WRITE_THROUGH: WritePolicy(
        policy=BackupPolicy.WRITE_THROUGH, backup_at_hits=1, backup_on_evict=False),
    BackupPolicy.WRITE_THROUGH_SELECTIVE: WritePolicy(
        policy=BackupPolicy.WRITE_THROUGH_SELECTIVE, backup_at_hits=2, backup_on_evict=False),
    BackupPolicy.WRITE_BACK: WritePolicy(
        policy=BackupPolicy.WRITE_BACK, backup_at_hits=None, backup_on_evict=True),
}
