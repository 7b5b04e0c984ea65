"""The `kvledger simulate --engine vllm --json` document and the two-engine comparison.

Schema `kvledger.simulate-vllm/1`, inside the common envelope (`core.envelope`)::

    workload, requests{offered, finished, unfinished[rid]},
    pools{block_tokens, num_blocks, mamba_groups, state_blocks, bytes_per_block,
          max_num_seqs, max_num_batched_tokens},
    tokens{prompt, hit, usable_hit, recomputed_shallow_state, prefill_computed, decoded},
    rates{token_hit, usable_hit},
    evictions{full_kv_blocks, full_kv_tokens, full_kv_bytes, mamba_states},
    preemptions, time{simulated_ms, steps, wall_s},
    latency{model, ttft_ms{mean, p50, p95, p99}, tpot_ms{…}, output_tokens_per_s,
            total_tokens_per_s, saturated} (ttft_ms and tpot_ms null when nothing finished;
            saturated: the queue grows, `sim.fleet.capacity.queue_grows`)

The keys SGLang's document has (`report.sim_json`) mean the same here. `state_blocks` is the
blocks one cached state costs (one per Mamba group). Schema `kvledger.simulate-engines/1`
(`--engine sglang,vllm`): ``engines{sglang: <simulate body>, vllm: <simulate-vllm body>}``
and ``comparison``, one row per engine: engine, token_hit, usable_hit, ttft_p50_ms,
ttft_p95_ms, tpot_p50_ms, evicted_kv_tokens, evicted_states, output_tokens_per_s, finished,
saturated (the run's queue grows, `sim.fleet.capacity.queue_grows`, the same rule for both
engines: its latencies measure the backlog, not the cache).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kvledger.sim.latency import LatencyStats
from kvledger.sim.metrics import SimSummary
from kvledger.sim.vllm_summary import VllmSimSummary


def vllm_sim_body(s: VllmSimSummary) -> dict[str, Any]:
    return {
        "workload": s.workload,
        "requests": {"offered": s.num_requests, "finished": s.finished,
                     "unfinished": list(s.unfinished)},
        "pools": {"block_tokens": s.block_tokens, "num_blocks": s.num_blocks,
                  "mamba_groups": s.num_mamba_groups,
                  "state_blocks": s.num_mamba_groups, "bytes_per_block": s.bytes_per_block,
                  "max_num_seqs": s.max_num_seqs,
                  "max_num_batched_tokens": s.max_num_batched_tokens},
        "tokens": {"prompt": s.prompt_tokens, "hit": s.hit_tokens,
                   "usable_hit": s.usable_hit_tokens,
                   "recomputed_shallow_state": s.hit_tokens - s.usable_hit_tokens,
                   "prefill_computed": s.prefill_tokens, "decoded": s.decode_tokens},
        "rates": {"token_hit": s.token_hit_rate, "usable_hit": s.usable_hit_rate},
        "evictions": {"full_kv_blocks": s.evicted_kv_blocks,
                      "full_kv_tokens": s.evicted_kv_tokens,
                      "full_kv_bytes": s.evicted_kv_blocks * s.bytes_per_block,
                      "mamba_states": s.evicted_states},
        "preemptions": s.preemptions,
        "time": {"simulated_ms": round(s.duration_ms, 3), "steps": s.steps,
                 "wall_s": round(s.wall_s, 3)},
        "latency": {**latency_json(s.timing, s.latency), "saturated": s.queue_grows},
    }


def latency_json(timing: str, lat: LatencyStats | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"model": timing}
    if lat is None:
        return {**doc, "ttft_ms": None, "tpot_ms": None, "output_tokens_per_s": 0.0,
                "total_tokens_per_s": 0.0}
    return {**doc, "ttft_ms": asdict(lat.ttft_ms), "tpot_ms": asdict(lat.tpot_ms),
            "output_tokens_per_s": lat.output_tokens_per_s,
            "total_tokens_per_s": lat.total_tokens_per_s}


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineRow:
    """One engine's line of the comparison (latencies None when nothing finished)."""

    engine: str
    pool: str  # the memory as that engine lays it out, in words
    token_hit: float
    usable_hit: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    tpot_p50_ms: float | None
    evicted_kv_tokens: int
    evicted_states: int
    output_tokens_per_s: float
    finished: int
    saturated: bool  # the run's queue grows: its latencies measure the backlog, not the cache


def _lat(lat: LatencyStats | None) -> dict[str, float | None]:
    if lat is None:
        return {"ttft_p50_ms": None, "ttft_p95_ms": None, "tpot_p50_ms": None,
                "output_tokens_per_s": 0.0}
    return {"ttft_p50_ms": lat.ttft_ms.p50, "ttft_p95_ms": lat.ttft_ms.p95,
            "tpot_p50_ms": lat.tpot_ms.p50, "output_tokens_per_s": lat.output_tokens_per_s}


def sglang_row(s: SimSummary, *, saturated: bool) -> EngineRow:
    c = s.counters
    return EngineRow(engine="sglang", pool=f"{s.token_pages * s.page_tokens:,} KV tokens + "
                     f"{s.state_slots:,} state slots", token_hit=c.token_hit_rate,
                     usable_hit=c.usable_hit_rate, evicted_kv_tokens=s.evicted_tokens,
                     evicted_states=s.evicted_slots, finished=c.finished, saturated=saturated,
                     **_lat(s.latency))


def vllm_row(s: VllmSimSummary) -> EngineRow:
    return EngineRow(engine="vllm", pool=f"{s.num_blocks - 1:,} blocks of {s.block_tokens} "
                     f"tokens (a state: {s.num_mamba_groups})", token_hit=s.token_hit_rate,
                     usable_hit=s.usable_hit_rate, evicted_kv_tokens=s.evicted_kv_tokens,
                     evicted_states=s.evicted_states, finished=s.finished,
                     saturated=s.queue_grows, **_lat(s.latency))
