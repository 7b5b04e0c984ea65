"""`verify` compares logits, not only tokens: a cached run whose tokens agree with the fresh run
but one of whose logits differs is a mismatch.

The cached run's KV is nudged by one bit after its first request: the lowest bit of the
first fp8 code of the first cached token of layer 0 (one ulp of one element of one row of
the `branching` workload's first prompt). The requests that reuse that prefix then produce
the same tokens with logits a little off — exactly what a comparison of tokens alone lets
through.
"""

from __future__ import annotations

import torch

import kvledger.engine.verify as verify_module
from kvledger.engine.cached import PrefixCache
from kvledger.engine.loop import Generation
from kvledger.engine.workloads import WORKLOADS
from kvledger.host.device import DeviceBytes


def _generation(token_ids, logits) -> Generation:
    return Generation(rid=0, token_ids=tuple(token_ids), logits=logits, cached_prompt_tokens=0)


def test_same_output_needs_every_token_and_every_logit_bit():
    logits = torch.linspace(-2.0, 3.0, 12, dtype=torch.float32).reshape(2, 6)
    nudged = logits.clone()
    nudged[1, 4] = torch.nextafter(nudged[1, 4], torch.tensor(float("inf")))  # one ulp
    same = verify_module.same_output
    assert same(_generation([5, 4], logits), _generation([5, 4], logits.clone()))
    assert not same(_generation([5, 4], logits), _generation([5, 4], nudged))
    assert not same(_generation([5, 4], logits), _generation([5, 3], logits))


class NudgedAfterFirst:
    """The cached run's cache; after its first request finishes, one bit of the tree's KV
    flips (the fresh run's cache passes through untouched)."""

    def __init__(self, inner):
        self.inner, self.store, self.nudged = inner, inner.store, False

    def announce(self, req):
        self.inner.announce(req)

    def admit(self, req):
        return self.inner.admit(req)

    def prepare(self, req, num_new_tokens):
        return self.inner.prepare(req, num_new_tokens)

    def after_forward(self, req, chunk):
        self.inner.after_forward(req, chunk)

    def finish(self, req):
        self.inner.finish(req)
        if isinstance(self.inner, PrefixCache) and not self.nudged:
            cache = self.inner.cache
            node = next(iter(cache.tree.root.children.values()))
            kv = cache.rows.kv
            planes = DeviceBytes.of(kv.full_kv_pool, kv.mamba_pool,
                                    page_tokens=cache.page).kv_planes
            planes[0][int(node.full.value[0]), 0] ^= 0x01
            self.nudged = True

    def check_integrity(self):
        self.inner.check_integrity()


def test_a_logit_off_with_every_token_the_same_is_a_mismatch(monkeypatch):
    pairs: list[tuple[Generation, Generation]] = []
    real = verify_module.same_output

    def seen(a, b):
        pairs.append((a, b))
        return real(a, b)

    monkeypatch.setattr(verify_module, "same_output", seen)
    report = verify_module.verify(WORKLOADS["branching"], wrap=NudgedAfterFirst)
    tokens_only = [a.rid for a, b in pairs
                   if a.token_ids == b.token_ids and not torch.equal(a.logits, b.logits)]
    assert tokens_only, "the nudge changed no logit, or changed a token of every request"
    assert set(tokens_only) <= set(report.mismatched) and not report.all_match
    assert 0 not in report.mismatched  # the first request ran before the nudge
