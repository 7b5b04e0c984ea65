"""Shared test factories."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvledger.model.config import CONFIG_DIR, load_model
from kvledger.sglang.deploy import Deployment, KVDtype
from kvledger.sglang.resolve import CacheLayout, resolve
from kvledger.sglang.rules import RULES

# The real configs: the shared folder beside the checkout when present, else the package's
# embedded copies of the same files (tests/model checks they are identical).
_SHARED = Path(__file__).resolve().parents[2] / "shared" / "configs"
SHARED_CONFIGS = _SHARED if _SHARED.is_dir() else CONFIG_DIR
# Embedded models SGLang cannot serve, with the words of its refusal: resolve_transformers_arch
# (SGLang's model_loader/utils.py) refuses Jamba's Transformers fallback.
REFUSED_BY_SGLANG = {"jamba-1.5-mini": "has no native JambaForCausalLM"}


def glm_layout(rules: str = "sglang-0.5.21", **deploy) -> CacheLayout:
    """GLM-5.3-Flash in the article's deployment unless overridden: scaled fp8, fp32 state."""
    deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    return resolve(load_model("glm-5.3-flash"), Deployment(**deploy), RULES[rules])


@pytest.fixture
def article_layout() -> CacheLayout:
    return glm_layout()
