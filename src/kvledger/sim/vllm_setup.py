"""What vLLM's plan gives `simulate --engine vllm`: the block pool, its groups, the budgets.

From a `VllmPlan` (kvledger.vllm.plan), as vLLM 0.33 builds them:

- one pool of ``num_gpu_blocks`` blocks (`get_kv_cache_configs`, vllm/v1/core/kv_cache_utils.py;
  block 0 is the null block, `BlockPool.__init__`), shared by every KV-cache group;
- the groups in vLLM's order (`_get_kv_cache_groups_uniform_page_size`; GLM-5.3-Flash:
  `_get_packed_kv_cache_groups`): one attention group and one `MambaAlignSpec` per Mamba
  group, so a cached state costs one block in each Mamba group (GLM-5.3-Flash: 4, Qwen3-Next
  at TP 1: 3, Nemotron-H: 1 per state group the layout makes);
- async scheduling, vLLM's default (two steps in flight), unless the sync scheduler is asked;
- the block size the layout aligned (`_align_hybrid_block_size`), the prefill checkpoint block
  when the prefill kernel exports one (`MambaSpec.num_prefill_checkpoint_blocks`);
- ``max_num_seqs`` as the plan resolved it and ``max_num_batched_tokens`` from
  `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py): 8192 for the OpenAI server on a
  GPU of at least 70 GiB that is not an A100, 2048 otherwise (the rule set's fields,
  `VllmRules.default_max_num_batched_tokens`).

Assumptions: GLM-5.3-Flash's kpool tail (one scratch block per running request,
`KpoolTailSpec`) is not drawn from the pool, so the pool holds that many blocks more than
vLLM's when every request runs; mamba_cache_mode none (prefix caching off) has no cache to
simulate and is refused.

>>> from kvledger.vllm.deploy import VllmDeployment
>>> from kvledger.vllm.plan import make_vllm_plan
>>> p = make_vllm_plan("qwen3-next-80b-a3b-instruct", VllmDeployment(tensor_parallel_size=2),
...                    gpu="h200")
>>> s = vllm_sim_setup(p, timer=StepCost())
>>> s.num_mamba_groups, s.config.groups[-1].block_size_tokens, s.config.max_num_batched_tokens
(3, 576, 8192)
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.blocks import FullAttentionSpec, GroupSpec, MambaAlignSpec
from kvledger.model.arch import LayerKind
from kvledger.sim.timing import Roofline, StepCost
from kvledger.sim.vllm_serving import VllmServeConfig
from kvledger.sim.workload import WorkloadError
from kvledger.vllm.layout import VllmLayout
from kvledger.vllm.plan import VllmPlan

ASYNC_STEPS_IN_FLIGHT = 2  # EngineCore.step_with_batch_queue's depth under async scheduling


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmSimSetup:
    config: VllmServeConfig
    num_mamba_groups: int  # blocks one cached state costs
    attention_group: int  # the attention group's place in `config.groups`
    bytes_per_block: int
    notes: tuple[str, ...]


def _attention_first(lay: VllmLayout) -> bool:
    """vLLM's group order, which sets the order blocks are allocated and freed (and so the
    LRU order): both groupings bucket layers in layer order, so the kind of layer 0 comes
    first (the oracle cells' hybrids, layer 0 linear: the Mamba groups, then attention);
    GLM-5.3-Flash's packed groups (`_get_packed_kv_cache_groups`) come in that order in the
    layout already (vLLM 0.33.0's planning lists its state groups first)."""
    if lay.kpool_tail or lay.indexer is not None:  # sparse MLA + states: packed groups
        return lay.groups[0].kind == "attention"
    return lay.model.layers[0].kind is not LayerKind.LINEAR


def vllm_sim_setup(plan: VllmPlan, *, timer: StepCost | Roofline,
                   max_num_batched_tokens: int | None = None,
                   steps_in_flight: int = ASYNC_STEPS_IN_FLIGHT) -> VllmSimSetup:
    """The serving loop's config for one DP rank of ``plan``; a deployment without a prefix
    cache is a `WorkloadError`. ``steps_in_flight``: 2, the AsyncScheduler's batch queue that
    `VllmConfig` resolves by default, or 1 (the sync `Scheduler`)."""
    lay = plan.layout
    if not lay.prefix_caching:
        raise WorkloadError("simulate --engine vllm: prefix caching is off "
                            "(--no-enable-prefix-caching, or a hybrid's --mamba-cache-mode "
                            "none), so nothing to simulate")
    if lay.mamba is not None and not lay.mamba.align:  # the layout's resolved mode
        raise WorkloadError("simulate --engine vllm: --mamba-cache-mode none caches no "
                            "states; only align is simulated")
    if lay.deployment.data_parallel_size > 1:
        raise WorkloadError(f"--data-parallel-size {lay.deployment.data_parallel_size}: "
                            "simulate --engine vllm serves one engine's pool; data parallel "
                            "is not simulated")
    for flag, size in (("--decode-context-parallel-size", lay.dcp_size),
                       ("--prefill-context-parallel-size",
                        lay.deployment.prefill_context_parallel_size)):
        if size > 1:  # a DCP block spans block × dcp tokens of a request (not simulated)
            raise WorkloadError(f"{flag} {size}: simulate --engine vllm serves one rank's "
                                "block table; context parallelism is not simulated")
    block = lay.block_tokens
    num_mamba = sum(g.kind == "mamba" for g in lay.groups)
    groups: tuple[GroupSpec, ...] = (FullAttentionSpec(block_size_tokens=block),)
    if num_mamba:
        assert lay.mamba is not None
        mamba = MambaAlignSpec(block_size_tokens=block,
                               num_prefill_checkpoint_blocks=lay.mamba.checkpoint_blocks)
        states = (mamba,) * num_mamba
        groups = groups + states if _attention_first(lay) else states + groups
    budget = max_num_batched_tokens or lay.rules.default_max_num_batched_tokens(lay.gpu)
    dep = lay.deployment
    assert dep.max_num_seqs is not None
    notes = [f"vLLM pool: {plan.capacity.num_blocks:,} blocks of {block} tokens shared by "
             f"{len(groups)} groups ({num_mamba} Mamba: a cached state costs {num_mamba} "
             f"blocks); max_num_seqs {dep.max_num_seqs}, max_num_batched_tokens {budget:,}; "
             + ("async scheduler: two steps in flight, modelled where the block cache sees "
                "them (skipped state blocks freed a step later), its CPU overlap not timed"
                if steps_in_flight > 1 else "sync scheduler: one step in flight")]
    if lay.kpool_tail:
        notes.append("GLM-5.3-Flash's kpool tail (one scratch block per running request) is "
                     "not drawn from the simulated pool")
    config = VllmServeConfig(groups=groups, num_blocks=plan.capacity.num_blocks,
                             max_num_batched_tokens=budget, max_num_seqs=dep.max_num_seqs,
                             step_cost=timer, steps_in_flight=steps_in_flight)
    attention_group = next(i for i, g in enumerate(groups)
                           if isinstance(g, FullAttentionSpec))
    return VllmSimSetup(config=config, num_mamba_groups=num_mamba,
                        attention_group=attention_group,
                        bytes_per_block=plan.capacity.bytes_per_block, notes=tuple(notes))
