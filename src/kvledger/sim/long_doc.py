"""The long-document QA workload (`--workload long-doc-qa`): many questions on long documents.

A reading session starts (Poisson, `rate_per_s` sessions per second) on one document of a
fixed library, drawn with Zipf popularity (a few documents are read by many sessions), and
asks several independent questions about it, a reading pause apart. Each question's prompt is
the shared instructions, the whole document and the question; answers are not fed back (each
question stands alone).

What the cache sees: prompts of tens of thousands of tokens, several prefill chunks each, all
sharing the document and diverging only at its end, which lies between pages and off the
state checkpoint grid, so a request reuses the document only where a policy left a state at
(or near) that branch point; the engine's chunk-end states sit up to a chunk short of it.

Parameters (`LongDocShape`, lengths in tokens, log-normal with the given mean and sigma):

| field | default | what |
|---|---|---|
| instruction_tokens | 300 | the instructions every prompt starts with |
| num_documents | 200 | the library |
| document_tokens, document_sigma, document_cap_tokens | 20,000, 0.5, 100,000 | one document |
| zipf_exponent | 0.8 | popularity of document k ∝ 1 / k^0.8 |
| mean_questions | 4 | questions per session: geometric (at least 1) with this mean |
| question_tokens | 60 | one question |
| answer_tokens, answer_cap_tokens | 180, 2,000 | one answer (the output) |
| reading_s | 25 | mean pause between a session's questions (exponential) |

>>> from kvledger.sim.draws import GeneratorParams
>>> turns = long_doc_turns(GeneratorParams(num_requests=30, seed=2))
>>> len(turns) >= 30, all(len(t.segments) == 3 for t in turns)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvledger.sim.draws import Draw, GeneratorParams, Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class LongDocShape:
    instruction_tokens: int = 300
    num_documents: int = 200
    document_tokens: int = 20_000
    document_sigma: float = 0.5
    document_cap_tokens: int = 100_000
    zipf_exponent: float = 0.8
    mean_questions: float = 4.0
    question_tokens: int = 60
    answer_tokens: int = 180
    answer_cap_tokens: int = 2_000
    reading_s: float = 25.0


def long_doc_turns(params: GeneratorParams, shape: LongDocShape = LongDocShape()) -> list[Turn]:
    draw = Draw(params.seed)
    rng = draw.rng
    instructions = draw.segment(shape.instruction_tokens)
    documents = [draw.segment(draw.length(shape.document_tokens, sigma=shape.document_sigma,
                                          cap=shape.document_cap_tokens))
                 for _ in range(shape.num_documents)]
    weights = 1.0 / np.arange(1, len(documents) + 1) ** shape.zipf_exponent
    weights /= weights.sum()
    turns: list[Turn] = []
    start = 0.0
    while len(turns) < params.num_requests:
        start += draw.gap_ms(1 / params.rate_per_s)
        document = documents[int(rng.choice(len(documents), p=weights))]
        at = start
        for _ in range(int(rng.geometric(1 / max(shape.mean_questions, 1.0)))):
            turns.append(Turn(arrival_ms=at, segments=(
                instructions, document, draw.segment(draw.length(shape.question_tokens))),
                output_tokens=draw.length(shape.answer_tokens, cap=shape.answer_cap_tokens)))
            at += draw.gap_ms(shape.reading_s)
    return turns
