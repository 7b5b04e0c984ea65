"""KV-cache groups: how vLLM splits same-page layers into groups of equal size.

`_get_kv_cache_groups_uniform_page_size` (vllm/v1/core/kv_cache_utils.py, moved to
kv_cache_planning.py in later releases): layers are bucketed by spec (all attention layers,
all Mamba layers); the group size is the smallest bucket, or the largest when it is under 1.5×
the smallest; each bucket splits into cdiv(len, group size) groups, layer i going to group
i mod n. A group shorter than the group size leaves "padding layers": its share of every block
is allocated and never used. A model whose layers all share one spec is one group.

>>> g = kv_cache_groups({"attention": 12, "mamba": 36})
>>> [(grp.kind, grp.num_layers) for grp in g], group_size(g)
([('attention', 12), ('mamba', 12), ('mamba', 12), ('mamba', 12)], 12)
>>> [grp.num_layers for grp in kv_cache_groups({"attention": 7, "mamba": 20})]
[7, 7, 7, 6]
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.units import cdiv


@dataclass(frozen=True, slots=True, kw_only=True)
class KVCacheGroup:
    kind: str  # "attention" or "mamba"
    num_layers: int


def kv_cache_groups(layers_by_kind: dict[str, int]) -> list[KVCacheGroup]:
    buckets = {kind: n for kind, n in layers_by_kind.items() if n > 0}
    if not buckets:
        return []
    if len(buckets) == 1:
        ((kind, n),) = buckets.items()
        return [KVCacheGroup(kind=kind, num_layers=n)]
    smallest, largest = min(buckets.values()), max(buckets.values())
    size = largest if largest < smallest * 1.5 else smallest
    groups: list[KVCacheGroup] = []
    for kind, n in buckets.items():
        count = cdiv(n, size)
        # layers[i::count]: the first n % count groups get one more layer
        groups += [KVCacheGroup(kind=kind, num_layers=len(range(i, n, count)))
                   for i in range(count)]
    return groups


def group_size(groups: list[KVCacheGroup]) -> int:
    """Layers per group: the tensors each block spans (`max(len(group.layer_names))`)."""
    return max(g.num_layers for g in groups)


def glm5_next_groups(*, num_mla: int, num_mamba: int) -> list[KVCacheGroup]:
    """GLM-5.3-Flash (KDA + sparse MLA): `_get_kv_cache_groups_glm5_next`
    (vllm/v1/core/kv_cache_planning.py). One group holds every MLA and indexer layer; the
    state layers split round-robin into cdiv(state layers, MLA layers) groups
    (`_pp_balanced_mamba_group_count` without pipeline parallelism), each padded to the MLA page
    and aliased onto the MLA tensors, so they add groups but no bytes per block.

    >>> [(g.kind, g.num_layers) for g in glm5_next_groups(num_mla=11, num_mamba=34)]
    [('attention', 11), ('mamba', 9), ('mamba', 9), ('mamba', 8), ('mamba', 8)]
    """
    count = cdiv(num_mamba, num_mla)
    return [KVCacheGroup(kind="attention", num_layers=num_mla)] + [
        KVCacheGroup(kind="mamba", num_layers=len(range(i, num_mamba, count)))
        for i in range(count)
    ]
