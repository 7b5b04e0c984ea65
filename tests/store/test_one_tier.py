"""One store tier in both modes: `kvledger simulate --l3-size` (accounting) and the tiny
engine over a real store (real bytes) restore the same prompt tokens from one workload.

The workload is a Mooncake trace of six requests far apart (each runs alone), replayed on
the same memory in both: 64-token pages, 32 device pages (``--max-total-tokens 2048``), the
plan's 343 state slots, a state grid of 64 tokens, one prefill chunk per prompt, 4 output
tokens; no host tier, or the plan's at ``--hicache-ratio 1`` (33 pages, 344 state slots:
two cached prompts), written through, so the store serves what both dropped. A 1,000-token prompt caches 960 tokens (15 pages and the state
after them) and needs 16 pages while it runs, so the third distinct prompt evicts the first:
the revisits (requests 3 and 4) come back from the store; request 5 shares only 512 tokens
with request 0, less than any stored group. The engine's token ids are bytes drawn per
trace hash id, so two pages are equal in the engine exactly when they are in the simulator.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from typer.testing import CliRunner

from kvledger.cli import app
from kvledger.engine.cached import prefix_cache
from kvledger.engine.loop import Engine
from kvledger.engine.memory import HostTier, PoolSizes, StoreTierSpec
from kvledger.sim.trace import TRACE_PAGE_TOKENS
from store.store_harness import CFG, model

# (hash ids, prompt tokens) of each request, in arrival order
REQUESTS = (((0, 1), 1000), ((2, 3), 1000), ((4, 5), 1000), ((0, 1), 1000), ((2, 3), 1000),
            ((0, 7), 900))
OUTPUT_TOKENS = 4
PAGE = 64
SIZES = PoolSizes(page_tokens=PAGE, num_pages=32, num_state_slots=343, max_running_requests=2)
HOST = HostTier(num_pages=33, num_state_slots=344)  # int(1 · 2,048) // 64 + 1, int(343) + 1
HOST_FLAGS = ("--enable-hierarchical-cache", "--hicache-ratio", "1")


def _trace(path) -> None:
    with open(path, "w") as f:
        for i, (ids, length) in enumerate(REQUESTS):
            f.write(json.dumps({"timestamp": i * 1_000_000, "input_length": length,
                                "output_length": OUTPUT_TOKENS, "hash_ids": list(ids)}) + "\n")


def simulated(tmp_path, *, host: bool) -> dict:
    _trace(tmp_path / "trace.jsonl")
    result = CliRunner().invoke(app, [
        "simulate", "--trace", str(tmp_path / "trace.jsonl"), "--max-total-tokens", "2048",
        "--kv-cache-dtype", "fp8_e4m3", "--l3-size", "4", "--l3-backend", "local-dir",
        *(HOST_FLAGS if host else ()), "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _prompt(ids: tuple[int, ...], length: int) -> list[int]:
    """Token ids of a trace prompt: per hash id a fixed draw of 512 bytes."""
    tokens: list[int] = []
    for h in ids:
        tokens += np.random.default_rng(h).integers(0, 256, TRACE_PAGE_TOKENS).tolist()
    return tokens[:length]


def real_bytes(backend, *, host: bool):
    """The engine over `backend`: its cache (closed) and every request's cached prompt
    tokens."""
    cache = prefix_cache(CFG, SIZES, host=HOST if host else None,
                         store=StoreTierSpec(backend=backend, salt=uuid.uuid4().hex))
    engine = Engine(model(), cache, chunk_tokens=1024, max_running_requests=1)
    hits = []
    for ids, length in REQUESTS:  # one at a time, as the trace's gaps make them
        out, = engine.generate([_prompt(ids, length)], OUTPUT_TOKENS)
        hits.append(out.cached_prompt_tokens)
        cache.cache.store.flush()  # written through before the next arrival, as in the replay
    cache.check_integrity()
    cache.cache.store.close()
    return cache.cache, hits


@pytest.mark.parametrize(("kind", "host"), [("local-dir", False), ("redis", True)])
def test_simulate_and_the_real_tier_restore_the_same_tokens(tmp_path, clients, kind, host):
    from kvledger.store.backend import BackendKind

    doc = simulated(tmp_path, host=host)
    hybrid, hits = real_bytes(clients(BackendKind(kind)), host=host)
    restored = hybrid.store.stats.restored_pages * PAGE
    store = doc["store"]
    assert store["restored_tokens"] == restored == 2 * 960  # requests 3 and 4, 15 pages each
    # every request looked the store up (none had its prompt cached with a state); request
    # 5's 512 shared tokens are on device but without a state there, and no group ends
    # inside them: it recomputes
    assert store["restores"] == 2 and store["reads"] == 6 and store["lost_groups"] == 0
    # the restores are device hits by admission, in both modes
    assert hits == [0, 0, 0, 960, 960, 0]
    assert doc["tokens"]["usable_hit"] == sum(hits)
    assert doc["tokens"]["hit"] == sum(hits) + 512
    if host:  # the host tier saw the same traffic (the engine counts tokens, the replay pages)
        sim, real = doc["host"], hybrid.tier.stats()
        assert (sim["capacity_pages"], sim["capacity_slots"]) == (33, 344)
        assert (sim["backup_pages"], sim["host_evicted_pages"]) == (
            real.backup_pages // PAGE, real.host_evicted_pages // PAGE) == (75, 45)
