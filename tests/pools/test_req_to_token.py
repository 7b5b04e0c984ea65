"""ReqToTokenPool: padding row 0, batched writes, range checks."""

from __future__ import annotations

import pytest
import torch

from kvledger.pools.errors import AllocatorError
from kvledger.pools.req_to_token import ReqToTokenPool


def test_rows_and_batched_extend():
    p = ReqToTokenPool(num_rows=3, max_context_tokens=10, device="cpu")
    assert p.req_to_token.shape == (4, 10) and p.req_to_token.dtype == torch.int32
    rows = p.alloc(2).tolist()
    assert rows == [1, 2] and p.alloc(2) is None
    p.write_extend(rows=rows, prefix_lens=[0, 0], seq_lens=[3, 2], token_locs=[64, 65, 66, 128, 129])
    p.write_extend(rows=rows, prefix_lens=[3, 2], seq_lens=[4, 5], token_locs=[67, 130, 131, 132])
    assert p.read(1, 4).tolist() == [64, 65, 66, 67]
    assert p.read(2, 5).tolist() == [128, 129, 130, 131, 132]
    assert (p.req_to_token[0] == 0).all() and (p.req_to_token[3] == 0).all()
    p.free(rows)
    with pytest.raises(AllocatorError):
        p.free([1])
    p.check_integrity()


def test_misuse_raises():
    p = ReqToTokenPool(num_rows=2, max_context_tokens=4, device="cpu")
    with pytest.raises(IndexError, match="beyond max_context_tokens 4"):
        p.write_extend(rows=[1], prefix_lens=[2], seq_lens=[5], token_locs=[1, 2, 3])
    with pytest.raises(IndexError, match="request row 3"):
        p.write_extend(rows=[3], prefix_lens=[0], seq_lens=[1], token_locs=[1])
    with pytest.raises(ValueError, match="2 token slots for 1 positions"):
        p.write_extend(rows=[1], prefix_lens=[0], seq_lens=[1], token_locs=[1, 2])
    with pytest.raises(IndexError, match="request row 5"):
        p.read(5, 1)
