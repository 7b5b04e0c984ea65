"""Sequential replay of a trace through SGLang's tree rules (`kvledger replay`).

Files: spec (pool sizes, page, components, replay options), keys (prompt page keys from a
Mooncake trace), replay (the per-request loop over the tree and the index allocators),
summary (counters, hit rate and the sha1 of the hit array, as the oracle's summary.json).
"""
