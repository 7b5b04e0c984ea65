"""Boot logs: read an SGLang or vLLM log and reconcile every number it prints.

- lines.py: the line patterns and the scan of a log into facts;
- detect.py: which engine and release wrote it;
- vllm_args.py: the deployment in vLLM's `non-default args` line;
- reconcile.py: rows (logged, kvledger, equal or why not);
- vllm_log.py / sglang_log.py: the reconciliation per engine;
- check.py: `check_log`, the entry point.
"""
