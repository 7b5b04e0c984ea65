"""MambaPool: layer-major state tensors, copy-on-write between slots, clearing."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.state import MambaPool
from kvledger.sglang.specs import StateSpec

SPEC = StateSpec(conv_shape=(3, 12), conv_itemsize=2, temporal_shape=(2, 4, 4), temporal_itemsize=4)


def pool(slots: int = 6) -> MambaPool:
    p = MambaPool(spec=SPEC, num_layers=3, num_slots=slots, conv_dtype=torch.bfloat16,
                  temporal_dtype=torch.float32, device="cpu")
    g = torch.Generator().manual_seed(0)
    p.conv.copy_(torch.randn(p.conv.shape, generator=g))
    p.temporal.copy_(torch.randn(p.temporal.shape, generator=g))
    return p


def test_shapes_follow_sglang_layer_major_layout():
    p = pool()
    assert p.conv.shape == (3, 6, 3, 12) and p.temporal.shape == (3, 6, 2, 4, 4)
    assert p.allocated_bytes == 6 * 3 * SPEC.bytes_per_layer
    conv, temporal = p.layer_state(2)
    assert conv.is_contiguous() and temporal.shape == (6, 2, 4, 4)


def test_copy_slot_copies_every_layer_and_nothing_else():
    p = pool()
    before_conv, before_temporal = p.conv.clone(), p.temporal.clone()
    p.copy_slot(2, 4)
    assert torch.equal(p.conv[:, 4], before_conv[:, 2])
    assert torch.equal(p.temporal[:, 4], before_temporal[:, 2])
    others = [0, 1, 2, 3, 5]
    assert torch.equal(p.temporal[:, others], before_temporal[:, others])


def test_batched_copy_is_simultaneous():
    p = pool()
    before = p.temporal.clone()
    p.copy_slot(torch.tensor([1, 2]), torch.tensor([2, 1]))  # swap
    assert torch.equal(p.temporal[:, 1], before[:, 2]) and torch.equal(p.temporal[:, 2], before[:, 1])
    with pytest.raises(ValueError, match="twice"):
        p.copy_slot([1, 2], [3, 3])
    with pytest.raises(ValueError, match="2 sources for 1"):
        p.copy_slot([1, 2], [3])


def test_write_read_clear():
    p = pool()
    conv, temporal = torch.full((2, 3, 12), 0.5), torch.full((2, 2, 4, 4), 7.0)
    p.write(1, [3, 5], conv, temporal)
    got_conv, got_temporal = p.read(1, [5, 3])
    assert torch.equal(got_conv.float(), conv) and torch.equal(got_temporal, temporal)
    p.clear_slot([3])
    assert (p.conv[:, 3] == 0).all() and (p.temporal[:, 3] == 0).all()
    assert (p.temporal[1, 5] == 7.0).all()


def test_misuse_raises():
    p = pool()
    with pytest.raises(IndexError, match="state slot 6 out of range 0..5"):
        p.copy_slot(1, 6)
    with pytest.raises(IndexError, match="linear layer 3"):
        p.read(3, [1])
    with pytest.raises(ValueError, match="temporal state"):
        p.write(0, [1], torch.zeros(1, 3, 12), torch.zeros(1, 2, 4, 3))
    with pytest.raises(ValueError, match="temporal state dtype"):
        MambaPool(spec=SPEC, num_layers=1, num_slots=2, conv_dtype=torch.bfloat16,
                  temporal_dtype=torch.bfloat16, device="cpu")
