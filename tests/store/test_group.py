"""Object groups on the local-directory backend: per-object XXH3-64 digests in the manifest."""

from __future__ import annotations

import xxhash

from kvledger.store.group import Manifest, group_write
from kvledger.store.keys import Namespace, ObjectKind, object_key, page_keys
from kvledger.store.local_dir import LocalDirStore
from kvledger.store.transfer import read_prefix, write_group

NS = Namespace(model="m", layout="l", salt="s")
PAGES = [bytes(range(i, i + 64)) * 4 for i in range(3)]
STATE = b"\x07" * 1000


def _stored(tmp_path):
    store = LocalDirStore(tmp_path)
    keys = page_keys(NS, list(range(3 * 4)), page_tokens=4)
    assert write_group(store, group_write(NS, keys, first_page=0, pages=PAGES, state=STATE))
    return store, keys


def _flip(store, key: str) -> None:
    path = store.root / key
    bad = bytearray(path.read_bytes())
    bad[len(bad) // 2] ^= 0x01  # one bit: same size
    path.write_bytes(bytes(bad))


def test_manifest_records_xxh3_64_of_each_object(tmp_path):
    store, keys = _stored(tmp_path)
    raw = store.get([object_key(NS, keys[-1], ObjectKind.MANIFEST)])[0]
    m = Manifest.parse(raw, tag=NS.tag)
    assert m.page_digests == tuple(xxhash.xxh3_64_intdigest(p) for p in PAGES)
    assert m.state_digest == xxhash.xxh3_64_intdigest(STATE)
    assert m.page_sizes == (256, 256, 256) and m.state_size == 1000
    got = read_prefix(store, NS, keys, start_page=0)
    assert got.end_page == 3 and [bytes(p) for p in got.pages] == PAGES
    assert bytes(got.state) == STATE
    assert got.present == (3,) and got.broken == ()


def test_one_flipped_bit_in_a_page_is_a_miss(tmp_path):
    store, keys = _stored(tmp_path)
    _flip(store, object_key(NS, keys[1], ObjectKind.KV))
    got = read_prefix(store, NS, keys, start_page=0)
    assert not got.found and got.present == (3,) and got.broken == (3,)


def test_one_flipped_bit_in_the_state_is_a_miss(tmp_path):
    store, keys = _stored(tmp_path)
    _flip(store, object_key(NS, keys[-1], ObjectKind.STATE))
    got = read_prefix(store, NS, keys, start_page=0)
    assert not got.found and got.broken == (3,)


def test_one_flipped_bit_in_the_manifest_is_a_miss(tmp_path):
    store, keys = _stored(tmp_path)
    _flip(store, object_key(NS, keys[-1], ObjectKind.MANIFEST))
    got = read_prefix(store, NS, keys, start_page=0)
    assert not got.found and got.broken == (3,)  # present, but it does not parse
