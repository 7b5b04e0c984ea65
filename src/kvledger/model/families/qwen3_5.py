"""qwen3_5 (Qwen3.5, dense and MoE): Qwen3-Next's layer layout, usually inside a multimodal
wrapper. The wrappers (`qwen3_5`, `qwen3_5_moe`) keep the text model under `text_config`;
text-only checkpoints (`qwen3_5_text`, `qwen3_5_moe_text`) keep it at the root. These are
the model types of SGLang's configs/qwen3_5.py. Qwen3.5-35B-A3B pins `mamba_ssm_dtype`
float32, which becomes the state's default dtype.
"""

from __future__ import annotations

from kvledger.model.arch import Family, ModelArch
from kvledger.model.families.qwen3_next import read_gdn
from kvledger.model.reader import ConfigReader

MODEL_TYPES = ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_gdn(root, name, Family.QWEN3_5)
