"""Shared test factories."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvledger.deploy import Deployment, KVDtype
from kvledger.model.config import load_model
from kvledger.resolve import CacheLayout, resolve
from kvledger.rules import RULES

SHARED_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "configs"


def glm_layout(rules: str = "sglang-0.5.21", **deploy) -> CacheLayout:
    """GLM-5.3-Flash in the article's deployment unless overridden: scaled fp8, fp32 state."""
    deploy.setdefault("kv_cache_dtype", KVDtype.FP8_E4M3)
    return resolve(load_model("glm-5.3-flash"), Deployment(**deploy), RULES[rules])


@pytest.fixture
def article_layout() -> CacheLayout:
    return glm_layout()
