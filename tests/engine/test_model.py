"""The tiny model: GLM-5.3-Flash's cache anatomy, and outputs that ignore chunking and batching."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.engine_factories import assert_same, prompts, tiny_model
from kvledger.engine.batch import SeqChunk
from kvledger.engine.config import TinyConfig
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import PoolSizes, build_device_pools
from kvledger.engine.pool_store import PoolStore
from kvledger.model.arch import LayerKind
from kvledger.model.config import load_model
from kvledger.sglang.specs import RowLayout

CFG = TinyConfig()


def fresh_run(chunk_tokens: int, max_running: int, texts: list[list[int]], new: int = 3,
              cfg: TinyConfig = CFG):
    cache = FreshCache(cfg, max_running_requests=max_running, max_context_tokens=160)
    engine = Engine(tiny_model(cfg), cache, chunk_tokens=chunk_tokens,
                    max_running_requests=max_running)
    return engine.generate(texts, new)


# ---- anatomy ---------------------------------------------------------------------------------


def test_layer_pattern_is_glm_5_3_flash_s():
    real = sorted(load_model("glm-5.3-flash").layers, key=lambda layer: layer.index)
    assert [layer.kind for layer in real[: CFG.num_layers]] == list(CFG.layer_kinds)
    assert CFG.full_layer_ids == (3, 7) and CFG.layer_kinds[3] is LayerKind.FULL


def test_shapes_follow_the_real_model_where_the_cache_cares():
    arch = load_model("glm-5.3-flash")
    assert (CFG.index_head_dim, CFG.index_kpool) == (arch.indexer.head_dim, arch.indexer.kpool)
    assert CFG.conv_kernel == arch.state.conv_kernel == 4
    assert arch.mla.qk_rope_head_dim == 0  # NoPE, like the tiny model's latent rows


def test_pool_rows_and_states_have_the_ledger_sizes():
    pools = build_device_pools(CFG, PoolSizes(num_pages=2, page_tokens=16))
    full, mamba = pools.kv.full_kv_pool, pools.kv.mamba_pool
    assert full.kv_buffer[0].shape == (48, 132) and full.kv_buffer[0].dtype == torch.uint8
    assert full.index_keys.buffers[0].shape == (3, 16 * 132)  # 16 tokens × (128 B + 4 B scale)
    assert mamba.conv.shape == (6, 17, 3, 96) and mamba.conv.dtype == torch.bfloat16
    assert mamba.temporal.shape == (6, 17, 2, 16, 16) and mamba.temporal.dtype == torch.float32
    bf16 = build_device_pools(TinyConfig(kv_layout=RowLayout.BF16), PoolSizes(num_pages=1))
    assert bf16.kv.full_kv_pool.kv_buffer[0].shape == (32, 128)  # bfloat16 elements


@pytest.mark.parametrize(("field", "value", "message"), [
    ("index_topk", 18, "multiple of index_kpool"),
    ("kv_lora_rank", 96, "multiple of 128"),
    ("kv_layout", RowLayout.FP8_RAW, "bf16 or fp8 scaled"),
    ("num_layers", 0, "positive integer"),
])
def test_config_errors_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=f"TinyConfig.{field}.*{message}"):
        TinyConfig(**{field: value})


# ---- invariance ------------------------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(chunk=st.integers(1, 40), max_running=st.integers(1, 3))
def test_chunking_and_batching_do_not_change_a_single_bit(chunk, max_running):
    texts = prompts(1, [45, 9, 30])
    assert_same(fresh_run(chunk, max_running, texts), fresh_run(1000, 1, texts))


def test_bf16_state_and_rows_are_chunk_invariant_too():
    cfg = TinyConfig(kv_layout=RowLayout.BF16, temporal_dtype=CFG.temporal_dtype.BFLOAT16)
    texts = prompts(2, [37, 22])
    assert_same(fresh_run(5, 2, texts, cfg=cfg), fresh_run(1000, 1, texts, cfg=cfg))


def test_outputs_depend_on_the_prompt():
    a, b = fresh_run(64, 2, prompts(3, [20, 20]))
    assert a.token_ids != b.token_ids


# ---- checkpoints, index keys -----------------------------------------------------------------


def _chunk(ids, start, slot, locs, checkpoints=(), tail_row=None):
    return SeqChunk(input_ids=torch.tensor(ids[start:], dtype=torch.int64), start_tokens=start,
                    token_locs=locs[: len(ids)], state_slot=slot,
                    tail_row=slot if tail_row is None else tail_row, checkpoints=checkpoints)


def test_a_checkpoint_is_the_state_of_a_run_that_stopped_there():
    pools = build_device_pools(CFG, PoolSizes(num_pages=8))
    store = PoolStore(pools.kv)
    ids = prompts(4, [40])[0]
    locs = torch.arange(16, 16 + 64)
    model = tiny_model(CFG)
    model.forward([_chunk(ids, 0, 1, locs, checkpoints=((21, 3),))], store)
    model.forward([_chunk(ids[:21], 0, 2, locs + 64)], store)  # a second run stopped at 21
    mamba = pools.kv.mamba_pool
    assert torch.equal(mamba.conv[:, 3], mamba.conv[:, 2])
    assert torch.equal(mamba.temporal[:, 3], mamba.temporal[:, 2])
    assert not torch.equal(mamba.temporal[:, 1], mamba.temporal[:, 2])  # slot 1 went on to 40


def test_a_stale_index_key_changes_the_output():
    """What a lost index key does: which groups win changes, so the logits change."""
    pools = build_device_pools(CFG, PoolSizes(num_pages=8))
    store, mamba = PoolStore(pools.kv), pools.kv.mamba_pool
    ids = prompts(5, [60])[0]
    locs = torch.arange(16, 16 + 64)
    model = tiny_model(CFG)
    model.forward([_chunk(ids[:59], 0, 1, locs)], store)
    keys = pools.kv.full_kv_pool.index_keys
    early = keys.group_key_locs(locs[:16:4])  # the pooled keys of groups 0..3

    def last_token_logits():
        mamba.copy_slot(1, 2)  # resume from the state after 59 tokens, every time
        return model.forward([_chunk(ids, 59, 2, locs, tail_row=1)], store)

    good = last_token_logits()
    assert torch.equal(last_token_logits(), good)
    kept = keys.get_keys(0, early)
    keys.set_keys(0, early, -kept)
    assert not torch.equal(last_token_logits(), good)
    keys.set_keys(0, early, kept)
    assert torch.equal(last_token_logits(), good)


def test_latent_rows_are_stored_as_scaled_fp8():
    pools = build_device_pools(CFG, PoolSizes(num_pages=4))
    ids = prompts(6, [10])[0]
    tiny_model(CFG).forward([_chunk(ids, 0, 1, torch.arange(16, 32))], PoolStore(pools.kv))
    rows = pools.kv.full_kv_pool.kv_buffer[0]
    scales = rows[:, 128:132].contiguous().view(torch.float32).squeeze(1)
    assert (scales[16:26] > 0).all() and (scales[26:] == 0).all() and (scales[:16] == 0).all()


def test_forward_rejects_token_ids_outside_the_vocabulary():
    pools = build_device_pools(CFG, PoolSizes(num_pages=1))
    with pytest.raises(ValueError, match="0..255"):
        tiny_model(CFG).forward([_chunk([300], 0, 1, torch.arange(16, 32))], PoolStore(pools.kv))


def test_seq_chunk_checks_its_slots_and_checkpoints():
    with pytest.raises(ValueError, match="expected 5 slots"):
        SeqChunk(input_ids=torch.zeros(3, dtype=torch.int64), start_tokens=2,
                 token_locs=torch.arange(4), state_slot=1, tail_row=1)
    with pytest.raises(ValueError, match="outside 3..5"):
        SeqChunk(input_ids=torch.zeros(3, dtype=torch.int64), start_tokens=2,
                 token_locs=torch.arange(5), state_slot=1, tail_row=1, checkpoints=((2, 4),))


def test_greedy_tokens_are_the_argmax_of_the_returned_logits():
    out = fresh_run(16, 2, prompts(7, [12, 30]))
    for gen in out:
        assert list(gen.token_ids) == np.argmax(gen.logits.numpy(), axis=1).tolist()
