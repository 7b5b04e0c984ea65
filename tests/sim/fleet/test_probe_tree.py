"""The read-only cache probe against the cache's own admission, and the approximate tree."""

from __future__ import annotations

import numpy as np

from kvledger.sglang.deploy import Deployment
from kvledger.sglang.plan import make_plan
from kvledger.sim.config import SimConfig
from kvledger.sim.fleet.approx_tree import ApproxTree
from kvledger.sim.fleet.probe import probe
from kvledger.sim.fleet.routers import PrefixAware
from kvledger.sim.replay import Replay
from kvledger.sim.sources import load_workload


def test_probe_agrees_with_what_admission_then_finds_and_changes_nothing():
    """After a replay, probing each prompt gives the hit the cache's own match gives
    (`HybridCache.admit`: hit_tokens / usable_hit_tokens in pages), and probing twice
    leaves the tree's node count unchanged (no split, no recency)."""
    plan = make_plan("glm-5.3-flash", Deployment(tp_size=8), gpu="h200")
    w = load_workload(generator="chat", num_requests=40, seed=5)
    replay = Replay(plan, w, SimConfig(), ())
    replay.run()
    cache, page = replay.cache, replay.page
    for request in w.requests[:10]:
        keys = replay.keyer.keys(request)
        max_pages = (request.prompt_tokens - 1) // page
        before = cache.tree.sizes()
        depth = probe(cache.tree, keys, max_pages=max_pages)
        assert cache.tree.sizes() == before
        seq = cache.admit(keys, prompt_tokens=request.prompt_tokens,
                          final_tokens=request.prompt_tokens + request.output_tokens)
        assert depth.kv_pages * page == seq.hit_tokens
        assert depth.usable_pages * page >= seq.usable_hit_tokens
        cache.release(seq, keys[:0])


def test_prefix_aware_learns_every_routed_request():
    r = PrefixAware(3)
    w = load_workload(generator="shared-prompt", num_requests=30, seed=2)
    from kvledger.sim.fleet.probe import PrefixDepth
    from kvledger.sim.fleet.routers import ReplicaView
    views = [ReplicaView(outstanding_requests=0, active_pages=0, kv_usage=0.0,
                         probe=lambda: PrefixDepth(0, 0)) for _ in range(3)]
    for request in w.requests:
        r.choose(request, np.arange(request.prompt_tokens // 64) + 1000 * request.rid, views)
    r.tree.check_integrity()
    assert sum(r.tree.tenant_to_pages) == sum(p.prompt_tokens // 64 for p in w.requests)


def test_approx_tree_most_recent_tenant_wins_the_deepest_node():
    t = ApproxTree(num_tenants=3)
    t.insert([7, 8], tenant=2, at=1)
    t.insert([7, 8], tenant=1, at=5)
    assert t.prefix_match([7, 8, 9]) == (2, 1)
    assert t.prefix_match([6]) == (0, None)
    t.check_integrity()
