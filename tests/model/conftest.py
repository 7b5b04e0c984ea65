"""Fixtures for model-ingestion tests: an isolated Hugging Face cache and config factories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvledger.model.arch import ModelArch
from kvledger.model.config import CONFIG_DIR, load_model


@pytest.fixture(autouse=True)
def hf_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HF cache, so a real one on the machine never changes what a test resolves."""
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    return hub


@pytest.fixture
def embedded() -> Callable[[str], dict[str, Any]]:
    """A fresh, mutable copy of an embedded config."""
    return lambda name: json.loads((CONFIG_DIR / f"{name}.json").read_text())


@pytest.fixture
def load_dict(tmp_path: Path) -> Callable[[dict[str, Any]], ModelArch]:
    """Write a config dict to tmp_path/config.json and load it like a user's file."""

    def load(data: dict[str, Any]) -> ModelArch:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(data))
        return load_model(str(path))

    return load
