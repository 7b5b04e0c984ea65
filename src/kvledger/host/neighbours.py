"""NeighbourGuard: a loadback writes its own device pages and slots, and not the ones beside them.

What the device side guarantees for every verified loadback (`verify=True`, a byte mover):

1. Every device page and state slot the loadback writes holds the bytes backed up for the
   prefix it stands for (`kvledger.host.digests`).
2. Every *neighbour* holds, after the copy, exactly the bytes it held before it. The
   neighbours are the device page just before and just after each run of consecutive pages
   the loadback writes, and the state slot just before and just after each slot it writes
   (pages and slots it writes itself excluded), over every part of a page (each KV plane,
   each index-key layer) and of a slot (conv and temporal of each linear layer). A changed
   neighbour — a copy that overran or underran its run, an index off by one page or slot —
   is put back from a snapshot taken before the copy, counted (`stray_pages`,
   `stray_states`), and fails the loadback like a digest mismatch (`VerifyFault`): the
   request recomputes, and the host copy, which was not at fault, is kept. So the node that
   owns the neighbour reads on its next hit what was cached, whoever owns it (a tree node,
   a running request, or nobody: a free page is checked as well, since a mover that wrote
   it is broken all the same).

Not guaranteed — the documented limit: a write two or more pages (or slots) away from every
run the loadback writes is neither detected nor undone, nor is any write by something other
than a loadback's copy (a backup writes host memory only; a forward writes its request's own
pages). Such a write changes what a later hit reads, silently. Catching it would take a
digest of every device page the tree holds, checked on every loadback or every hit: the whole
pool's bytes per transfer, against two pages per run here.

Why a snapshot and not a digest of the neighbours: a digest detects, the snapshot also
repairs. Before the copy each neighbour is copied into buffers the guard reuses; after it,
each is compared with its copy (XXH3-128 of both on the CPU, `torch.equal` elsewhere). A
loadback whose pages form R runs touches about 2·R pages this way: next to nothing for the
usual fresh allocation (ascending pages, a run or two), and about three times each page's
bytes in the worst case, every page its own run. Measured on the 2-core CPU (GLM-5.3-Flash
pages of 464,640 B, a page_first host, best of 7, a shared machine): a verified loadback of
16 pages in one run took 1.4 ms, 1.7 ms with the guard; of 16 pages each its own run,
1.9 ms and 8.5 ms.

>>> import torch
>>> from kvledger.host.device import DeviceBytes
>>> from kvledger.host.moves import Moves
>>> planes = (torch.zeros((16, 8), dtype=torch.uint8),)          # 4 pages of 4 tokens, 8 B rows
>>> guard = NeighbourGuard(DeviceBytes.assemble(4, 1, planes, (), None, None))
>>> empty = np.zeros(0, dtype=np.int64)
>>> moves = Moves(np.arange(4, 8), np.arange(4), empty, empty)   # the loadback writes page 1
>>> before = guard.snapshot(moves)
>>> before.pages.tolist()
[0, 2]
>>> planes[0][8:12] = 7                                          # a copy that ran into page 2
>>> guard.restore(before), int(planes[0][8:12].sum()), guard.stray_pages
('device page 2 changed (put back)', 0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import xxhash

from kvledger.host.device import DeviceBytes
from kvledger.host.moves import Moves
from kvledger.host.runs import slots_to_pages

View = np.ndarray | torch.Tensor  # numpy on the CPU (row gathers are memcpy), torch elsewhere


def _view(tensor: torch.Tensor, as_numpy: bool) -> View:
    """A CPU uint8 tensor as a numpy view (no copy); else the widest integer view of its
    last dim (torch gathers element by element: wider elements, fewer of them)."""
    if as_numpy:
        return tensor.numpy()
    for size, dtype in ((8, torch.int64), (4, torch.int32), (2, torch.int16)):
        if tensor.shape[-1] % size == 0 and tensor.storage_offset() % size == 0:
            return tensor.view(dtype)
    return tensor


def neighbours(written: np.ndarray, limit: int) -> np.ndarray:
    """Ids next to `written` (one below, one above each) that `written` does not hold,
    within 0..limit−1, ascending."""
    written = np.unique(np.asarray(written, dtype=np.int64))
    beside = np.setdiff1d(np.union1d(written - 1, written + 1), written)
    return beside[(beside >= 0) & (beside < limit)]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The neighbours of one loadback and their bytes before the copy."""

    pages: np.ndarray  # device page ids
    slots: np.ndarray  # device state slots
    page_bytes: tuple[View, ...]  # per page view: (len(pages), n) copies
    slot_bytes: tuple[View, ...]  # per state view: (layers, len(slots), n) copies


