"""The replay's setup from the plan: what it refuses, its step-time model, its state policies.

`check_plan` refuses a deployment with nothing to replay or a track interval off the
checkpoint grid, and notes where the replay differs from the deployment (a host tier that
release could not build, rank 0's share under attention DP). `step_timer` picks the
step-time model; `policies_for` builds one rank's state admission and eviction.

>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.sim.config import SimConfig
>>> from kvledger.sglang.plan import make_plan
>>> dp = make_plan(deployment=Deployment(tp_size=8, enable_dp_attention=True, dp_size=8),
...                gpu="h200")
>>> check_plan(dp, SimConfig())
["attention DP 8: rank 0's round-robin share of the requests is replayed against one rank's pools"]
>>> step_timer(dp, SimConfig())[1]
'roofline on H200: 60% of peak FLOP/s, 80% of HBM bandwidth, 80% of the host link, 0.5 ms per step'
"""

from __future__ import annotations

from math import lcm

from kvledger.cache.policies import StatePolicies, build_policies
from kvledger.core.gpus import get_gpu
from kvledger.model.compute import compute_profile
from kvledger.sglang.hicache import HostRules
from kvledger.sglang.plan import SglangPlan
from kvledger.sim.config import DEFAULT_TIME_GPU, SimConfig
from kvledger.sim.timing import Roofline, StepCost
from kvledger.sim.workload import WorkloadError


def check_plan(plan: SglangPlan, config: SimConfig) -> list[str]:
    """Refuse what the replay cannot run (a clear `WorkloadError`); return notes on what it
    replays differently from the deployment."""
    lay = plan.layout
    if lay.deployment.disable_radix_cache:
        why = ("--disaggregation-mode decode turns the radix cache off (add "
               "--disaggregation-decode-enable-radix-cache to keep it)"
               if lay.deployment.disaggregation_mode.is_decode else "--disable-radix-cache")
        raise WorkloadError(f"simulate: {why}: no prefix cache, so nothing to simulate")
    config.validate(lay.page_tokens)
    grid = lcm(config.mamba_chunk_tokens, lay.page_tokens)
    if config.mamba_track_interval_tokens % grid:
        raise WorkloadError(f"--mamba-track-interval {config.mamba_track_interval_tokens}: must "
                            f"be a multiple of the checkpoint grid ({grid} tokens)")
    notes = []
    rules = HostRules.from_rules(lay.rules)
    if lay.deployment.enable_hierarchical_cache and not (rules.row_matches_device
                                                         and rules.indexer_pool):
        notes.append(f"rules {rules.name}: that release's host tier (host rows narrower than "
                     "device rows, no index-key copy) corrupts loadbacks and cannot be built; "
                     "the replay's host tier copies device rows and index keys byte for byte")
    if lay.deployment.attn_dp_size > 1:
        notes.append(f"attention DP {lay.deployment.attn_dp_size}: rank 0's round-robin share "
                     "of the requests is replayed against one rank's pools")
    return notes


def step_timer(plan: SglangPlan, config: SimConfig) -> tuple[StepCost | Roofline, str]:
    """The step-time model and a line saying which: the linear constants when set, else the
    roofline on `time_gpu`, the plan's GPU or DEFAULT_TIME_GPU."""
    if config.step_cost is not None:
        c = config.step_cost
        return c, (f"linear: {c.overhead_ms:g} ms per step + {c.prefill_ms_per_token:g} ms per "
                   f"prefill token + {c.decode_ms_per_token:g} ms per decoded token")
    gpu = get_gpu(config.time_gpu) if config.time_gpu else plan.gpu or get_gpu(DEFAULT_TIME_GPU)
    timer = Roofline.for_plan(plan, gpu, config.efficiency)
    e = timer.efficiency
    return timer, (f"roofline on {gpu.name}: {e.flops:.0%} of peak FLOP/s, {e.hbm:.0%} of HBM "
                   f"bandwidth, {e.link:.0%} of the host link, {e.overhead_ms:g} ms per step")


def policies_for(plan: SglangPlan, config: SimConfig) -> StatePolicies:
    """The configured state policies for one rank of `plan`; FLOP-aware eviction prices a
    state by the prefill FLOPs of its prefix (`ComputeProfile.prefill_flops`)."""
    cap, page = plan.capacity, plan.layout.page_tokens
    flops_of = _no_flops
    if config.state_eviction.prices_flops:
        profile = compute_profile(plan.layout.model)

        def flops_of(pages: int) -> float:
            return profile.prefill_flops(pages * page)
    return build_policies(config.state_admission, config.state_eviction, flops_of=flops_of,
                          slot_bytes=cap.slot_bytes, page_bytes=cap.token_bytes * page,
                          num_slots=cap.state_slots)


def _no_flops(pages: int) -> float:
    raise AssertionError("only FLOP-aware eviction prices states")
