"""falcon_h1 (Falcon-H1): every decoder layer runs GQA attention and a Mamba2 mixer in parallel.

Each layer therefore caches a K/V row per token *and* keeps a Mamba2 state per request. SGLang
says so with two overlapping id lists (FalconH1Config.full_attention_layer_ids and
linear_layer_ids are both `range(num_hidden_layers)`); we list each layer twice, once FULL and
once LINEAR with the same index, so the token ledger sees N attention layers, the state ledger
N Mamba2 layers, and `num_layers` still counts N.

Mamba width: SGLang takes `mamba_d_ssm` (default 1024 when absent) or expand × hidden, and
requires it to equal mamba_n_heads × mamba_d_head. The Falcon-H1-0.5B config we ship has no
`mamba_d_ssm` and 24 × 64 = 1536 heads' worth of channels, so we take the heads as the truth:
`mamba_d_ssm` when present must equal n_heads × d_head; when absent, an explicit
`mamba_d_head` defines the width, and only `mamba_d_head: "auto"` falls back to expand ×
hidden. A non-null `attn_layer_indices` (attention on some layers only) is not supported:
SGLang allocates attention KV on every layer regardless, so we refuse rather than guess.
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import AttnKind, Family, LayerKind, LayerSpec, ModelArch, StateShape
from kvledger.model.context import context_tokens
from kvledger.model.families.gqa import gqa_params, gqa_shape
from kvledger.model.families.mamba2 import mamba2_params, mamba2_state
from kvledger.model.params import ParamCounts
from kvledger.model.reader import ConfigReader


def mamba_state(root: ConfigReader) -> StateShape:
    heads = root.int("mamba_n_heads", minimum=1)
    if root.raw("mamba_d_head", "auto") == "auto":
        width = root.int("mamba_d_ssm", None, minimum=1) or root.int(
            "mamba_expand", minimum=1
        ) * root.int("hidden_size", minimum=1)
        if width % heads:
            raise root.error(
                "mamba_n_heads", f"is {heads} (expected a divisor of the mamba width {width})"
            )
        head_dim = width // heads
    else:
        head_dim = root.int("mamba_d_head", minimum=1)
    d_ssm = root.int("mamba_d_ssm", heads * head_dim, minimum=1)
    if d_ssm != heads * head_dim:
        raise root.error(
            "mamba_d_ssm",
            f"is {d_ssm} (expected mamba_n_heads × mamba_d_head = {heads * head_dim})",
        )
    groups = root.int("mamba_n_groups", 1, minimum=1)
    if heads % groups:
        raise root.error(
            "mamba_n_groups", f"is {groups} (expected a divisor of mamba_n_heads={heads})"
        )
    return mamba2_state(
        heads=heads,
        head_dim=head_dim,
        groups=groups,
        d_state=root.int("mamba_d_state", minimum=1),
        conv_kernel=root.int("mamba_d_conv", minimum=2),
        ssm_dtype=None,  # SGLang's FalconH1Config passes no dtype: the flag decides
    )


def read(root: ConfigReader, name: str) -> ModelArch:
    num_layers = root.int("num_hidden_layers", minimum=1)
    if root.has("attn_layer_indices"):
        raise root.error(
            "attn_layer_indices",
            "is set (expected null: attention on a subset of Falcon-H1 layers is not supported)",
        )
    gqa = gqa_shape(root)
    state = mamba_state(root)
    hidden = root.int("hidden_size", minimum=1)
    embedding, lm_head = weights.embedding_parts(root)
    params = ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=num_layers * gqa_params(root, gqa),
        linear_mixers=num_layers * mamba2_params(hidden, state),
        mlp=num_layers * weights.mlp(
            hidden=hidden, intermediate=root.int("intermediate_size", minimum=1)),
        experts=0,
        vision=0,
    )
    return ModelArch(
        name=name,
        source=root.source,
        family=Family.FALCON_H1,
        model_type=root.str("model_type"),
        layers=tuple(
            LayerSpec(index=i, kind=kind)
            for i in range(num_layers)
            for kind in (LayerKind.FULL, LayerKind.LINEAR)
        ),
        attn=AttnKind.GQA,
        gqa=gqa,
        state=state,
        max_context_tokens=context_tokens(root),
        num_params=params.total,
        params=params,
        quant=weights.quant_method(root),
        weight_bytes_per_param=weights.bytes_per_param(root),
    )
