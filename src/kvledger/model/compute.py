"""Compute profile: the FLOPs and weight bytes one token costs, from a model's config.

What the simulator's time model (`kvledger.sim.timing`) needs beyond the cache layout:

* `dense_params`: weights every token multiplies through: attention / mixer projections,
  dense MLPs, shared experts, routers and the lm_head. Not the input embedding (a lookup)
  and not a vision tower (text traffic only).
* MoE: `moe_layers` blocks of `num_experts` routed experts of `expert_params` each, `top_k`
  of them per token. A step over n tokens reads the distinct experts those tokens route to.
* attention per FULL layer and (query, key) pair: `attn_pair_flops` = 2 · heads ·
  (qk_dim + v_dim) (scores, then the weighted sum of values), unsharded. DSA attends only
  the indexer's `topk` keys; its indexer scores every pooled key: `index_pair_flops` =
  2 · index_heads · index_head_dim per (query, pooled key).
* linear attention per layer and token: `linear_token_flops` = 4 · heads · d_k · d_v (the
  state update and the read-out, each a heads × d_k × d_v product) plus the chunked form's
  intra-chunk attention, 2 · heads · chunk · (d_k + d_v).

Which MoE convention applies follows `kvledger.model.families.mlp`: DeepSeek style for
DeepSeek-V3/V3.2, GLM-5.x and Kimi-Linear, Qwen style for Qwen3-Next and Qwen3.5; Granite
4.0-H (granitemoehybrid) as transformers' GraniteMoeHybridDecoderLayer builds it: a
`block_sparse_moe` of `num_local_experts` gated experts of `intermediate_size` on every
layer, `num_experts_per_tok` per token, and a dense `shared_mlp` (counted in dense_params),
its Mamba2 layers chunked at the config's `mamba_chunk_size` (vLLM's models scan with
``prepare_mamba2_metadata(chunk_size=config.mamba_chunk_size)``; transformers' default 256).
Other families are dense (every parameter active).

GLM-5.3-Flash: 42 MoE layers of 288 experts (8 routed per token) of 3 · 4096 · 2048 weights:

>>> from kvledger.model.config import load_model
>>> p = compute_profile(load_model("glm-5.3-flash"))
>>> p.moe_layers, p.num_experts, p.top_k, p.expert_params
(42, 288, 8, 25165824)
>>> round(p.active_params / 1e9, 2), p.attn_pair_flops, p.index_pair_flops
(16.7, 65536, 8192)
>>> round(p.prefill_flops(8192) / 1e15, 3)   # PFLOPs a state 8,192 tokens deep saves
0.287
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, ModelArch
from kvledger.model.families.mlp import deepseek_mlp_plan, qwen_mlp_plan
from kvledger.model.reader import ConfigReader

DEEPSEEK_MOE = {Family.DEEPSEEK_V3, Family.DEEPSEEK_V32, Family.GLM_MOE_DSA, Family.GLM5_NEXT,
                Family.KIMI_LINEAR}
QWEN_MOE = {Family.QWEN3_NEXT, Family.QWEN3_5}
LINEAR_CHUNK_TOKENS = 64  # chunk of the chunked linear-attention kernels (fla, SGLang)
GRANITE_CHUNK_TOKENS = 256  # transformers' GraniteMoeHybridConfig mamba_chunk_size default


@dataclass(frozen=True, slots=True, kw_only=True)
class ComputeProfile:
    dense_params: int  # multiplied through by every token
    moe_layers: int
    num_experts: int  # routed experts per MoE layer
    top_k: int  # routed experts per token
    expert_params: int  # one routed expert
    weight_bytes_per_param: float
    attn_heads: int  # unsharded query heads of a FULL layer
    attn_pair_flops: int  # per FULL layer, query and key
    index_pair_flops: int  # per DSA indexer layer, query and pooled key (0: no indexer)
    linear_token_flops: int  # per linear layer and token
    full_layers: int = 0
    linear_layers: int = 0
    index_layers: int = 0
    attn_topk: int | None = None  # DSA: keys a query attends at most
    kpool: int = 1  # DSA: tokens per pooled index key

    @property
    def active_params(self) -> int:
        """Weights one token multiplies through."""
        return self.dense_params + self.moe_layers * self.top_k * self.expert_params

    def prefill_flops(self, tokens: int) -> float:
        """FLOPs of prefilling a `tokens`-long prefix from nothing, all ranks together: what
        a cached state there saves a later request (with its KV)."""
        pairs = tokens * (tokens + 1) // 2
        attended = pairs
        if self.attn_topk is not None and tokens > self.attn_topk:
            cap = self.attn_topk
            attended = cap * (cap + 1) // 2 + (tokens - cap) * cap
        return (tokens * (2 * self.active_params + self.linear_layers * self.linear_token_flops)
                + self.full_layers * self.attn_pair_flops * attended
                + self.index_layers * self.index_pair_flops * (pairs // self.kpool))

    def expected_experts(self, tokens: int) -> float:
        """Distinct routed experts n tokens touch in one MoE layer, routing uniform and
        independent: E · (1 − (1 − k/E)^n)."""
        if not self.moe_layers or tokens <= 0:
            return 0.0
        return self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** tokens)


def _read_root(arch: ModelArch) -> ConfigReader:
    path = Path(arch.source)
    with path.open() as handle:
        return ConfigReader(json.load(handle), str(path))


def _attn_dims(text: ConfigReader, heads: int, hidden: int) -> tuple[int, int]:
    if text.has("qk_nope_head_dim"):
        qk = text.int("qk_nope_head_dim", minimum=0) + text.int("qk_rope_head_dim", 0, minimum=0)
        return qk, text.int("v_head_dim", minimum=1)
    head_dim = text.int(text.pick("head_dim", "attention_head_dim"), hidden // heads, minimum=1)
    return head_dim, head_dim


def _moe(arch: ModelArch, text: ConfigReader, hidden: int,
         num_layers: int) -> tuple[int, int, int, int]:
    """(MoE layers, routed experts per layer, top-k, params of one routed expert)."""
    if arch.family is Family.GRANITE_MOE_HYBRID:
        experts = text.int("num_local_experts", 0, minimum=0)
        if not experts:
            return 0, 0, 0, 0
        return (num_layers,  # a block_sparse_moe on every decoder layer
                experts, text.int("num_experts_per_tok", minimum=1),
                weights.mlp(hidden=hidden, intermediate=text.int("intermediate_size", minimum=1)))
    plan = None
    if arch.family in DEEPSEEK_MOE:
        plan = deepseek_mlp_plan(text, num_layers)
    elif arch.family in QWEN_MOE:
        plan = qwen_mlp_plan(text, num_layers)
    if plan is None or not plan.moe_layers:
        return 0, 0, 0, 0
    return (len(plan.moe_layers),
            text.int(text.pick("n_routed_experts", "num_experts"), minimum=1),
            text.int(text.pick("num_experts_per_tok", "num_experts_per_token"), minimum=1),
            weights.mlp(hidden=hidden, intermediate=text.int("moe_intermediate_size", minimum=1)))


def _linear_chunk(arch: ModelArch, text: ConfigReader) -> int:
    if arch.family is Family.GRANITE_MOE_HYBRID:
        return text.int("mamba_chunk_size", GRANITE_CHUNK_TOKENS, minimum=1)
    return LINEAR_CHUNK_TOKENS


def compute_profile(arch: ModelArch) -> ComputeProfile:
    """The model's compute profile, read from the config `arch` was built from."""
    if arch.num_params is None:
        raise ValueError(f"{arch.name}: no weight count, so no time model; pass the step-cost "
                         "flags (--step-overhead-ms, --prefill-ms-per-token, "
                         "--decode-ms-per-token)")
    root = _read_root(arch)
    text = root.text_config()
    hidden = text.int("hidden_size", minimum=1)
    heads = text.int("num_attention_heads", minimum=1)
    qk_dim, v_dim = _attn_dims(text, heads, hidden)
    num_layers = text.int("num_hidden_layers", minimum=1)
    moe_layers, num_experts, top_k, expert_params = _moe(arch, text, hidden, num_layers)
    vision = root.optional_section("vision_config")
    tied = text.bool("tie_word_embeddings", False)
    dense = (
        arch.num_params
        - moe_layers * num_experts * expert_params  # routed experts, counted below
        - (0 if tied else text.int("vocab_size", minimum=1) * hidden)  # input embedding
        - (weights.vision_tower(vision) if vision else 0)
    )
    index_pair = 0
    if arch.attn is AttnKind.DSA and arch.indexer is not None:
        index_pair = 2 * arch.indexer.n_heads * arch.indexer.head_dim
    linear = 0
    if arch.state is not None:
        d_k, d_v = arch.state.temporal_dims
        h = arch.state.temporal_heads
        linear = 4 * h * d_k * d_v + 2 * h * _linear_chunk(arch, text) * (d_k + d_v)
    return ComputeProfile(
        dense_params=dense, moe_layers=moe_layers, num_experts=num_experts, top_k=top_k,
        expert_params=expert_params, weight_bytes_per_param=arch.weight_bytes_per_param,
        attn_heads=heads, attn_pair_flops=2 * heads * (qk_dim + v_dim),
        index_pair_flops=index_pair, linear_token_flops=linear,
        full_layers=arch.num_full_layers, linear_layers=arch.num_linear_layers,
        index_layers=arch.num_indexer_layers if index_pair else 0,
        attn_topk=arch.indexer.topk if index_pair else None,
        kpool=arch.indexer.kpool if index_pair else 1,
    )
