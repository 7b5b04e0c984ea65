"""HostDigests: a loadback of host bytes that changed since their backup is refused.

A fingerprint (BLAKE2b) of every device page and state slot is taken when a backup starts,
keyed by the host page / host slot it goes to; when a loadback starts, the host bytes are
fingerprinted in the same arrangement and compared. A mismatch (a flipped bit in DRAM, a
host row that is not the device row) raises ``TransferFault``: the controller aborts the
loadback, frees what it allocated and the request recomputes from its device hit. It plugs
into ``HiCacheController`` as its per-transfer hook (called before a transfer's first copy).

The fingerprint covers what the host group holds: KV rows, index-key pages when there is an
INDEXER pool, and states. Bytes the host never had (index keys under the article's group)
are not checked here; that defect is a wrong answer, not a corruption.
"""

from __future__ import annotations

import hashlib

import torch

from kvledger.host.backup import Moves
from kvledger.host.device import DeviceBytes
from kvledger.host.group import HostPoolGroup
from kvledger.host.runs import slots_to_pages
from kvledger.host.transfer import Direction, Transfer, TransferFault


def _digest(parts: list[torch.Tensor]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.contiguous().numpy().tobytes())
    return h.digest()


class HostDigests:
    def __init__(self, device: DeviceBytes, host: HostPoolGroup) -> None:
        self.device = device
        self.host = host
        self.page_digests: dict[int, bytes] = {}  # host page -> fingerprint at backup
        self.state_digests: dict[int, bytes] = {}  # host state slot -> fingerprint at backup
        self.refused = 0  # loadbacks refused because host bytes changed

    def __call__(self, transfer: Transfer) -> None:
        if transfer.steps_done:
            return  # fingerprint once, before the first byte moves
        moves: Moves = transfer.payload
        page = self.device.page_tokens
        match transfer.direction:
            case Direction.BACKUP:
                for d, h in zip(slots_to_pages(moves.kv_device, page),
                                slots_to_pages(moves.kv_host, page), strict=True):
                    self.page_digests[int(h)] = self._device_page(int(d))
                for d, h in zip(moves.state_device, moves.state_host, strict=True):
                    self.state_digests[int(h)] = self._device_state(int(d))
            case Direction.LOADBACK:
                for h in slots_to_pages(moves.kv_host, page):
                    self._verify(self.page_digests, int(h), self._host_page(int(h)), "page")
                for h in moves.state_host:
                    self._verify(self.state_digests, int(h), self._host_state(int(h)), "state slot")

    def _verify(self, table: dict[int, bytes], key: int, found: bytes, what: str) -> None:
        if table.get(key) != found:
            self.refused += 1
            raise TransferFault(f"host {what} {key} does not hold the bytes backed up there")

    def _device_page(self, page: int) -> bytes:
        dev = self.device
        parts = [dev.kv_page_view(q)[page] for q in range(len(dev.kv_planes))]
        if self.host.indexer is not None:
            parts += [layer[page] for layer in dev.index_pages]
        return _digest(parts)

    def _host_page(self, page: int) -> bytes:
        block = self.host.kv.canonical[page]  # (Q, P, B)
        parts = [block[q] for q in range(block.shape[0])]
        if self.host.indexer is not None:
            index = self.host.indexer.canonical[page]  # (Li, page_bytes)
            parts += [index[i] for i in range(index.shape[0])]
        return _digest(parts)

    def _device_state(self, slot: int) -> bytes:
        dev = self.device
        assert dev.conv is not None and dev.temporal is not None
        return _digest([dev.conv[:, slot], dev.temporal[:, slot]])

    def _host_state(self, slot: int) -> bytes:
        state = self.host.state
        assert state is not None
        return _digest([state.conv[slot], state.temporal[slot]])

