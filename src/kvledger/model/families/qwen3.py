"""qwen3: a dense GQA decoder read like llama; `head_dim` is set explicitly (128 with 64
heads on a 5120-wide Qwen3-32B, so it is not hidden_size / heads). Its per-head q/k norms
are not counted as weights."""

from __future__ import annotations

from kvledger.model.arch import Family, ModelArch
from kvledger.model.families.llama import read_dense
from kvledger.model.reader import ConfigReader


def read(root: ConfigReader, name: str) -> ModelArch:
    return read_dense(root, name, Family.QWEN3)
