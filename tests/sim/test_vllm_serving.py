"""The vLLM serving loop over the block cache (`kvledger.sim.vllm_serving`): one request at a
time it is the sequential replay with the sync scheduler (which equals vLLM 0.33's own
arrays, tests/sequential/test_vllm_oracle.py); under load it keeps vLLM's limits
(token budget, max_num_seqs), preempts instead of failing, and leaves the pool intact."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvledger.blocks import FullAttentionSpec, MambaAlignSpec
from kvledger.sequential.vllm_replay import vllm_replay
from kvledger.sequential.vllm_spec import Scheduler, VllmReplaySpec
from kvledger.sim.timing import StepCost
from kvledger.sim.trace import parse_trace_lines
from kvledger.sim.vllm_serving import VllmServeConfig, _Loop, vllm_serve
from kvledger.sim.workload import Request

DATA = Path(__file__).resolve().parents[1] / "data"
B = 64


def _groups(block: int = B, mamba: bool = True):
    attention = FullAttentionSpec(block_size_tokens=block)
    return (MambaAlignSpec(block_size_tokens=block), attention) if mamba else (attention,)


def _one_at_a_time(requests):
    return [replace(r, arrival_ms=1e9 * i, output_tokens=1) for i, r in enumerate(requests)]


def test_one_request_at_a_time_is_the_sequential_replay():
    with (DATA / "synthetic_trace.jsonl").open(encoding="utf-8") as handle:
        requests = parse_trace_lines(handle, source="synthetic_trace.jsonl")[:400]
    spec = VllmReplaySpec(block_tokens=640, pool_tokens=1 << 18, scheduler=Scheduler.SYNC)
    replayed = vllm_replay(requests, spec)
    served = vllm_serve(_one_at_a_time(requests), VllmServeConfig(
        groups=spec.groups(), num_blocks=spec.num_blocks, max_num_batched_tokens=1 << 20,
        max_num_seqs=1))
    hits = np.array([r.hit_tokens for r in sorted(served.records, key=lambda r: r.rid)])
    assert replayed.evicted_blocks[0] > 0  # the pool is pressured
    assert np.array_equal(hits, replayed.hits)
    assert served.preemptions == 0 and not served.unfinished


def test_the_budget_chunks_a_prefill_on_block_multiples():
    req = Request(rid=0, arrival_ms=0.0, segment_ids=(1, 2), segment_tokens=(512, 388),
                  output_tokens=2)
    out = vllm_serve([req], VllmServeConfig(groups=_groups(), num_blocks=64,
                                            max_num_batched_tokens=300,
                                            step_cost=StepCost(overhead_ms=1.0,
                                                               prefill_ms_per_token=0.01,
                                                               decode_ms_per_token=0.0)))
    # 900 tokens in chunks of 256, 256, 256 (300 floored to 4 blocks) and 132, then a decode
    (record,) = out.records
    assert record.steps == 5
    assert record.first_token_ms == pytest.approx(4 * 1.0 + 900 * 0.01)
    assert record.finish_ms == pytest.approx(record.first_token_ms + 1.0)


def test_a_prompt_that_can_never_fit_is_reported_not_looped_on():
    big = Request(rid=0, arrival_ms=0.0, segment_ids=(1, 2), segment_tokens=(512, 512),
                  output_tokens=1)
    out = vllm_serve([big], VllmServeConfig(groups=_groups(mamba=False), num_blocks=8))
    assert out.unfinished == (0,) and out.records == ()


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 511), st.integers(1, 40),
                          st.integers(0, 50)), min_size=1, max_size=12),
       st.integers(64, 700), st.integers(1, 4), st.booleans())
def test_limits_hold_and_the_pool_is_intact_after_every_step(shape, budget, seqs, mamba):
    requests = [Request(rid=i, arrival_ms=float(t), segment_ids=(a, 10 + i),
                        segment_tokens=(512, tail), output_tokens=out)
                for i, (a, tail, out, t) in enumerate(shape)]
    loop = _Loop(requests, VllmServeConfig(groups=_groups(mamba=mamba), num_blocks=48,
                                           max_num_batched_tokens=budget, max_num_seqs=seqs))
    schedule = loop._schedule

    def checked():
        scheduled = schedule()
        assert sum(e - s for _, s, e in scheduled.values()) <= budget
        assert len(loop.running) <= seqs
        loop.coord.check_integrity()
        return scheduled

    loop._schedule = checked
    out = loop.run()
    assert sorted([r.rid for r in out.records] + list(out.unfinished)) == list(range(len(shape)))
    assert loop.coord.pool.usage().held_blocks == 0
    loop.coord.check_integrity()
    for r in out.records:
        assert r.arrival_ms <= r.first_token_ms <= r.finish_ms


def test_a_preempted_request_recomputes_from_its_own_cached_prompt_blocks():
    """Recompute preemption (`Scheduler._preempt_request`) frees the victim's blocks; its
    prompt blocks were cached when computed, so its readmission hits them."""
    reqs = [Request(rid=i, arrival_ms=0.0, segment_ids=(1, 10 + i), segment_tokens=(512, 300),
                    output_tokens=200) for i in range(4)]
    out = vllm_serve(reqs, VllmServeConfig(groups=_groups(mamba=False), num_blocks=40))
    assert out.preemptions > 0 and not out.unfinished and len(out.records) == 4
    preempted = [r for r in out.records if r.preemptions]
    assert preempted and all(r.hit_tokens >= 512 for r in preempted)
