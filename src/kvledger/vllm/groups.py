"""KV-cache groups: how vLLM splits layers into groups.

`_get_kv_cache_groups_uniform_page_size` (vllm/v1/core/kv_cache_utils.py, moved to
kv_cache_planning.py in later releases): layers are bucketed by spec (all attention layers,
all Mamba layers); the group size is the smallest bucket, or the largest when it is under 1.5×
the smallest; each bucket splits into cdiv(len, group size) groups, layer i going to group
i mod n (`layers[i::num_groups]`, so that every pipeline stage's share of a group stays
near 1/pp of it). A group shorter than the group size leaves "padding layers": its share of
every block is allocated and never used. A model whose layers all share one spec is one group.
Each group keeps its layers' decoder-layer indices, so a pipeline stage can take its own
(`kvledger.vllm.stages`).

>>> g = kv_cache_groups({"attention": range(3, 48, 4),
...                      "mamba": [i for i in range(48) if i % 4 != 3]})
>>> [(grp.kind, grp.num_layers) for grp in g], group_size(g)
([('attention', 12), ('mamba', 12), ('mamba', 12), ('mamba', 12)], 12)
>>> g[1].layers[:4]
(0, 4, 8, 12)
>>> [grp.num_layers for grp in kv_cache_groups({"attention": range(7), "mamba": range(20)})]
[7, 7, 7, 6]

Layers whose pages differ in a block-outermost layout (GLM-5.3-Flash: latent, indexer, state
and tail pages side by side in a block) are grouped by `packed_groups` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvledger.core.units import cdiv


@dataclass(frozen=True, slots=True, kw_only=True)
class KVCacheGroup:
    kind: str  # "attention" or "mamba"
    num_layers: int
    # The decoder-layer indices of the group's layers (a sparse-MLA group: its MLA layers,
    # each with its indexer cache); empty where a test builds a group by count alone.
    layers: tuple[int, ...] = ()


def _split(kind: str, layers: Sequence[int], count: int) -> list[KVCacheGroup]:
    # layers[i::count]: the first len % count groups get one more layer
    return [KVCacheGroup(kind=kind, num_layers=len(part), layers=tuple(part))
            for part in (list(layers)[i::count] for i in range(count))]


def kv_cache_groups(layers_by_kind: dict[str, Sequence[int]]) -> list[KVCacheGroup]:
    buckets = {kind: list(layers) for kind, layers in layers_by_kind.items() if len(layers)}
    if not buckets:
        return []
    if len(buckets) == 1:
        ((kind, layers),) = buckets.items()
        return _split(kind, layers, 1)
    smallest = min(len(layers) for layers in buckets.values())
    largest = max(len(layers) for layers in buckets.values())
    size = largest if largest < smallest * 1.5 else smallest
    return [group for kind, layers in buckets.items()
            for group in _split(kind, layers, cdiv(len(layers), size))]


def group_size(groups: list[KVCacheGroup]) -> int:
    """Layers per group: the tensors each block spans (`max(len(group.layer_names))`)."""
    return max(g.num_layers for g in groups)


@dataclass(frozen=True, slots=True, kw_only=True)
class PageBucket:
    """One bucket of `_get_packed_kv_cache_groups`: layers one UniformTypeKVCacheSpecs holds
    (same spec type and block size), by page size.

    `state`: a MambaSpec or CircularBufferSpec bucket, which may split down to one state per
    group (`is_state_bucket`)."""

    kind: str  # "attention", "mamba", or "tail" (the kpool tail's CircularBufferSpec)
    layers_by_page: tuple[tuple[int, int], ...]  # (page bytes, layers), layer order
    state: bool = False

    @property
    def num_layers(self) -> int:
        return sum(n for _, n in self.layers_by_page)

    @property
    def max_layers_per_page(self) -> int:
        """`get_max_layers_per_page_size`: the layer pattern's repeats when balanced."""
        return max(n for _, n in self.layers_by_page)

    @property
    def balanced(self) -> bool:
        """One layer of each page size per repeat (equal counts)."""
        return len({n for _, n in self.layers_by_page}) == 1

    def widest_group_bytes(self, groups: int) -> int:
        """Page bytes of the largest of `groups` groups the bucket splits into."""
        return sum(cdiv(n, groups) * page for page, n in self.layers_by_page)


def approximate_gcd(values: list[int], *, lower_bound: int) -> int:
    """`_approximate_gcd`: the d in [lower_bound, max(values)] that pads Σ values up to
    multiples of d the least; ties go to the larger d.

    >>> approximate_gcd([11, 11, 34], lower_bound=11)  # pads 1 + 1 + 2
    12
    """
    best, best_pad = lower_bound, None
    for d in range(lower_bound, max(values) + 1):
        pad = sum(-x % d for x in values)
        if best_pad is None or pad <= best_pad:
            best, best_pad = d, pad
    return best


