"""Lossy what-if (never the default, never in `verify`'s bit-identical matrix): 8-bit states.

The cached run stores its prefix-cache checkpoints 8-bit, one absmax scale per row of the
last dimension, the layout `cache.policies.lossy_states` prices: symmetric int8 (scale
absmax / 127, values rounded half to even) or float8 e4m3 (scale absmax / 448, torch's
``float8_e4m3fn`` cast, round to nearest). Every cached state reaches a request through one
copy, the load into its working slot (`HybridCache.admit`, `copy_state(cached, working)`;
in TRACKED mode a checkpoint is saved by handing the track slot to the tree, no copy), so
quantizing there is quantizing on save: a checkpoint is read only through that copy. Running
requests keep full-precision states. The reference engine reports the largest absolute logit
difference against the cache-free run, how many requests' tokens changed and how many
generated tokens differ position by position.

>>> d = lossy_difference("branching")
>>> d.requests, d.cached_prompt_tokens > 0, d.max_logit_difference > 0
(6, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from kvledger.cache import CheckpointMode, HybridCache
from kvledger.cache.policies import StateAdmission, StateEviction
from kvledger.cache.policies.lossy_states import LossyCheckpoints
from kvledger.cache.token_rows import TokenRows
from kvledger.engine.cached import ENGINE_DEPLOYMENT, PrefixCache
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine, EngineStats, Generation
from kvledger.engine.memory import build_device_pools
from kvledger.engine.model import TinyModel
from kvledger.engine.script import Script, run_script
from kvledger.engine.verify import engine_policies_for
from kvledger.engine.workloads import WORKLOADS, Workload
from kvledger.sglang.mamba_strategy import state_slots_per_request
from kvledger.tree import RadixTree

INT8_LEVELS = 127
FP8_MAX = 448.0  # largest finite float8 e4m3fn (torch.finfo(torch.float8_e4m3fn).max)


def _row_scale(wide: torch.Tensor, top: float) -> torch.Tensor:
    scale = wide.abs().amax(dim=-1, keepdim=True) / top
    return torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero row stays 0


def fake_int8(x: torch.Tensor) -> torch.Tensor:
    """x through int8 and back, one absmax scale per row of the last dimension."""
    wide = x.to(torch.float32)
    scale = _row_scale(wide, INT8_LEVELS)
    q = torch.round(wide / scale).clamp(-INT8_LEVELS, INT8_LEVELS)
    return (q * scale).to(x.dtype)


def fake_fp8(x: torch.Tensor) -> torch.Tensor:
    """x through float8 e4m3 and back, one absmax scale per row of the last dimension (the
    row's largest magnitude maps to 448, e4m3's largest finite value)."""
    wide = x.to(torch.float32)
    scale = _row_scale(wide, FP8_MAX)
    q = (wide / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).to(torch.float32)
    return (q * scale).to(x.dtype)


QUANTIZERS = {LossyCheckpoints.INT8: fake_int8, LossyCheckpoints.FP8: fake_fp8}


class LossyCheckpointRows(TokenRows):
    """Token rows whose cached states are read back through 8-bit (the lossy what-if)."""

    def __init__(self, *args, kind: LossyCheckpoints, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.quantize = QUANTIZERS[kind]

    def copy_state(self, src: int, dst: int) -> None:
        super().copy_state(src, dst)
        pool = self.kv.mamba_pool
        assert pool is not None
        for states in (pool.conv, pool.temporal):
            states[:, dst] = self.quantize(states[:, dst])


@dataclass(frozen=True, slots=True)
class LossyDifference:
    workload: str
    kind: LossyCheckpoints
    requests: int
    cached_prompt_tokens: int
    generated_tokens: int
    max_logit_difference: float  # largest |cached − cache-free| over every generated logit
    changed_requests: int  # requests whose generated tokens differ
    changed_tokens: int  # generated positions whose token differs (after a change, all may)


@dataclass(frozen=True, slots=True)
class LossyRuns:
    """One workload run twice: cached with `kind` checkpoints, and cache-free; requests in
    script order. Which tokens change, and by how much logits move, depends on the CPU (the
    model's weights come from ``torch.randn``, whose vectorised kernels differ by CPU
    capability, and a near-tie flips a token or an index selection), so only the counts the
    scheduler decides (requests, cached prompt tokens) are fixed."""

    workload: str
    kind: LossyCheckpoints
    script: Script
    lossy: tuple[Generation, ...]
    exact: tuple[Generation, ...]
    stats: EngineStats  # the cached run's

    def prompts(self, outs: tuple[Generation, ...]) -> list[tuple[int, ...]]:
        """Every request's prompt as `run_script` built it from `outs` (a follow-up resends
        the parent's output, so a changed token changes its children's prompts)."""
        texts: list[tuple[int, ...]] = []
        turns = [turn for wave in self.script.waves for turn in wave]
        prompts = []
        for turn, out in zip(turns, outs, strict=True):
            parent = texts[turn.parent] if turn.parent is not None else ()
            prompt = parent[: turn.prefix_tokens(len(parent))] + turn.tokens
            prompts.append(prompt)
            texts.append(prompt + out.token_ids)
        return prompts

    def difference(self) -> LossyDifference:
        pairs = list(zip(self.lossy, self.exact, strict=True))
        diff = max(float((a.logits - b.logits).abs().max()) for a, b in pairs)
        changed = sum(a.token_ids != b.token_ids for a, b in pairs)
        tokens = sum(x != y for a, b in pairs
                     for x, y in zip(a.token_ids, b.token_ids, strict=True))
        return LossyDifference(workload=self.workload, kind=self.kind,
                               requests=self.stats.requests,
                               cached_prompt_tokens=self.stats.cached_prompt_tokens,
                               generated_tokens=self.stats.generated_tokens,
                               max_logit_difference=diff, changed_requests=changed,
                               changed_tokens=tokens)


def lossy_workload(name: str) -> Workload:
    """The named workload, if the what-if covers it (device states only)."""
    if name not in WORKLOADS:
        raise ValueError(f"--workload {name!r}: expected one of {', '.join(WORKLOADS)}")
    workload = WORKLOADS[name]
    if workload.host is not None or workload.store is not None:
        raise ValueError(f"--workload {name}: the lossy what-if covers device states only "
                         "(no host or store tier)")
    return workload


def lossy_runs(name: str, kind: LossyCheckpoints = LossyCheckpoints.INT8, *,
               admission: StateAdmission = StateAdmission.ENGINE,
               eviction: StateEviction = StateEviction.LRU) -> LossyRuns:
    """Run workload `name` with `kind` cached checkpoints and cache-free."""
    workload = lossy_workload(name)
    script = workload.script()
    longest = max(script.request_tokens(workload.max_new_tokens))
    sizes = replace(workload.sizes, max_context_tokens=max(longest, workload.sizes.max_context_tokens))
    pools = build_device_pools(workload.config, sizes)
    tree = RadixTree(page_size=sizes.page_tokens,
                     mamba_chunk_tokens=workload.mamba_chunk_tokens or sizes.page_tokens)
    _, held = state_slots_per_request(ENGINE_DEPLOYMENT)
    policies = engine_policies_for(admission, eviction, page_tokens=sizes.page_tokens,
                                   num_slots=sizes.num_state_slots)
    rows = LossyCheckpointRows(pools.kv, pools.token_allocator, kind=kind)
    cache = PrefixCache(HybridCache(rows=rows, tree=tree, states=pools.state_allocator,
                                    held_slots_per_request=held, mode=CheckpointMode.TRACKED,
                                    policies=policies))
    fresh = FreshCache(workload.config, max_running_requests=workload.max_running_requests,
                       max_context_tokens=longest, page_tokens=sizes.page_tokens)
    model = TinyModel(workload.config)
    runs = []
    for request_cache in (cache, fresh):
        engine = Engine(model, request_cache, chunk_tokens=workload.chunk_tokens,
                        max_running_requests=workload.max_running_requests)
        runs.append((run_script(engine, script, workload.max_new_tokens), engine.stats))
        request_cache.check_integrity()
    (lossy, stats), (exact, _) = runs
    return LossyRuns(workload=name, kind=kind, script=script, lossy=tuple(lossy),
                     exact=tuple(exact), stats=stats)


def lossy_difference(name: str, kind: LossyCheckpoints = LossyCheckpoints.INT8, *,
                     admission: StateAdmission = StateAdmission.ENGINE,
                     eviction: StateEviction = StateEviction.LRU) -> LossyDifference:
    """Run workload `name` with `kind` cached checkpoints and cache-free; compare outputs."""
    return lossy_runs(name, kind, admission=admission, eviction=eviction).difference()
