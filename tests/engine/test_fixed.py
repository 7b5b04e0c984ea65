"""Fixed-order arithmetic: the property the whole cached == fresh proof rests on."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.engine.fixed import (
    fixed_exp,
    fixed_sum,
    linear,
    rms_norm,
    sigmoid,
    softmax_weights,
)

floats32 = st.floats(min_value=-1e6, max_value=1e6, width=32, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(floats32, min_size=1, max_size=40), pad=st.integers(0, 40),
       row=st.integers(0, 3))
def test_a_sum_is_the_same_alone_and_zero_padded_inside_any_batch(values, pad, row):
    alone = fixed_sum(torch.tensor(values, dtype=torch.float32), dim=0)
    width = len(values) + pad
    batch = torch.randn(4, width) * 1e3
    batch[row] = 0.0
    batch[row, : len(values)] = torch.tensor(values)
    together = fixed_sum(batch, dim=1)[row]
    assert alone.view(torch.int32) == together.view(torch.int32)  # same bits, sign included


def test_the_tree_pairs_halves_not_neighbours():
    # ((1e8 + -1e8) + (1 + 1)) = 2, where left to right would give ((1e8 + 1) − 1e8) + 1 = 1.
    x = torch.tensor([1e8, 1.0, -1e8, 1.0])
    assert fixed_sum(x, 0).item() == 2.0
    assert ((x[0] + x[1]) + x[2] + x[3]).item() == 1.0


def test_negative_zero_never_leaks_out_of_a_sum():
    out = fixed_sum(torch.tensor([-0.0, -0.0, -0.0]), 0)
    assert out.item() == 0.0 and math.copysign(1.0, out.item()) == 1.0


@settings(max_examples=50, deadline=None)
@given(rows=st.integers(1, 33), seed=st.integers(0, 2**16))
def test_linear_rows_do_not_depend_on_the_batch(rows, seed):
    gen = torch.Generator().manual_seed(seed)
    x, w = torch.randn(rows, 64, generator=gen), torch.randn(64, 96, generator=gen)
    batched = linear(x, w)
    for i in range(rows):
        assert torch.equal(linear(x[i:i + 1], w)[0], batched[i])


def test_linear_is_a_matrix_product():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(5, 64, generator=gen), torch.randn(64, 7, generator=gen)
    torch.testing.assert_close(linear(x, w), x @ w, rtol=1e-5, atol=1e-5)


def test_exp_is_accurate_and_exact_at_zero():
    x = torch.linspace(-80.0, 80.0, 20001)
    assert ((fixed_exp(x) / torch.exp(x)) - 1).abs().max().item() < 6e-6
    assert fixed_exp(torch.tensor([0.0])).item() == 1.0
    assert fixed_exp(torch.tensor([-90.0, -1e4])).tolist() == [0.0, 0.0]  # below 2**-126


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(-60, 60, width=32), min_size=1, max_size=64))
def test_elementwise_functions_do_not_depend_on_the_tensor_length(values):
    # A value's result must not change with the vectorised-loop position it lands in.
    x = torch.tensor(values)
    for fn in (fixed_exp, sigmoid):
        whole = fn(x)
        assert all(torch.equal(fn(x[i:i + 1])[0], whole[i]) for i in range(len(values)))


def test_softmax_weights_are_exact_zeros_where_invalid():
    scores = torch.tensor([[3.0, 1.0, 7.0, 2.0]])
    valid = torch.tensor([[True, True, False, True]])
    w = softmax_weights(scores, valid, dim=-1)
    assert w[0, 2].item() == 0.0 and w[0, 0].item() == 1.0  # the max valid score gives e**0
    torch.testing.assert_close(w[0, [1, 3]], torch.exp(torch.tensor([-2.0, -1.0])))


def test_rms_norm_normalises():
    x = torch.tensor([[3.0, 4.0]])
    torch.testing.assert_close(rms_norm(x, torch.ones(2), eps=0.0), x / math.sqrt(12.5))