def packed_groups(buckets: list[PageBucket]) -> list[tuple[PageBucket, tuple[int, ...]]]:
    """`_get_packed_kv_cache_groups` (vllm/v1/core/kv_cache_planning.py in v0.33.0,
    v1/core/kv_cache_utils.py in v0.32.0): the groups of a block-outermost layout whose layers'
    pages differ. Per bucket, the layers of each of its groups (layers of the first page size;
    a group takes one layer of every page size per pattern repeat).

    - repeats per group: the balanced buckets' `max_layers_per_page` brought to one d
      (`approximate_gcd`), at least the largest mixed-page balanced bucket's (kept whole);
      a balanced bucket splits into cdiv(its repeats, d) groups, any other stays one;
    - anchor: the bytes a block must hold: the widest group of every bucket, a state bucket
      taken at one state per group;
    - a state bucket splits further until a group fits the anchor:
      cdiv(layers, anchor // page).
    Groups take pattern repeats round-robin (`pattern_repeats[i::n]`).

    GLM-5.3-Flash at TP 2 on SM120 (a 4,352-token block): 11 latent pages of 2,854,912 B and 11
    indexer pages of 143,616 B in one bucket, 11 tail rings of 2,048 B, 34 KDA states padded
    to 2,228,224 B; d = 12, anchor 33.0 MB, 14 states fit, so the states split in
    max(cdiv(34, 12), cdiv(34, 14)) = 3:

    >>> mla = PageBucket(kind="attention", layers_by_page=((2_854_912, 11), (143_616, 11)))
    >>> tail = PageBucket(kind="tail", layers_by_page=((2_048, 11),), state=True)
    >>> kda = PageBucket(kind="mamba", layers_by_page=((2_228_224, 34),), state=True)
    >>> [(b.kind, n) for b, n in packed_groups([kda, mla, tail])]
    [('mamba', (12, 11, 11)), ('attention', (11,)), ('tail', (11,))]

    On an H200 the states are padded to the latent page, 11 fit: cdiv(34, 11) = 4 groups.

    >>> mla = PageBucket(kind="attention", layers_by_page=((2_228_224, 11), (71_808, 11)))
    >>> kda = PageBucket(kind="mamba", layers_by_page=((2_228_224, 34),), state=True)
    >>> [n for b, n in packed_groups([kda, mla, tail]) if b.kind == "mamba"]
    [(9, 9, 8, 8)]
    """
    floor = max((b.max_layers_per_page for b in buckets
                 if b.balanced and len(b.layers_by_page) > 1), default=0)
    repeats = (approximate_gcd([b.max_layers_per_page for b in buckets if b.balanced],
                               lower_bound=floor) if floor else None)

    def split(bucket: PageBucket) -> int:
        if bucket.balanced and repeats is not None:
            return cdiv(bucket.max_layers_per_page, repeats)
        return 1

    anchor = max((b.widest_group_bytes(b.num_layers if b.state else split(b)) for b in buckets),
                 default=0)
    out: list[tuple[PageBucket, tuple[int, ...]]] = []
    for bucket in buckets:
        count = split(bucket)
        if anchor and bucket.state:  # cap a state group at the states a block already holds
            per_block = max(anchor // bucket.layers_by_page[0][0], 1)
            count = max(count, cdiv(bucket.num_layers, per_block))
        repeats_in_bucket = min(n for _, n in bucket.layers_by_page)  # zip(*…) stops there
        if count == 1:
            out.append((bucket, (bucket.layers_by_page[0][1],)))
        else:
            out.append((bucket, tuple(len(range(i, repeats_in_bucket, count))
                                      for i in range(count))))
    return out


def sparse_hybrid_groups(*, latent_page_bytes: int, mla_layers: Sequence[int],
                         indexer_page_bytes: int, num_indexer: int, state_page_bytes: int,
                         state_layers: Sequence[int], tail_page_bytes: int,
                         states_first: bool) -> list[KVCacheGroup]:
    """GLM-5.3-Flash's groups by `packed_groups`, in vLLM's order (buckets open in layer
    order: the state groups first when layer 0 is linear): one attention group of the MLA
    layers and their indexer caches, the state groups; the kpool tail's own group (one per
    request, `VllmLayout.kpool_tail`) is left out.

    A group takes its bucket's pattern repeats round-robin (`pattern_repeats[i::n]`): repeat
    j is the bucket's j-th layer (an MLA layer with its indexer cache, or one state layer).

    >>> groups = sparse_hybrid_groups(
    ...     latent_page_bytes=2_854_912, mla_layers=range(11), indexer_page_bytes=143_616,
    ...     num_indexer=11, state_page_bytes=2_228_224, state_layers=range(11, 45),
    ...     tail_page_bytes=2_048, states_first=True)
    >>> [(g.kind, g.num_layers) for g in groups], groups[0].layers[:3]
    ([('mamba', 12), ('mamba', 11), ('mamba', 11), ('attention', 11)], (11, 14, 17))
    """
    mla = PageBucket(kind="attention",
                     layers_by_page=((latent_page_bytes, len(mla_layers)),
                                     (indexer_page_bytes, num_indexer)))
    states = PageBucket(kind="mamba", layers_by_page=((state_page_bytes, len(state_layers)),),
                        state=True)
    tail = PageBucket(kind="tail", layers_by_page=((tail_page_bytes, num_indexer),), state=True)
    buckets = [states, mla, tail] if states_first else [mla, tail, states]
    layers = {"attention": list(mla_layers), "mamba": list(state_layers)}
    return [group for bucket, split in packed_groups(buckets) if bucket.kind != "tail"
            for group in _split(bucket.kind, layers[bucket.kind], len(split))]
