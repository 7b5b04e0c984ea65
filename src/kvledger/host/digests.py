"""PrefixDigests: what a host page holds, tied to the prefix it holds, checked on device.

At each backup the device bytes copied are fingerprinted (XXH3-128) per page — every KV plane
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

Why XXH3-128 of the device bytes, and not a cryptographic hash or a compare with the host:
the faults are accidents (a wrong index, a skipped copy, a flipped bit), not an adversary, so
a 128-bit non-cryptographic hash suffices (an accidental collision is ~2^-128); XXH3 hashes
at about twice memcpy's speed (26 GB/s against an 11 GB/s torch copy, one core of a 2-core
machine) where BLAKE2b ran at 0.5 GB/s. Hashing the device bytes once reads each byte once
and catches all four faults; comparing device bytes with the host bytes (`torch.equal`)
reads twice as much, ran at 0.8 GB/s, and misses host bytes corrupted since the backup
unless the host is hashed too. Each page is hashed through numpy views built once (a
tensor's `.numpy()` per part costs more than hashing a 33 KiB part). Off the CPU the parts
are copied to the host first (`.cpu()`): correct, not fast — a device-side check would
hash there.

>>> record = DigestRecord(key=b"k", digest=digest_of([np.frombuffer(b"x", np.uint8)]))
>>> record.matches(b"k", digest_of([np.frombuffer(b"x", np.uint8)])), record.matches(b"j", record.digest)
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import xxhash

from kvledger.host.device import DeviceBytes
from kvledger.host.group import HostPoolGroup
from kvledger.host.moves import Moves
from kvledger.host.runs import slots_to_pages
from kvledger.host.transfer import VerifyFault


class DigestRecord(NamedTuple):
    key: bytes  # prefix key of the page (or of the state's prefix end)
    digest: bytes  # XXH3-128 of the device bytes backed up

    def matches(self, key: bytes, digest: bytes) -> bool:
        return self.key == key and self.digest == digest


def digest_of(parts: Sequence[np.ndarray]) -> bytes:
    """XXH3-128 of the parts' bytes, in order (each a contiguous uint8 array)."""
    h = xxhash.xxh3_128()
    for part in parts:
        h.update(part)  # the buffer itself: no copy
    return h.digest()


def _host_view(tensor: torch.Tensor) -> np.ndarray | torch.Tensor:
    """A CPU tensor as a numpy view (no copy); any other tensor as is, copied per digest."""
    return tensor.numpy() if tensor.device.type == "cpu" else tensor


def _parts(views: Sequence[np.ndarray | torch.Tensor], index: int) -> list[np.ndarray]:
    """Row `index` of every view (all on one device: numpy views on the CPU)."""
    parts = [view[index] for view in views]
    if parts and isinstance(parts[0], torch.Tensor):
        parts = [part.contiguous().cpu().numpy() for part in parts]
    return parts


class PrefixDigests:
    def __init__(self, device: DeviceBytes, host: HostPoolGroup) -> None:
        self.device = device
        self.with_index_keys = host.indexer is not None and bool(device.index_pages)
        # Per-page views built once: (pages, P·B) per plane, (pages, bytes) per index layer.
        self._page_views = [_host_view(plane.view(-1, device.page_tokens * device.row_bytes))
                            for plane in device.kv_planes]
        if self.with_index_keys:
            self._page_views += [_host_view(layer) for layer in device.index_pages]
        self._state_views = ([] if device.conv is None or device.temporal is None else
                             [_host_view(device.conv), _host_view(device.temporal)])
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
                        f"host page {int(h)} → device page {int(d)}", host_page=int(h))
            self.verified_pages += 1
        for d, h, key in zip(moves.state_device, moves.state_host, moves.state_keys,
                             strict=True):
            self._check(self.states.get(int(h)), key, self.device_state(int(d)),
                        f"host state slot {int(h)} → device slot {int(d)}", host_state=int(h))
            self.verified_states += 1

    def holds(self, host_page: int, key: bytes) -> bool:
        """Whether `host_page` was last backed up from the prefix `key`."""
        record = self.pages.get(host_page)
        return record is not None and record.key == key

    def _check(self, record: DigestRecord | None, key: bytes, found: bytes, where: str,
               **host: int) -> None:
        if record is None or not record.matches(key, found):
            self.mismatches += 1
            why = ("no backup recorded" if record is None else
                   "another prefix's bytes" if record.key != key else "bytes differ")
            raise VerifyFault(f"loadback {where}: {why}", **host)

    def device_page(self, page: int) -> bytes:
        """Digest of device page `page`: every KV plane's page, then its index-key pages."""
        return digest_of(_parts(self._page_views, page))

    def device_state(self, slot: int) -> bytes:
        """Digest of device state slot `slot`: conv then temporal of every linear layer."""
        assert self._state_views, "a state without a pool"
        # (Lm, slots, bytes)[:, slot] is strided across layers: one contiguous part per layer.
        return digest_of(_parts([view[layer] for view in self._state_views
                                 for layer in range(view.shape[0])], slot))
