"""Grouped-query attention: the cached K/V shape and the attention weights.

`head_dim` is read when the config sets it (Qwen3 decouples it from hidden_size / heads) and
derived as hidden_size / num_attention_heads otherwise (Llama). Missing `num_key_value_heads`
means plain multi-head attention, as in transformers' configs.

>>> from kvledger.model.reader import ConfigReader
>>> gqa_shape(ConfigReader({"hidden_size": 4096, "num_attention_heads": 32,
...                         "num_key_value_heads": 8}, "c.json"))
GqaShape(num_kv_heads=8, head_dim=128, num_heads=32)
"""

from __future__ import annotations

from kvledger.model import weights
from kvledger.model.arch import GqaShape
from kvledger.model.reader import ConfigReader


def gqa_shape(text: ConfigReader, head_dim_key: str = "head_dim") -> GqaShape:
    heads = text.int("num_attention_heads", minimum=1)
    kv_heads = text.int("num_key_value_heads", heads, minimum=1)
    if heads % kv_heads:
        raise text.error(
            "num_key_value_heads",
            f"is {kv_heads} (expected a divisor of num_attention_heads={heads})",
        )
    head_dim = text.int(head_dim_key, None, minimum=1)
    if head_dim is None:
        hidden = text.int("hidden_size", minimum=1)
        if hidden % heads:
            raise text.error(
                "hidden_size",
                f"is {hidden}, not a multiple of num_attention_heads={heads} (expected "
                f"{head_dim_key} to be set)",
            )
        head_dim = hidden // heads
    return GqaShape(num_kv_heads=kv_heads, head_dim=head_dim, num_heads=heads)


def gqa_params(text: ConfigReader, shape: GqaShape, *, gated_q: bool = False) -> int:
    return weights.gqa_attention(
        hidden=text.int("hidden_size", minimum=1),
        heads=text.int("num_attention_heads", minimum=1),
        kv_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        gated_q=gated_q,
    )
