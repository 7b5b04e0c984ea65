"""Whole-group writes and longest-prefix reads against a backend.

`write_group` puts a group's objects, then — only if every one was stored — its manifest:
a reader never sees a manifest whose objects were not all acknowledged. `read_prefix` finds
the longest prefix that ends on a committed group and reads every page from ``start_page``
on plus the state at its end, checking sizes and digests; when a deeper group turns out
partial or corrupt it falls back to a shallower one (at most `max_tries` of them), reusing
pages already read. It answers a `PrefixRead` either way: what it restored (or nothing),
which manifests it found and which groups were broken, so the tier can forget groups the
store lost. Both raise only `StoreUnavailable` (server gone or too slow).

>>> import tempfile
>>> from kvledger.store.group import group_write
>>> from kvledger.store.keys import Namespace, page_keys
>>> from kvledger.store.local_dir import LocalDirStore
>>> store, ns = LocalDirStore(tempfile.mkdtemp()), Namespace(model="m", layout="l")
>>> keys = page_keys(ns, range(48), page_tokens=16)
>>> write_group(store, group_write(ns, keys, first_page=0, pages=[b"p0", b"p1"], state=b"s1"))
True
>>> got = read_prefix(store, ns, keys, start_page=1)
>>> got.end_page, got.pages, got.state, got.present
(2, [b'p1'], b's1', (2,))
>>> read_prefix(store, ns, keys, start_page=2).found  # nothing committed past page 2
False
"""

from __future__ import annotations

from collections.abc import Sequence

from kvledger.store.backend import StoreBackend
from kvledger.store.group import GroupWrite, Manifest, digest
from kvledger.store.group_store import PrefixRead
from kvledger.store.keys import Namespace, ObjectKind, object_key

MAX_TRIES = 3


def write_group(backend: StoreBackend, group: GroupWrite) -> bool:
    """True once the manifest is stored (the group is committed). The manifest is put only
    after every object was acknowledged: one refused object and the group stays invisible."""
    if not all(backend.put(group.objects)):
        return False
    return all(backend.put([group.manifest]))


def committed_ends(backend: StoreBackend, ns: Namespace, keys: Sequence[str],
                   start_page: int) -> list[int]:
    """Page counts n > start_page whose group manifest exists, deepest first (one batch)."""
    ends = range(start_page + 1, len(keys) + 1)
    there = backend.exists([object_key(ns, keys[n - 1], ObjectKind.MANIFEST) for n in ends])
    return [n for n, ok in zip(ends, there, strict=True) if ok][::-1]


def _chain(backend: StoreBackend, ns: Namespace, keys: Sequence[str], end: int,
           start_page: int, known: dict[int, Manifest | None]) -> list[Manifest] | None:
    """Manifests from the group ending at `end` back to the one covering `start_page`."""
    chain, n = [], end
    while n > start_page:
        if n not in known:
            raw = backend.get([object_key(ns, keys[n - 1], ObjectKind.MANIFEST)])[0]
            known[n] = Manifest.parse(raw, tag=ns.tag)
        m = known[n]
        if m is None or m.end_page != n or m.first_page >= n:
            return None
        chain.append(m)
        n = m.first_page
    return chain


def read_prefix(backend: StoreBackend, ns: Namespace, keys: Sequence[str], *, start_page: int,
                min_end_page: int = 0, max_tries: int = MAX_TRIES) -> PrefixRead:
    """The longest committed, intact prefix longer than `start_page` and at least
    `min_end_page` pages (``found`` False when there is none)."""
    known: dict[int, Manifest | None] = {}
    pages_ok: dict[int, bytes] = {}
    broken: list[int] = []
    present = tuple(committed_ends(backend, ns, keys, start_page))
    ends = [n for n in present if n >= min_end_page]
    for end in ends[:max_tries]:
        chain = _chain(backend, ns, keys, end, start_page, known)
        if chain is None:
            broken.append(end)
            continue
        spec: dict[int, tuple[int, int]] = {}
        for m in chain:
            for i, (size, want) in enumerate(zip(m.page_sizes, m.page_digests, strict=True)):
                page = m.first_page + i
                if page >= start_page:
                    spec[page] = (size, want)
        todo = [p for p in sorted(spec) if p not in pages_ok]
        top = chain[0]
        names = [object_key(ns, keys[p], ObjectKind.KV) for p in todo]
        names.append(object_key(ns, keys[end - 1], ObjectKind.STATE))
        sizes = [spec[p][0] for p in todo] + [top.state_size]
        values = backend.get(names, sizes)
        intact = True
        for p, value in zip(todo, values[:-1], strict=True):
            size, want = spec[p]
            if value is None or len(value) != size or digest(value) != want:
                intact = False
            else:
                pages_ok[p] = value
        state = values[-1]
        if (not intact or state is None or len(state) != top.state_size
                or digest(state) != top.state_digest):
            broken.append(end)
            continue
        return PrefixRead(end_page=end, pages=[pages_ok[p] for p in range(start_page, end)],
                          state=state, present=present, broken=tuple(broken))
    return PrefixRead.none(present=present, broken=tuple(broken))
