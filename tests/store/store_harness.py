"""The tiny engine over a store tier: run a script, compare with the cache-free run."""

from __future__ import annotations

import functools

import numpy as np
import torch

from kvledger.engine.cached import PrefixCache, prefix_cache
from kvledger.engine.config import TinyConfig
from kvledger.engine.fresh import FreshCache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import HostTier, PoolSizes, StoreTierSpec
from kvledger.engine.model import TinyModel
from kvledger.engine.script import Script, run_script
from kvledger.engine.workloads import multi_turn, revisit, shared_system

CFG = TinyConfig()
# 8 device pages of 16 tokens hold two 54-token prompts: revisits miss on device.
SIZES = PoolSizes(num_pages=8, num_state_slots=8, max_running_requests=2)
# 4 host pages: the host tier cannot keep them either, so revisits must come from the store.
SMALL_HOST = HostTier(num_pages=4, num_state_slots=4)
CHUNK, RUNNING, NEW = 16, 2, 4


@functools.cache
def model() -> TinyModel:
    torch.set_num_threads(1)
    return TinyModel(CFG)


SCRIPTS = {"revisit": revisit, "shared-system": shared_system, "multi-turn": multi_turn}


def script(name: str = "revisit") -> Script:
    return SCRIPTS[name](np.random.default_rng(0))


def run(spec: StoreTierSpec | None, sc: Script, *, host: HostTier | None = None,
        sizes: PoolSizes = SIZES) -> tuple[list, PrefixCache]:
    cache = prefix_cache(CFG, sizes, host=host, store=spec)
    engine = Engine(model(), cache, chunk_tokens=CHUNK, max_running_requests=RUNNING)
    outs = run_script(engine, sc, NEW)
    cache.cache.store.flush()  # `NoStoreTier` without a store: nothing to wait for
    cache.check_integrity()
    cache.cache.store.close()  # waits for reads a timeout abandoned
    return outs, cache


@functools.cache
def fresh(name: str = "revisit") -> tuple:
    sc = script(name)
    longest = max(sc.request_tokens(NEW))
    cache = FreshCache(CFG, max_running_requests=RUNNING, max_context_tokens=longest,
                       page_tokens=SIZES.page_tokens)
    return tuple(run_script(Engine(model(), cache, chunk_tokens=CHUNK,
                                   max_running_requests=RUNNING), sc, NEW))


def identical(outs, name: str = "revisit") -> bool:
    ref = fresh(name)
    return len(outs) == len(ref) and all(
        a.token_ids == b.token_ids and torch.equal(a.logits, b.logits)
        for a, b in zip(outs, ref, strict=True))


def assert_nothing_leaked(cache: PrefixCache) -> None:
    """No request holds anything; every device page and slot is free or the tree's, and
    nothing is locked (check_integrity proves the counts; this the idle state)."""
    hybrid = cache.cache
    assert not hybrid.running and hybrid.reserved_pages == 0
    sizes = hybrid.tree.sizes()
    assert sizes.full_protected_tokens == 0 and sizes.mamba_protected_slots == 0
    pages = hybrid.rows.allocator
    assert pages.num_free_pages * hybrid.page + sizes.full_evictable_tokens \
        == pages.num_pages * hybrid.page
    hybrid.store.check_integrity()


def serve(hybrid, tokens: np.ndarray):
    """A request through the facade without the model: its prompt computed in one chunk,
    cached, released (the bytes are whatever the pools hold: for tests that count)."""
    seq = hybrid.admit(tokens, prompt_tokens=len(tokens), final_tokens=len(tokens))
    assert seq
    hybrid.extend(seq, len(tokens) - seq.computed_tokens)
    hybrid.commit(seq, tokens, len(tokens) - seq.computed_tokens, cache_unfinished=True)
    hybrid.release(seq, tokens)
    return seq
