"""Where a hybrid prefill chunk ends: vLLM's `Scheduler._mamba_block_aligned_split`
(`vllm/v1/core/sched/scheduler.py`), for a token budget that never binds.

In align mode a state can only be cached at a block end the chunk stops on, so the
scheduler ends a chunk early at

- the shared-prefix junction ``F`` (the attention hit beyond the state hit: ``junction_stop``),
  so the state there is computed and cached for the next request with this prefix;
- the replay boundary ``c = ⌊(L−1)/B⌋·B`` (``last_cache_position``) when the backend cannot
  export that state mid-chunk (no prefill checkpoint block).

A chunk that does not reach the prompt end is also floored to a block multiple (both stops
are multiples already).

>>> aligned_chunk_end(0, 1000, block_size_tokens=64, junction_tokens=512, stop_at_replay=False)
512
>>> aligned_chunk_end(512, 1000, block_size_tokens=64, junction_tokens=512, stop_at_replay=True)
960
>>> aligned_chunk_end(960, 1000, block_size_tokens=64, junction_tokens=512, stop_at_replay=True)
1000
"""

from __future__ import annotations


def aligned_chunk_end(start_tokens: int, prompt_tokens: int, *, block_size_tokens: int,
                      junction_tokens: int, stop_at_replay: bool) -> int:
    """The end (exclusive, in tokens) of the chunk that starts at ``start_tokens``."""
    end = prompt_tokens
    if junction_tokens > start_tokens:
        end = min(end, junction_tokens)
    replay_tokens = (prompt_tokens - 1) // block_size_tokens * block_size_tokens
    if stop_at_replay and replay_tokens > start_tokens:
        end = min(end, replay_tokens)
    if end < prompt_tokens:
        end = end // block_size_tokens * block_size_tokens
    return end
