"""IndexKeyCache: page = all key bytes, then all scale bytes; geometry per rule set."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.fp8 import FP8_ABS_ERROR, FP8_REL_ERROR, quantize_scaled
from kvledger.pools.index_keys import IndexKeyCache
from kvledger.sglang.rules import RULES
from kvledger.sglang.specs import IndexKeySpec

KEY_BYTES, SCALE_OFFSET = 128, 64 * 128  # 64 key slots per page in both rule sets


def cache(rules: str, pages: int = 3) -> IndexKeyCache:
    rule = RULES[rules]
    spec = IndexKeySpec(head_dim=128, kpool=4, page_tokens=rule.dsa_page_tokens(4),
                        reserved_bytes=rule.indexer_reserved_bytes(132, 4))
    return IndexKeyCache(spec=spec, num_layers=2, num_pages=pages, device="cpu")


@pytest.mark.parametrize(("rules", "page_tokens", "tokens_per_slot"),
                         [("sglang-0.5.21", 64, 1), ("sglang-0.5.23", 256, 4)])
def test_page_geometry(rules, page_tokens, tokens_per_slot):
    # SPEC §2: a page is 8,448 B in both releases: 64 × 132 (0.5.21) and 256 × 33 (0.5.23).
    c = cache(rules)
    assert c.buffers[0].shape == (3, 8_448) and c.buffers[0].dtype == torch.uint8
    assert (c.keys_per_page, c.tokens_per_key_slot, c.spec.page_tokens) == (
        64, tokens_per_slot, page_tokens)
    assert c.allocated_bytes == 2 * 3 * 8_448


def test_token_to_key_slot_maps():
    old, new = cache("sglang-0.5.21"), cache("sglang-0.5.23")
    tokens = [64, 65, 66, 67, 68, 127, 190]
    assert old.key_locs(tokens).tolist() == tokens  # one key slot per token slot
    assert old.group_key_locs(tokens).tolist() == [64, 64, 64, 64, 68, 124, 188]
    assert new.key_locs(tokens).tolist() == [16, 16, 16, 16, 17, 31, 47]
    assert new.group_key_locs(tokens).tolist() == new.key_locs(tokens).tolist()


@pytest.mark.parametrize("rules", ["sglang-0.5.21", "sglang-0.5.23"])
def test_keys_and_scales_land_where_the_page_layout_says(rules):
    c = cache(rules)
    g = torch.Generator().manual_seed(1)
    keys = torch.randn(4, 128, generator=g) * torch.tensor([[1.0], [30.0], [0.01], [5.0]])
    slots = torch.tensor([0, 63, 64, 190])  # page 0 first/last, page 1 first, page 2 slot 62
    c.set_keys(1, slots, keys)
    codes, scale = quantize_scaled(keys)
    buf = c.buffers[1]
    for i, slot in enumerate(slots.tolist()):
        page, s = divmod(slot, 64)
        assert torch.equal(buf[page, s * KEY_BYTES:(s + 1) * KEY_BYTES], codes[i])
        at = SCALE_OFFSET + s * 4
        assert buf[page, at:at + 4].view(torch.float32).item() == scale[i, 0].item()
    written = sum(KEY_BYTES + 4 for _ in slots)
    assert int((buf != 0).sum()) <= written and (c.buffers[0] == 0).all()
    back = c.get_keys(1, slots)
    assert ((back - keys).abs() <= keys.abs() * FP8_REL_ERROR * 1.0001
            + scale * FP8_ABS_ERROR).all()
    raw_codes, raw_scale = c.get_raw(1, slots)
    assert torch.equal(raw_codes, codes) and torch.equal(raw_scale, scale)


def test_misuse_raises():
    c = cache("sglang-0.5.23", pages=2)
    with pytest.raises(IndexError, match="key slot 128 out of range 0..127"):
        c.get_keys(0, [128])
    with pytest.raises(IndexError, match="indexer layer 2"):
        c.get_keys(2, [0])
    with pytest.raises(IndexError, match="token slot 512"):
        c.key_locs([512])
    with pytest.raises(ValueError, match="index key codes"):
        c.set_raw(0, [1], torch.zeros(2, 128, dtype=torch.uint8), torch.zeros(2, 1))
