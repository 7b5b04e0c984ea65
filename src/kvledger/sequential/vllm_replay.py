"""Sequential replay through vLLM 0.33's prefix cache (`oracle/vllm-0.33-prefix-cache/`).

Requests run one at a time in file order: each is matched, prefilled (in one step, or in
chunks where `aligned_chunk_end` stops it), and freed before the next arrives; no outputs
are cached. Per request (prompt of ``L`` tokens, block ``B``), mirroring the scheduler:

1. hash every full block, chained (`Request` with `get_request_block_hasher`);
2. match, capped at ``L − 1`` (`Scheduler._get_local_prefix_cache_hit` →
   `KVCacheManager.get_computed_blocks`): the hit ``h`` and the attention reach ``F``;
   the shared-prefix boundary is ``F`` when ``F > h``;
3. first chunk ``[h, e₁)``: `allocate_slots` touches the hit, allocates, and caches every
   block up to ``e₁`` (`coordinator.cache_blocks`);
4. each further chunk ``[e_{k−1}, e_k)``: `remove_skipped_blocks` at the tokens whose output
   is processed (with the async scheduler's two steps in flight that is ``e_{k−2}``, with
   the sync scheduler ``e_{k−1}``), then allocate and cache;
5. free (`KVCacheManager.free`): groups in order, each table in reverse.

The state blocks that may be cached end on the replay boundary ``c = ⌊(L−1)/B⌋·B`` or on
``F`` (`MambaManager.reachable_block_mask` with ``replay_boundaries(L) = (L−1,)``).

>>> from kvledger.sim.workload import Request
>>> reqs = [Request(rid=i, arrival_ms=0.0, segment_ids=(1, 2 + i), segment_tokens=(512, 300),
...                 output_tokens=0) for i in range(3)]
>>> out = vllm_replay(reqs, VllmReplaySpec(block_tokens=64, pool_tokens=1 << 16))
>>> out.hits.tolist(), out.attention_hits.tolist(), out.steps.tolist()
([0, 0, 512], [0, 512, 512], [1, 2, 1])

Request 1 reaches 512 tokens of attention blocks but no state: it recomputes them, stopping
at the junction (two steps) so the state at 512 is cached; request 2 hits it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kvledger.blocks import Coordinator, aligned_chunk_end
from kvledger.blocks.pool import PoolError
from kvledger.sequential.block_hashes import PromptBlockHashes
from kvledger.sequential.vllm_spec import VllmReplaySpec
from kvledger.sim.workload import Request

Progress = Callable[[int, int], None]  # (requests done, requests total)


@dataclass(frozen=True, slots=True)
class VllmReplayOutput:
    spec: VllmReplaySpec
    prompt_tokens: np.ndarray  # int64 per request
    hits: np.ndarray  # int32 per request: the hit h (get_computed_blocks' token count)
    attention_hits: np.ndarray  # int32: what the attention group alone allowed (F)
    steps: np.ndarray  # int32: scheduler steps per prefill
    evicted_blocks: tuple[int, int]  # (attention, all Mamba groups) hashes get_new_blocks dropped
    checkpoint_steps: int  # chunks that allocated a prefill checkpoint block
    junction_requests: int  # requests whose prefill stopped at the shared-prefix junction
    final_cached_blocks: int  # hashed blocks left in the pool (states included)
    final_cached_states: int  # hashed state blocks, every Mamba group (= states with one)
    final_free_uncached: int


class VllmReplayError(ValueError):
    """A prompt whose blocks do not fit even with every cached block evicted."""


def vllm_replay(requests: Sequence[Request] | Iterable[Request], spec: VllmReplaySpec,
                progress: Sequence[Progress] = (), *, check_every: int = 0) -> VllmReplayOutput:
    """Replay ``requests`` in order; ``check_every`` > 0 runs the coordinator's integrity
    check (and that nothing is held between requests) every that many requests."""
    requests = list(requests)
    coord = Coordinator(spec.groups(), num_blocks=spec.num_blocks)
    hasher = PromptBlockHashes(spec.block_tokens)
    size, total, hybrid = spec.block_tokens, len(requests), spec.has_state
    in_flight = spec.scheduler.steps_in_flight
    stop_at_replay = hybrid and spec.checkpoint_blocks == 0
    prompt = np.zeros(total, dtype=np.int64)
    hits, attention, steps = (np.zeros(total, dtype=np.int32) for _ in range(3))
    junctions, step_every = 0, max(1, total // 100)
    for i, request in enumerate(requests):
        length = request.prompt_tokens
        hashes = hasher.hashes(request)
        hit = coord.find_longest_cache_hit(hashes, length)
        h, reach = hit.hit_tokens, hit.attention_hit_tokens
        states = coord.state_boundaries(hashes, length, hit)  # vLLM's rule
        junction, boundaries = states.junction_tokens, states.tokens
        ends = [h]
        try:
            while ends[-1] < length:
                start = ends[-1]
                end = length if not hybrid else aligned_chunk_end(
                    start, length, block_size_tokens=size, junction_tokens=junction,
                    stop_at_replay=stop_at_replay)
                if len(ends) > 1:  # a later chunk: drop what the processed outputs passed
                    coord.remove_skipped_blocks(request.rid, ends[max(0, len(ends) - in_flight)])
                coord.allocate_slots(request.rid, hit if len(ends) == 1 else None,
                                     end_tokens=end, boundaries=boundaries)
                coord.cache_blocks(request.rid, hashes, end, boundaries)
                ends.append(end)
        except PoolError as exc:
            raise VllmReplayError(
                f"--pool-tokens {spec.pool_tokens:,} ({spec.num_blocks - 1:,} usable "
                f"{size}-token blocks): {exc} for its {length:,}-token prompt") from None
        coord.free(request.rid)
        junctions += junction > 0
        prompt[i], hits[i], attention[i], steps[i] = length, h, reach, len(ends) - 1
        if check_every and ((i + 1) % check_every == 0 or i + 1 == total):
            coord.check_integrity()
            if coord.pool.usage().held_blocks:
                raise RuntimeError("vllm replay: blocks still held between requests")
        if progress and ((i + 1) % step_every == 0 or i + 1 == total):
            for report in progress:
                report(i + 1, total)
    pool, mambas = coord.pool, coord.mambas
    mamba_groups = {m.group for m in mambas}
    state_blocks = sum(1 for key in pool.block_key
                       if key is not None and key % pool.num_groups in mamba_groups)
    return VllmReplayOutput(
        spec=spec, prompt_tokens=prompt, hits=hits, attention_hits=attention, steps=steps,
        evicted_blocks=(pool.evicted_blocks[coord.attention.group],
                        sum(pool.evicted_blocks[g] for g in mamba_groups)),
        checkpoint_steps=mambas[0].checkpoint_blocks if mambas else 0,
        junction_requests=junctions, final_cached_blocks=pool.num_hashed_blocks(),
        final_cached_states=state_blocks, final_free_uncached=pool.usage().free_blocks)
