"""PrefixDigests: what a host page holds, tied to the prefix it holds, checked on device.

At each backup the device bytes copied are fingerprinted (BLAKE2b) per page — every KV plane
of the page, plus its index-key page when the host group copies index keys — and per state
slot (conv and temporal of every linear layer), and recorded under the *host* page or slot
they went to together with the prefix key of that page (`Moves.kv_keys`). After each
loadback copy the *device* pages and slot written are fingerprinted again and compared with
the record of the host page read, and the record's prefix key with the prefix the tree says
that page holds. Any difference raises `VerifyFault` before the loadback is acknowledged, so
the controller frees what it allocated and the request recomputes. This catches what a check
on host bytes alone cannot: host pages copied to the wrong device pages, a skipped KV,
index-key or state copy, and two nodes' host indices swapped (a page holding another
prefix's bytes, however intact).

>>> import hashlib
>>> record = DigestRecord(key=b"k", digest=hashlib.blake2b(b"x", digest_size=16).digest())
>>> record.matches(b"k", hashlib.blake2b(b"x", digest_size=16).digest()), record.matches(b"j", record.digest)
(True, False)
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import torch

from kvledger.host.device import DeviceBytes
from kvledger.host.group import HostPoolGroup
from kvledger.host.moves import Moves
from kvledger.host.runs import slots_to_pages
from kvledger.host.transfer import VerifyFault


class DigestRecord(NamedTuple):
    key: bytes  # prefix key of the page (or of the state's prefix end)
    digest: bytes  # BLAKE2b-128 of the device bytes backed up

    def matches(self, key: bytes, digest: bytes) -> bool:
        return self.key == key and self.digest == digest


def _digest(parts: list[torch.Tensor]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        if part.device.type != "cpu" or not part.is_contiguous():
            part = part.contiguous().cpu()
        h.update(part.numpy())  # the buffer itself: no copy on the CPU
    return h.digest()


class PrefixDigests:
    def __init__(self, device: DeviceBytes, host: HostPoolGroup) -> None:
        self.device = device
        self.with_index_keys = host.indexer is not None and bool(device.index_pages)
        self._planes = [device.kv_page_view(q) for q in range(len(device.kv_planes))]
        self.pages: dict[int, DigestRecord] = {}  # host page -> what was backed up there
        self.states: dict[int, DigestRecord] = {}  # host state slot -> likewise
        self.verified_pages = 0
        self.verified_states = 0
        self.mismatches = 0  # loadbacks refused: device bytes not those backed up

    def record_backup(self, moves: Moves) -> None:
        """Fingerprint the device source of a backup, keyed by host page and prefix."""
        page = self.device.page_tokens
        dev_pages = slots_to_pages(moves.kv_device, page)
        host_pages = slots_to_pages(moves.kv_host, page)
        assert len(moves.kv_keys) == len(dev_pages), "one prefix key per page backed up"
        for d, h, key in zip(dev_pages, host_pages, moves.kv_keys, strict=True):
            self.pages[int(h)] = DigestRecord(key, self.device_page(int(d)))
        for d, h, key in zip(moves.state_device, moves.state_host, moves.state_keys,
                             strict=True):
            self.states[int(h)] = DigestRecord(key, self.device_state(int(d)))

    def check_loadback(self, moves: Moves) -> None:
        """Raise VerifyFault unless every device page and state written holds the bytes
        backed up for the prefix it stands for."""
        page = self.device.page_tokens
        dev_pages = slots_to_pages(moves.kv_device, page)
        host_pages = slots_to_pages(moves.kv_host, page)
        assert len(moves.kv_keys) == len(dev_pages), "one prefix key per page loaded"
        for d, h, key in zip(dev_pages, host_pages, moves.kv_keys, strict=True):
            self._check(self.pages.get(int(h)), key, self.device_page(int(d)),
                        f"host page {int(h)} → device page {int(d)}")
            self.verified_pages += 1
        for d, h, key in zip(moves.state_device, moves.state_host, moves.state_keys,
                             strict=True):
            self._check(self.states.get(int(h)), key, self.device_state(int(d)),
                        f"host state slot {int(h)} → device slot {int(d)}")
            self.verified_states += 1

    def holds(self, host_page: int, key: bytes) -> bool:
        """Whether `host_page` was last backed up from the prefix `key`."""
        record = self.pages.get(host_page)
        return record is not None and record.key == key

    def _check(self, record: DigestRecord | None, key: bytes, found: bytes, where: str) -> None:
        if record is None or not record.matches(key, found):
            self.mismatches += 1
            why = ("no backup recorded" if record is None else
                   "another prefix's bytes" if record.key != key else "bytes differ")
            raise VerifyFault(f"loadback {where}: {why}")

    def device_page(self, page: int) -> bytes:
        parts = [plane[page] for plane in self._planes]
        if self.with_index_keys:
            parts += [layer[page] for layer in self.device.index_pages]
        return _digest(parts)

    def device_state(self, slot: int) -> bytes:
        dev = self.device
        assert dev.conv is not None and dev.temporal is not None, "a state without a pool"
        return _digest([dev.conv[:, slot], dev.temporal[:, slot]])
