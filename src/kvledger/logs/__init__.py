"""Boot logs: read an SGLang or vLLM log and reconcile every number it prints.

- lines.py: the line patterns and the scan of a log into facts;
- detect.py: which engine and release wrote it;
- clipped.py: reprs and dicts as pasted, whole or clipped;
- vllm_args.py / sglang_args.py: the deployment a vLLM / SGLang paste states;
- engine_config.py: the deployment the engine ran, from vLLM's engine-config line;
- expected.py: the lines an engine prints for a deployment, and the ones a log lacks;
- reconcile.py: rows (logged, kvledger, equal or why not) and the verdict;
- vllm_log.py / sglang_log.py: the reconciliation per engine;
- check.py: `check_log`, the entry point.
"""
