"""HybridLinearKVPool on real models: layer-id maps, misuse, and a request's full round trip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kvledger.pools.build import DevicePools, ScaleDown, build_pools
from kvledger.pools.errors import LayerKindError
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.plan import make_plan


def glm_pools(**deploy) -> DevicePools:
    """GLM-5.3-Flash at attn_tp 8 (the real shapes, sharded: 18.4 MB per state slot), 1,024
    tokens and one request's five state slots, on CPU."""
    deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    plan = make_plan(deployment=Deployment(tp_size=8, **deploy))
    return build_pools(plan, "cpu", ScaleDown.laptop(plan))


@pytest.fixture(scope="module")
def glm() -> DevicePools:
    return glm_pools()


def test_layer_maps_follow_the_config(glm):
    # GLM-5.3-Flash: DSA layers 3, 7, …, 43; the 34 others (44 included) are KDA.
    kv = glm.kv
    assert [kv.full_layer(g) for g in (3, 7, 43)] == [0, 1, 10]
    assert [kv.linear_layer(g) for g in (0, 1, 2, 4, 44)] == [0, 1, 2, 3, 33]
    assert kv.indexer_layer(43) == 10
    assert kv.get_kv_buffer(7) is kv.full_kv_pool.kv_buffer[1]
    conv, temporal = kv.get_state(44)
    assert conv.shape == (6, 3, 3_072) and temporal.shape == (6, 8, 128, 128)


def test_layer_kind_misuse_raises(glm):
    kv = glm.kv
    with pytest.raises(LayerKindError, match="layer 4 is a linear-attention layer"):
        kv.get_kv_buffer(4)
    with pytest.raises(LayerKindError, match="layer 3 is a full-attention layer"):
        kv.get_state(3)
    with pytest.raises(LayerKindError, match="linear-attention"):
        kv.indexer_layer(0)
    with pytest.raises(IndexError, match="layer 45 out of range 0..44"):
        kv.full_layer(45)
    with pytest.raises(IndexError, match="layer -1"):
        kv.linear_layer(-1)


def test_layers_that_cache_nothing_and_models_without_indexers():
    nemotron = build_pools(make_plan("nemotron-h-56b-base-8k"), "meta").kv
    cached = set(nemotron.full_layer_to_dense) | set(nemotron.linear_layer_to_dense)
    nothing = next(i for i in range(nemotron.num_layers) if i not in cached)
    with pytest.raises(LayerKindError, match="caches nothing"):
        nemotron.get_kv_buffer(nothing)
    llama = build_pools(make_plan("llama-3.1-8b"), "meta").kv
    assert llama.mamba_pool is None
    k, v = llama.get_kv_buffer(0)
    assert k.shape == v.shape == (819_201, 8, 128)
    with pytest.raises(LayerKindError, match="no indexer"):
        llama.indexer_layer(0)
    glm52 = build_pools(make_plan("glm-5.2"), "meta")
    pool = glm52.kv.full_kv_pool
    shared = [g for g, d in glm52.kv.full_layer_to_dense.items()
              if not glm52.plan.model.full_layers[d].has_indexer]
    assert shared, "GLM-5.2 has shared-indexer layers"
    assert pool.index_keys.num_layers == pool.num_layers  # every DSA layer has a key buffer
    with pytest.raises(LayerKindError, match="shares another layer's indexer"):
        glm52.kv.indexer_layer(shared[0])


def test_one_request_through_every_pool(glm):
    """Admit, prefill, checkpoint, decode, finish: every allocator back where it started."""
    kv, tokens, slots = glm.kv, glm.token_allocator, glm.state_allocator
    pool, mamba, rows = kv.full_kv_pool, kv.mamba_pool, kv.req_to_token_pool
    assert slots is not None and mamba is not None
    row = rows.alloc(1)
    state = slots.alloc(5)  # the planning ratio: 5 slots per request
    assert row is not None and state is not None and slots.alloc(1) is None
    locs = tokens.alloc_extend([0], [130], [-1])
    assert locs is not None and locs.size == 130
    rows.write_extend(rows=row, prefix_lens=[0], seq_lens=[130], token_locs=locs)
    g = torch.Generator().manual_seed(0)
    latent = torch.randn(130, 512, generator=g)
    pool.set_rows(kv.full_layer(43), locs, latent)
    # One pooled index key per group of 4 tokens, at its group's key slot.
    groups = np.unique(pool.index_keys.group_key_locs(locs).numpy())
    keys = torch.randn(groups.size, 128, generator=g)
    pool.index_keys.set_keys(kv.full_layer(43), groups, keys)
    conv, temporal = kv.get_state(44)
    temporal[state[0]] = 3.0  # the request's working slot
    mamba.copy_slot(int(state[0]), int(state[1]))  # checkpoint it
    more = tokens.alloc_decode([131], [int(locs[-1])])
    assert more is not None and int(more[0]) == int(locs[-1]) + 1
    got = pool.get_rows(kv.full_layer(43), rows.read(int(row[0]), 130))
    assert torch.allclose(got, latent, rtol=2**-4, atol=1e-2)
    assert torch.allclose(pool.index_keys.get_keys(10, groups), keys, rtol=2**-4, atol=1e-2)
    assert (kv.get_state(44)[1][state[1]] == 3.0).all()
    tokens.free(np.concatenate([locs, more]))
    slots.free(state)
    rows.free(row)
    glm.check_integrity()
    assert tokens.num_free_pages == tokens.num_pages and slots.num_free == 5
