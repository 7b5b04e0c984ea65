"""The simulator: a discrete-event replay of a workload through the cache facade in
accounting mode (`kvledger.cache.accounting`).

Files: replay (the clock and the scheduler), setup (what the plan gives the replay: its
checks, step-time model and state policies), running (a request's schedule), config (step
costs, budgets, cadence), metrics (counters and the summary), series (per-step rows),
pages (page keys), l3 (the store tier's
write-through and restores, --l3-size), workload / trace / generators / sources (what is replayed;
draws: what generators draw from; tool_use, long_doc: two generators and their parameters),
vllm_serving (a serving run through vLLM's block cache, `kvledger.blocks`), vllm_setup (its
pool, groups and budgets from vLLM's plan), vllm_summary (what `simulate --engine vllm` reports), vllm_compare (vLLM's knobs and
kvledger's state policies on one trace, `simulate --engine vllm --compare`); fleet/ (SGLang replicas behind a
router, `simulate --replicas`).
"""
