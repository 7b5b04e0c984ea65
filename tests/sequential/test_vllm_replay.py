"""The vLLM replay loop on small hand-made traces: exact hits, steps and counters from the
replay rule of `oracle/vllm-0.33-prefix-cache/README.md` (section 3), with the coordinator's
integrity checked after every request."""

from __future__ import annotations

import numpy as np
import pytest

from kvledger.sequential.spec import Components
from kvledger.sequential.vllm_replay import VllmReplayError, vllm_replay
from kvledger.sequential.vllm_spec import Scheduler, VllmReplaySpec
from kvledger.sequential.vllm_summary import vllm_summary
from kvledger.sim.workload import Request


def _req(rid: int, *blocks: int, last: int = 512) -> Request:
    lengths = (512,) * (len(blocks) - 1) + (last,)
    return Request(rid=rid, arrival_ms=0.0, segment_ids=blocks, segment_tokens=lengths,
                   output_tokens=7)


def _spec(**kw) -> VllmReplaySpec:
    return VllmReplaySpec(**({"block_tokens": 64, "pool_tokens": 1 << 20} | kw))


def test_full_only_caps_the_hit_at_all_but_the_last_token():
    reqs = [_req(0, 1, 2), _req(1, 1, 2), _req(2, 1, 2, 3, last=10)]
    out = vllm_replay(reqs, _spec(components=Components.FULL), check_every=1)
    # an exact resend of 1,024 tokens hits ⌊1023/64⌋·64 = 960; a longer prompt all 1,024
    assert out.hits.tolist() == [0, 960, 1024]
    # the resend recomputes block 15 and caches it again: one hash now names two blocks
    assert out.steps.tolist() == [1, 1, 1] and out.final_cached_blocks == 17


def test_a_resend_hits_the_prefill_checkpoint_and_the_end_state_is_never_cached():
    reqs = [_req(0, 1, 2, last=300), _req(1, 1, 2, last=300), _req(2, 1, 2)]
    out = vllm_replay(reqs, _spec(), check_every=1)
    # L = 812: c = ⌊811/64⌋·64 = 768; request 2 (1,024 tokens) extends it and hits 768 too
    assert out.hits.tolist() == [0, 768, 768]
    assert out.attention_hits.tolist() == [0, 768, 768]
    assert out.final_cached_states == 2  # the states at 768 (request 0) and 960 (request 2)


def test_a_junction_splits_the_prefill_and_the_next_turn_hits_it():
    reqs = [_req(0, 1, 2, last=300), _req(1, 1, 3, last=100), _req(2, 1, 4, last=100)]
    out = vllm_replay(reqs, _spec(), check_every=1)
    assert out.hits.tolist() == [0, 0, 512]
    assert out.attention_hits.tolist() == [0, 512, 512]
    assert out.steps.tolist() == [1, 2, 1] and out.junction_requests == 1
    doc = vllm_summary(out)
    assert (doc["multi_step_prefills"], doc["requests_with_hit"], doc["max_steps"]) == (1, 1, 2)


def test_without_a_checkpoint_block_the_scheduler_stops_at_the_replay_boundary():
    reqs = [_req(0, 1, 2, last=300), _req(1, 1, 3, last=100), _req(2, 1, 3, last=100)]
    with_block = vllm_replay(reqs, _spec(), check_every=1)
    without = vllm_replay(reqs, _spec(checkpoint_blocks=0), check_every=1)
    assert without.steps.tolist() == [2, 3, 1]  # [0,768)+[768,812); [0,512)+[512,576)+…
    assert with_block.hits.tolist() == without.hits.tolist() == [0, 0, 576]
    assert without.checkpoint_steps == 0 and with_block.checkpoint_steps == 2


def test_sync_and_async_agree_on_a_sequential_trace():
    reqs = [_req(i, 1, 2 + i % 3, last=100 + 50 * i) for i in range(8)]
    a = vllm_replay(reqs, _spec(pool_tokens=1536), check_every=1)
    s = vllm_replay(reqs, _spec(pool_tokens=1536, scheduler=Scheduler.SYNC), check_every=1)
    assert np.array_equal(a.hits, s.hits) and a.evicted_blocks == s.evicted_blocks
    assert a.evicted_blocks[0] > 0  # the pool is pressured: evictions happen


def test_a_prompt_larger_than_the_pool_is_an_error_naming_the_pool():
    with pytest.raises(VllmReplayError, match="--pool-tokens 512 \\(8 usable 64-token blocks\\): "
                       "request 0 needs 18 blocks, 8 are free or evictable for its 1,024-token"):
        vllm_replay([_req(0, 1, 2)], _spec(pool_tokens=512))


@pytest.mark.parametrize(("kw", "message"), [
    ({"block_tokens": 0}, "--block-size 0: expected a positive integer"),
    ({"pool_tokens": 10}, "--pool-tokens 10: less than one 64-token block"),
    ({"checkpoint_blocks": 2}, "--checkpoint-blocks 2: expected 0 or 1"),
    ({"retention_tokens": 100}, "--retention 100: expected 0, dense, or a positive multiple"),
    ({"components": Components.FULL, "checkpoint_blocks": 0}, "need --components full\\+mamba"),
])
def test_bad_specs_name_the_flag(kw, message):
    with pytest.raises(ValueError, match=message):
        _spec(**kw)


def test_each_mamba_group_pays_a_block_per_state():
    reqs = [_req(0, 1, 2, last=300), _req(1, 1, 3, last=100), _req(2, 1, 4, last=100)]
    one = vllm_replay(reqs, _spec(), check_every=1)
    four = vllm_replay(reqs, _spec(mamba_groups=4), check_every=1)
    assert four.hits.tolist() == one.hits.tolist() == [0, 0, 512]  # the pool never binds
    assert (one.final_cached_states, four.final_cached_states) == (4, 16)
    assert four.spec.run_name == "hybrid-align@64+4groups"
