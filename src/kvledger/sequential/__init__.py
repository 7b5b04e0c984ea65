"""Sequential replay of a trace through SGLang's tree rules or vLLM's block cache
(`kvledger replay --engine sglang|vllm`).

Files: spec (pool sizes, page, components, replay options), keys (prompt page keys from a
Mooncake trace), runs (those pages grouped into runs no prompt of the trace splits: the
tree's keys), replay (the per-request loop over the tree and the index allocators),
summary (counters, hit rate and the sha1 of the hit array, as the oracle's summary.json),
oracle (SGLang 0.5.23's reference cells); vllm_spec, vllm_replay, vllm_summary and
vllm_oracle are the same four for vLLM 0.33's prefix cache (`kvledger.blocks`), block_hashes
(a prompt's chained block hashes, interned once per trace segment).
"""
