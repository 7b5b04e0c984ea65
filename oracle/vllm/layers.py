"""The KV-bearing layers a vLLM model class registers, built without the model (sizing.py).

Instantiating a model needs weights, a TP process group and CUDA kernels; KV planning needs
only what each layer puts in `compilation_config.static_forward_context` and answers through
`get_kv_cache_spec`. So, per decoder layer, this builds:
- full attention: vLLM's `Attention` (its own `__init__`, so its backend selector runs), with
  num_heads // TP and max(1, num_kv_heads // TP) as the model classes pass them;
- MLA / sparse MLA: an `MLAAttention` with `__init__` skipped and the fields its
  `get_kv_cache_spec` reads set as `__init__` sets them; the backend from `get_attn_backend`;
- state layers (GDN, KDA, Mamba2, Mamba): the real layer class with `__init__` skipped;
  `get_state_shape` returns the model class's `get_mamba_state_shape_from_config(vllm_config)`
  (the classmethod `_align_hybrid_block_size` uses too); the dtype, spec and checkpoint methods
  are the layer's own, fed the attributes its `__init__` sets (for Qwen GDN the prefill backend
  from `_resolve_gdn_prefill_backend`; for GLM-5.3-Flash the KDA one from
  `_resolve_kda_prefill_backend`).
Which index is which layer follows the config field each model class reads.
"""

from __future__ import annotations

import torch


