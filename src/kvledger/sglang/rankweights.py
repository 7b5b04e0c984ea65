"""Weights per rank, itemised: which part of the network each GPU holds, and in how many bytes.

SGLang shards each part over its own group (defaults, no --enable-dp-lm-head,
--moe-dense-tp-size unset):
- input embedding: `VocabParallelEmbedding` over tp, replicated with DP attention (the
  DeepSeek/Qwen model classes build it with `enable_tp=not is_dp_attention_enabled()`);
- lm_head: `ParallelLMHead` over tp;
- attention and linear-attention mixers: over attn_tp = tp / attn_dp / attn_cp, so every rank
  of a DP-attention deployment holds the whole attention stack when attn_tp = 1;
- dense MLPs, shared experts, routers: over tp;
- routed experts: ep_size groups each holding experts / ep_size, tensor-parallel over
  tp / ep_size inside the group: experts / tp per rank whatever the split;
- vision tower: over attn_tp, like attention. SGLang's VisionAttention
  (layers/attention/vision.py) and the Qwen3-VL / GLM vision MLPs build their parallel linears
  with `tp_size = 1 if use_data_parallel else get_attention_tp_size()`; `use_data_parallel`
  is --mm-enable-dp-encoder, off by default. So DP attention (attn_tp 1) puts the whole tower
  on every rank;
- replicated layers (`ReplicatedLinear`, plain `nn.Linear`): whole on every rank;
- MTP draft layers, only with speculative decoding: attention over attn_tp, the rest over tp.
Bytes per parameter follow the quantization (`--quantization`, else the checkpoint's
`quantization_config`; see `kvledger.model.quant`). `--weights-gib` overrides the total.

DeepSeek-V3 on 8 GPUs: tp 8 gives every rank 1/8 of the attention; tp 8 with DP attention 8
(attn_tp 1) gives every rank all of it, and the whole embedding.

>>> from kvledger.sglang.deploy import Deployment
>>> from kvledger.model.config import load_model
>>> v3 = load_model("deepseek-v3")
>>> tp8 = weights_ledger(v3, Deployment(tp_size=8)).total_bytes
>>> dp8 = weights_ledger(v3, Deployment(tp_size=8, dp_size=8, enable_dp_attention=True)).total_bytes
>>> dp8 > tp8
True
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.core.ledger import Ledger, LedgerRow
from kvledger.model.arch import ModelArch
from kvledger.model.params import ParamCounts
from kvledger.model.quant import QuantMethod, bytes_for
from kvledger.sglang.deploy import Deployment


@dataclass(frozen=True, slots=True)
class Shard:
    part: str  # ParamCounts field
    label: str
    group: str  # "tp", "attn_tp" or "replicated", for people


def _shards(dep: Deployment) -> tuple[Shard, ...]:
    embed_group = "replicated" if dep.enable_dp_attention else "tp"
    return (
        Shard("embedding", "input embedding", embed_group),
        Shard("lm_head", "lm_head", "tp"),
        Shard("attention", "attention", "attn_tp"),
        Shard("linear_mixers", "linear-attention mixers", "attn_tp"),
        Shard("mlp", "dense MLP, shared experts, routers", "tp"),
        Shard("experts", "routed experts", "tp"),
        Shard("vision", "vision tower", "attn_tp"),
        Shard("replicated", "replicated layers", "replicated"),
        Shard("draft_attention", "MTP draft attention", "attn_tp"),
        Shard("draft_ffn", "MTP draft MLP / MoE", "tp"),
    )


def _ranks(dep: Deployment, group: str) -> int:
    return {"tp": dep.tp_size, "attn_tp": dep.attn_tp_size, "replicated": 1}[group]


def quantization_of(model: ModelArch, dep: Deployment) -> QuantMethod | None:
    return dep.quantization if dep.quantization is not None else model.quant


def weights_ledger(model: ModelArch, dep: Deployment) -> Ledger | None:
    """Bytes of weights one rank holds, a row per part (one row, split over tp, for families
    that are not itemised); None when the config gives no weight estimate."""
    params: ParamCounts | None = model.params
    if params is None:
        if model.num_params is None:
            return None
        width = (model.weight_bytes_per_param if dep.quantization is None
                 else dep.quantization.linear_bytes)
        return Ledger(name="weights per rank", per="rank", rows=(LedgerRow(
            component="all weights (not itemised)", count=1,
            unit_bytes=int(model.num_params * width) // dep.tp_size,
            detail=f"{model.num_params:,} params × {width:g} B ÷ {dep.tp_size} (tp)"),))
    quant = quantization_of(model, dep)
    rows = []
    for shard in _shards(dep):
        count = getattr(params, shard.part)
        if count == 0 or (shard.part.startswith("draft") and not dep.speculative):
            continue
        ranks = _ranks(dep, shard.group)
        width = bytes_for(quant, shard.part)
        rows.append(LedgerRow(
            component=shard.label, count=1, unit_bytes=int(count * width) // ranks,
            detail=f"{count:,} params × {width:g} B ÷ {ranks} ({shard.group})"))
    return Ledger(name="weights per rank", per="rank", rows=tuple(rows))
