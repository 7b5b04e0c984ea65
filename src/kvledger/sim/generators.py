"""Seeded workload generators: multi-turn chat, agentic tool loops, shared prompts, Zipf,
tool use with sub-agents, long-document QA.

Every generator is a pure function of `GeneratorParams` (same params → same requests) and
returns exactly `num_requests` requests ordered by arrival. Sessions (a chat, an agent task)
arrive as a Poisson process at `rate_per_s`; their later turns follow after a think or tool
time. Lengths are log-normal around the means below, clamped to at least one token.

Sharing structure, which is what the cache sees:
- chat: a few system prompts shared by all; each turn's prompt is the whole conversation so
  far (earlier user turns and model outputs), so context grows turn by turn.
- agent: a long tool-definition prompt per agent type; every step appends the model's tool
  call and the tool's result, so the prefix is long and reused within seconds.
- shared-prompt: single-turn requests over a handful of long system prompts.
- zipf: single-turn questions about documents drawn with Zipf popularity (few hot, long tail).
- tool-use (`kvledger.sim.tool_use`, parameters there): tool loops on long shared schema
  prompts whose steps sometimes fan out to parallel sub-agents (junctions).
- long-doc-qa (`kvledger.sim.long_doc`, parameters there): sessions of independent questions
  on documents of tens of thousands of tokens (several prefill chunks, one branch point).

>>> w = GENERATORS["chat"].generate(GeneratorParams(num_requests=50, seed=1))
>>> len(w.requests), w == GENERATORS["chat"].generate(GeneratorParams(num_requests=50, seed=1))
(50, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvledger.sim.draws import Draw, GeneratorParams, Turn
from kvledger.sim.long_doc import long_doc_turns
from kvledger.sim.tool_use import tool_use_turns
from kvledger.sim.workload import Request, Workload, WorkloadError


def _session_starts(draw: Draw, params: GeneratorParams) -> float:
    return draw.gap_ms(1 / params.rate_per_s)


def _chat(params: GeneratorParams) -> list[Turn]:
    draw = Draw(params.seed)
    systems = [draw.segment(draw.length(1_200)) for _ in range(4)]
    turns: list[Turn] = []
    start = 0.0
    while len(turns) < params.num_requests:
        start += _session_starts(draw, params)
        history = [systems[int(draw.rng.integers(len(systems)))]]
        at = start
        for _ in range(1 + int(draw.rng.geometric(1 / 6))):
            history.append(draw.segment(draw.length(250)))
            answer = draw.segment(draw.length(350, cap=4_000))
            turns.append(Turn(arrival_ms=at, segments=tuple(history), output_tokens=answer[1],
                               output_segment_id=answer[0]))
            history.append(answer)  # the answer is part of the next prompt
            at += draw.gap_ms(20)
    return turns


def _agent(params: GeneratorParams) -> list[Turn]:
    draw = Draw(params.seed)
    tools = [draw.segment(draw.length(6_000, sigma=0.3)) for _ in range(3)]
    turns: list[Turn] = []
    start = 0.0
    while len(turns) < params.num_requests:
        start += _session_starts(draw, params)
        history = [tools[int(draw.rng.integers(len(tools)))], draw.segment(draw.length(500))]
        at = start
        for _ in range(2 + int(draw.rng.geometric(1 / 8))):
            call = draw.segment(draw.length(120, cap=1_000))
            turns.append(Turn(arrival_ms=at, segments=tuple(history), output_tokens=call[1],
                               output_segment_id=call[0]))
            history += [call, draw.segment(draw.length(1_000, sigma=0.9))]
            at += draw.gap_ms(2)
    return turns


def _shared_prompt(params: GeneratorParams) -> list[Turn]:
    draw = Draw(params.seed)
    systems = [draw.segment(draw.length(3_000, sigma=0.4)) for _ in range(8)]
    turns, at = [], 0.0
    for _ in range(params.num_requests):
        at += _session_starts(draw, params)
        system = systems[int(draw.rng.integers(len(systems)))]
        turns.append(Turn(arrival_ms=at, segments=(system, draw.segment(draw.length(300))),
                           output_tokens=draw.length(250, cap=4_000)))
    return turns


def _zipf(params: GeneratorParams) -> list[Turn]:
    draw = Draw(params.seed)
    system = draw.segment(800)
    documents = [draw.segment(draw.length(4_000, sigma=0.5)) for _ in range(1_000)]
    weights = 1.0 / np.arange(1, len(documents) + 1) ** 1.1  # Zipf, exponent 1.1
    picks = draw.rng.choice(len(documents), size=params.num_requests, p=weights / weights.sum())
    turns, at = [], 0.0
    for pick in picks.tolist():
        at += _session_starts(draw, params)
        turns.append(Turn(arrival_ms=at,
                           segments=(system, documents[pick], draw.segment(draw.length(100))),
                           output_tokens=draw.length(200, cap=4_000)))
    return turns


@dataclass(frozen=True, slots=True, kw_only=True)
class Generator:
    name: str
    help: str
    turns: Callable[[GeneratorParams], list[Turn]]

    def generate(self, params: GeneratorParams) -> Workload:
        if params.num_requests < 1:
            raise WorkloadError(f"--num-requests {params.num_requests}: expected at least 1")
        if not (params.rate_per_s > 0 and math.isfinite(params.rate_per_s)):
            raise WorkloadError(f"--rate {params.rate_per_s}: expected a positive finite rate")
        if isinstance(params.seed, bool) or not isinstance(params.seed, int) or not (
                0 <= params.seed < 2**32):
            raise WorkloadError(f"--seed {params.seed!r}: expected an integer in "
                                "[0, 4,294,967,295]")
        turns = sorted(self.turns(params), key=lambda t: t.arrival_ms)[: params.num_requests]
        requests = tuple(
            Request(rid=rid, arrival_ms=round(t.arrival_ms, 3),
                    segment_ids=tuple(s for s, _ in t.segments),
                    segment_tokens=tuple(n for _, n in t.segments), output_tokens=t.output_tokens,
                    output_segment_id=t.output_segment_id)
            for rid, t in enumerate(turns)
        )
        return Workload(name=f"{self.name} (seed {params.seed})", requests=requests)


GENERATORS: dict[str, Generator] = {
    g.name: g
    for g in (
        Generator(name="chat", help="multi-turn chat, context grows each turn", turns=_chat),
        Generator(name="agent", help="agentic tool loops over long tool prompts", turns=_agent),
        Generator(name="shared-prompt", help="single turns over shared system prompts",
                  turns=_shared_prompt),
        Generator(name="zipf", help="questions on documents with Zipf popularity", turns=_zipf),
        Generator(name="tool-use", help="agentic tool loops that fan out to sub-agents",
                  turns=tool_use_turns),
        Generator(name="long-doc-qa", help="independent questions on long documents",
                  turns=long_doc_turns),
    )
}


def get_generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise WorkloadError(f"--workload {name!r}: expected one of {', '.join(GENERATORS)}") from None
