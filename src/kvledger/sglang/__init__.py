"""SGLang's planner: its flags, rule sets and sizing, release by release.

Data flow: `launch/` (a pasted command or flags) → `deploy.py` (the validated `Deployment`)
→ `rules.py` (one frozen rule set per release) → `roles.py`, `stagelayers.py`, `attention.py`
→ `resolve.py` (the `CacheLayout` against a model, with the `specs.py` row specs) →
`ledger.py` (per-token, per-slot, per-request and side ledgers) → `statebudget.py`, `requestlimits.py`, `memfraction.py`, `rankweights.py` →
`capacity.py` (K, T, N and the binding constraint) → `stages.py` (per pipeline stage) → `hicache_share.py`, `hicache.py`,
`l3plan.py` (host and store tiers) → `plan.py` (`make_plan`) → `scaling.py` (deployment-wide
totals).

Files:
- `launch/`: SGLang's launch flags, their spellings, the pasted-command parser and the
  launch command that reproduces a deployment (`line.py`).
- `choices.py`: the enums of SGLang's memory-relevant arguments (re-exported by `deploy.py`).
- `deploy.py`: `Deployment`, the memory-relevant `ServerArgs`, validated.
- `roles.py`: what a prefill or decode server (`--disaggregation-mode`) changes before sizing.
- `stagelayers.py`: pipeline stages (`--pp-size`): each stage's layers, PP's forced settings.
- `attention.py`: SGLang's default attention backend on a GPU and the page it forces.
- `dcp.py`: decode context parallelism (`--dcp-size`): what is planned, what is refused.
- `rules.py`: per-release rule sets (`sglang-0.5.8`, `sglang-0.5.9`, `sglang-0.5.21`, `sglang-0.5.23`).
- `specs.py`: frozen row specs that own their byte formulas.
- `resolve.py`: auto values resolved against a model and a rule set.
- `mamba_strategy.py`: the Mamba scheduler strategy, extra_buffer's page checks, state slots per request.
- `ledger.py`: the ledgers, row by row.
- `statebudget.py`: the state pool's share of the budget.
- `requestlimits.py`: the running-request limit rules.
- `memfraction.py`: SGLang's default `mem_fraction_static`.
- `rankweights.py`: weights per rank, itemised.
- `capacity.py`: state slots K, tokens T, requests N, and which binds.
- `rolepools.py`: a prefill/decode server's pools as allocated, beside what was charged.
- `hicache_share.py`, `hicache.py`: host-tier sizing.
- `l3plan.py`: store-tier sizing.
- `plan_memory.py`: the memory one rank starts from (available, or a GPU less weights).
- `stages.py`: per-stage K, T and N of a pipeline-parallel server, and its totals.
- `plan.py`: the whole plan of one rank, `SglangPlan` (an `EnginePlan`).
- `plan_json.py`: its `--json` document (`kvledger.plan/2`).
- `scaling.py`: totals over the deployment.
"""
