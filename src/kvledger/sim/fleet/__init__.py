"""Fleets: R replicas of one plan behind a router, each replica the single-rank replay.

Files: probe (what a replica's device cache holds for a prompt, read-only), approx_tree (the
SGLang router's approximate per-worker prefix tree), routers (the routing policies and their
registry), capacity (what one replica serves per second under the step-time model, and the
overload verdict), run (the lockstep clock that routes each arrival), summary (per-replica and
fleet figures), slo (one candidate fleet's replay judged against an SLO), slo_search (the
smallest fleet meeting it, `recommend --trace`), slo_pd (prefill/decode splits as its
candidates), launch (the fleet's SGLang and router
commands), links (the prefill→decode link catalogue), pd (a disaggregated fleet's three
replays), pd_compare (it against the aggregated fleet on the same GPUs), shared_store (one store
tier under every replica), store_reuse (the fleet's reuse with it, private tiers, none).
"""