def _attention(vc, prefix, heads, kv_heads, head_size):
    from vllm.model_executor.layers.attention import Attention

    tp = vc.parallel_config.tensor_parallel_size
    try:
        return Attention(heads // tp, head_size, head_size ** -0.5,
                         num_kv_heads=max(1, kv_heads // tp), cache_config=vc.cache_config,
                         quant_config=vc.quant_config, prefix=prefix)
    except (AssertionError, RuntimeError) as exc:
        if "cuda" not in str(exc).lower():
            raise
    # the backend's impl touched the device; keep the fields Attention.__init__ set before it
    vc.compilation_config.static_forward_context.pop(prefix, None)
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.attention.backend import AttentionType
    from vllm.v1.attention.selector import get_attn_backend

    dtype = vc.cache_config.cache_dtype
    layer = Attention.__new__(Attention)
    torch.nn.Module.__init__(layer)
    layer.kv_cache_torch_dtype = kv_cache_dtype_str_to_dtype(dtype, vc.model_config)
    layer.kv_cache_dtype, layer.layer_name = dtype, prefix
    layer.num_heads, layer.head_size = heads // tp, head_size
    layer.num_kv_heads, layer.head_size_v = max(1, kv_heads // tp), head_size
    layer.sliding_window, layer.has_sink = None, False
    layer.attn_type, layer.kv_sharing_target_layer_name = AttentionType.DECODER, None
    layer.attn_backend = get_attn_backend(head_size, torch.get_default_dtype(), dtype,
                                          use_mla=False, attn_type=AttentionType.DECODER)
    vc.compilation_config.static_forward_context[prefix] = layer
    return layer


def _mla(vc, prefix, t, *, sparse=False, indexer=False, topk_width=None):
    from vllm.model_executor.layers.attention.mla_attention import (
        MLAAttention,
        _canonicalize_sparse_mla_kv_cache_dtype,
    )
    from vllm.v1.attention.selector import get_attn_backend

    tp = vc.parallel_config.tensor_parallel_size
    layer = MLAAttention.__new__(MLAAttention)
    torch.nn.Module.__init__(layer)
    layer.num_heads = t.num_attention_heads // tp
    layer.qk_nope_head_dim, layer.qk_rope_head_dim = t.qk_nope_head_dim, t.qk_rope_head_dim
    layer.v_head_dim, layer.kv_lora_rank = t.v_head_dim, t.kv_lora_rank
    layer.head_size = t.kv_lora_rank + t.qk_rope_head_dim
    layer.layer_name, layer.num_kv_heads, layer.sliding_window = prefix, 1, None
    layer.indexer = object() if indexer else None  # get_kv_cache_spec reads its presence only
    layer.non_causal_multi_token_decode = False
    layer.topk_buffer_width = topk_width if sparse else None
    dtype = vc.cache_config.cache_dtype
    layer.attn_backend = get_attn_backend(layer.head_size, torch.get_default_dtype(), dtype,
                                          use_mla=True, use_sparse=sparse,
                                          num_heads=layer.num_heads)
    dtype = _canonicalize_sparse_mla_kv_cache_dtype(layer.attn_backend, dtype)
    vc.cache_config.cache_dtype = layer.kv_cache_dtype = dtype  # as MLAAttention.__init__ does
    vc.compilation_config.static_forward_context[prefix] = layer
    return layer


_SUBCLASSES: dict = {}


def _state(vc, prefix, layer_cls, model_cls, attrs=None):
    shapes = tuple(tuple(s) for s in model_cls.get_mamba_state_shape_from_config(vc))
    cls = _SUBCLASSES.setdefault(layer_cls, type(
        f"Unbuilt{layer_cls.__name__}", (layer_cls,),
        {"get_state_shape": lambda self: self._shapes}))
    layer = torch.nn.Module.__new__(cls)
    torch.nn.Module.__init__(layer)
    spec = vc.speculative_config
    fields = dict(prefix=prefix, layer_name=prefix, vllm_config=vc, model_config=vc.model_config,
                  cache_config=vc.cache_config, quant_config=vc.quant_config,
                  speculative_config=spec, num_spec=spec.num_speculative_tokens if spec else 0,
                  tp_size=vc.parallel_config.tensor_parallel_size, tp_rank=0,
                  use_replayssm=getattr(vc.cache_config, "use_replayssm", False), _shapes=shapes)
    fields.update(attrs or {})
    for key, value in fields.items():
        object.__setattr__(layer, key, value)
    vc.compilation_config.static_forward_context[prefix] = layer
    return layer


def _text(vc):
    return vc.model_config.hf_text_config


def _dense(vc, model_cls):
    t = _text(vc)
    head = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    for i in range(t.num_hidden_layers):
        _attention(vc, f"model.layers.{i}.self_attn.attn", t.num_attention_heads,
                   t.num_key_value_heads, head)


def _qwen_gdn(vc, model_cls, prefix=""):
    """Qwen3-Next / Qwen3.5: `layer_types[i]` (qwen3_next.py, qwen3_5.py `get_layer`)."""
    from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import (
        QwenGatedDeltaNetAttention,
        _resolve_gdn_prefill_backend,
    )
    from vllm.v1.attention.backends import gdn_attn

    # the checkpoint alignment constant exists from v0.33.0 (before it, no GDN checkpoints)
    checkpoint = getattr(gdn_attn, "FLASHINFER_GDN_CHECKPOINT_ALIGNMENT", None)
    t = _text(vc)
    _, backend = _resolve_gdn_prefill_backend(vc)
    # QwenGatedDeltaNetAttention.__init__: a checkpoint alignment only in align mode with
    # FlashInfer's prefill
    align = (checkpoint
             if vc.cache_config.mamba_cache_mode == "align" and backend == "flashinfer" else None)
    attrs = dict(gdn_prefill_backend=backend, _checkpoint_alignment=align,
                 _max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens,
                 num_k_heads=t.linear_num_key_heads, num_v_heads=t.linear_num_value_heads,
                 head_k_dim=t.linear_key_head_dim, head_v_dim=t.linear_value_head_dim,
                 conv_kernel_size=t.linear_conv_kernel_dim)
    head = t.head_dim or t.hidden_size // t.num_attention_heads
    for i, kind in enumerate(t.layer_types[: t.num_hidden_layers]):
        base = f"{prefix}model.layers.{i}"
        if kind == "linear_attention":
            _state(vc, f"{base}.linear_attn", QwenGatedDeltaNetAttention, model_cls, attrs)
        else:
            _attention(vc, f"{base}.self_attn.attn", t.num_attention_heads,
                       t.num_key_value_heads, head)


def _nemotron_h(vc, model_cls):
    """`hybrid_override_pattern`: M Mamba2, * attention (nemotron_h.py)."""
    from vllm.model_executor.layers.mamba.mamba_mixer2 import MambaMixer2

    t = _text(vc)
    head = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    for i, kind in enumerate(t.hybrid_override_pattern):
        if kind == "M":
            _state(vc, f"model.layers.{i}.mixer", MambaMixer2, model_cls)
        elif kind == "*":
            _attention(vc, f"model.layers.{i}.mixer.attn", t.num_attention_heads,
                       t.num_key_value_heads, head)


def _falcon_h1(vc, model_cls):
    """Every layer is a Mamba2 mixer beside attention (falcon_h1.py FalconH1ParallelHybrid)."""
    from vllm.model_executor.layers.mamba.mamba_mixer2 import MambaMixer2

    t = _text(vc)
    head = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    for i in range(t.num_hidden_layers):
        _state(vc, f"model.layers.{i}.mamba", MambaMixer2, model_cls)
        _attention(vc, f"model.layers.{i}.self_attn.attn", t.num_attention_heads,
                   t.num_key_value_heads, head)


def _kimi_linear(vc, model_cls):
    """`is_kda_layer(i)`: KDA (KimiGatedDeltaNetAttention), else MLA (kimi_linear.py)."""
    from vllm.model_executor.layers.mamba.gdn.kimi_gdn_linear_attn import (
        KimiGatedDeltaNetAttention,
    )

    t = _text(vc)
    kda = t.linear_attn_config
    attrs = dict(head_dim=kda["head_dim"], num_heads=kda["num_heads"],
                 conv_size=kda["short_conv_kernel_size"],
                 use_full_rank_gate=kda.get("use_full_rank_gate", False))
    for i in range(t.num_hidden_layers):
        base = f"model.layers.{i}.self_attn"
        if t.is_kda_layer(i):
            _state(vc, base, KimiGatedDeltaNetAttention, model_cls, attrs)
        else:
            _mla(vc, f"{base}.mla_attn.attn", t)


def _jamba(vc, model_cls):
    """`layers_block_type[i]` in {attention, mamba} (jamba.py)."""
    from vllm.model_executor.layers.mamba.mamba_mixer import MambaMixer

    t = _text(vc)
    for i, kind in enumerate(t.layers_block_type):
        if kind == "attention":
            _attention(vc, f"model.layers.{i}.self_attn.attn", t.num_attention_heads,
                       t.num_key_value_heads, t.hidden_size // t.num_attention_heads)
        else:
            _state(vc, f"model.layers.{i}.mamba", MambaMixer, model_cls)


def _deepseek(vc, model_cls):
    """DeepSeek-V3 (MLA); V3.2 and GLM-5 (sparse MLA, an indexer k cache on the layers whose
    top-k is not shared: deepseek_v2.py `DeepseekV2MLAAttention.__init__`)."""
    from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache

    t = _text(vc)
    sparse = hasattr(t, "index_topk")
    freq = getattr(t, "index_topk_freq", 1)
    pattern = getattr(t, "index_topk_pattern", None)
    offset = getattr(t, "index_skip_topk_offset", 2)
    for i in range(t.num_hidden_layers):
        base = f"model.layers.{i}.self_attn"
        if pattern is not None:
            shared = 0 <= i < len(pattern) and pattern[i] == "S"
        else:
            shared = max(i - offset + 1, 0) % freq != 0
        owns = sparse and not shared
        _mla(vc, f"{base}.mla_attn.attn", t, sparse=sparse, indexer=owns,
             topk_width=t.index_topk if sparse else None)
        if owns:
            DeepseekV32IndexerCache(head_dim=t.index_head_dim + t.index_head_dim // 128 * 4,
                                    dtype=torch.uint8, prefix=f"{base}.indexer.k_cache",
                                    cache_config=vc.cache_config)


def _glm5_next(vc, model_cls):
    """GLM-5.3-Flash: KDA (`Glm5NextLinearAttention`) or sparse MLA with a kpool indexer, whose
    layers register the latent cache, `Glm5NextIndexerCache` and `Glm5NextTailCache`
    (models/glm5next/common/model.py, attention.py)."""
    from vllm.models.glm5next.common.attention import Glm5NextIndexerCache, Glm5NextTailCache
    from vllm.models.glm5next.common.kda import (
        Glm5NextLinearAttention,
        _resolve_kda_prefill_backend,
    )
    from vllm.models.glm5next.common.model import get_sparse_topk_buffer_width

    t = _text(vc)
    kda = t.linear_attn_config
    bound = getattr(t, "linear_lower_bound", None)
    bound = kda.get("gate_lower_bound") if bound is None else bound
    backend = _resolve_kda_prefill_backend("auto", kda["head_dim"], vc.model_config.dtype, bound)
    attrs = dict(head_dim=kda["head_dim"], num_heads=kda["num_heads"],
                 conv_size=kda["short_conv_kernel_size"], kda_prefill_backend=backend,
                 kda_lower_bound=bound, kda_safe_gate=True)
    width = get_sparse_topk_buffer_width(t)
    for i in range(t.num_hidden_layers):
        base = f"language_model.model.layers.{i}.self_attn"
        if t.layer_types[i] == "linear_attention":
            _state(vc, base, Glm5NextLinearAttention, model_cls, attrs)
            continue
        _mla(vc, f"{base}.attn", t, sparse=True, indexer=True, topk_width=width)
        Glm5NextIndexerCache(head_dim=t.index_head_dim + t.index_head_dim // 128 * 4,
                             dtype=torch.uint8, prefix=f"{base}.indexer.k_cache",
                             cache_config=vc.cache_config, index_kpool=t.index_kpool)
        Glm5NextTailCache(head_dim=t.index_head_dim, dtype=torch.bfloat16,
                          prefix=f"{base}.indexer.tail_cache", cache_config=vc.cache_config,
                          index_kpool=t.index_kpool)


BUILDERS = {
    "LlamaForCausalLM": _dense, "Qwen3ForCausalLM": _dense,
    "Qwen3NextForCausalLM": _qwen_gdn,
    "Qwen3_5MoeForConditionalGeneration": lambda vc, m: _qwen_gdn(vc, m, "language_model."),
    "NemotronHForCausalLM": _nemotron_h, "FalconH1ForCausalLM": _falcon_h1,
    "KimiLinearForCausalLM": _kimi_linear, "JambaForCausalLM": _jamba,
    "DeepseekV3ForCausalLM": _deepseek, "DeepseekV32ForCausalLM": _deepseek,
    "GlmMoeDsaForCausalLM": _deepseek, "Glm5NextForConditionalGeneration": _glm5_next,
}


def build(vc) -> None:
    """Register the model's KV-bearing layers in `vc` (see the module doc)."""
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.models import ModelRegistry

    arch = vc.model_config.architecture
    model_cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architectures, vc.model_config)
    previous = torch.get_default_dtype()
    try:
        with set_current_vllm_config(vc):
            torch.set_default_dtype(vc.model_config.dtype)
            BUILDERS[arch](vc, model_cls)
    finally:
        torch.set_default_dtype(previous)
