"""Boot logs: read an SGLang or vLLM log and reconcile every number it prints.

- lines.py: the line patterns and the scan of a log into facts;
- detect.py: which engine and release wrote it;
- clipped.py: reprs and dicts as pasted, whole or clipped;
- vllm_args.py / sglang_args.py: the deployment a vLLM / SGLang paste states;
- engine_config.py: the deployment the engine ran, from vLLM's engine-config line;
- expected.py: the lines an engine prints for a deployment, and the ones a log lacks;
- reconcile.py: rows (logged, kvledger, equal or why not) and the verdict;
- tags.py: the rank tag of a line (SGLang's `[… PP1 TP0]`, vLLM's `(Worker_PP1_TP0 pid=…)`);
- vllm_log.py / sglang_log.py: the reconciliation per engine; sglang_rows.py the pool rows,
  sglang_stages.py / vllm_stages.py a pipeline's stages, sglang_roles.py a prefill/decode
  server's pools, vllm_derived.py what a vLLM log never prints;
- check.py: `check_log`, the entry point.
"""