class NeighbourGuard:
    def __init__(self, device: DeviceBytes, *, numpy_views: bool | None = None) -> None:
        """`numpy_views`: work on numpy views (the CPU's fast path; the default there) or on
        torch tensors (any device; the default off the CPU)."""
        page = device.page_tokens
        cpu = device.device.type == "cpu"
        if numpy_views and not cpu:
            raise ValueError(f"numpy views of {device.device} memory")
        self.numpy_views = as_numpy = cpu if numpy_views is None else numpy_views
        # One row per device page: each KV plane as (pages, P·B), then each index-key layer.
        self._page_views = [_view(plane.view(-1, page * device.row_bytes), as_numpy)
                            for plane in device.kv_planes]
        self._page_views += [_view(layer, as_numpy) for layer in device.index_pages]
        self._slot_views = [_view(v, as_numpy) for v in (device.conv, device.temporal)
                            if v is not None]
        self.num_pages = device.num_token_slots // page
        self.num_slots = device.conv.shape[1] if device.conv is not None else 0
        self.page_tokens = page
        # numpy snapshot buffers, reused (grown by doubling): a fresh multi-MB array per
        # loadback costs its page faults, more than the copy. (torch's caching allocator
        # reuses device memory by itself.)
        self._page_buffers: list[View | None] = [None] * len(self._page_views)
        self._slot_buffers: list[View | None] = [None] * len(self._slot_views)
        self.stray_pages = 0  # neighbour pages a loadback's copy changed (put back)
        self.stray_states = 0  # neighbour state slots likewise

    def snapshot(self, moves: Moves) -> Snapshot:
        """The neighbours of what `moves` writes on device, and their bytes now. The bytes
        live in the guard's buffers until the next snapshot (one transfer runs at a time)."""
        pages = neighbours(slots_to_pages(moves.kv_device, self.page_tokens), self.num_pages)
        slots = neighbours(moves.state_device, self.num_slots) if self._slot_views else pages[:0]
        return Snapshot(pages=pages, slots=slots,
                        page_bytes=self._gather(self._page_views, self._page_buffers, pages, 0),
                        slot_bytes=self._gather(self._slot_views, self._slot_buffers, slots, 1))

    def restore(self, before: Snapshot) -> str | None:
        """Put back every neighbour whose bytes changed since `before`; None when none did,
        else what changed (for the fault's message)."""
        changed_pages = self._put_back(self._page_views, before.pages, before.page_bytes, 0)
        changed_slots = self._put_back(self._slot_views, before.slots, before.slot_bytes, 1)
        self.stray_pages += len(changed_pages)
        self.stray_states += len(changed_slots)
        if not len(changed_pages) and not len(changed_slots):
            return None
        parts = []
        if len(changed_pages):
            parts.append(f"device page{'s' * (len(changed_pages) > 1)} "
                         f"{', '.join(map(str, changed_pages.tolist()))}")
        if len(changed_slots):
            parts.append(f"device state slot{'s' * (len(changed_slots) > 1)} "
                         f"{', '.join(map(str, changed_slots.tolist()))}")
        return f"{' and '.join(parts)} changed (put back)"

    # ---- bytes -------------------------------------------------------------------------------

    def _gather(self, views: list[View], buffers: list[View | None], ids: np.ndarray,
                axis: int) -> tuple[View, ...]:
        """Copies of `ids` along `axis` of every view (numpy: in the reused buffers)."""
        if not len(ids):
            return ()
        if not self.numpy_views:
            index = torch.from_numpy(ids)
            return tuple(view.index_select(axis, index.to(view.device)) for view in views)
        out = []
        for k, view in enumerate(views):
            buf = buffers[k]
            if buf is None or buf.shape[axis] < len(ids):
                shape = list(view.shape)
                shape[axis] = max(len(ids), 2 * (0 if buf is None else buf.shape[axis]))
                buf = buffers[k] = np.empty(shape, dtype=view.dtype)
            part = buf[:len(ids)] if axis == 0 else buf[:, :len(ids)]
            np.take(view, ids, axis=axis, out=part, mode="clip")  # ids in range: unbuffered
            out.append(part)
        return tuple(out)

    def _put_back(self, views: list[View], ids: np.ndarray, saved: tuple[View, ...],
                  axis: int) -> np.ndarray:
        """Ids among `ids` whose bytes differ from `saved` in any view, restored."""
        if not len(ids):
            return ids[:0]
        changed = np.zeros(len(ids), dtype=bool)
        for view, old in zip(views, saved, strict=True):
            for j, i in enumerate(ids.tolist()):
                if not changed[j]:
                    changed[j] = not _same(view[i] if axis == 0 else view[:, i],
                                           old[j] if axis == 0 else old[:, j])
        for view, old in zip(views, saved, strict=True):
            for j in np.flatnonzero(changed).tolist():
                i = int(ids[j])
                if axis == 0:
                    view[i] = old[j]
                else:
                    view[:, i] = old[:, j]
        return ids[changed]


def _same(now: View, old: View) -> bool:
    """Bit for bit: XXH3-128 of both on the CPU (no temporaries, ~2× memcpy's speed),
    `torch.equal` of the integer views elsewhere."""
    if isinstance(now, torch.Tensor):
        return torch.equal(now, old)
    if now.ndim > 1:  # (layers, n): one digest per layer, each row contiguous
        return all(_same(a, b) for a, b in zip(now, old, strict=True))
    return xxhash.xxh3_128_digest(now) == xxhash.xxh3_128_digest(old)
