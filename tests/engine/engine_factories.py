"""Shared helpers for the reference-engine tests."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from kvledger.engine.config import TinyConfig
from kvledger.engine.loop import Generation
from kvledger.engine.model import TinyModel
from kvledger.engine.request import Request, RequestCache

DEFAULT = TinyConfig()


@lru_cache(maxsize=8)
def tiny_model(cfg: TinyConfig = DEFAULT) -> TinyModel:
    return TinyModel(cfg)


def prompts(seed: int, lengths: list[int]) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=n).tolist() for n in lengths]


def assert_same(got: list[Generation], want: list[Generation]) -> None:
    """Every token and every logit bit for bit; the message names the first difference."""
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.token_ids == b.token_ids, f"request {a.rid}: {a.token_ids} != {b.token_ids}"
        if not torch.equal(a.logits, b.logits):
            diff = (a.logits - b.logits).abs().max().item()
            raise AssertionError(f"request {a.rid}: logits differ by up to {diff:.3g}")


def first_mismatch(got: list[Generation], want: list[Generation]) -> int | None:
    for a, b in zip(got, want, strict=True):
        if a.token_ids != b.token_ids or not torch.equal(a.logits, b.logits):
            return a.rid
    return None


class CheckedCache:
    """A RequestCache that runs the wrapped cache's integrity check after every call."""

    def __init__(self, inner: RequestCache) -> None:
        self.inner = inner
        self.store = inner.store
        self.calls = 0

    def _checked(self, result):
        self.calls += 1
        self.inner.check_integrity()
        return result

    def announce(self, req: Request) -> None:
        self._checked(self.inner.announce(req))

    def admit(self, req: Request) -> bool:
        return self._checked(self.inner.admit(req))

    def prepare(self, req: Request, num_new_tokens: int):
        return self._checked(self.inner.prepare(req, num_new_tokens))

    def after_forward(self, req: Request, chunk) -> None:
        self._checked(self.inner.after_forward(req, chunk))

    def finish(self, req: Request) -> None:
        self._checked(self.inner.finish(req))

    def check_integrity(self) -> None:
        self.inner.check_integrity()
