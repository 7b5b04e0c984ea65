"""HostStats: what a host tier reports at the end of a run (exact bytes, tree units).

A host page holds one device page of every full layer's KV rows and index keys, a host state
slot one whole state; bytes are counts times those sizes, exact because host rows equal device
rows (`kvledger.sglang.hicache`).

>>> from kvledger.host.policy import BackupPolicy
>>> s = HostStats(policy=BackupPolicy.WRITE_THROUGH, capacity_pages=2, capacity_slots=1,
...               page_bytes=10, slot_bytes=100, backup_pages=0, backup_slots=0,
...               backup_bytes=0, loadback_pages=0, loadback_slots=0, loadback_bytes=0,
...               host_evicted_pages=0, host_evicted_slots=0, loadback_hit_tokens=0,
...               peak_pages_used=0, peak_slots_used=0)
>>> s.capacity_bytes
120
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.host.policy import BackupPolicy
from kvledger.host.state_backup import HostStateBackup


@dataclass(frozen=True, slots=True, kw_only=True)
class HostStats:
    """Totals of a replay's host tier. Bytes come from the host pools' geometry (one host
    page holds one device page of every full layer's KV rows and index keys; one host state
    slot one whole state), so they are exact, not estimates."""

    policy: BackupPolicy
    capacity_pages: int
    capacity_slots: int
    page_bytes: int  # host (= device) bytes of one page: KV rows + index keys, all layers
    slot_bytes: int  # bytes of one state slot, all linear layers
    backup_pages: int
    backup_slots: int
    backup_bytes: int
    loadback_pages: int
    loadback_slots: int
    loadback_bytes: int
    host_evicted_pages: int
    host_evicted_slots: int
    loadback_hit_tokens: int  # prompt tokens admitted requests took from host, not recomputed
    peak_pages_used: int
    peak_slots_used: int
    state_backup: HostStateBackup = HostStateBackup.ALL  # which states got host room
    declined_state_backups: int = 0  # state copies the state backup rule declined
    state_share: float | None = None  # --hicache-state-share the pools were sized with

    @property
    def state_backup_label(self) -> str:
        """What kvledger's host options changed, for the note: '' under SGLang's defaults."""
        label = ""
        if self.state_backup is not HostStateBackup.ALL:
            label += f", state backup {self.state_backup.value} (kvledger)"
        if self.state_share is not None:
            label += f", state share {self.state_share!r} (kvledger what-if)"
        return label

    @property
    def capacity_bytes(self) -> int:
        return self.capacity_pages * self.page_bytes + self.capacity_slots * self.slot_bytes
