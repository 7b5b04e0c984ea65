"""Family adapters: one small module per model family, each `config.json` → ModelArch.

The registry maps a config's `model_type` to the adapter that reads it; the CLI and the
error for an unknown type derive their lists from it. A family may answer to several model
types (Qwen3.5's multimodal wrappers and text-only checkpoints).

>>> sorted(ADAPTERS)[:4]
['deepseek_v3', 'deepseek_v32', 'falcon_h1', 'glm5_next']
"""

from __future__ import annotations

from collections.abc import Callable

from kvledger.model.arch import ModelArch
from kvledger.model.families import (
    deepseek_v3,
    deepseek_v32,
    falcon_h1,
    glm5_next,
    glm_moe_dsa,
    granitemoehybrid,
    jamba,
    kimi_k3,
    kimi_linear,
    llama,
    nemotron_h,
    qwen3,
    qwen3_5,
    qwen3_next,
)
from kvledger.model.reader import ConfigReader

Adapter = Callable[[ConfigReader, str], ModelArch]

ADAPTERS: dict[str, Adapter] = {
    "deepseek_v3": deepseek_v3.read,
    "deepseek_v32": deepseek_v32.read,
    "falcon_h1": falcon_h1.read,
    "glm5_next": glm5_next.read,
    "glm_moe_dsa": glm_moe_dsa.read,
    "granitemoehybrid": granitemoehybrid.read,
    "jamba": jamba.read,
    "kimi_k3": kimi_k3.read,
    "kimi_linear": kimi_linear.read,
    "llama": llama.read,
    "nemotron_h": nemotron_h.read,
    "qwen3": qwen3.read,
    "qwen3_next": qwen3_next.read,
    **{model_type: qwen3_5.read for model_type in qwen3_5.MODEL_TYPES},
}
