"""What each command's hit rate measures, in one line each (docs: "Three hit rates").

`replay`, `simulate` and the FULL-only ceiling of `simulate --compare` report different hit
rates for one trace and one memory because they measure different things; each output says
which, so that no one compares a replay's 26 % with a simulation's 13 % as if they were one
quantity.
"""

from __future__ import annotations

REPLAY = ("hit rate: sequential replay (file order, one request at a time, prompts only, the "
          "whole pool free for cached prefixes): the prefix SGLang's own tree reuses, which "
          "must end at a state; not comparable with `simulate`'s rates (docs: Three hit rates)")
REPLAY_VLLM = ("hit rate: sequential replay (file order, one request at a time, prompts only, "
               "the whole block pool free for cached blocks): the prefix vLLM's own block "
               "cache reuses, the attention hit cut back to the deepest cached state "
               "(fa_hit: the attention group alone); not comparable with `simulate`'s rates "
               "(docs: Three hit rates)")
SIMULATE = ("hit rates: serving replay (arrival times, requests in flight pin pages and state "
            "slots, states where the state policy saves them): token hit = KV matched, usable "
            "hit = KV ending at a cached state; not comparable with `replay`'s rate (docs: "
            "Three hit rates)")
CEILING = ("FULL-only ceiling: no states, the KV and state pools' bytes as one KV pool, "
           "sequential prompts only: an upper bound on the hit rate for this memory, not a "
           "policy (docs: Three hit rates)")
SIMULATE_VLLM = ("hit rates: serving replay through vLLM's block cache (arrival times, running "
                 "requests hold their blocks, states cached where align mode caches them): "
                 "token hit = the attention group's cached KV, usable hit = that cut back to "
                 "the deepest cached state; the same quantities as SGLang's `simulate` (docs: "
                 "Three hit rates)")
