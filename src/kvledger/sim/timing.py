"""How long an engine step takes: a roofline over the model's layers, or hand-set constants.

`Roofline` (the default) prices one forward pass on one rank from the work in it::

    step_ms = overhead_ms
            + max(FLOPs / (peak FLOP/s · flops_efficiency),
                  bytes / (HBM bytes/s · hbm_efficiency))
            + host↔device bytes / (link bytes/s · link_efficiency)

FLOPs, per rank (matmul weights sharded by TP, attention heads by attention TP):
  * weights: 2 · active params · tokens (prefill + decode), MoE counting top-k experts;
  * FULL layers: attn_pair_flops per (query, attended key); a DSA layer attends at most the
    indexer's top-k keys and its indexer scores every pooled key (index_pair_flops);
  * linear layers: linear_token_flops per token (`kvledger.model.compute`).
Bytes read or written from HBM:
  * weights once per step: the dense part plus, per MoE layer, the distinct experts the
    step's tokens route to (uniform routing), at the checkpoint's bytes per parameter;
  * KV: a decoding request reads the rows it attends (all its context; DSA: top-k rows plus
    every index key); a prefill chunk reads its prefix's rows once; new tokens write a row;
  * states: each request in the step reads and writes its linear-attention state once.
Host transfers are not overlapped with compute (an upper bound on their cost).

Assumptions (override with flags): kernels reach 60 % of peak FLOP/s and 80 % of peak HBM
bandwidth, 80 % of the link; a step has 0.5 ms of fixed cost (scheduling, sampling, launch
under CUDA graphs). With ``--step-overhead-ms``/``--prefill-ms-per-token``/
``--decode-ms-per-token`` the linear `StepCost` prices steps instead.

Checked in tests/sim/test_timing.py against a published vLLM measurement (Llama-3.1-8B on
one H100 SXM, TPOT at concurrency 1 and 4).

>>> from kvledger.sglang.plan import make_plan
>>> from kvledger.core.gpus import get_gpu
>>> r = Roofline.for_plan(make_plan("llama-3.1-8b", gpu="h100"), get_gpu("h100"))
>>> round(r.step_ms(StepWork(decode_contexts=(1024,))), 2)   # one token, weights bound
6.15
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvledger.core.gpus import GPU, gpu_perf
from kvledger.model.arch import AttnKind
from kvledger.model.compute import compute_profile
from kvledger.sglang.plan import SglangPlan


@dataclass(frozen=True, slots=True, kw_only=True)
class StepWork:
    """What one step computes. `prefill_spans`: (first, end) prompt positions of each chunk
    run this step; `decode_contexts`: the KV length each decoding request attends."""

    prefill_spans: tuple[tuple[int, int], ...] = ()
    decode_contexts: tuple[int, ...] = ()
    transfer_bytes: int = 0  # host↔device this step (loadbacks)

    @property
    def prefill_tokens(self) -> int:
        return sum(end - start for start, end in self.prefill_spans)

    @property
    def decode_tokens(self) -> int:
        return len(self.decode_contexts)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCost:
    """The linear model: hand-set constants (the override flags)."""

    overhead_ms: float = 12.0
    prefill_ms_per_token: float = 0.02
    decode_ms_per_token: float = 0.06

    def step_ms(self, work: StepWork) -> float:
        return round(self.overhead_ms + work.prefill_tokens * self.prefill_ms_per_token
                     + work.decode_tokens * self.decode_ms_per_token, 6)

    def validate(self) -> None:
        if self.overhead_ms <= 0 or self.prefill_ms_per_token < 0 or self.decode_ms_per_token < 0:
            raise ValueError("step cost: overhead must be positive and per-token costs ≥ 0")


def _causal_pairs(start: int, end: int, cap: int | None) -> int:
    """Σ over positions p in [start, end) of the keys p attends: p + 1, at most `cap`."""
    if cap is None or end <= cap:
        return (end * (end + 1) - start * (start + 1)) // 2
    if start >= cap:
        return (end - start) * cap
    return _causal_pairs(start, cap, None) + (end - cap) * cap


@dataclass(frozen=True, slots=True, kw_only=True)
class Efficiency:
    flops: float = 0.6
    hbm: float = 0.8
    link: float = 0.8
    overhead_ms: float = 0.5

    def validate(self) -> None:
        for name, value in (("flops", self.flops), ("hbm", self.hbm), ("link", self.link)):
            if not 0 < value <= 1:
                raise ValueError(f"--{name}-efficiency {value}: expected a fraction in (0, 1]")
        if self.overhead_ms < 0:
            raise ValueError(f"step overhead {self.overhead_ms} ms: expected ≥ 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class Roofline:
    """Per-rank constants of the roofline; build with `for_plan`."""

    gpu: str
    flops_per_s: float
    hbm_bytes_per_s: float
    link_bytes_per_s: float
    efficiency: Efficiency = field(default_factory=Efficiency)
    matmul_flops_per_token: float  # 2 · active params / tp
    dense_weight_bytes: float  # per rank
    expert_bytes: float  # one routed expert, per rank
    moe_layers: int
    profile_experts: tuple[int, int]  # (routed experts, top-k)
    full_layers: int
    attn_pair_flops: float  # all FULL layers, per rank
    attn_cap: int | None  # DSA top-k
    kv_row_bytes: int  # all FULL layers, one token
    index_layers: int
    index_pair_flops: float  # all indexer layers, per (query, pooled key)
    index_key_bytes: int  # all indexer layers, one pooled key
    kpool: int
    linear_flops_per_token: float  # all linear layers, per rank
    token_write_bytes: int  # KV written per new token (token ledger)
    state_bytes: int  # one slot

    @classmethod
    def for_plan(cls, plan: SglangPlan, gpu: GPU, efficiency: Efficiency | None = None) -> Roofline:
        lay, cap = plan.layout, plan.capacity
        model, dep = lay.model, lay.deployment
        prof = compute_profile(model)
        perf = gpu_perf(gpu)
        tp, attn_tp = dep.tp_size, dep.attn_tp_size
        wbpp = prof.weight_bytes_per_param
        dsa = model.attn is AttnKind.DSA and model.indexer is not None
        index_layers = model.num_indexer_layers if dsa else 0
        return cls(
            gpu=gpu.name, flops_per_s=perf.flops_per_s(wbpp), hbm_bytes_per_s=perf.hbm_bytes_per_s,
            link_bytes_per_s=perf.host_link_bytes_per_s, efficiency=efficiency or Efficiency(),
            matmul_flops_per_token=2 * prof.active_params / tp,
            dense_weight_bytes=prof.dense_params * wbpp / tp,
            expert_bytes=prof.expert_params * wbpp / tp, moe_layers=prof.moe_layers,
            profile_experts=(prof.num_experts, prof.top_k),
            full_layers=model.num_full_layers,
            attn_pair_flops=model.num_full_layers * prof.attn_pair_flops / attn_tp,
            attn_cap=model.indexer.topk if dsa else None,
            kv_row_bytes=model.num_full_layers * lay.kv_row.row_bytes,
            index_layers=index_layers,
            index_pair_flops=index_layers * prof.index_pair_flops / attn_tp,
            index_key_bytes=index_layers * (lay.index_key.row_bytes if dsa else 0),
            kpool=model.indexer.kpool if dsa else 1,
            linear_flops_per_token=model.num_linear_layers * prof.linear_token_flops / attn_tp,
            token_write_bytes=cap.token_bytes, state_bytes=cap.slot_bytes,
        )

    def _experts(self, tokens: int) -> float:
        experts, top_k = self.profile_experts
        if not self.moe_layers or tokens <= 0:
            return 0.0
        return experts * (1.0 - (1.0 - top_k / experts) ** tokens)

    def flops_and_bytes(self, work: StepWork) -> tuple[float, float]:
        tokens = work.prefill_tokens + work.decode_tokens
        cap, kpool = self.attn_cap, self.kpool
        attended = index_keys = 0
        read_rows = read_keys = 0
        for start, end in work.prefill_spans:
            attended += _causal_pairs(start, end, cap)
            index_keys += _causal_pairs(start, end, None) // kpool if self.index_layers else 0
            read_rows += end if cap is None else min(end, cap * (end - start))
            read_keys += end // kpool
        contexts = work.decode_contexts
        if contexts:  # one decode token each: it attends (and reads) min(context, cap) rows
            total = sum(contexts)
            capped = total if cap is None else sum([c if c < cap else cap for c in contexts])
            keys = total if kpool == 1 else sum([c // kpool for c in contexts])
            attended += capped
            read_rows += capped
            read_keys += keys
            index_keys += keys if self.index_layers else 0
        flops = (tokens * (self.matmul_flops_per_token + self.linear_flops_per_token)
                 + attended * self.attn_pair_flops + index_keys * self.index_pair_flops)
        requests = len(work.prefill_spans) + work.decode_tokens
        weights = self.dense_weight_bytes + self.moe_layers * self._experts(tokens) * self.expert_bytes
        moved = (weights + read_rows * self.kv_row_bytes
                 + (read_keys * self.index_key_bytes if self.index_layers else 0)
                 + tokens * self.token_write_bytes + 2 * requests * self.state_bytes)
        return flops, moved

    def step_ms(self, work: StepWork) -> float:
        eff = self.efficiency
        flops, moved = self.flops_and_bytes(work)
        compute_s = flops / (self.flops_per_s * eff.flops)
        memory_s = moved / (self.hbm_bytes_per_s * eff.hbm)
        link_s = work.transfer_bytes / (self.link_bytes_per_s * eff.link)
        return round(eff.overhead_ms + 1e3 * (max(compute_s, memory_s) + link_s), 6)

    def validate(self) -> None:
        self.efficiency.validate()
