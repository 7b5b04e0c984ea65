"""vLLM's KV-cache rules, as data and small formulas, beside the SGLang planner.

- rules.py: the release rule sets (`vllm-0.13`, `vllm-0.24`, `vllm-0.27`, `vllm-0.32`,
  `vllm-0.33`);
- checkpoint.py: which state layers export prefill checkpoints (block and alignment);
- backends.py: the MLA attention backend per GPU (block size, fp8 row, block stride) and
  the lookups a layout makes in that table;
- deploy.py: VllmDeployment, the memory flags with vLLM's spellings;
- context_parallel.py: DCP and PCP: the sizes and backends vLLM accepts, a rank's tokens;
- resolve.py: max_model_len, prefix caching, mamba_cache_mode and the other defaults;
- flags.py: pasted `vllm serve …` / api_server commands → VllmDeployment;
- layers.py: per-layer specs (attention, MLA, Mamba state) and state dtypes per model class;
- align.py: hybrid block alignment and the Mamba page padding;
- groups.py: KV-cache groups;
- layout.py: model + deployment + rules → VllmLayout;
- memory.py: the KV cache memory (logged, flag, or GPU budget);
- rank_weights.py: the weights per rank a GPU budget loses;
- capacity.py: num_gpu_blocks, concurrency, the logged token count, start-up refusals;
- stages.py: pipeline stages' layers (`get_pp_indices`) and their share of each group;
- pipeline.py: every stage's pool, the smallest count for all, the binding stage;
- ledgers.py: the itemised ledgers (per block, per request, lost);
- plan.py: VllmPlan (an `EnginePlan`);
- plan_json.py: its `--json` document (`kvledger.vllm-plan/1`);
- serve_line.py: the `vllm serve …` command that reproduces a deployment.
"""
