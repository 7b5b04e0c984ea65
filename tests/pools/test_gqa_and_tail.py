"""GQA K/V buffers and the DSA compress tail."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.fp8 import FP8_ABS_ERROR, FP8_REL_ERROR
from kvledger.pools.gqa import GqaKVPool
from kvledger.pools.tail import CompressTail
from kvledger.sglang.specs import GqaRowSpec, TailSpec


@pytest.mark.parametrize("itemsize", [2, 1])
def test_gqa_set_get(itemsize):
    p = GqaKVPool(spec=GqaRowSpec(kv_heads_per_rank=2, head_dim=8, itemsize=itemsize),
                  num_layers=3, num_token_slots=10, device="cpu")
    assert p.allocated_bytes == 2 * 3 * 10 * 2 * 8 * itemsize
    k, v = torch.randn(4, 2, 8), torch.randn(4, 2, 8)
    p.set_kv(2, [9, 1, 5, 3], k, v)
    k2, v2 = p.get_kv(2, [9, 1, 5, 3])
    for want, got in ((k, k2), (v, v2)):
        if itemsize == 2:
            assert torch.equal(got, want.to(torch.bfloat16).float())
        else:
            assert ((got - want).abs() <= want.abs() * FP8_REL_ERROR + FP8_ABS_ERROR).all()
    with pytest.raises(IndexError, match="token slot 10"):
        p.get_kv(0, [10])
    with pytest.raises(ValueError, match="values"):
        p.set_kv(0, [1], torch.zeros(1, 2, 8), torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="expected 2"):
        GqaKVPool(spec=GqaRowSpec(kv_heads_per_rank=1, head_dim=8, itemsize=4), num_layers=1,
                  num_token_slots=1, device="cpu")


def test_tail_rows_and_clear():
    # SPEC §4 / article: 64 requests, no MTP → 66 rows × 4 × 128 bf16, key + score, 11 layers.
    tail = CompressTail(spec=TailSpec(rows=66, width_tokens=4, head_dim=128), num_layers=11,
                        device="cpu")
    assert tail.allocated_bytes == 66 * 4 * 128 * 2 * 2 * 11 == 1_486_848
    tail.key[3][5] = 1.0
    tail.score[3][6] = 2.0
    tail.clear_rows([5])
    assert (tail.key[3] == 0).all() and (tail.score[3][6] == 2.0).all()
    with pytest.raises(IndexError, match="tail row 66"):
        tail.clear_rows([66])
    tail.check_integrity()
