"""`simulate --engine vllm` below the CLI: the pool, groups and budgets from vLLM's plan
(`kvledger.sim.vllm_setup`), a state costing one block per Mamba group in the serving loop,
and the summary's SGLang-named metrics (`kvledger.sim.vllm_summary`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kvledger.blocks import FullAttentionSpec, MambaAlignSpec
from kvledger.sequential.vllm_replay import vllm_replay
from kvledger.sequential.vllm_spec import Scheduler, VllmReplaySpec
from kvledger.sim.timing import StepCost
from kvledger.sim.trace import parse_trace_lines
from kvledger.sim.vllm_serving import VllmServeConfig, _Loop, vllm_serve
from kvledger.sim.vllm_setup import vllm_sim_setup
from kvledger.sim.vllm_summary import vllm_summary
from kvledger.sim.workload import Request, WorkloadError
from kvledger.vllm.deploy import VllmDeployment
from kvledger.vllm.plan import make_vllm_plan
from kvledger.vllm.rules import MambaCacheMode

B = 64
TRACE = Path(__file__).resolve().parents[1] / "data" / "synthetic_trace.jsonl"
COST = StepCost(overhead_ms=1.0, prefill_ms_per_token=0.01, decode_ms_per_token=0.1)


def _config(num_mamba: int, num_blocks: int = 400, **kw) -> VllmServeConfig:
    groups = ((MambaAlignSpec(block_size_tokens=B),) * num_mamba
              + (FullAttentionSpec(block_size_tokens=B),))
    return VllmServeConfig(groups=groups, num_blocks=num_blocks, step_cost=COST, **kw)


def _cached_per_group(loop: _Loop) -> list[int]:
    pool = loop.coord.pool
    counts = [0] * pool.num_groups
    for key in pool.block_key:
        if key is not None:
            counts[key % pool.num_groups] += 1
    return counts


@pytest.mark.parametrize("num_mamba", [1, 3, 4])
def test_a_cached_state_costs_one_block_in_every_mamba_group(num_mamba):
    # 1,000 prompt tokens, block 64: 15 full KV blocks cached; one state, the prefill
    # checkpoint at ⌊999/64⌋·64 = 960 (MambaManager.reachable_block_mask, retention 0),
    # cached once in each Mamba group
    req = Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(1000,),
                  output_tokens=2)
    loop = _Loop([req], _config(num_mamba))
    loop.run()
    assert _cached_per_group(loop) == [1] * num_mamba + [15]
    loop.coord.check_integrity()


def test_one_request_at_a_time_with_the_async_scheduler_is_the_async_replay():
    # replay --scheduler async is vLLM 0.33's default (the oracle cells' scheduler)
    with TRACE.open(encoding="utf-8") as handle:
        requests = parse_trace_lines(handle, source="synthetic_trace.jsonl")[:200]
    spec = VllmReplaySpec(block_tokens=640, pool_tokens=1 << 18, scheduler=Scheduler.ASYNC)
    replayed = vllm_replay(requests, spec)
    spaced = [replace(r, arrival_ms=1e9 * i, output_tokens=1) for i, r in enumerate(requests)]
    served = vllm_serve(spaced, VllmServeConfig(
        groups=spec.groups(), num_blocks=spec.num_blocks, max_num_batched_tokens=1 << 20,
        max_num_seqs=1, steps_in_flight=Scheduler.ASYNC.steps_in_flight))
    hits = np.array([r.hit_tokens for r in sorted(served.records, key=lambda r: r.rid)])
    assert replayed.evicted_blocks[0] > 0  # the pool is pressured
    assert np.array_equal(hits, replayed.hits)


def test_the_async_step_ahead_holds_a_state_block_one_step_longer():
    # 900 tokens, budget 300, block 64: chunks 256, 256, 256, 132. With a step in flight,
    # allocate_slots removes skipped blocks up to computed − in flight (the oracle README's
    # step 2, AsyncScheduler), so the state block the last chunk passed is freed a step later:
    # 18 usable blocks serve the request without preemption under the sync scheduler, and
    # the async one preempts (it resumes from its own cached 768 tokens) until 19
    req = Request(rid=0, arrival_ms=0.0, segment_ids=(1, 2), segment_tokens=(512, 388),
                  output_tokens=2)

    def run(num_blocks: int, in_flight: int):
        return vllm_serve([req], _config(1, num_blocks=num_blocks, max_num_batched_tokens=300,
                                         steps_in_flight=in_flight))

    sync, tight, roomy = run(19, 1), run(19, 2), run(20, 2)
    assert (sync.preemptions, sync.records[0].hit_tokens) == (0, 0)
    assert (tight.preemptions, tight.records[0].hit_tokens) == (2, 768)
    assert roomy.preemptions == 0
    assert run(18, 1).records == ()  # and 18 blocks fit neither


def test_records_carry_the_attention_hit_and_the_usable_hit():
    # the second prompt shares 1,000 tokens: the attention group holds 15 blocks (960 tokens)
    # and the first request's checkpoint is at 960, so both hits are 960; the third shares the
    # first 700 tokens: the attention hit is 10 blocks (640) but no cached state ends at or
    # below 640, so nothing is usable (HybridKVCacheCoordinator.find_longest_cache_hit)
    reqs = [Request(rid=0, arrival_ms=0.0, segment_ids=(1,), segment_tokens=(1000,),
                    output_tokens=1),
            Request(rid=1, arrival_ms=1e6, segment_ids=(1, 2), segment_tokens=(1000, 100),
                    output_tokens=1),
            Request(rid=2, arrival_ms=2e6, segment_ids=(1, 3), segment_tokens=(700, 50),
                    output_tokens=1)]
    loop = _Loop(reqs, _config(2))
    out = loop.run()
    by_rid = {r.rid: r for r in out.records}
    assert (by_rid[1].attention_hit_tokens, by_rid[1].hit_tokens) == (960, 960)
    assert by_rid[1].admitted_ms == 1e6 and by_rid[1].prompt_tokens == 1100
    assert (by_rid[2].attention_hit_tokens, by_rid[2].hit_tokens) == (640, 0)


def test_summary_splits_evictions_into_kv_blocks_and_states():
    # a pool of 40 blocks and three 1,000-token prompts of distinct content: each caches 15 KV
    # blocks and one state (2 Mamba groups: 2 blocks); the third evicts the first's
    reqs = [Request(rid=i, arrival_ms=1e6 * i, segment_ids=(i + 1,), segment_tokens=(1000,),
                    output_tokens=1) for i in range(3)]
    cfg = _config(2, num_blocks=40)
    result = _Loop(reqs, cfg).run()
    s = vllm_summary(result, workload="w", num_requests=3, block_tokens=B, num_blocks=40,
                     num_mamba_groups=2, max_num_seqs=cfg.max_num_seqs,
                     max_num_batched_tokens=cfg.max_num_batched_tokens, bytes_per_block=1,
                     timing="linear", wall_s=0.0)
    mamba_evicted = sum(result.evicted_blocks[:2])
    assert result.evicted_blocks[0] == result.evicted_blocks[1]  # the groups evict alike
    assert s.evicted_states * 2 == mamba_evicted and s.evicted_kv_blocks == result.evicted_blocks[2]
    assert s.evicted_kv_blocks > 0 and s.finished == 3
    assert s.prompt_tokens == 3000 and s.hit_tokens == 0 and s.latency is not None


def test_glm_flash_on_h200_takes_vllm_plans_pool_groups_and_budget():
    plan = make_vllm_plan("glm-5.3-flash", VllmDeployment(tensor_parallel_size=4), gpu="h200")
    setup = vllm_sim_setup(plan, timer=COST)
    cfg = setup.config
    # _get_packed_kv_cache_groups: 34 KDA layers, 11 to a block beside the 11 MLA layers →
    # 4 state groups
    assert setup.num_mamba_groups == 4 == sum(isinstance(g, MambaAlignSpec) for g in cfg.groups)
    assert cfg.num_blocks == plan.capacity.num_blocks
    # and the state groups first (layer 0 is KDA), as vLLM 0.33.0's planning lists them on a
    # pretended H200 (tests/data/oracle/vllm-0.33.0-grid.jsonl)
    assert isinstance(cfg.groups[4], FullAttentionSpec) and setup.attention_group == 4
    assert {g.block_size_tokens for g in cfg.groups} == {plan.layout.block_tokens}
    # EngineArgs.get_batch_defaults: an H200 (≥ 70 GiB, not an A100) → 8192, max_num_seqs 1024
    assert (cfg.max_num_batched_tokens, cfg.max_num_seqs) == (8192, 1024)
    assert any("kpool tail" in n for n in setup.notes)


def test_an_a100_gets_the_small_token_budget_and_a_flag_overrides_it():
    plan = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=4),
                          gpu="a100")
    setup = vllm_sim_setup(plan, timer=COST)
    assert setup.config.max_num_batched_tokens == 2048
    # layer 0 is linear attention: the uniform-page grouping puts the 3 Mamba groups first
    assert setup.attention_group == 3 and setup.num_mamba_groups == 3
    assert vllm_sim_setup(plan, timer=COST, max_num_batched_tokens=4096
                          ).config.max_num_batched_tokens == 4096


@pytest.mark.parametrize(("deployment", "flag"), [
    (VllmDeployment(tensor_parallel_size=2, enable_prefix_caching=False), "prefix caching"),
    (VllmDeployment(tensor_parallel_size=2, data_parallel_size=2), "--data-parallel-size 2"),
    (VllmDeployment(tensor_parallel_size=2, mamba_cache_mode=MambaCacheMode.NONE),
     "--mamba-cache-mode none"),
    # a DCP rank's block holds every dcp-th token of block × dcp (not the simulated table)
    (VllmDeployment(tensor_parallel_size=4, decode_context_parallel_size=2),
     "--decode-context-parallel-size 2"),
])
def test_deployments_it_cannot_serve_are_refused_by_name(deployment, flag):
    plan = make_vllm_plan("qwen3-next-80b-a3b-instruct", deployment, gpu="h200")
    with pytest.raises(WorkloadError, match=flag):
        vllm_sim_setup(plan, timer=COST)
