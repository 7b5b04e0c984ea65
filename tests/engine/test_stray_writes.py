"""A loadback whose copy also writes into another node's device page, seen in the logits.

Prompts A and B (40 tokens: two cached 16-token pages each, A in pages 1–2, B in 3–4) run,
then A leaves the device and comes back from host into pages 2 and 1. The copy is correct
for A and also flips one byte of page 3, B's first page, just past the run it wrote. B then
runs again on its device hit. Without the neighbour guard (`kvledger.host.neighbours`) the
loadback is acknowledged and B's second answer differs from its first; with it the byte is
put back, the loadback refused (A recomputes) and both answers are bit-identical to the
first ones, computed without any cache hit.
"""

from __future__ import annotations

import pytest
import torch

from engine.engine_factories import CheckedCache, prompts, tiny_model
from kvledger.engine.cached import PrefixCache, prefix_cache
from kvledger.engine.config import TinyConfig
from kvledger.engine.loop import Engine
from kvledger.engine.memory import HostTier, PoolSizes
from kvledger.engine.script import Script, Turn, run_script
from kvledger.host.movers import TensorMover

CFG = TinyConfig()
SIZES = PoolSizes(num_pages=16, num_state_slots=8, max_running_requests=1, max_context_tokens=128)
PAGE = SIZES.page_tokens


class Overrunning(TensorMover):
    """Loads back correctly, then flips the first byte of the page just past the last one
    it wrote (once)."""

    def __init__(self, device, host):
        super().__init__(device, host)
        self.hit: int | None = None

    def loadback(self, moves, checkpoint):
        super().loadback(moves, checkpoint)
        if self.hit is None:
            self.hit = int(moves.kv_device.max()) // PAGE + 1
            self.device.kv_planes[0][self.hit * PAGE, 0] ^= 0xFF


def _same(a, b) -> bool:
    return a.token_ids == b.token_ids and torch.equal(a.logits, b.logits)


@pytest.mark.parametrize("guard", [True, False], ids=["guarded", "unguarded"])
def test_a_write_into_the_next_nodes_page_never_reaches_its_logits(guard):
    a, b = prompts(3, [40, 40])
    waves = tuple((Turn(parent=None, tokens=tuple(p)),) for p in (a, b))
    cache = prefix_cache(CFG, SIZES, host=HostTier()).cache
    engine = Engine(tiny_model(CFG), CheckedCache(PrefixCache(cache)), chunk_tokens=64,
                    max_running_requests=1)
    first = run_script(engine, Script(waves=waves), max_new_tokens=2)
    node_b = cache.tree.match_prefix(list(b[:32])).best_match_node
    assert (node_b.full.value[::PAGE] // PAGE).tolist() == [3, 4]
    cache.tier.evict_device(full_tokens=2 * PAGE)  # A, the least recently used
    ctrl = cache.tier.ctrl
    ctrl.transfers.mover = mover = Overrunning(ctrl.device.bytes, ctrl.host)
    if not guard:
        ctrl.transfers.neighbours = None  # the digests alone, as before the guard
    again = run_script(engine, Script(waves=waves), max_new_tokens=2)
    assert mover.hit == 3  # B's first page
    assert again[1].cached_prompt_tokens == 32  # B's second run reads its cached pages
    if guard:
        assert ctrl.transfers.neighbours.stray_pages == 1
        assert (cache.stats.loadback_failures, cache.stats.loadback_tokens) == (1, 0)
        assert _same(again[0], first[0]) and _same(again[1], first[1])
    else:
        assert (cache.stats.loadback_failures, cache.stats.loadback_tokens) == (0, 32)
        assert _same(again[0], first[0]) and not _same(again[1], first[1])
