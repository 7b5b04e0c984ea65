"""Store-tier (L3) sizing: objects and bytes per tree node, and the DRAM each instance needs.

The store tier (`kvledger.cache.store_tier`) keeps a tree node of n pages as one group:

    n page objects    P · C_token bytes each — every full layer's KV rows and index keys,
                      byte for byte as the device holds them (C_token: the token ledger)
    1 state object    S_slot bytes — the linear-attention state after the node (state ledger)
    1 manifest        26 + 16·(n + 1) + 8 bytes (header, size + XXH3-64 per object, own XXH3-64)

Every object is named by an 80-byte key (12-digit namespace tag, 64-digit page digest, kind).
Backends lay the same objects out differently:

    local-dir   one file per object; each file rounds up to the 4 KiB filesystem block
    redis       one key per object; the server's per-key overhead is not modelled
    mooncake    one object per key in the mounted segments; a batch is staged in the client's
                local buffer, so that buffer must hold at least one whole group (2× it: a
                batch uses half)

DRAM per instance: with Mooncake every instance mounts its share of the store
(`l3_bytes / instances`) plus its local buffer; with Redis the server holds the store and an
instance needs only the staging copy of the groups in flight (one group here: writes are
queued one at a time). Capacity: `l3_bytes // node bytes` nodes of n pages.

>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.sglang.deploy import Deployment, KVDtype
>>> p = make_plan(deployment=Deployment(kv_cache_dtype=KVDtype.FP8_E4M3))
>>> l3 = plan_l3(p.layout.page_tokens, token_bytes=p.ledgers.token.total_bytes,
...              state_bytes=p.ledgers.state.total_bytes, l3_bytes=100 * 2**30)
>>> l3.page_bytes, l3.state_bytes  # 64 tokens × 7,260 B; the KDA state of one slot
(464640, 147619840)
>>> l3.node.objects, l3.node.payload_bytes  # 1 page + state + manifest
(3, 148084546)
>>> l3.nodes, l3.tokens  # a state per page: 100 GiB holds 46,400 tokens
(725, 46400)
>>> plan_l3(64, token_bytes=7260, state_bytes=147619840, l3_bytes=100 * 2**30,
...         node_pages=64).tokens  # 4,096-token nodes: the state amortised over 64 pages
2478080

The state dwarfs the pages (318 pages' worth), so how long a node is decides what a store
holds: a hybrid store tier wants few, long nodes (states at coarse checkpoints).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.units import cdiv

KEY_BYTES = 80  # "<12 hex>:<64 hex>:kv"
MANIFEST_HEAD_BYTES = 26
MANIFEST_OBJECT_BYTES = 16  # size, XXH3-64
MANIFEST_TAIL_BYTES = 8  # the manifest's own XXH3-64
FS_BLOCK_BYTES = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeObjects:
    """One tree node of `pages` pages as stored."""

    pages: int
    page_bytes: int
    state_bytes: int

    @property
    def objects(self) -> int:
        return self.pages + 2  # pages, state, manifest

    @property
    def manifest_bytes(self) -> int:
        return (MANIFEST_HEAD_BYTES
                + MANIFEST_OBJECT_BYTES * (self.pages + 1)
                + MANIFEST_TAIL_BYTES)

    @property
    def payload_bytes(self) -> int:
        return (self.pages * self.page_bytes  # page objects
                + self.state_bytes  # state object
                + self.manifest_bytes)  # manifest

    @property
    def key_bytes(self) -> int:
        return self.objects * KEY_BYTES

    @property
    def local_dir_bytes(self) -> int:
        """On disk: every file rounded up to whole filesystem blocks."""
        block = FS_BLOCK_BYTES
        return (self.pages * cdiv(self.page_bytes, block) * block
                + cdiv(self.state_bytes, block) * block
                + cdiv(self.manifest_bytes, block) * block)

    @property
    def mooncake_buffer_bytes(self) -> int:
        """The client local buffer that stages one whole group (a batch uses half)."""
        return 2 * (self.pages * self.page_bytes + self.state_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class L3Plan:
    page_tokens: int
    page_bytes: int
    state_bytes: int
    l3_bytes: int
    instances: int
    node: NodeObjects

    @property
    def nodes(self) -> int:
        return self.l3_bytes // self.node.payload_bytes

    @property
    def tokens(self) -> int:
        return self.nodes * self.node.pages * self.page_tokens

    @property
    def mooncake_dram_per_instance_bytes(self) -> int:
        return cdiv(self.l3_bytes, self.instances) + self.node.mooncake_buffer_bytes

    @property
    def redis_dram_per_instance_bytes(self) -> int:
        return self.node.pages * self.page_bytes + self.state_bytes


def plan_l3(page_tokens: int, *, token_bytes: int, state_bytes: int, l3_bytes: int,
            instances: int = 1, node_pages: int = 1) -> L3Plan:
    for name, value in (("--l3-size", l3_bytes), ("--l3-instances", instances),
                        ("--l3-node-pages", node_pages)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive number, got {value!r}")
    page_bytes = page_tokens * token_bytes
    node = NodeObjects(pages=node_pages, page_bytes=page_bytes, state_bytes=state_bytes)
    if l3_bytes < node.payload_bytes:
        raise ValueError(f"--l3-size: {l3_bytes:,} B holds no {node_pages}-page node "
                         f"({node.payload_bytes:,} B)")
    return L3Plan(page_tokens=page_tokens, page_bytes=page_bytes, state_bytes=state_bytes,
                  l3_bytes=l3_bytes, instances=instances, node=node)
